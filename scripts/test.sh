#!/usr/bin/env bash
# The test command (README, .ci/run): installs what is missing, reserves
# huge pages where the machine allows (tests fall back to --no-huge -m 512
# otherwise), checks formatting and lints, builds, runs every test on
# software PMDs with the loom model checks of the TransferQueue and the
# package test beside them, then the link check and a short soak.
# At the end, also when a phase fails, it prints each phase's seconds.
set -euo pipefail
cd "$(dirname "$0")/.."

mkdir -p target/test-logs
phases=()
current=""
started=$SECONDS
phase_start=$SECONDS
loom_pid=""
package_pid=""
clippy_pid=""
report() {
    local rc=$?
    # A phase failed while the background jobs ran: the model checks are
    # stopped (their process group), the package test, which cleans up
    # after itself, is waited for.
    [ -n "$loom_pid" ] && kill -- -"$loom_pid" 2>/dev/null
    [ -n "$package_pid" ] && wait "$package_pid" 2>/dev/null
    [ -n "$clippy_pid" ] && kill "$clippy_pid" 2>/dev/null
    [ -n "$current" ] && phases+=("$(printf '%5d s  %s (FAILED, exit %d)' $((SECONDS - phase_start)) "$current" "$rc")")
    echo "test.sh: phase times"
    printf '  %s\n' "${phases[@]}"
    printf '%5d s  total\n' $((SECONDS - started)) | sed 's/^/  /'
}
trap report EXIT
# CPU seconds (user + system) of the children waited for so far, from
# `times`, which must run in this shell (in a pipeline or `$(...)` it would
# report a subshell's children: none): a phase's CPU share does not depend
# on what else the machine runs, its wall time does.
cpu_seconds() {
    awk 'NR == 2 {
        split($1, u, /[ms]/); split($2, s, /[ms]/)
        printf "%d", u[1] * 60 + u[2] + s[1] * 60 + s[2]
    }' target/test-logs/times
}
# phase NAME CMD...: runs CMD and records its seconds (wall, CPU) under NAME.
phase() {
    current=$1
    phase_start=$SECONDS
    local cpu_start
    times >target/test-logs/times
    cpu_start=$(cpu_seconds)
    shift
    "$@"
    times >target/test-logs/times
    phases+=("$(printf '%5d s  %s (CPU %d s)' $((SECONDS - phase_start)) "$current" $(($(cpu_seconds) - cpu_start)))")
    current=""
}

phase "install-deps" scripts/install-deps.sh
phase "hugepages" bash -c 'scripts/hugepages.sh setup 512 || true'
phase "fmt" cargo fmt --check
phase "clippy (all targets, all features)" cargo clippy --all-targets --all-features -- -D warnings
# One release build for the binaries and the tests: the same command and
# features twice, so the second step compiles nothing (a plain `cargo
# build` resolves dependency features without the dev-dependencies and
# would make `cargo test` rebuild the crate graph).
phase "build (release, testkit)" cargo test --release --features testkit --no-run
# Beside the cargo tests, niced so that they take only the CPU the
# forwarders leave (a forwarder busy-polls both lcores; a test's start, its
# waits and the tests that start no forwarder leave gaps): the loom model
# checks of the TransferQueue (src/queue/ alone, crates/queue-loom, built
# under --cfg loom: about 40 CPU-seconds) and the
# Debian package's test (built from the release build above, lintian,
# installed, removed, purged). Each writes its output to a log, printed
# when it is waited for.
# (`set -m`: the model checks get a process group of their own, which the
# EXIT trap can stop; not `setsid`, whose new session would be a scheduler
# autogroup of its own, with a fair share against the forwarders whatever
# its nice value.)
set -m
nice -n 19 scripts/loom.sh >target/test-logs/loom.log 2>&1 &
loom_pid=$!
set +m
nice -n 19 scripts/test-package.sh >target/test-logs/package.log 2>&1 &
package_pid=$!
# The forwarder as users build it (no testkit, no dev-dependencies):
# clippy without the test features, beside the tests too.
nice -n 19 cargo clippy --lib --bins -- -D warnings >target/test-logs/clippy-lib.log 2>&1 &
clippy_pid=$!
# bg NAME PID LOG: waits for a job started above and prints its log.
bg() {
    local rc=0
    wait "$2" || rc=$?
    cat "$3"
    [ "$1" = loom ] && loom_pid=""
    [ "$1" = package ] && package_pid=""
    [ "$1" = clippy ] && clippy_pid=""
    return "$rc"
}
# The end-to-end tests (tests/suite.rs: one binary) start the tqfwd binary
# one at a time (they hold a lock); the others run beside them.
phase "cargo test" cargo test --release --features testkit
phase "loom (rest of it, after the cargo tests)" bg loom "$loom_pid" target/test-logs/loom.log
phase "package test (rest of it)" bg package "$package_pid" target/test-logs/package.log
phase "clippy (lib, bins; rest of it)" bg clippy "$clippy_pid" target/test-logs/clippy-lib.log
# No import cycle between the files of src/ (README, "Layout").
phase "import cycles" scripts/check-imports.sh
# The links of the Markdown docs.
phase "link check" scripts/check-links.sh
# The mixed-operations soak, short (docs/soak.md; the hour: --minutes 60).
phase "soak (60 s)" scripts/soak.sh --seconds 60
