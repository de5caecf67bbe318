#!/usr/bin/env bash
# Model-checks the TransferQueue with loom (every interleaving within the
# bounds the tests set). Separate target dir: --cfg loom rebuilds everything.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test --release --lib queue::loom -- --test-threads=1
echo "loom: $(( $(date +%s) - start )) s"
