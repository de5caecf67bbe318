//! What a run shows while it forwards: a stats line every
//! `--stats-interval` seconds (rates from the one counter fold, port error
//! counters when non-zero), the totals on SIGUSR1, the live mbuf count for
//! telemetry, the systemd `STATUS=` (once a second) and `STOPPING=1`
//! notifications, and the quit request after `--duration`. Runs on its own
//! thread, never on a forwarding lcore.

use super::stats::{self, Totals};
use super::telemetry::Live;
use crate::config::LivePlan;
use crate::dpdk::{signal, Mempool, Port};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Seconds between two systemd `STATUS=` notifications.
pub const STATUS_PERIOD_S: f64 = 1.0;

/// Prints a stats line every `interval` seconds (with port error counters
/// when non-zero), logs the totals on SIGUSR1, keeps the live mbuf count for
/// telemetry, sends systemd STATUS= once a second and STOPPING=1 once the
/// quit is requested, and requests the quit after `duration` (or, with
/// `exit_when_idle`, once RX went idle after receiving), until `finished`
/// (`interval`, `duration` and `exit_when_idle` from `plan`).
pub fn stats_thread(
    finished: &AtomicBool,
    live: &Live,
    pools: &[Mempool],
    ports: &[Port],
    plan: &LivePlan,
) {
    let (mut interval, duration) = (plan.stats_interval, plan.duration);
    let start = Instant::now();
    let mut prev = Totals::default();
    let mut next_line = interval;
    // Stats lines stop (one warning) when stdout fails: a closed pipe
    // (`tqfwd … | head -1`) or a full disk must not stop forwarding.
    let mut stdout_ok = true;
    // systemd STATUS= once a second, rates over that second.
    let (mut status_at, mut status_prev) = (0.0, Totals::default());
    // `exit_when_idle`: packets received so far, and when that last grew.
    let (mut rx_seen, mut rx_grew) = (0u64, start);
    while !finished.load(Ordering::Acquire) {
        std::thread::sleep(Duration::from_millis(20));
        live.mbufs_in_use.store(
            pools.iter().map(|p| p.in_use() as u64).sum(),
            Ordering::Relaxed,
        );
        let t = start.elapsed().as_secs_f64();
        // A reload changed `--stats-interval`: lines start over from now.
        let asked = f64::from_bits(live.stats_interval.load(Ordering::Relaxed));
        if asked != interval {
            interval = asked;
            prev = live.totals();
            next_line = t + interval;
        }
        if let Some(d) = duration {
            if t >= d && !signal::quit_requested() {
                signal::request_quit();
            }
        }
        if let Some(idle) = plan.exit_when_idle {
            let rx = live.totals().rx;
            if rx != rx_seen {
                (rx_seen, rx_grew) = (rx, Instant::now());
            } else if rx != 0 && rx_grew.elapsed() >= idle && !signal::quit_requested() {
                signal::request_quit();
            }
        }
        if signal::quit_requested() {
            live.notify.stopping();
        } else if live.notify.active() && t >= status_at + STATUS_PERIOD_S {
            let now = live.totals();
            live.notify
                .status(&stats::status_line(&status_prev, &now, t - status_at));
            (status_at, status_prev) = (t, now);
        }
        if signal::take_totals_request() {
            let now = live.totals();
            log::info!("SIGUSR1: {}", stats::totals_line(t, &now));
        }
        if interval > 0.0 && t >= next_line {
            let now = live.totals();
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
