//! Reports from the counters (`crate::counters`): the fold of every
//! lcore's [`LcoreCounters`] ([`Totals`]) into the periodic stats line,
//! the final summary and the `--stats-json` document.

use crate::config::class::MAX_CLASSES;
use crate::config::{Roles, MAX_PORTS};
use crate::counters::lcore::{
    get, DropReason, LcoreCounters, IN_PLACE_RX, IN_PLACE_TX, IN_PLACE_WORKER,
};
use crate::wire::FrameClass;
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::atomic::AtomicU64;

/// A point-in-time sum over all lcores: the one fold of [`LcoreCounters`]
/// that the stats line, telemetry and the final report read.
#[derive(Debug, Clone, Default)]
pub struct Totals {
    pub rx: u64,
    pub tx: u64,
    /// Packets received / transmitted per port.
    pub rx_port: [u64; MAX_PORTS],
    pub tx_port: [u64; MAX_PORTS],
    pub drops: [u64; DropReason::COUNT],
    /// Worker packets per frame class (`FrameClass::index()`).
    pub frame_classes: [u64; FrameClass::COUNT],
    pub class_rx: [u64; MAX_CLASSES + 1],
    pub class_rx_dedicated: [u64; MAX_CLASSES + 1],
    pub class_drops: [u64; MAX_CLASSES + 1],
    /// Earliest first RX poll and latest RX stop (TSC); 0 when no RX lcore
    /// set them.
    pub rx_start_tsc: u64,
    pub rx_stop_tsc: u64,
}

impl Totals {
    pub fn collect<'a>(lcores: impl Iterator<Item = &'a LcoreCounters>) -> Totals {
        fn add<const N: usize>(sum: &mut [u64; N], c: &[AtomicU64; N]) {
            for (s, c) in sum.iter_mut().zip(c) {
                *s += get(c);
            }
        }
        let mut t = Totals::default();
        for c in lcores {
            add(&mut t.rx_port, &c.rx_port_packets);
            add(&mut t.tx_port, &c.tx_port_packets);
            add(&mut t.drops, &c.drops);
            add(&mut t.frame_classes, &c.worker_classes);
            add(&mut t.class_rx, &c.class_rx);
            add(&mut t.class_rx_dedicated, &c.class_rx_dedicated);
            add(&mut t.class_drops, &c.class_drops);
            let start = get(&c.rx_start_tsc);
            if start != 0 && (t.rx_start_tsc == 0 || start < t.rx_start_tsc) {
                t.rx_start_tsc = start;
            }
            t.rx_stop_tsc = t.rx_stop_tsc.max(get(&c.rx_stop_tsc));
        }
        t.rx = t.rx_port.iter().sum();
        t.tx = t.tx_port.iter().sum();
        t
    }

    pub fn drops_total(&self) -> u64 {
        self.drops.iter().sum()
    }

    /// Received but neither transmitted nor dropped yet (0 once drained).
    pub fn in_flight(&self) -> u64 {
        self.rx.saturating_sub(self.tx + self.drops_total())
    }

    /// The promise `rx = tx + Σ drops`.
    pub fn conserved(&self) -> bool {
        self.rx == self.tx + self.drops_total()
    }

    /// Seconds from the first RX poll to the last RX stop; 0.0 when RX
    /// never ran.
    pub fn rx_duration_s(&self, tsc_hz: f64) -> f64 {
        if self.rx_stop_tsc > self.rx_start_tsc {
            (self.rx_stop_tsc - self.rx_start_tsc) as f64 / tsc_hz
        } else {
            0.0
        }
    }

    /// Drop counts by reason name, every reason present.
    pub fn drops_map(&self) -> BTreeMap<&'static str, u64> {
        drops_map(&self.drops)
    }

    /// Worker packets by frame class name, every class present.
    pub fn frame_classes_map(&self) -> BTreeMap<&'static str, u64> {
        FrameClass::ALL
            .iter()
            .map(|c| (c.name(), self.frame_classes[c.index()]))
            .collect()
    }
}

