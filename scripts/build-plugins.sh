#!/usr/bin/env bash
# Builds the example plugins (examples/plugins/*) for wasm32 into target/plugins/; prints
# where the modules are. Installs the wasm32 target with rustup if it is missing (without
# rustup, Debian's libstd-rust-dev-wasm32 provides it: scripts/setup.sh).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if command -v rustup >/dev/null && ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
    rustup target add wasm32-unknown-unknown
fi
for dir in examples/plugins/*/; do
    CARGO_TARGET_DIR="$PWD/target/plugins" cargo build -q --release --target wasm32-unknown-unknown --manifest-path "$dir/Cargo.toml"
done
echo "$PWD/target/plugins/wasm32-unknown-unknown/release"
