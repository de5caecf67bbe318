//! Live counters over DPDK telemetry: `/tqfwd/stats`, `/tqfwd/lcores`,
//! `/tqfwd/ports`, `/tqfwd/queues`, `/tqfwd/classes`, `/tqfwd/capture`
//! (per `--capture` port: `count`, `taken`, `written`, `capture_dropped`,
//! the JSON's names; empty without `--capture`), readable with
//! `dpdk-telemetry.py -f PREFIX` while tqfwd runs. `/tqfwd/stats` uses the
//! final JSON's keys (`rx_packets`, `tx_packets`, `drops`, `drops_total`,
//! `mbufs_in_use`, ...) plus `in_flight` and `state`.
//!
//! The handlers run on DPDK's telemetry thread and only read atomics
//! (relaxed snapshots: a figure may be a few bursts old).
//!
//! Control: `/tqfwd/clear` sets a new baseline (like OVS's
//! `pmd-stats-clear`): `/tqfwd/stats`' rates (`rx_pps`, `tx_pps`) and
//! `/tqfwd/lcores`' polls and cycles count from it; packet totals, the
//! stats lines, the summary, the JSON and the end checks do not.
//! `/tqfwd/log_level,LEVEL` sets tqfwd's log level (`RUST_LOG`'s, not
//! DPDK's). The port commands are in `forward::control`.

use crate::config::Roles;
use crate::counters::capture::CaptureCounters;
use crate::counters::lcore::{DropReason, LcoreCounters, LcoreLoad};
use crate::dpdk::telemetry::{register, TelValue};
use crate::dpdk::{DpdkError, Lcore, Port};
use crate::report::stats::Totals;
use crate::report::systemd::Notify;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// What the telemetry handlers can see of a run.
pub struct Live {
    pub backend: &'static str,
    pub topology: &'static str,
    pub lcores: Vec<(Lcore, Roles, Arc<LcoreCounters>)>,
    /// (port id, name, driver).
    pub ports: Vec<(u16, String, String)>,
    /// RX queue q of every port is polled by rx_lcores[q].
    pub rx_lcores: Vec<Lcore>,
    /// "default" then the --class names (empty without classes).
    pub class_names: Vec<String>,
    pub started: Instant,
    /// Updated by the stats thread from the mempools.
    pub mbufs_in_use: AtomicU64,
    pub running: AtomicBool,
    /// systemd notifications (inactive without `NOTIFY_SOCKET`).
    pub notify: Notify,
    /// Where `/tqfwd/clear` last set the rates and cycles to zero.
    pub baseline: Mutex<Baseline>,
    /// `--capture`: each captured port's counters.
    pub captures: Vec<(u16, Arc<CaptureCounters>)>,
    /// `--stats-interval` in seconds, as `f64` bits: a reload may change
    /// it (the stats thread reads it every pass).
    pub stats_interval: AtomicU64,
}

/// What the live rates and per-lcore cycles count from (`/tqfwd/clear`).
#[derive(Debug, Clone)]
pub struct Baseline {
    pub at: Instant,
    pub rx: u64,
    pub tx: u64,
    /// Per lcore, in `Live::lcores` order.
    pub loads: Vec<LcoreLoad>,
}

impl Baseline {
    /// Zero: counting from the start of the run.
    pub fn start(lcores: usize) -> Baseline {
        Baseline {
            at: Instant::now(),
            rx: 0,
            tx: 0,
            loads: vec![LcoreLoad::default(); lcores],
        }
    }
}

fn u(v: u64) -> TelValue {
    TelValue::U64(v)
}

fn s(v: &str) -> TelValue {
    TelValue::Str(v.to_string())
}

impl Live {
    /// The one fold over the lcores' counters, now.
    pub fn totals(&self) -> Totals {
        Totals::collect(self.lcores.iter().map(|(_, _, c)| &**c))
    }

