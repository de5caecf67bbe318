//! Reporting: the per-lcore counters and the one fold over them
//! (`stats`), the live views read while forwarding (the stats thread in
//! `live`, DPDK telemetry in `telemetry`, Prometheus in `metrics` served
//! by `metrics_http`, systemd notifications in `systemd`), latency
//! histograms (`latency`), output files (`output`), and the final
//! [`Report`] assembled once at the end ([`Final::report`]) for the
//! summary and the JSON.

pub mod capture;

pub mod live;
pub mod logging;
pub mod metrics;
// Under `--cfg loom` (scripts/loom.sh) tokio has no `net`: no server.
#[cfg_attr(loom, allow(unused))]
pub mod metrics_http;
pub mod output;
pub mod stats;
pub mod systemd;
pub mod telemetry;

use crate::config::{Lcore, Machine, Plan};
use crate::counters::capture::CaptureCounters;
use crate::counters::latency::{self, cycles_to_ns, Histogram};
use crate::counters::lcore::LcoreCounters;
use crate::dpdk::{self, signal};
use crate::setup::Resources;
use crate::wire::MacAddr;
use stats::{ClassReport, LatencyReport, PortReport, Report, Totals};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// The live view telemetry and the stats thread read while forwarding.
pub fn live(
    plan: &Plan,
    res: &Resources,
    counters: &[(Lcore, Arc<LcoreCounters>)],
    captures: Vec<(u16, Arc<CaptureCounters>)>,
) -> Arc<telemetry::Live> {
    Arc::new(telemetry::Live {
        backend: plan.handoff.backend.name(),
        topology: plan.handoff.topology.name(),
        lcores: counters
            .iter()
            .map(|(l, c)| (*l, plan.roles(*l), c.clone()))
            .collect(),
        ports: res
            .ports
            .iter()
            .zip(&res.infos)
            .map(|(p, i)| (p.id(), i.name.clone(), i.driver.clone()))
            .collect(),
        rx_lcores: plan.layout.rx.clone(),
        class_names: class_names(plan),
        started: Instant::now(),
        mbufs_in_use: AtomicU64::new(0),
        running: AtomicBool::new(true),
        baseline: std::sync::Mutex::new(telemetry::Baseline::start(counters.len())),
        notify: systemd::Notify::from_env(),
        captures,
        stats_interval: AtomicU64::new(plan.live.stats_interval.to_bits()),
    })
}

/// "default" then the `--class` names; empty without classes.
fn class_names(plan: &Plan) -> Vec<String> {
    if plan.classes.is_empty() {
        return Vec::new();
    }
    std::iter::once("default".to_string())
        .chain(plan.classes.iter().map(|c| c.name.clone()))
        .collect()
}

/// The figures read once forwarding has stopped, before the ports close.
pub struct Final<'a> {
    pub plan: &'a Plan,
    pub machine: &'a Machine,
    pub counters: &'a [(Lcore, Arc<LcoreCounters>)],
    pub totals: Totals,
    pub ports: Vec<PortReport>,
    /// How classes are steered on each port.
    pub steering: Vec<String>,
}

