#!/usr/bin/env bash
# Fuzzes pearl-wire's header extractor with libFuzzer for SECONDS (default 60).
#
#   scripts/fuzz.sh [SECONDS]
#
# Seeds come from fuzz/corpus/extract (committed, read-only here); inputs libFuzzer finds go to a
# scratch directory that is deleted on exit, so the committed corpus stays small and reviewed.
# Exits non-zero on a crash (the reproducer is kept in fuzz/artifacts/extract/) and ends with a
# one-line summary either way.
#
# Toolchain: cargo-fuzz needs nightly for -Zsanitizer=address. With rustup's nightly installed
# we use `cargo +nightly`; otherwise (no rustup, or nightly not installable offline) stable runs
# with RUSTC_BOOTSTRAP=1, which unlocks the same -Z flags; stable ships the ASan runtime too.
set -euo pipefail

seconds=${1:-60}
[[ $seconds =~ ^[0-9]+$ ]] || { echo "usage: $0 [SECONDS]" >&2; exit 2; }

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz.sh: installing cargo-fuzz" >&2
    cargo install cargo-fuzz --locked
fi

toolchain=()
if cargo +nightly --version >/dev/null 2>&1; then
    toolchain=(+nightly)
else
    echo "fuzz.sh: no nightly toolchain; using stable with RUSTC_BOOTSTRAP=1" >&2
    export RUSTC_BOOTSTRAP=1
fi

scratch=$(mktemp -d "${TMPDIR:-/tmp}/pearl-fuzz.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
log="$scratch/libfuzzer.log"
mkdir "$scratch/corpus"

status=0
cargo "${toolchain[@]}" fuzz run extract "$scratch/corpus" fuzz/corpus/extract -- \
    -max_total_time="$seconds" 2>&1 | tee "$log" || status=$?

# libFuzzer's last words: "Done <runs> runs in <secs> second(s)" on a clean finish.
runs=$(sed -nE 's/^Done ([0-9]+) runs in ([0-9]+) second.*/\1/p' "$log" | tail -n1)
secs=$(sed -nE 's/^Done ([0-9]+) runs in ([0-9]+) second.*/\2/p' "$log" | tail -n1)
found=$(find "$scratch/corpus" -type f | wc -l)
seeds=$(find fuzz/corpus/extract -type f | wc -l)

if [[ $status -ne 0 || -z $runs ]]; then
    artifact=$(grep -oE 'fuzz/artifacts/extract/[^ ]+' "$log" | tail -n1 || true)
    echo "fuzz extract: FAILED (exit $status) ${artifact:+- reproducer $artifact}"
    (( status != 0 )) || status=1
    exit "$status"
fi
echo "fuzz extract: ok - $runs runs in ${secs}s ($((runs / (secs > 0 ? secs : 1))) execs/s), $seeds seeds, $found new inputs (discarded)"
