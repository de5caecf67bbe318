#!/usr/bin/env bash
# The test command (README, .ci/run): installs what is missing, reserves
# huge pages where the machine allows (tests fall back to --no-huge -m 512
# otherwise), checks formatting and lints, builds, runs every test on
# software PMDs, then the loom model checks of the TransferQueue.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/hugepages.sh setup 512 || true
cargo fmt --check
cargo clippy --all-targets --all-features -- -D warnings
# The forwarder as users build it (no testkit, no dev-dependencies).
cargo clippy --lib --bins -- -D warnings
# One release build for the binaries and the tests: the same command and
# features twice, so the second step compiles nothing (a plain `cargo
# build` resolves dependency features without the dev-dependencies and
# would make `cargo test` rebuild the crate graph).
cargo test --release --features testkit --no-run
# Forwarding tests start the tqfwd binary one at a time (they hold a lock);
# the binaries' own unit tests run in parallel.
cargo test --release --features testkit
scripts/loom.sh
# The Debian package (built from the release build above, lintian,
# installed, removed, purged) and the links of README.md and docs/.
scripts/test-package.sh
scripts/check-links.sh
# The mixed-operations soak, short (docs/soak.md; the hour: --minutes 60).
scripts/soak.sh --seconds 60