/// `rx N tx M drops D` and the drop reasons (all of them, or the non-zero).
fn counts(now: &Totals, every_reason: bool) -> String {
    let mut s = format!("rx {} tx {} drops {}", now.rx, now.tx, now.drops_total());
    for r in DropReason::ALL {
        let d = now.drops[r.index()];
        if every_reason || d != 0 {
            s.push_str(&format!(" {}={d}", r.name()));
        }
    }
    s
}

/// Totals so far as one line (SIGUSR1): counts only, no rates.
pub fn totals_line(elapsed_s: f64, now: &Totals) -> String {
    format!("totals at {elapsed_s:.1} s: {}", counts(now, true))
}

/// The systemd `STATUS=` text: rates over the last `secs` seconds and the
/// drops so far, e.g. `rx 12.345 Mpps tx 12.345 Mpps drops 0`.
pub fn status_line(prev: &Totals, now: &Totals, secs: f64) -> String {
    let mpps = |now: u64, prev: u64| {
        if secs > 0.0 {
            now.saturating_sub(prev) as f64 / secs / 1e6
        } else {
            0.0
        }
    };
    format!(
        "rx {:.3} Mpps tx {:.3} Mpps drops {}",
        mpps(now.rx, prev.rx),
        mpps(now.tx, prev.tx),
        now.drops_total()
    )
}

/// Shortest `--stats-interval` whose lines carry rates.
pub const MIN_RATE_INTERVAL_S: f64 = 1e-3;

/// One periodic stats line: rates since the previous snapshot (for
/// intervals of a millisecond or more), totals and drops.
pub fn stats_line(
    elapsed_s: f64,
    prev: &Totals,
    now: &Totals,
    interval_s: f64,
    class_names: &[String],
) -> String {
    // Below a millisecond the interval says nothing about a rate.
    let rates = interval_s >= MIN_RATE_INTERVAL_S;
    let mpps = |now: u64, prev: u64| (now - prev) as f64 / interval_s / 1e6;
    let mut line = if rates {
        format!(
            "[{elapsed_s:7.1}s] rx {:8.3} Mpps  tx {:8.3} Mpps  total {}",
            mpps(now.rx, prev.rx),
            mpps(now.tx, prev.tx),
            counts(now, false)
        )
    } else {
        format!("[{elapsed_s:7.1}s] total {}", counts(now, false))
    };
    for (i, name) in class_names.iter().enumerate() {
        line.push_str(&format!(" | {name}"));
        if rates {
            line.push_str(&format!(
                " {:.3} Mpps",
                mpps(now.class_rx[i], prev.class_rx[i])
            ));
        }
        line.push_str(&format!(" drops {}", now.class_drops[i]));
    }
    line
}

// ---- final report ------------------------------------------------------

