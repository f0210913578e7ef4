#!/usr/bin/env bash
# Installs what PEARL needs, builds it, and shows it at work: the fast-path core on the real
# 2025 BGP table (IPv4 and IPv6 FIBs: build time, memory, lookup and update rates; the VR
# classifier), then three VRs of the three kinds between host namespaces, with live stats and
# the dashboard (scripts/demo_network.py; DEMO_SECONDS, default 20, 0 = until Ctrl-C).
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
} | python3 scripts/demo_table.py

# The daemon at work: real packets from host namespaces through three VRs of three kinds.
echo
python3 scripts/demo_network.py
