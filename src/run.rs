//! One run: plan, set up, forward, report.
//!
//! Promises (checked at the end and reported): every mbuf received is
//! transmitted or freed exactly once and counted under a drop reason
//! (`rx = tx + Σ drops`), and after the ports are closed no mbuf is in use.
//! EAL itself is initialised and cleaned up by the caller.

use crate::config::cli::Options;
use crate::config::Plan;
use crate::dpdk;
use crate::dpdk::Eal;
use crate::error::RunError;
use crate::forward::{self, Forwarding};
use crate::reload::{ReloadSource, Reloader};
use crate::report::capture::{
    place_writer, writer_thread, Capture, CaptureFile, CaptureReport, WallClock,
};
use crate::report::metrics::MetricsListener;
use crate::report::{self, stats::Report, telemetry, Final};
use crate::setup::{self, Resources};
use std::sync::atomic::{AtomicBool, Ordering};

/// Sets up everything, forwards until quit, shuts down, and reports;
/// serves `metrics` (`--metrics`, bound before EAL) while forwarding,
/// writes `captures` (the `--capture` files, opened before EAL) and
/// reloads the `--config` file of `source` on SIGHUP.
pub fn run(
    eal: &Eal,
    opts: &Options,
    metrics: Option<MetricsListener>,
    captures: Vec<CaptureFile>,
    source: ReloadSource,
) -> Result<Report, RunError> {
    let (machine, ports, infos) = setup::machine(eal)?;
    let mut plan = Plan::new(opts, &machine)?;
    plan.load_routes()?;
    for (line, warn) in plan.numa_lines(&machine) {
        if warn {
            log::warn!("{line}");
        } else {
            log::info!("{line}");
        }
    }

    // From here on the plan is the only input.
    let (mut res, links, queues) = Resources::bring_up(&plan, &machine, ports, infos)?;
    let captured: Vec<u16> = captures.iter().map(|f| f.port).collect();
    // The route tables go to the live settings, whose reloads replace
    // (and free) them.
    let routes = res.routes.take();
    let mut forwarding = Forwarding::new(&plan, &res, links, queues, &captured, routes)?;
    let writers: Vec<Capture> = captures
        .into_iter()
        .zip(forwarding.take_captures())
        .map(|(file, end)| {
            let name = res.infos[end.port as usize].name.clone();
            Capture::new(file, name, end.counters, end.receiver)
        })
        .collect();
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
    let reloader = Reloader::new(
        source,
        forwarding.settings(),
        res.macs[..plan.n_ports].to_vec(),
        plan.worker_sockets.clone(),
    );
    let (finished, captured) =
        forward_and_watch(eal, &plan, &res, &live, forwarding, writers, reloader);
    // Scrapes end before the ports are closed (they read PMD counters),
    // and the server's queue probes go before the teardown and EAL's
    // cleanup (the last handle of a hand-off queue frees its memory).
    drop(server);
    let finished = finished?;
    let (captures, capture_unread) = captured;

    let figures = Final::collect(&plan, &machine, &res, &counters);
    // Capture copies are bytes in the capture rings, not mbufs.
    if capture_unread != 0 {
        log::warn!("--capture: {capture_unread} bytes of copies were left unread");
    }
    let mbufs_in_use = res.teardown(finished.leftover);
    let mut report = figures.report(mbufs_in_use, finished.histograms);
    report.capture_dropped = captures.iter().map(|c| c.capture_dropped).sum();
    report.capture = captures;
    report.lcore_trip_ns = finished.trip;
    Ok(report)
}

/// Forwards (`Forwarding::run`, on every lcore) with the threads that
/// report beside it: the stats thread (stats lines, `--duration`,
/// systemd status), the reload thread (SIGHUP) and the `--capture`
/// writer, which ends after the lcores, once it has drained every ring.
/// Returns what forwarding left and the captures' reports with the bytes
/// left unread.
fn forward_and_watch(
    eal: &Eal,
    plan: &Plan,
    res: &Resources,
    live: &telemetry::Live,
    forwarding: Forwarding,
    writers: Vec<Capture>,
    mut reloader: Reloader,
) -> (
    Result<forward::Finished, RunError>,
    (Vec<CaptureReport>, u64),
) {
    let finished = AtomicBool::new(false);
    let clock = WallClock::new(dpdk::rdtsc(), dpdk::tsc_hz());
    let stall = plan.capture.writer_stall;
    let side_cpus = eal.side_cpus();
    let (pools, ports) = (&res.pools, &res.ports);
    let out = std::thread::scope(|scope| {
        // The ports are started and every lcore's stages are built: the
        // lcores poll from the launch below. Sent before the stats
        // thread exists, so it precedes that thread's STOPPING=1.
        live.notify.ready();
        let reporter = std::thread::Builder::new()
            .name("tqfwd-stats".into())
            .spawn_scoped(scope, || {
                report::live::stats_thread(&finished, live, pools, ports, &plan.live)
            });
        if let Err(e) = &reporter {
            log::warn!("no stats thread ({e}): stats lines and --duration are off");
        }
        let reloads = std::thread::Builder::new()
            .name("tqfwd-reload".into())
            .spawn_scoped(scope, || {
                // L3 mode: a reload builds route tables, seconds of CPU
                // for a large file: where no lcore runs, else below them.
                if plan.routes.is_some() {
                    let placed = dpdk::thread::place_side_thread(&side_cpus);
                    log::debug!("reload thread: {placed:?}");
                }
                reloader.serve(&finished, live)
            });
        if let Err(e) = &reloads {
            log::warn!("no reload thread ({e}): SIGHUP reloads nothing");
        }
        // The writer runs where no lcore does, else at the lowest
        // priority: it falls behind (and drops its copies) before an
        // lcore does.
        let writer = (!writers.is_empty()).then(|| {
            std::thread::Builder::new()
                .name("tqfwd-capture".into())
                .spawn_scoped(scope, || {
                    place_writer(&side_cpus);
                    writer_thread(writers, &finished, clock, stall)
                })
        });
        if let Some(Err(e)) = &writer {
            log::warn!("no capture writer thread ({e}): nothing is captured");
        }
        let forwarded = forwarding.run(eal);
        finished.store(true, Ordering::Release);
        let written = match writer {
            Some(Ok(w)) => w.join().ok(),
            _ => None,
        };
        (forwarded, written.unwrap_or_default())
    });
    live.running.store(false, Ordering::Relaxed);
    // Sent by the stats thread when it saw the quit; this covers a run
    // without one.
    live.notify.stopping();
    out
}
