//! Live counters over DPDK telemetry: `/tqfwd/stats`, `/tqfwd/lcores`,
//! `/tqfwd/ports`, `/tqfwd/queues`, `/tqfwd/classes`, readable with
//! `dpdk-telemetry.py -f PREFIX` while tqfwd runs. `/tqfwd/stats` uses the
//! final JSON's keys (`rx_packets`, `tx_packets`, `drops`, `drops_total`,
//! `mbufs_in_use`, ...) plus `in_flight` and `state`.
//!
//! The handlers run on DPDK's telemetry thread and only read atomics
//! (relaxed snapshots: a figure may be a few bursts old).

use crate::dpdk::telemetry::{register, TelValue};
use crate::dpdk::{DpdkError, Lcore, Port};
use crate::report::stats::{DropReason, LcoreCounters, Roles, Totals};
use crate::report::systemd::Notify;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
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

    pub fn stats(&self) -> Vec<(String, TelValue)> {
        let t = self.totals();
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
        self.lcores
            .iter()
            .map(|(l, roles, c)| {
                let load = c.load();
                (
                    format!("lcore{l}"),
                    TelValue::Dict(vec![
                        ("roles".into(), s(&roles.names().join("+"))),
                        ("rx_packets".into(), u(c.rx_total())),
                        ("worker_packets".into(), u(c.worker_total())),
                        ("tx_packets".into(), u(c.tx_total())),
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
    let cmds: [(&str, &str, View); 5] = [
        ("/tqfwd/stats", "tqfwd totals: rx/tx packets, drops by reason, mbufs in use (same keys as --stats-json)", Live::stats),
        ("/tqfwd/lcores", "tqfwd per-lcore roles, packets, busy/idle polls and cycles", Live::lcores),
        ("/tqfwd/ports", "tqfwd per-port packets and PMD counters", Live::ports),
        ("/tqfwd/queues", "tqfwd per-RX-queue packets", Live::queues),
        ("/tqfwd/classes", "tqfwd per-application-class packets and drops", Live::classes),
    ];
    for (cmd, help, view) in cmds {
        let live = live.clone();
        register(cmd, help, move |_params| view(&live))?;
    }
    Ok(())
}