#[derive(Debug, Clone, Serialize)]
pub struct PortReport {
    pub port: u16,
    pub name: String,
    pub driver: String,
    pub socket: i32,
    pub mac: String,
    /// The port its frames leave by (L2 mode's pairing); None in L3 mode,
    /// where each frame's route decides.
    pub peer_port: Option<u16>,
    pub rx_packets: u64,
    pub tx_packets: u64,
    /// Per RX queue packet counts (queue i is polled by the i-th RX lcore).
    pub rx_queues: Vec<u64>,
    /// The PMD's own counters, for cross-checking.
    pub hw_ipackets: u64,
    pub hw_opackets: u64,
    pub hw_imissed: u64,
    pub hw_rx_nombuf: u64,
    /// Frames the PMD received but found erroneous (`ierrors`).
    pub hw_ierrors: u64,
    /// Frames the PMD failed to transmit (`oerrors`).
    pub hw_oerrors: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct LcoreReport {
    pub lcore: u32,
    pub socket: u32,
    pub roles: Vec<&'static str>,
    pub rx_packets: u64,
    pub worker_packets: u64,
    pub tx_packets: u64,
    pub drops: BTreeMap<&'static str, u64>,
    /// [`LcoreLoad::busy_cycles_per_packet`].
    pub busy_cycles_per_packet: f64,
    pub busy_polls: u64,
    pub idle_polls: u64,
    /// [`LcoreLoad::busy_ratio`].
    pub busy_ratio: f64,
    /// [`LcoreLoad::avg_burst`].
    pub avg_burst: f64,
    /// The roles that hand off in place (`--handoff zero-copy`): "rx",
    /// "worker", "tx".
    pub in_place: Vec<&'static str>,
}

/// RX→TX latency percentiles in nanoseconds (`--latency`).
#[derive(Debug, Clone, Serialize)]
pub struct LatencyReport {
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
    pub samples: u64,
}

/// One application class (or `default`) in the final report.
#[derive(Debug, Clone, Serialize)]
pub struct ClassReport {
    pub name: String,
    #[serde(rename = "match")]
    pub matcher: String,
    /// Worker lcores dedicated to it.
    pub lcores: Vec<u32>,
    /// Packets classified into it at RX.
    pub packets: u64,
    /// Of those, received on its dedicated RX queue (rte_flow rule hit).
    pub dedicated_queue_packets: u64,
    /// Hand-off drops of its packets.
    pub drops: u64,
    /// RX lcore -> packets of this class it received.
    pub rx_lcores: BTreeMap<u32, u64>,
    /// Worker lcore -> packets it handled (only this class's lcores).
    pub worker_lcores: BTreeMap<u32, u64>,
    /// Per port: "rte_flow queue N" or why the software path is used.
    pub steering: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub backend: &'static str,
    pub topology: &'static str,
    /// `--handoff`: "round-trip", "zero-copy" or "copy".
    pub handoff: &'static str,
    /// The worker hands each unit back to the RX lcore that filled it,
    /// which transmits from it (`--handoff round-trip` where the layout
    /// allows; otherwise round-trip works as zero-copy).
    pub round_trip: bool,
    pub on_full: &'static str,
    pub burst: u16,
    /// `--handoff-batch`: packets per hand-off batch.
    pub handoff_batch: u16,
    pub depth: u32,
    pub duration_s: f64,
    pub rx_packets: u64,
    pub tx_packets: u64,
    pub rx_mpps: f64,
    pub tx_mpps: f64,
    pub drops: BTreeMap<&'static str, u64>,
    pub drops_total: u64,
    pub classes: BTreeMap<&'static str, u64>,
    pub mbufs_in_use: u64,
    pub conservation_ok: bool,
    pub ports: Vec<PortReport>,
    pub lcores: Vec<LcoreReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_ns: Option<LatencyReport>,
    /// `--class` counters (empty without classes).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub app_classes: Vec<ClassReport>,
    pub signal: Option<i32>,
    /// `--capture`: copies not made (the capture ring had no room: the writer is behind), over
    /// all captures; never a forwarded packet.
    pub capture_dropped: u64,
    /// `--capture`: one entry per captured port.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub capture: Vec<super::capture::CaptureReport>,
    /// One cache line's trip between the first two lcores, one way, as
    /// forwarding started and after it stopped (`forward::trip`, `counters::trip`); absent
    /// with one lcore.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lcore_trip_ns: Option<crate::counters::trip::TripReport>,
}

pub fn drops_map(drops: &[u64; DropReason::COUNT]) -> BTreeMap<&'static str, u64> {
    DropReason::ALL
        .iter()
        .map(|r| (r.name(), drops[r.index()]))
        .collect()
}

pub fn lcore_report(lcore: u32, socket: u32, roles: Roles, c: &LcoreCounters) -> LcoreReport {
    let mut d = [0u64; DropReason::COUNT];
    for (i, x) in c.drops.iter().enumerate() {
        d[i] = get(x);
    }
    let load = c.load();
    LcoreReport {
        lcore,
        socket,
        roles: roles.names(),
        rx_packets: c.rx_total(),
        worker_packets: c.worker_total(),
        tx_packets: c.tx_total(),
        drops: drops_map(&d),
        busy_cycles_per_packet: load.busy_cycles_per_packet(),
        busy_polls: load.busy_polls,
        idle_polls: load.idle_polls,
        busy_ratio: load.busy_ratio(),
        avg_burst: load.avg_burst(),
        in_place: [
            (IN_PLACE_RX, "rx"),
            (IN_PLACE_WORKER, "worker"),
            (IN_PLACE_TX, "tx"),
        ]
        .iter()
        .filter(|(bit, _)| get(&c.in_place) & bit != 0)
        .map(|&(_, name)| name)
        .collect(),
    }
}

