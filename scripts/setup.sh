#!/usr/bin/env bash
# Installs what PEARL needs on a fresh Debian 12 machine (as root) and builds it in release mode.
# Safe to run again: it only installs what is missing.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

apt_packages=(build-essential pkg-config iproute2 iputils-ping ethtool tcpdump python3 python3-pip python3-pytest
              python3-scapy dpdk frr bird2 gobgpd man-db chromium chromium-driver nftables iperf3 thc-ipv6 ipv6toolkit tshark clang lld libbpf-dev dpkg-dev lintian
              etcd-server etcd-client)
missing=()
for p in "${apt_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if (( ${#missing[@]} )); then
    echo "setup: installing ${missing[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q "${missing[@]}"
    # Debian starts a host-wide BIRD on install; pearld runs one per VR that names it.
    if [[ " ${missing[*]} " == *" bird2 "* ]] && command -v systemctl >/dev/null; then
        systemctl disable --now bird 2>/dev/null || true
    fi
fi

if ! command -v cargo >/dev/null; then
    [ -x "$HOME/.cargo/bin/cargo" ] || {
        echo "setup: installing the Rust toolchain with rustup" >&2
        apt-get install -y -q rustup 2>/dev/null || apt-get install -y -q cargo
        command -v rustup >/dev/null && rustup default stable
    }
    export PATH="$HOME/.cargo/bin:$PATH"
fi
# The test command's gates: formatting and lints.
if ! cargo fmt --version >/dev/null 2>&1 || ! cargo clippy --version >/dev/null 2>&1; then
    echo "setup: installing rustfmt and clippy" >&2
    if command -v rustup >/dev/null; then
        rustup component add rustfmt clippy
    else
        apt-get install -y -q rustfmt rust-clippy
    fi
fi

python3 -c "import pytest, scapy, schemathesis, prometheus_client, selenium, openapi_spec_validator, matplotlib" 2>/dev/null \
    || python3 -m pip install -q pytest scapy schemathesis prometheus_client selenium openapi-spec-validator matplotlib
cargo build --release --workspace --all-targets
# Plugin VRs' examples and tests: WebAssembly modules (docs/PLUGINS.md).
if ! command -v rustup >/dev/null; then
    apt-get install -y -q libstd-rust-dev-wasm32 || true
fi
bash scripts/build-plugins.sh >/dev/null
