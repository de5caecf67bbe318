#!/usr/bin/env bash
# Model-checks the TransferQueue with loom (every interleaving within the
# bounds the tests set). The queue (src/queue/, which imports nothing else
# of tqfwd) is built as a crate of its own, crates/queue-loom, whose only
# dependencies are loom and crossbeam-utils: `--cfg loom` then rebuilds a
# handful of crates, not tqfwd's whole dependency graph. Separate target
# dir: --cfg loom changes every crate's build.
set -euo pipefail
cd "$(dirname "$0")/../crates/queue-loom"
start=$(date +%s)
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=../../target/loom-queue cargo test --release --locked --lib loom:: -- --test-threads=1
echo "loom: $(( $(date +%s) - start )) s"
