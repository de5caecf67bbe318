#!/usr/bin/env bash
# Fuzzes the frame parser (wire::parse / flow_hash / rewrite_macs), the
# pcap reader and the route file parser (config::routes::parse and diff)
# with cargo-fuzz (libFuzzer + AddressSanitizer), SECONDS per target
# (default 150). Not part of CI: scripts/test.sh only replays the
# regression frames in tests/data (tests/hostile.rs).
#
#   scripts/fuzz.sh [SECONDS]
#
# Needs a nightly toolchain and cargo-fuzz; installs them when missing.
# New inputs go to fuzz/work/<target> (ignored by git); the committed seeds
# in fuzz/corpus/<target> are only read (regenerate them with
# `cargo test --release --features testkit --test suite hostile::write_fuzz_seed_corpus -- --ignored`).
# A crash leaves fuzz/artifacts/<target>/crash-* and makes this script exit
# 1. For a parse crash: fix the parser, then keep the input as
# tests/data/<what>.<class>.bin (class = what parse must return:
# udp tcp other_ip non_ip malformed runt) so `cargo test` replays it.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_TARGET="${1:-150}"

if ! rustup run nightly rustc --version >/dev/null 2>&1; then
    rustup toolchain install nightly --profile minimal
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz
fi

cargo +nightly fuzz build --fuzz-dir fuzz

declare -A MAX_LEN=([parse]=2048 [pcap_reader]=8192 [routes]=4096)
status=0
for target in parse pcap_reader routes; do
    mkdir -p "fuzz/work/$target" "fuzz/artifacts/$target"
    log="fuzz/work/$target.log"
    echo "== $target: ${SECONDS_PER_TARGET} s (log $log)"
    set +e
    cargo +nightly fuzz run --fuzz-dir fuzz "$target" "fuzz/work/$target" "fuzz/corpus/$target" -- \
        -max_total_time="$SECONDS_PER_TARGET" -max_len="${MAX_LEN[$target]}" -timeout=10 \
        -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="fuzz/artifacts/$target/" >"$log" 2>&1
    rc=$?
    set -e
    grep -E '^Done [0-9]+ runs|stat::number_of_executed_units|stat::peak_rss_mb|^#[0-9]+.*DONE' "$log" || tail -n 5 "$log"
    crashes=$(find "fuzz/artifacts/$target" -type f \( -name 'crash-*' -o -name 'oom-*' -o -name 'timeout-*' -o -name 'leak-*' \) | wc -l)
    echo "   exit $rc, corpus $(find "fuzz/work/$target" -type f | wc -l) new + $(find "fuzz/corpus/$target" -type f | wc -l) seeds, artifacts $crashes"
    if [ "$rc" -ne 0 ] || [ "$crashes" -ne 0 ]; then
        status=1
        grep -E 'panicked|ERROR: |SUMMARY' "$log" | head -n 20 || true
        find "fuzz/artifacts/$target" -type f
    fi
done
exit $status
