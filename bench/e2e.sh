#!/usr/bin/env bash
# End to end on veth: generator namespace → router → sink namespace, pearld against the Linux
# kernel router on the same topology with the same generator, back to back in each repetition.
# Writes docs/benchmarks/e2e.json (one figure per line) and docs/benchmarks/e2e.md. Needs root.
#
#   bench/e2e.sh [RUNS] [SECONDS] [SIZES] [VRS] [DRIVER] [FAMILY] [RX]
#   defaults:     3      3         ""       1,2,3,4  af_xdp    v4       DRIVER
# SIZES "" is each family's default (64,512,1518 for v4, 78,512,1518 for v6); DRIVER is pearld's
# ports (af_xdp or af_packet); FAMILY is v4, v6 or a list (v4,v6), run one after the other into
# the same files; RX is how af_xdp ports receive (`rx` in pearld's config: af_xdp or af_packet).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
seconds=${2:-3}
sizes=${3:-}
vrs=${4:-1,2,3,4}
driver=${5:-af_xdp}
families=${6:-v4}
rx=${7:-$driver}
target=${CARGO_TARGET_DIR:-target}
cargo build --release -q -p pearld -p pearl-bench
json=docs/benchmarks/e2e.json
mkdir -p docs/benchmarks

. bench/e2e-run.sh
size_args=()
if [[ -n $sizes ]]; then
    size_args=(--sizes "$sizes")
fi
# One JSON per family, joined once all succeeded, so that an interrupted run leaves no mix behind.
parts=$(mktemp -d)
trap 'rm -rf "$parts"' EXIT
for family in ${families//,/ }; do
    e2e_run "$parts/$family.json" --family "$family" "${size_args[@]}" --vrs "$vrs" --seconds "$seconds" --repeat "$runs" --driver "$driver" --rx "$rx"
done
for family in ${families//,/ }; do
    cat "$parts/$family.json"
done > "$json"

python3 bench/e2e_report.py "$json" "$runs" "$seconds" "$sizes" "$vrs" "$driver" "$families" "$rx" "$(machine_description)" \
    > docs/benchmarks/e2e.md
cat docs/benchmarks/e2e.md
