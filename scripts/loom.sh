#!/usr/bin/env bash
# Model-checks the TransferQueue with loom (every interleaving within the
# bounds the tests set). Separate target dir: --cfg loom rebuilds everything;
# the loom profile (Cargo.toml) skips LTO, which the models do not need.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test --profile loom --lib queue::loom -- --test-threads=1
echo "loom: $(( $(date +%s) - start )) s"
