#!/usr/bin/env bash
# Installs what PEARL needs, builds it, and shows the fast-path core at work on the real 2025
# BGP table: IPv4 and IPv6 FIBs (build time, memory, lookup and update rates) and the VR
# classifier. (The daemon and its namespace demo come with the data-plane issues.)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$HOME/.cargo/bin:$PATH"
bash scripts/setup.sh
table=${PEARL_BGP_TABLE:-../shared/data/bgp-full-table-2025.txt.gz}
bench=target/release/pearl-bench
{
    $bench lpm --family v4 --table "$table" --lookups 5000000 --repeat 3 --update-batch 100000
    $bench lpm --family v6 --table "$table" --lookups 5000000 --repeat 3 --update-batch 100000
    $bench classify --rules 16384 --repeat 3
    $bench classify --rules 65536 --repeat 3
} | python3 -c '
import json, sys
print(f"{\"figure\":34} {\"size\":>10} {\"rate\":>14} {\"memory\":>10} {\"build\":>8}")
for line in sys.stdin:
    f = json.loads(line)
    if f["bench"] == "lpm":
        name, size = f"FIB {f[\"family\"]} lookup ({f[\"mode\"]})", f"{f[\"prefixes\"]} pfx"
    elif f["bench"] == "classify":
        name, size = "classifier lookup (batch)", f"{f[\"rules\"]} rules"
    else:
        print(f"FIB {f[\"family\"]} updates while a reader looks up: {f[\"insert_mops\"]} M inserts/s, "
              f"{f[\"remove_mops\"]} M removals/s, reader keeps {f[\"reader_ratio\"]:.0%} of its rate")
        continue
    print(f"{name:34} {size:>10} {f[\"mops\"]:>9.1f} M/s {f[\"table_bytes\"] / 2**20:>7.1f} MiB {f[\"build_s\"]:>7.3f}s")
'