impl<'a> Final<'a> {
    /// Folds the counters once and reads each port's PMD counters (the
    /// ports are still open).
    pub fn collect(
        plan: &'a Plan,
        machine: &'a Machine,
        res: &Resources,
        counters: &'a [(Lcore, Arc<LcoreCounters>)],
    ) -> Final<'a> {
        let totals = Totals::collect(counters.iter().map(|(_, c)| &**c));
        let ports = port_reports(plan, res, counters, &totals);
        Final {
            plan,
            machine,
            counters,
            totals,
            ports,
            steering: res.port_setup.iter().map(|s| s.steering.clone()).collect(),
        }
    }

    /// The report, given what is still in use after the teardown and the
    /// TX lcores' latency histograms.
    pub fn report(self, mbufs_in_use: u64, histograms: Vec<Box<Histogram>>) -> Report {
        let (plan, t) = (self.plan, &self.totals);
        let duration_s = t.rx_duration_s(dpdk::tsc_hz().max(1) as f64);
        let rate = |n: u64| {
            if duration_s > 0.0 {
                n as f64 / duration_s / 1e6
            } else {
                0.0
            }
        };
        Report {
            backend: plan.handoff.backend.name(),
            topology: plan.handoff.topology.name(),
            handoff: plan.handoff.mode.name(),
            round_trip: plan.round_trip(),
            on_full: plan.stages.on_full.name(),
            burst: plan.burst,
            handoff_batch: plan.handoff.batch,
            depth: plan.handoff.depth,
            duration_s,
            rx_packets: t.rx,
            tx_packets: t.tx,
            rx_mpps: rate(t.rx),
            tx_mpps: rate(t.tx),
            drops: t.drops_map(),
            drops_total: t.drops_total(),
            classes: t.frame_classes_map(),
            mbufs_in_use,
            conservation_ok: t.conserved(),
            latency_ns: plan.latency.map(|_| latency_report(histograms)),
            app_classes: self.class_reports(),
            lcores: self
                .counters
                .iter()
                .map(|(l, c)| {
                    let socket = self.machine.lcore_socket(*l) as u32;
                    stats::lcore_report(*l, socket, self.plan.roles(*l), c)
                })
                .collect(),
            ports: self.ports,
            signal: signal::last_signal(),
            capture_dropped: 0,
            capture: Vec::new(),
            lcore_trip_ns: None,
        }
    }

    fn counters_of(&self, l: Lcore) -> Option<&LcoreCounters> {
        self.counters
            .iter()
            .find(|(x, _)| *x == l)
            .map(|(_, c)| &**c)
    }

    /// One report per class, "default" first; empty without classes.
    fn class_reports(&self) -> Vec<ClassReport> {
        let (plan, t) = (self.plan, &self.totals);
        if plan.classes.is_empty() {
            return Vec::new();
        }
        let names = std::iter::once((
            "default".to_string(),
            "(unclassified)".to_string(),
            plan.layout.worker.clone(),
        ))
        .chain(
            plan.classes
                .iter()
                .map(|c| (c.name.clone(), c.match_text.clone(), c.lcores.clone())),
        );
        names
            .enumerate()
            .map(|(k, (name, matcher, lcores))| ClassReport {
                name,
                matcher,
                packets: t.class_rx[k],
                dedicated_queue_packets: t.class_rx_dedicated[k],
                drops: t.class_drops[k],
                rx_lcores: self
                    .counters
                    .iter()
                    .filter_map(|(l, c)| {
                        let n = c.class_rx[k].load(Ordering::Relaxed);
                        (n > 0).then_some((*l, n))
                    })
                    .collect(),
                worker_lcores: lcores
                    .iter()
                    .map(|&l| (l, self.counters_of(l).map_or(0, |c| c.worker_total())))
                    .collect(),
                lcores,
                steering: if k == 0 {
                    Vec::new()
                } else {
                    self.steering.clone()
                },
            })
            .collect()
    }
}

/// Each port's counts (ours per RX queue and TX, and the PMD's).
fn port_reports(
    plan: &Plan,
    res: &Resources,
    counters: &[(Lcore, Arc<LcoreCounters>)],
    totals: &Totals,
) -> Vec<PortReport> {
    res.ports
        .iter()
        .zip(&res.infos)
        .enumerate()
        .map(|(i, (port, info))| {
            let hw = port.stats();
            let rx_queues: Vec<u64> = plan
                .layout
                .rx
                .iter()
                .map(|&l| {
                    counters
                        .iter()
                        .find(|(x, _)| *x == l)
                        .map_or(0, |(_, c)| c.rx_port_packets[i].load(Ordering::Relaxed))
                })
                .collect();
            PortReport {
                port: i as u16,
                name: info.name.clone(),
                driver: info.driver.clone(),
                socket: info.socket,
                mac: MacAddr(res.macs[i]).to_string(),
                peer_port: plan.routes.is_none().then_some(plan.out_port[i]),
                rx_packets: rx_queues.iter().sum(),
                tx_packets: totals.tx_port[i],
                rx_queues,
                hw_ipackets: hw.ipackets,
                hw_opackets: hw.opackets,
                hw_imissed: hw.imissed,
                hw_rx_nombuf: hw.rx_nombuf,
                hw_ierrors: hw.ierrors,
                hw_oerrors: hw.oerrors,
            }
        })
        .collect()
}

/// Percentiles over every TX lcore's samples, in nanoseconds.
fn latency_report(histograms: Vec<Box<Histogram>>) -> LatencyReport {
    let mut all = Histogram::boxed();
    for h in histograms {
        all.merge(&h);
    }
    let ns = |c: u64| cycles_to_ns(c as f64, dpdk::tsc_hz());
    let [p50, p90, p99, p999] = latency::REPORTED.map(|p| ns(all.percentile(p)));
    LatencyReport {
        p50,
        p90,
        p99,
        p999,
        max: ns(all.max()),
        samples: all.count(),
    }
}