impl Report {
    /// Human-readable final summary.
    pub fn summary(&self) -> String {
        let mut s = String::new();
        s.push_str(&format!(
            "tqfwd summary: backend {} topology {} burst {} depth {} on-full {} handoff {}{} batch {}\n",
            self.backend,
            self.topology,
            self.burst,
            self.depth,
            self.on_full,
            self.handoff,
            if self.handoff == "round-trip" && !self.round_trip {
                " (as zero-copy)"
            } else {
                ""
            },
            self.handoff_batch
        ));
        s.push_str(&format!(
            "  forwarded for {:.3} s: rx {} ({:.3} Mpps)  tx {} ({:.3} Mpps)\n",
            self.duration_s, self.rx_packets, self.rx_mpps, self.tx_packets, self.tx_mpps
        ));
        s.push_str("  drops:");
        for (k, v) in &self.drops {
            s.push_str(&format!(" {k}={v}"));
        }
        s.push('\n');
        s.push_str("  classes:");
        for (k, v) in &self.classes {
            s.push_str(&format!(" {k}={v}"));
        }
        s.push('\n');
        for p in &self.ports {
            let to = p
                .peer_port
                .map_or_else(|| "routed".to_string(), |q| format!("port {q}"));
            s.push_str(&format!(
                "  port {} ({}, {}, socket {}, mac {}) -> {}: rx {} tx {} rx_queues {:?} hw: ipackets {} opackets {} imissed {} rx_nombuf {} ierrors {} oerrors {}\n",
                p.port, p.name, p.driver, p.socket, p.mac, to, p.rx_packets, p.tx_packets, p.rx_queues,
                p.hw_ipackets, p.hw_opackets, p.hw_imissed, p.hw_rx_nombuf, p.hw_ierrors, p.hw_oerrors
            ));
        }
        for l in &self.lcores {
            s.push_str(&format!(
                "  lcore {} (socket {}, {}): rx {} worker {} tx {}; busy {:.0}%, {:.1} cycles/packet, avg burst {:.1}, idle polls {}\n",
                l.lcore,
                l.socket,
                l.roles.join("+"),
                l.rx_packets,
                l.worker_packets,
                l.tx_packets,
                l.busy_ratio * 100.0,
                l.busy_cycles_per_packet,
                l.avg_burst,
                l.idle_polls
            ));
        }
        if let Some(t) = &self.lcore_trip_ns {
            let ns = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.1} ns"));
            s.push_str(&format!(
                "  cache line lcore {} <-> lcore {}, one way: {} at start, {} at end\n",
                t.between[0],
                t.between[1],
                ns(t.start),
                ns(t.end)
            ));
        }
        for c in &self.app_classes {
            s.push_str(&format!(
                "  class {} ({}): packets {} (dedicated queue {}) drops {} rx lcores {:?} worker lcores {:?} steering: {}\n",
                c.name,
                c.matcher,
                c.packets,
                c.dedicated_queue_packets,
                c.drops,
                c.rx_lcores,
                c.worker_lcores,
                c.steering.join("; ")
            ));
        }
        if let Some(l) = &self.latency_ns {
            s.push_str(&format!(
                "  latency RX->TX (ns): p50 {:.0} p90 {:.0} p99 {:.0} p99.9 {:.0} max {:.0} ({} samples)\n",
                l.p50, l.p90, l.p99, l.p999, l.max, l.samples
            ));
        }
        for c in &self.capture {
            s.push_str(&format!(
                "  capture port {} ({}) -> {}: {} of the first {} frames written, capture_dropped {}{}\n",
                c.port,
                c.name,
                c.file,
                c.written,
                c.count,
                c.capture_dropped,
                c.error
                    .as_deref()
                    .map(|e| format!(" (write error: {e})"))
                    .unwrap_or_default()
            ));
        }
        s.push_str(&format!(
            "  conservation rx = tx + drops: {} = {} + {} -> {}\n",
            self.rx_packets,
            self.tx_packets,
            self.drops_total,
            if self.conservation_ok { "OK" } else { "FAILED" }
        ));
        s.push_str(&format!(
            "  mbufs in use after shutdown: {} -> {}\n",
            self.mbufs_in_use,
            if self.mbufs_in_use == 0 {
                "OK"
            } else {
                "FAILED"
            }
        ));
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::counters::lcore::bump;

