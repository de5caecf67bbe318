//! `tqfwd [EAL options] -- [options]`: parses the application options and
//! the `--config` file (before EAL, so `--help`, `--completions`, `--man`
//! and bad files need no DPDK), initialises EAL, runs the
//! forwarder, prints the summary, writes `--stats-json`.
//!
//! Exit codes: 0 = forwarded and both end checks held (conservation,
//! 0 mbufs in use); 1 = a check failed or DPDK failed at run time;
//! 2 = usage error (bad EAL or application arguments, impossible layout).

#![forbid(unsafe_code)]

use std::io::Write;
use std::process::ExitCode;
use tqfwd::config::cli::{self, split_args};
use tqfwd::config::invocation::{parse_invocation, ParseOutcome};
use tqfwd::dpdk::{self, Eal};
use tqfwd::report::capture::{CaptureFile, CaptureFileError};
use tqfwd::report::metrics::{BindError, MetricsListener};
use tqfwd::report::output::{check_distinct, OutputError, OutputFile, WRITE_STALL_LIMIT};
use tqfwd::report::stats::Report;

/// One line on stderr; the exit code: 2 for a usage error, 1 otherwise.
fn fail(code: u8, msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("tqfwd: error: {msg}");
    ExitCode::from(code)
}

fn usage_error(msg: impl std::fmt::Display) -> ExitCode {
    fail(2, msg)
}

/// Prints `--help`, `--completions` or `--man` text: exit 0, or 1 with one
/// line when stdout cannot take it (a full disk); a reader that closed the
/// pipe early is not an error.
fn print_text(text: &str) -> ExitCode {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tqfwd: error: stdout: {e}");
            ExitCode::from(1)
        }
    }
}

/// What is opened before EAL, so that a path or address that cannot be
/// used is a usage error before anything runs. A file an open creates is
/// removed again when the run ends before writing it (their `Drop`), so
/// a run refused after EAL leaves nothing behind.
struct Outputs {
    stats_json: Option<OutputFile>,
    /// An address in use fails here.
    metrics: Option<MetricsListener>,
    captures: Vec<CaptureFile>,
}

/// An output named by an option that cannot be used: a usage error.
#[derive(Debug, thiserror::Error)]
enum OutputsError {
    #[error(transparent)]
    File(#[from] OutputError),
    #[error(transparent)]
    Metrics(#[from] BindError),
    #[error(transparent)]
    Capture(#[from] CaptureFileError),
}

impl Outputs {
    fn open(opts: &cli::Options) -> Result<Outputs, OutputsError> {
        // Before any is created: one file named twice would be written by
        // two writers, one silently losing to the other.
        let named: Vec<(String, &std::path::Path)> = opts
            .capture
            .iter()
            .map(|(port, p)| (format!("--capture {port}:{}", p.display()), p.as_path()))
            .chain(
                opts.stats_json
                    .iter()
                    .map(|p| (format!("--stats-json {}", p.display()), p.as_path())),
            )
            .collect();
        check_distinct(&named)?;
        let stats_json = opts
            .stats_json
            .as_deref()
            .map(|p| OutputFile::open("--stats-json", p))
            .transpose()?;
        let metrics = opts.metrics.map(MetricsListener::bind).transpose()?;
        let captures = tqfwd::report::capture::open_files(&opts.capture)?;
        Ok(Outputs {
            stats_json,
            metrics,
            captures,
        })
    }
}

/// The summary to stdout (or stderr when stdout fails: a closed pipe, a
/// full disk; the run's accounting is never lost), then the JSON.
fn write_report(report: &Report, stats_json: Option<&mut OutputFile>) -> Result<(), ExitCode> {
    let summary = report.summary();
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(summary.as_bytes()).and_then(|_| out.flush()) {
        eprintln!("tqfwd: warning: stdout: {e}; summary follows on stderr");
        eprint!("{summary}");
    }
    drop(out);
    if let Some(out) = stats_json {
        let json = serde_json::to_string_pretty(report).expect("report serialises");
        // A FIFO whose reader stalls gets a bounded wait, cut short by one
        // more stop signal.
        let signals = dpdk::signal::stop_signals();
        if let Err(e) = out.write_all_bounded((json + "\n").as_bytes(), WRITE_STALL_LIMIT, || {
            dpdk::signal::stop_signals() > signals
        }) {
            return Err(fail(
                1,
                format_args!("{e}; the summary above has the run's counts"),
            ));
        }
    }
    Ok(())
}

/// A panic anywhere ends the process at once, as `panic = "abort"` would:
/// an lcore, the metrics server or a signal thread that died alone would
/// leave a forwarder whose accounting no longer holds. (The release
/// profile keeps unwinding so that the tests, which need it, share one
/// build of the dependencies with the binaries.)
fn abort_on_panic() {
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        report(info);
        std::process::abort();
    }));
}

