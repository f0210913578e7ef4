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
} | python3 scripts/demo_table.py

# The daemon at work: real packets from host namespaces through two VRs.
echo
python3 scripts/demo_network.py
