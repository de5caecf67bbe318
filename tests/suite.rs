//! The end-to-end tests, one module per file of `tests/`, built as this one
//! test binary (`Cargo.toml`: `autotests = false`): a release test binary
//! costs its own thin-LTO link, ~30 s each, so eighteen binaries cost
//! minutes of build for nothing. One process also means one
//! `common::serial()` lock for every test that starts a forwarder: they
//! run one at a time, while the tests that start none run beside them.
//!
//! A new `tests/NAME.rs` is added below as `mod NAME;`
//! (`every_test_file_is_a_module` fails until it is). Run one file's tests
//! with `cargo test --release --features testkit --test suite NAME::`.

mod common;

mod bounded;
mod capture;
mod config_file;
mod control;
mod exposition;
mod faults;
mod forward;
mod hostile;
mod layouts;
mod metrics;
mod metrics_server;
mod multiseg;
mod overload;
mod peers;
mod prometheus;
mod queue_api;
mod reload;
mod routes;
mod routes_kernel;
mod signals;
mod systemd;
mod telemetry;
mod usage;

/// Every `tests/*.rs` file is declared above: Cargo builds no other test
/// binary, so a file left out would never run.
#[test]
fn every_test_file_is_a_module() {
    let declared: Vec<&str> = include_str!("suite.rs")
        .lines()
        .filter_map(|l| l.strip_prefix("mod ")?.strip_suffix(';'))
        .collect();
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("tests/") {
        let path = entry.expect("tests/ entry").path();
        let Some(stem) = path.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        if path.extension().is_some_and(|e| e == "rs")
            && stem != "suite"
            && !declared.contains(&stem)
        {
            missing.push(stem.to_string());
        }
    }
    assert!(
        missing.is_empty(),
        "tests/suite.rs does not declare {missing:?}"
    );
}

/// The binaries built with `test = false` (Cargo.toml) hold no unit test:
/// `cargo test` builds no harness for them, so a test there would never run.
#[test]
fn binaries_without_a_test_harness_hold_no_test() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("src/main.rs"), root.join("src/bin/tqfwd-gen.rs")];
    for entry in std::fs::read_dir(root.join("src/bin/tqfwd-queue-bench")).expect("bench dir") {
        files.push(entry.expect("bench dir entry").path());
    }
    for file in files {
        let text = std::fs::read_to_string(&file).expect("binary source");
        assert!(
            !text.contains("#[test]") && !text.contains("cfg(test)"),
            "{} holds a test: its [[bin]] in Cargo.toml needs `test = true`",
            file.display()
        );
    }
}
