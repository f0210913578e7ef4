#!/usr/bin/env bash
# IPv4 and IPv6 longest-prefix match: PEARL's FIB against DPDK's FIB library (rte_fib DIR-24-8
# for IPv4, rte_fib6 trie for IPv6), in the same run, on the same table and the same lookup
# addresses (a prefix drawn uniformly, then random host bits). Prints one JSON line per family
# with both rates and their ratio, and appends them to docs/benchmarks/lpm-vs-dpdk.json.
#
#   bench/lpm-vs-dpdk.sh [TABLE] [LOOKUPS] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
table=${1:-../shared/data/bgp-full-table-2025.txt.gz}
lookups=${2:-10000000}
runs=${3:-3}
command -v dpdk-test-fib >/dev/null || { apt-get install -y -q dpdk >/dev/null; }
cargo build --release -q -p pearl-bench
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# DPDK's route file format: "prefix/len next_hop" (next hops 1..250 by line number).
zcat -f "$table" | tr -d '\r' | awk -v f="$work/v4.routes" -v s="$work/v6.routes" \
  'NF { if (index($1, ":")) print $1, (NR % 250) + 1 > s; else print $1, (NR % 250) + 1 > f }'
eal=(-l 1 -n 1 --no-pci --no-huge -m 2048 --log-level=lib.eal:debug)
median() { sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }
out=docs/benchmarks/lpm-vs-dpdk.json
for family in v4 v6; do
  figures=$(taskset -c 1 ./target/release/pearl-bench lpm --family "$family" --table "$table" \
    --lookups "$lookups" --repeat "$runs" --dump-addresses "$work/$family.addrs" --update-batch 0)
  pearl=$(grep -m1 '"mode":"batch"' <<<"$figures")
  opts=(-f "$work/$family.routes" -t "$work/$family.addrs" -e 4)
  [ "$family" = v6 ] && opts+=(-6 -g 1000000) || opts+=(-g 100000)
  : > "$work/cycles"
  for _ in $(seq "$runs"); do
    log=$(taskset -c 1 dpdk-test-fib "${eal[@]}" -- "${opts[@]}" 2>&1)
    tsc_khz=$(grep -oP 'TSC frequency is ~\K[0-9]+' <<<"$log")
    grep -oP 'AVG FIB lookup \K[0-9.]+' <<<"$log" >> "$work/cycles"
  done
  cycles=$(median < "$work/cycles")
  python3 - "$pearl" "$cycles" "$tsc_khz" "$runs" <<'PY' | tee -a "$out"
import json, sys
pearl, cycles, khz, runs = json.loads(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
dpdk_ns = cycles / (khz / 1e6)
print(json.dumps({
    "bench": "lpm_vs_dpdk", "family": pearl["family"], "prefixes": pearl["prefixes"],
    "ops": pearl["ops"], "runs": runs, "order": pearl["order"],
    "pearl_mops": pearl["mops"], "pearl_ns_per_op": pearl["ns_per_op"],
    "pearl_table_bytes": pearl["table_bytes"], "pearl_build_s": pearl["build_s"],
    "dpdk_cycles_per_lookup": cycles, "dpdk_ns_per_op": round(dpdk_ns, 3),
    "dpdk_mops": round(1e3 / dpdk_ns, 3), "ratio": round(pearl["mops"] * dpdk_ns / 1e3, 3),
}))
PY
done
