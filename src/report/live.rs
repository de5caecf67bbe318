//! What a run shows while it forwards: a stats line every
//! `--stats-interval` seconds (rates from the one counter fold, port error
//! counters when non-zero), the totals on SIGUSR1, the live mbuf count for
//! telemetry, and the quit request after `--duration`. Runs on its own
//! thread, never on a forwarding lcore.

use super::stats::{self, Totals};
use super::telemetry::Live;
use crate::config::cli::Options;
use crate::dpdk::{signal, Mempool, Port};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Prints a stats line every `interval` seconds (with port error counters
/// when non-zero), logs the totals on SIGUSR1, keeps the live mbuf count for
/// telemetry, and requests the quit after `duration`, until `finished`.
pub fn stats_thread(
    finished: &AtomicBool,
    live: &Live,
    pools: &[Mempool],
    ports: &[Port],
    opts: &Options,
) {
    let (interval, duration) = (opts.stats_interval, opts.duration);
    let start = Instant::now();
    let mut prev = Totals::default();
    let mut next_line = interval;
    // Stats lines stop (one warning) when stdout fails: a closed pipe
    // (`tqfwd … | head -1`) or a full disk must not stop forwarding.
    let mut stdout_ok = true;
    while !finished.load(Ordering::Acquire) {
        std::thread::sleep(Duration::from_millis(20));
        live.mbufs_in_use.store(
            pools.iter().map(|p| p.in_use() as u64).sum(),
            Ordering::Relaxed,
        );
        let t = start.elapsed().as_secs_f64();
        if let Some(d) = duration {
            if t >= d && !signal::quit_requested() {
                signal::request_quit();
            }
        }
        if signal::take_totals_request() {
            let now = Totals::collect(live.lcores.iter().map(|(_, _, c)| &**c));
            log::info!("SIGUSR1: {}", stats::totals_line(t, &now));
        }
        if interval > 0.0 && t >= next_line {
            let now = Totals::collect(live.lcores.iter().map(|(_, _, c)| &**c));
            let mut line = stats::stats_line(t, &prev, &now, interval, &live.class_names);
            for p in ports {
                let hw = p.stats();
                for (name, v) in [
                    ("imissed", hw.imissed),
                    ("rx_nombuf", hw.rx_nombuf),
                    ("ierrors", hw.ierrors),
                    ("oerrors", hw.oerrors),
                ] {
                    if v != 0 {
                        line.push_str(&format!(" | port{} {name}={v}", p.id()));
                    }
                }
            }
            if stdout_ok {
                use std::io::Write;
                let mut out = std::io::stdout().lock();
                if let Err(e) = writeln!(out, "{line}").and_then(|_| out.flush()) {
                    stdout_ok = false;
                    log::warn!("stdout: {e}; no more stats lines (the summary goes to stderr)");
                }
            }
            prev = now;
            next_line += interval;
        }
    }
}