    #[test]
    fn one_fold_over_lcores() {
        let a = LcoreCounters::default();
        let b = LcoreCounters::default();
        bump(&a.rx_port_packets[0], 10);
        bump(&b.rx_port_packets[1], 5);
        bump(&b.tx_port_packets[0], 12);
        a.count_drop(DropReason::TxFull, 3);
        bump(&a.worker_classes[FrameClass::Udp.index()], 7);
        bump(&b.class_rx_dedicated[1], 4);
        bump(&a.rx_start_tsc, 100);
        bump(&a.rx_stop_tsc, 300);
        bump(&b.rx_stop_tsc, 400);
        let t = Totals::collect([&a, &b].into_iter());
        assert_eq!((t.rx, t.tx, t.drops_total()), (15, 12, 3));
        assert_eq!((t.rx_port[1], t.tx_port[0]), (5, 12));
        assert_eq!(t.in_flight(), 0);
        assert!(t.conserved());
        assert_eq!(t.frame_classes_map()["udp"], 7);
        assert_eq!(t.drops_map()["tx_full"], 3);
        assert_eq!(t.class_rx_dedicated[1], 4);
        assert_eq!(t.rx_duration_s(100.0), 3.0, "b never started RX");
    }

    #[test]
    fn lcore_load_figures() {
        let c = LcoreCounters::default();
        assert_eq!(c.load().busy_cycles_per_packet(), 0.0);
        bump(&c.rx_port_packets[0], 4);
        bump(&c.tx_in_packets, 4);
        bump(&c.busy_polls, 2);
        bump(&c.busy_cycles, 100);
        bump(&c.idle_cycles, 300);
        let l = c.load();
        assert_eq!(l.handled, 8);
        assert_eq!(l.busy_cycles_per_packet(), 12.5);
        assert_eq!(l.busy_ratio(), 0.25);
        assert_eq!(l.avg_burst(), 4.0);
    }

    #[test]
    fn stats_line_rates_only_from_a_millisecond() {
        let prev = Totals::default();
        let now = Totals {
            rx: 1000,
            tx: 900,
            ..Totals::default()
        };
        let names = vec!["default".to_string()];
        let line = stats_line(1.0, &prev, &now, 0.001, &names);
        assert!(
            line.contains("rx    1.000 Mpps") && line.contains("default 0.000 Mpps"),
            "{line}"
        );
        let line = stats_line(1.0, &prev, &now, 0.0005, &names);
        assert!(!line.contains("Mpps"), "{line}");
        assert!(
            line.contains("total rx 1000 tx 900 drops 0") && line.contains("| default drops 0"),
            "{line}"
        );
    }

    #[test]
    fn status_line_rates_and_drops() {
        let prev = Totals {
            rx: 1_000_000,
            tx: 1_000_000,
            ..Totals::default()
        };
        let mut now = Totals {
            rx: 13_345_000,
            tx: 13_344_000,
            ..Totals::default()
        };
        now.drops[DropReason::TxFull.index()] = 7;
        assert_eq!(
            status_line(&prev, &now, 1.0),
            "rx 12.345 Mpps tx 12.344 Mpps drops 7"
        );
        assert_eq!(
            status_line(&prev, &now, 0.0),
            "rx 0.000 Mpps tx 0.000 Mpps drops 7"
        );
    }
}
