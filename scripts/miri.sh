#!/usr/bin/env bash
# Runs the TransferQueue's unit, stress and drop-counting tests under Miri
# (undefined behaviour, data races, leaks), with reduced counts under
# cfg(miri). Needs a nightly toolchain with the miri and rust-src
# components (`rustup toolchain install nightly --component miri,rust-src`);
# not part of CI, whose machine has only stable. Only `queue::` runs: the
# rest of the crate calls DPDK through FFI, which Miri cannot execute.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! cargo +nightly miri --version >/dev/null 2>&1; then
    echo "miri: no nightly toolchain with miri here (rustup toolchain install nightly --component miri,rust-src)" >&2
    exit 1
fi
CARGO_TARGET_DIR=target/miri cargo +nightly miri test --lib queue:: "$@"
MIRIFLAGS=-Zmiri-tree-borrows CARGO_TARGET_DIR=target/miri cargo +nightly miri test --lib queue:: "$@"