    fn baseline(&self) -> Baseline {
        self.baseline
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Port `port`'s RX queues: (queue, the lcore polling it, packets
    /// received from it).
    pub fn rxq_packets(&self, port: u16) -> Vec<(usize, Lcore, u64)> {
        self.rx_lcores
            .iter()
            .enumerate()
            .map(|(q, l)| {
                let n = self
                    .lcores
                    .iter()
                    .find(|(x, _, _)| x == l)
                    .map(|(_, _, c)| c.rx_port_packets[port as usize].load(Ordering::Relaxed))
                    .unwrap_or(0);
                (q, *l, n)
            })
            .collect()
    }

    /// `/tqfwd/clear`: rates and per-lcore polls and cycles count from now.
    pub fn clear(&self) -> Vec<(String, TelValue)> {
        let t = self.totals();
        let b = Baseline {
            at: Instant::now(),
            rx: t.rx,
            tx: t.tx,
            loads: self.lcores.iter().map(|(_, _, c)| c.load()).collect(),
        };
        *self.baseline.lock().unwrap_or_else(|e| e.into_inner()) = b;
        log::info!("telemetry /tqfwd/clear: rates and per-lcore cycles count from now");
        vec![("cleared".into(), u(1))]
    }

    pub fn stats(&self) -> Vec<(String, TelValue)> {
        let b = self.baseline();
        let t = self.totals();
        let since = b.at.elapsed();
        let per_s = |n: u64| {
            let s = since.as_secs_f64();
            if s > 0.0 {
                (n as f64 / s) as u64
            } else {
                0
            }
        };
        let drops = DropReason::ALL
            .iter()
            .map(|r| (r.name().to_string(), u(t.drops[r.index()])))
            .collect();
        vec![
            (
                "state".into(),
                s(if self.running.load(Ordering::Relaxed) {
                    "running"
                } else {
                    "stopped"
                }),
            ),
            ("backend".into(), s(self.backend)),
            ("topology".into(), s(self.topology)),
            (
                "duration_ms".into(),
                u(self.started.elapsed().as_millis() as u64),
            ),
            ("rx_packets".into(), u(t.rx)),
            ("tx_packets".into(), u(t.tx)),
            ("since_clear_ms".into(), u(since.as_millis() as u64)),
            ("rx_pps".into(), u(per_s(t.rx.saturating_sub(b.rx)))),
            ("tx_pps".into(), u(per_s(t.tx.saturating_sub(b.tx)))),
            ("drops_total".into(), u(t.drops_total())),
            ("in_flight".into(), u(t.in_flight())),
            (
                "mbufs_in_use".into(),
                u(self.mbufs_in_use.load(Ordering::Relaxed)),
            ),
            ("drops".into(), TelValue::Dict(drops)),
        ]
    }

    pub fn lcores(&self) -> Vec<(String, TelValue)> {
        let b = self.baseline();
        self.lcores
            .iter()
            .enumerate()
            .map(|(i, (l, roles, c))| {
                let load = c
                    .load()
                    .since(b.loads.get(i).unwrap_or(&LcoreLoad::default()));
                (
                    format!("lcore{l}"),
                    TelValue::Dict(vec![
                        ("roles".into(), s(&roles.names().join("+"))),
                        ("rx_packets".into(), u(c.rx_total())),
                        ("worker_packets".into(), u(c.worker_total())),
                        ("tx_packets".into(), u(c.tx_total())),
                        (
                            "since_clear_ms".into(),
                            u(b.at.elapsed().as_millis() as u64),
                        ),
                        ("handled_packets".into(), u(load.handled)),
                        ("busy_polls".into(), u(load.busy_polls)),
                        ("idle_polls".into(), u(load.idle_polls)),
                        ("busy_cycles".into(), u(load.busy_cycles)),
                        ("idle_cycles".into(), u(load.idle_cycles)),
                        // DPDK 22.11 telemetry carries integers: whole cycles.
                        (
                            "busy_cycles_per_packet".into(),
                            u(load.busy_cycles_per_packet() as u64),
                        ),
                    ]),
                )
            })
            .collect()
    }

    pub fn ports(&self) -> Vec<(String, TelValue)> {
        let t = self.totals();
        self.ports
            .iter()
            .map(|(p, name, driver)| {
                let i = *p as usize;
                let (rx, tx) = (t.rx_port[i], t.tx_port[i]);
                let hw = Port::by_id(*p).map(Port::stats).unwrap_or_default();
                (
                    format!("port{p}"),
                    TelValue::Dict(vec![
                        ("name".into(), s(name)),
                        ("driver".into(), s(driver)),
                        ("rx_packets".into(), u(rx)),
                        ("tx_packets".into(), u(tx)),
                        ("hw_ipackets".into(), u(hw.ipackets)),
                        ("hw_opackets".into(), u(hw.opackets)),
                        ("hw_imissed".into(), u(hw.imissed)),
                        ("hw_ierrors".into(), u(hw.ierrors)),
                        ("hw_oerrors".into(), u(hw.oerrors)),
                        ("hw_rx_nombuf".into(), u(hw.rx_nombuf)),
                    ]),
                )
            })
            .collect()
    }

    pub fn queues(&self) -> Vec<(String, TelValue)> {
        self.ports
            .iter()
            .map(|(p, _, _)| {
                let per_queue = self
                    .rxq_packets(*p)
                    .into_iter()
                    .map(|(q, l, n)| (format!("rxq{q}_lcore{l}"), u(n)))
                    .collect();
                (format!("port{p}"), TelValue::Dict(per_queue))
            })
            .collect()
    }

    pub fn capture(&self) -> Vec<(String, TelValue)> {
        self.captures
            .iter()
            .map(|(p, c)| {
                (
                    format!("port{p}"),
                    TelValue::Dict(vec![
                        ("count".into(), u(c.limit)),
                        (
                            "taken".into(),
                            u(c.taken.load(Ordering::Relaxed).min(c.limit)),
                        ),
                        ("written".into(), u(c.written.load(Ordering::Relaxed))),
                        (
                            "capture_dropped".into(),
                            u(c.dropped.load(Ordering::Relaxed)),
                        ),
                    ]),
                )
            })
            .collect()
    }

    pub fn classes(&self) -> Vec<(String, TelValue)> {
        let t = self.totals();
        self.class_names
            .iter()
            .enumerate()
            .map(|(k, name)| {
                (
                    name.clone(),
                    TelValue::Dict(vec![
                        ("packets".into(), u(t.class_rx[k])),
                        ("dedicated_queue_packets".into(), u(t.class_rx_dedicated[k])),
                        ("drops".into(), u(t.class_drops[k])),
                    ]),
                )
            })
            .collect()
    }
}

/// Registers the `/tqfwd/*` commands for this run (replacing a previous
/// run's handlers in the same process).
pub fn register_all(live: &Arc<Live>) -> Result<(), DpdkError> {
    type View = fn(&Live) -> Vec<(String, TelValue)>;
    let cmds: [(&str, &str, View); 6] = [
        ("/tqfwd/stats", "tqfwd totals: rx/tx packets, drops by reason, mbufs in use (same keys as --stats-json)", Live::stats),
        ("/tqfwd/lcores", "tqfwd per-lcore roles, packets, busy/idle polls and cycles", Live::lcores),
        ("/tqfwd/ports", "tqfwd per-port packets and PMD counters", Live::ports),
        ("/tqfwd/queues", "tqfwd per-RX-queue packets", Live::queues),
        ("/tqfwd/classes", "tqfwd per-application-class packets and drops", Live::classes),
        ("/tqfwd/capture", "tqfwd per --capture port: frames to take, taken, written, copies dropped", Live::capture),
    ];
    for (cmd, help, view) in cmds {
        let live = live.clone();
        register(cmd, help, move |_params| view(&live))?;
    }
    let l = live.clone();
    register(
        "/tqfwd/clear",
        "tqfwd: new baseline for /tqfwd/stats rates and /tqfwd/lcores polls and cycles (totals unaffected)",
        move |_| l.clear(),
    )?;
    register(
        "/tqfwd/log_level",
        "tqfwd: set the log level, param: off|error|warn|info|debug|trace",
        |param| match super::logging::set_level(param) {
            Ok(level) => vec![("log_level".into(), s(level))],
            Err(e) => vec![("error".into(), s(&e.to_string()))],
        },
    )?;
    Ok(())
}
