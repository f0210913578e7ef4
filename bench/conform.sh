#!/usr/bin/env bash
# Differential conformance, full run: the Linux router (twice, to set aside anything it answers
# differently from one run to the next) and pearld with every VR kind (fast, kernel, shared) on
# every port driver that runs on veth (af_packet, af_xdp, af_xdp with rx: af_packet), each on
# a fresh two-host topology: 267 named cases, 10,000 generated packets (seeded), and the ICMP
# rate-limit flood. Writes docs/benchmarks/conformance.json and conformance.md and the table in
# docs/CONFORMANCE.md. Root. Exits 1 when a difference is not in
# tests/conformance/deviations.yaml.
#
#   bench/conform.sh [SEED] [GENERATED]
#   defaults:         21     10000
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
seed=${1:-21}
generated=${2:-10000}
[[ -x target/release/pearld ]] || cargo build --release -q -p pearld -p pearlctl
mkdir -p docs/benchmarks
PYTHONPATH=tests exec python3 -m conformance --full --seed "$seed" --generated "$generated" \
    --json docs/benchmarks/conformance.json --md docs/benchmarks/conformance.md --doc docs/CONFORMANCE.md
