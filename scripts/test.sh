#!/usr/bin/env bash
# The test command (README, .ci/run): installs what is missing, reserves
# huge pages where the machine allows (tests fall back to --no-huge -m 512
# otherwise), checks formatting and lints, builds, runs every test on
# software PMDs, then the loom model checks of the TransferQueue.
# At the end, also when a phase fails, it prints each phase's seconds.
set -euo pipefail
cd "$(dirname "$0")/.."

phases=()
current=""
started=$SECONDS
phase_start=$SECONDS
report() {
    local rc=$?
    [ -n "$current" ] && phases+=("$(printf '%5d s  %s (FAILED, exit %d)' $((SECONDS - phase_start)) "$current" "$rc")")
    echo "test.sh: phase times"
    printf '  %s\n' "${phases[@]}"
    printf '%5d s  total\n' $((SECONDS - started)) | sed 's/^/  /'
}
trap report EXIT
# phase NAME CMD...: runs CMD and records its seconds under NAME.
phase() {
    current=$1
    phase_start=$SECONDS
    shift
    "$@"
    phases+=("$(printf '%5d s  %s' $((SECONDS - phase_start)) "$current")")
    current=""
}

phase "install-deps" scripts/install-deps.sh
phase "hugepages" bash -c 'scripts/hugepages.sh setup 512 || true'
phase "fmt" cargo fmt --check
phase "clippy (all targets, all features)" cargo clippy --all-targets --all-features -- -D warnings
# The forwarder as users build it (no testkit, no dev-dependencies).
phase "clippy (lib, bins)" cargo clippy --lib --bins -- -D warnings
# One release build for the binaries and the tests: the same command and
# features twice, so the second step compiles nothing (a plain `cargo
# build` resolves dependency features without the dev-dependencies and
# would make `cargo test` rebuild the crate graph).
phase "build (release, testkit)" cargo test --release --features testkit --no-run
# Forwarding tests start the tqfwd binary one at a time (they hold a lock);
# the binaries' own unit tests run in parallel.
phase "cargo test" cargo test --release --features testkit
phase "loom" scripts/loom.sh
# The Debian package (built from the release build above, lintian,
# installed, removed, purged) and the links of the Markdown docs.
phase "package test" scripts/test-package.sh
phase "link check" scripts/check-links.sh
# The mixed-operations soak, short (docs/soak.md; the hour: --minutes 60).
phase "soak (60 s)" scripts/soak.sh --seconds 60
