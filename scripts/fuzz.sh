#!/usr/bin/env bash
# Fuzzes each target with libFuzzer for SECONDS (default 60) each: the header extractor
# (extract), the YAML configuration parser with its filter-rule grammar (config), the API's
# request framing (api_request) and JSON body validation (api_body), routed's netlink decoder
# (netlink), the pcap reader (pcap) and the eBPF object loader and interpreter (xdp_object). TARGET... picks some; EXTRA... goes to libFuzzer
# (e.g. -runs=10000000 for an offline run).
#
#   scripts/fuzz.sh [SECONDS] [TARGET...] [-- EXTRA...]
#
# Seeds come from fuzz/corpus/TARGET (committed, read-only here); inputs libFuzzer finds go to a
# scratch directory that is deleted on exit, so the committed corpus stays small and reviewed.
# FUZZ_SANITIZER=none (or thread, memory) replaces AddressSanitizer, for long offline runs of a
# target that ASan slows most (config: its YAML parser allocates per node).
# Exits non-zero on a crash (the reproducer is kept in fuzz/artifacts/TARGET/) and ends with a
# one-line summary per target either way.
#
# Toolchain: cargo-fuzz needs nightly for -Zsanitizer=address. With rustup's nightly installed
# we use `cargo +nightly`; otherwise (no rustup, or nightly not installable offline) stable runs
# with RUSTC_BOOTSTRAP=1, which unlocks the same -Z flags; stable ships the ASan runtime too.
set -euo pipefail

seconds=${1:-60}
[[ $seconds =~ ^[0-9]+$ ]] || { echo "usage: $0 [SECONDS] [TARGET...] [-- EXTRA...]" >&2; exit 2; }
shift || true
targets=()
while [[ $# -gt 0 && $1 != -- ]]; do targets+=("$1"); shift; done
[[ ${1:-} == -- ]] && shift
extra=("$@")
(( ${#targets[@]} )) || targets=(extract config api_request api_body netlink pcap xdp_object)

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

fuzz_one() {
    local target=$1 log="$scratch/$1.log" status=0
    [[ -d fuzz/corpus/$target ]] || { echo "fuzz $target: no such target (fuzz/corpus/$target)" >&2; return 2; }
    mkdir "$scratch/$target"
    cargo "${toolchain[@]}" fuzz run -s "${FUZZ_SANITIZER:-address}" "$target" "$scratch/$target" "fuzz/corpus/$target" -- \
        -max_total_time="$seconds" "${extra[@]}" 2>&1 | tee "$log" || status=$?

    # libFuzzer's last words: "Done <runs> runs in <secs> second(s)" on a clean finish.
    local runs secs found seeds artifact
    runs=$(sed -nE 's/^Done ([0-9]+) runs in ([0-9]+) second.*/\1/p' "$log" | tail -n1)
    secs=$(sed -nE 's/^Done ([0-9]+) runs in ([0-9]+) second.*/\2/p' "$log" | tail -n1)
    found=$(find "$scratch/$target" -type f | wc -l)
    seeds=$(find "fuzz/corpus/$target" -type f | wc -l)
    if [[ $status -ne 0 || -z $runs ]]; then
        artifact=$(grep -oE "fuzz/artifacts/$target/[^ ]+" "$log" | tail -n1 || true)
        summary+=("fuzz $target: FAILED (exit $status) ${artifact:+- reproducer $artifact}")
        return 1
    fi
    summary+=("fuzz $target: ok - $runs runs in ${secs}s ($((runs / (secs > 0 ? secs : 1))) execs/s), $seeds seeds, $found new inputs (discarded)")
}

summary=()
failed=0
for t in "${targets[@]}"; do
    fuzz_one "$t" || failed=1
done
printf '%s\n' "${summary[@]}"
exit "$failed"
