#!/usr/bin/env bash
# The unarmed packet trace's cost: `pearl-bench pipeline` (64-byte IPv4, full BGP table, 1 VR)
# of a build with the trace compiled in against the same benchmark of a build without it, runs
# alternating on one core, so that both see the same machine, and which goes first alternating
# by round (a build always second was measured up to 3 % slower on a busy machine: order, not
# build). Prints one JSON line per run; `cpu_share` is the share of the run the worker had a CPU.
# usage: bench/trace-zero-cost.sh BEFORE_BENCH AFTER_BENCH [ROUNDS] [CORE]
set -euo pipefail
before=$1 after=$2 rounds=${3:-3} core=${4:-1}
table=${TABLE:-$(dirname "$0")/../../shared/data/bgp-full-table-2025.txt.gz}
for r in $(seq "$rounds"); do
    order="before after"
    [ $((r % 2)) = 0 ] && order="after before"
    for build in $order; do
        bin=$before
        [ "$build" = after ] && bin=$after
        line=$(taskset -c "$core" "$bin" pipeline --table "$table" --family v4 --vrs 1 --destinations 65536 --seconds 3 --repeat 1)
        echo "{\"round\": $r, \"build\": \"$build\", \"figure\": $line}"
    done
done
