#!/usr/bin/env bash
# Builds the example plugins (examples/plugins/*: Rust crates, and c/*.c with clang against the
# C header crates/plugin-sdk/c/pearl_plugin.h, as pearl_plugin_c_NAME.wasm) for wasm32 into
# target/plugins/, the wire natively in C and Rust (target/plugins/native/, process
# plugins) and the XDP examples as eBPF objects (target/plugins/xdp/); prints
# where the modules are. Installs the wasm32 target with rustup if it is missing (without
# rustup, Debian's libstd-rust-dev-wasm32 provides it: scripts/setup.sh).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if command -v rustup >/dev/null && ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
    rustup target add wasm32-unknown-unknown
fi
out="$PWD/target/plugins/wasm32-unknown-unknown/release"
for dir in examples/plugins/*/; do
    [[ -f "$dir/Cargo.toml" ]] || continue
    CARGO_TARGET_DIR="$PWD/target/plugins" cargo build -q --release --target wasm32-unknown-unknown --manifest-path "$dir/Cargo.toml"
done
mkdir -p "$out"
for c in examples/plugins/c/*.c; do
    clang --target=wasm32 -O2 -Wall -Wextra -Werror -nostdlib -I crates/plugin-sdk/c -Wl,--no-entry \
        -o "$out/pearl_plugin_c_$(basename "$c" .c).wasm" "$c"
done
# The wire and the LPM router built natively too, in C and in Rust, as process plugins (their
# route lookups are calls to pearld through the memory they share with it).
mkdir -p target/plugins/native
for c in wire lpm; do
    cc -O2 -Wall -Wextra -Werror -I crates/plugin-sdk/c -o "target/plugins/native/pearl_plugin_c_$c" "examples/plugins/c/$c.c"
    CARGO_TARGET_DIR="$PWD/target/plugins" cargo build -q --release --features process --bin "$c-process" \
        --manifest-path "examples/plugins/$c/Cargo.toml"
    cp "target/plugins/release/$c-process" "target/plugins/native/pearl_plugin_$c"
done
# XDP programs (examples/xdp) as eBPF objects, as a user builds them with clang and libbpf's
# headers.
mkdir -p target/plugins/xdp
for c in examples/xdp/*.c; do
    clang -O2 -g -Wall -Werror -target bpf -I "/usr/include/$(gcc -dumpmachine)" -c "$c" -o "target/plugins/xdp/$(basename "$c" .c).o"
done
echo "$out"