fn main() -> ExitCode {
    abort_on_panic();
    tqfwd::report::logging::init();
    let argv: Vec<String> = std::env::args().collect();
    let split = split_args(&argv);
    let (mut opts, eal_args, invocation) = match parse_invocation(&split.app) {
        // The config file's EAL arguments go before the command line's.
        Ok(inv) => {
            let mut eal = split.eal[..1].to_vec();
            eal.extend(inv.file_eal.iter().cloned());
            eal.extend(split.eal[1..].iter().cloned());
            (inv.options.clone(), eal, inv)
        }
        Err(ParseOutcome::Help(text)) => return print_text(&text),
        Err(ParseOutcome::Usage(e)) => return usage_error(e),
    };
    opts.devices = cli::requested_devices(&eal_args);
    if let Some(level) = opts.log_level.as_deref() {
        // Checked by the option's parser: a known level.
        let _ = tqfwd::report::logging::set_level_from(level, "--log-level");
    }
    let Outputs {
        mut stats_json,
        metrics,
        captures,
    } = match Outputs::open(&opts) {
        Ok(o) => o,
        Err(e) => return usage_error(e),
    };

    // Before EAL init, so a stop signal that arrives while EAL starts is
    // not fatal: the run then starts, stops at once and reports.
    if let Err(e) = dpdk::signal::install_quit_handler() {
        return fail(1, format_args!("cannot install signal handlers: {e}"));
    }
    let mut eal = match Eal::init(&eal_args) {
        Ok(e) => e,
        Err(e) => {
            let from_file = match opts.config.as_deref() {
                Some(f) => format!(
                    "; they are {}'s eal list followed by the command line's, and DPDK refuses some options twice (-l)",
                    f.display()
                ),
                None => String::new(),
            };
            return usage_error(format_args!(
                "EAL initialisation failed ({}): check the EAL options before `--` (e.g. -l 0-1 --no-pci --vdev=net_null0){from_file}",
                e.text
            ));
        }
    };
    if !opts.no_pdump {
        eal.enable_pdump();
    }
    log::info!(
        "{} initialised, {} lcores, TSC {} Hz",
        dpdk::version(),
        eal.lcores().len(),
        dpdk::tsc_hz()
    );

    let source = tqfwd::reload::ReloadSource {
        app_args: split.app.clone(),
        invocation,
    };
    let result = tqfwd::run::run(&eal, &opts, metrics, captures, source);
    if let Err(e) = eal.cleanup() {
        log::warn!("{e}");
    }
    let report = match result {
        Ok(r) => r,
        Err(e) => return fail(e.exit_code(), e),
    };

    if let Err(code) = write_report(&report, stats_json.as_mut()) {
        return code;
    }
    if report.conservation_ok && report.mbufs_in_use == 0 {
        ExitCode::SUCCESS
    } else {
        fail(
            1,
            format_args!(
                "end checks failed: conservation {}, mbufs in use {}",
                if report.conservation_ok {
                    "ok"
                } else {
                    "FAILED"
                },
                report.mbufs_in_use
            ),
        )
    }
}
