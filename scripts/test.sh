#!/usr/bin/env bash
# Runs every test of the repository: formatting and lint gates, Rust unit, property and
# integration tests (release mode: some load the full BGP table), a bounded fuzzing run of each
# fuzz target (10 s each: the header extractor, config parser, API framing and body validation,
# netlink decoder, pcap reader, eBPF object loader), and the Python system tests that drive the binaries as a user would. Needs ../shared/data beside the clone
# (or PEARL_BGP_TABLE pointing at the table).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$HOME/.cargo/bin:$PATH"
# The tests' build skips thin LTO and debug line tables: on 2 cores that takes the workspace
# build from about 11.5 to 4 minutes, and neither changes what the binaries do. Benchmarks want
# setup.sh's own build (`bash scripts/setup.sh` alone), which cargo redoes when the profile
# differs from the last build's.
export CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_DEBUG=0

bash scripts/setup.sh
# Gates: the code as rustfmt.toml formats it, no two files of a crate importing each other in a
# circle, and no lint warning (an exception is an `#[expect(clippy::…, reason = "…")]` at the
# place it applies).
cargo fmt --check
python3 scripts/module_cycles.py
cargo clippy --release --workspace --all-targets -q -- -D warnings
# The dependencies' licences, sources and duplicate versions (deny.toml); advisories where the
# RustSec database can be fetched. cargo-deny installs from the registry mirror with
# `cargo install cargo-deny --locked` (14.5 min on 2 busy cores), so it is run when present.
if command -v cargo-deny >/dev/null; then
    cargo deny --offline check licenses bans sources
else
    echo "test: no cargo-deny (cargo install cargo-deny --locked): licences and sources are not checked" >&2
fi
cargo test --release --workspace
# Miri over the RCU cell (lookup/src/rcu.rs): its weak-memory model finds a read section that
# a writer does not wait for, or a version freed under a reader. About 20 s once Miri's sysroot
# and the crate's dependencies are built for it (2 min the first time). The slow-path ring's
# tests spin on their positions, which takes Miri over 10 minutes: it is left out.
if cargo +nightly miri --version >/dev/null 2>&1; then
    cargo +nightly miri test -q -p pearl-lookup --lib rcu
else
    echo "test: no Miri (rustup component add --toolchain nightly miri rust-src): the RCU cell is not checked under it" >&2
fi
bash scripts/fuzz.sh "${PEARL_FUZZ_SECONDS:-10}"

# pytest exits 5 when it collects nothing: that must fail, not pass silently.
status=0
# The slowest tests are listed, so that the run can be kept under 30 minutes.
python3 -m pytest -q --durations=25 tests/system || status=$?
if (( status == 5 )); then
    echo "test: pytest collected no tests" >&2
    exit 1
fi
exit "$status"
