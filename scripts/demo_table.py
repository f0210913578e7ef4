"""Formats pearl-bench's JSON figures (stdin, one per line) as the demo's table."""

import json
import sys

print(f"{'figure':34} {'size':>14} {'rate':>14} {'memory':>10} {'build':>8}")
for line in sys.stdin:
    f = json.loads(line)
    if f["bench"] == "lpm_update":
        print(f"FIB {f['family']} updates while a reader looks up: {f['insert_mops']} M inserts/s, "
              f"{f['remove_mops']} M removals/s, reader keeps {f['reader_ratio']:.0%} of its rate")
        continue
    if f["bench"] == "lpm":
        name, size = f"FIB {f['family']} lookup ({f['mode']})", f"{f['prefixes']:,} pfx"
    else:
        name, size = "classifier lookup (batch)", f"{f['rules']:,} rules"
    print(f"{name:34} {size:>14} {f['mops']:>9.1f} M/s {f['table_bytes'] / 2**20:>6.1f} MiB {f['build_s']:>7.3f}s")
