//! One run: plan, set up, forward, report.
//!
//! Promises (checked at the end and reported): every mbuf received is
//! transmitted or freed exactly once and counted under a drop reason
//! (`rx = tx + Σ drops`), and after the ports are closed no mbuf is in use.
//! EAL itself is initialised and cleaned up by the caller.

use crate::config::cli::Options;
use crate::config::Plan;
use crate::dpdk::Eal;
use crate::error::RunError;
use crate::forward::{self, Forwarding};
use crate::report::capture::CaptureFile;
use crate::report::metrics::MetricsListener;
use crate::report::{self, stats::Report, telemetry, Final};
use crate::setup::{self, Resources};

/// Sets up everything, forwards until quit, shuts down, and reports;
/// serves `metrics` (`--metrics`, bound before EAL) while forwarding and
/// writes `captures` (the `--capture` files, opened before EAL).
pub fn run(
    eal: &Eal,
    opts: &Options,
    metrics: Option<MetricsListener>,
    captures: Vec<CaptureFile>,
) -> Result<Report, RunError> {
    let (machine, ports, infos) = setup::machine(eal)?;
    let plan = Plan::new(opts, &machine)?;
    for (line, warn) in plan.numa_lines(&machine) {
        if warn {
            log::warn!("{line}");
        } else {
            log::info!("{line}");
        }
    }

    // From here on the plan is the only input.
    let (res, links, queues) = Resources::bring_up(&plan, &machine, ports, infos)?;
    let forwarding = Forwarding::new(&plan, &res, links, queues, captures)?;
    let counters = forwarding.counters.clone();
    if !plan.idle.is_empty() {
        log::warn!("EAL lcores {:?} have no role and stay idle", plan.idle);
    }
    log::info!(
        "forwarding: backend {} topology {} handoff {} (batch {}) burst {} depth {} on-full {}; rx lcores {:?}, worker lcores {:?}, tx lcores {:?}",
        plan.handoff.backend.name(),
        plan.handoff.topology.name(),
        plan.handoff.mode.name(),
        plan.handoff.batch,
        plan.burst,
        plan.handoff.depth,
        plan.stages.on_full.name(),
        plan.rx_stages,
        plan.workers,
        plan.layout.tx
    );
    let live = report::live(
        &plan,
        &res,
        &counters,
        forwarding.metrics_sources().captures,
    );
    if let Err(e) = telemetry::register_all(&live)
        .and_then(|()| forward::control::register_all(forwarding.port_control()))
    {
        log::warn!("telemetry commands not registered: {e}");
    }
    let server = metrics
        .map(|m| m.serve(live.clone(), forwarding.metrics_sources()))
        .transpose()
        .map_err(RunError::MetricsThread)?;
    let finished = forwarding.run(eal, &plan, &res, &live);
    // Scrapes end before the ports are closed (they read PMD counters),
    // and the server's queue probes go before the teardown and EAL's
    // cleanup (the last handle of a hand-off queue frees its memory).
    drop(server);
    let finished = finished?;

    let figures = Final::collect(&plan, &machine, &res, &counters);
    // Capture copies are bytes in the capture rings, not mbufs.
    if finished.capture_unread != 0 {
        log::warn!(
            "--capture: {} bytes of copies were left unread",
            finished.capture_unread
        );
    }
    let mbufs_in_use = res.teardown(finished.leftover);
    let mut report = figures.report(mbufs_in_use, finished.histograms);
    report.capture_dropped = finished.captures.iter().map(|c| c.capture_dropped).sum();
    report.capture = finished.captures;
    report.lcore_trip_ns = finished.trip;
    Ok(report)
}
