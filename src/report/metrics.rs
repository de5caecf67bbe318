//! Prometheus metrics (`--metrics ADDR:PORT`): `GET /metrics` answers the
//! Prometheus text exposition format (0.0.4) from the same live view DPDK
//! telemetry reads ([`Live`]), folded once per scrape by
//! [`Totals::collect`].
//!
//! Promises: the listener is bound before EAL starts ([`MetricsListener`]),
//! so an address in use is a usage error naming `--metrics` before anything
//! runs; scrapes are answered on a thread of their own (`tqfwd-metrics`,
//! not an lcore's) by [`super::metrics_http`], which serves every
//! connection at once with a cap, a head deadline and a head size limit,
//! so no client delays another's scrape and none blocks the datapath. The
//! thread runs where the stats thread does, on the main lcore's CPU; a
//! scrape takes it about 0.1–0.2 ms. Counters are relaxed snapshots (a
//! figure may be a few bursts old) and only grow.
//!
//! What is exported (every name starts with `tqfwd_`):
//! - `up` (1), `forwarding` (1 until the quit is requested), `info`
//!   {backend, topology}, `uptime_seconds`, `tsc_hz` (to turn cycle
//!   counters into seconds);
//! - `rx_packets_total`, `tx_packets_total`, `drops_total`{reason} (every
//!   drop reason), `in_flight_packets` (received, neither sent nor dropped
//!   yet: what the hand-off queues and stage buffers hold), `mbufs_in_use`;
//! - per port {port, name}: `port_rx_packets_total`,
//!   `port_tx_packets_total`, and the PMD counters `port_ipackets_total`,
//!   `port_opackets_total`, `port_imissed_total`, `port_rx_nombuf_total`,
//!   `port_ierrors_total`, `port_oerrors_total`;
//! - per RX queue {port, name, queue, lcore}: `rxq_packets_total` (what
//!   `/tqfwd/queues` shows);
//! - per lcore {lcore, role} where role is the lcore's roles joined by `+`
//!   (`rx+tx`, `worker`): `lcore_busy_cycles_total`,
//!   `lcore_idle_cycles_total`, `lcore_busy_polls_total`,
//!   `lcore_idle_polls_total`, and per role it holds
//!   `lcore_rx_packets_total`, `lcore_worker_packets_total`,
//!   `lcore_tx_packets_total`;
//! - with `--class`, per class {class} (`default` first):
//!   `class_packets_total`, `class_dedicated_queue_packets_total`,
//!   `class_drops_total`;
//! - with `--latency`: the histogram `latency_seconds` (`_bucket`{le},
//!   `_sum`, `_count`) over every TX lcore's samples, with `le` bounds at
//!   1-2-5 steps from 100 ns to 100 ms and `+Inf`, so `histogram_quantile`
//!   aggregates it across lcores and instances; each bound counts only
//!   samples at or below it (see [`LatencyHistogram::new`]);
//! - per hand-off queue {stage (`rx_to_worker`, `worker_to_tx`), from,
//!   to} where from and to are lcores (a shared queue's producers joined
//!   by `+`): `handoff_queue_packets` (in it now) and
//!   `handoff_queue_capacity`;
//! - with `--capture`, per captured port {port}: `capture_written_total`,
//!   `capture_dropped_total`.
//!
//! How the latency gets here: a TX lcore records samples in its own
//! histogram (plain counters: the per-packet path is unchanged) and, once
//! a loop-clock window closes (1024 iterations) and at least 0.1 s after
//! its last copy, copies it (8 KiB) into a [`HistogramSlot`] with
//! `try_lock`: if a scrape is reading the slot right then, it skips and
//! tries at the next window, so it never waits. A copy rather than atomic
//! buckets: relaxed atomic buckets cost nothing on x86 either, but a
//! reader would see a histogram torn across buckets (count, sum and
//! buckets from different moments), and the copy costs a few hundred
//! nanoseconds ten times a second instead of touching the per-packet code.
//! The figures are thus at most about 0.1 s old (plus a window).
//!
//! Hand-off queues: each queue's probe (`dpdk::QueueProbe`) reads what
//! its two sides share: an `rte_ring`'s head and tail (`rte_ring_count`;
//! nothing added to the datapath), or a TransferQueue's per-producer
//! counts of items published and returned, which its two sides keep
//! anyway (the producer's in-flight bookkeeping, on a line of its own, and
//! the high half of the consumer's one store per returned unit: no store
//! added). A probe holds the queue's memory like the queue's own
//! handles, so it cannot read freed memory: the queues are freed when the
//! last of the lcores' stages and this server's probes is dropped, and
//! `run` drops the server before the teardown and EAL's cleanup.

use super::metrics_http::{self, Limits, Page};
use super::stats::Totals;
use super::telemetry::Live;
use crate::config::Roles;
use crate::counters::capture::CaptureCounters;
use crate::counters::latency::{cycles_to_ns, Histogram, HistogramSlot};
use crate::counters::lcore::LcoreLoad;
use crate::counters::lcore::{DropReason, LcoreCounters};
use crate::counters::sources::{HandoffQueue, Sources};
use crate::dpdk::{self, signal, Port, QueueProbe};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{
    prometheus_text, DescriptorEncoder, EncodeMetric, MetricEncoder, NoLabelSet,
};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;
use std::fmt;
use std::io::ErrorKind;
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Why `--metrics` cannot listen: a usage error (exit 2), one line naming
/// the option, the address and what to change.
#[derive(Debug, thiserror::Error)]
pub enum BindError {
    #[error("--metrics {addr}: the address is already in use: stop what listens there or choose another port")]
    InUse {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("--metrics {addr}: not an address of this machine: give a local one (e.g. 127.0.0.1:{} or 0.0.0.0:{})", .addr.port(), .addr.port())]
    NotLocal {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error(
        "--metrics {addr}: not allowed to listen there ({source}): choose a port from 1024 up"
    )]
    Denied {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("--metrics {addr}: cannot listen ({source}): choose another address")]
    Other {
        addr: SocketAddr,
        source: std::io::Error,
    },
}

/// The `--metrics` socket, bound before EAL starts.
pub struct MetricsListener {
    listener: TcpListener,
}

impl MetricsListener {
    /// Binds `addr`.
    pub fn bind(addr: SocketAddr) -> Result<MetricsListener, BindError> {
        let listener = TcpListener::bind(addr).map_err(|source| match source.kind() {
            ErrorKind::AddrInUse => BindError::InUse { addr, source },
            ErrorKind::AddrNotAvailable => BindError::NotLocal { addr, source },
            ErrorKind::PermissionDenied => BindError::Denied { addr, source },
            _ => BindError::Other { addr, source },
        })?;
        listener
            .set_nonblocking(true)
            .map_err(|source| BindError::Other { addr, source })?;
        Ok(MetricsListener { listener })
    }

    /// Where it listens (the bound port when 0 was asked for).
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.listener.local_addr().ok()
    }

    /// Answers scrapes from `live` and `sources` on the `tqfwd-metrics`
    /// thread until the returned server is dropped (which drops `sources`,
    /// and with them the probes' hold on the hand-off queues).
    pub fn serve(self, live: Arc<Live>, sources: Sources) -> std::io::Result<MetricsServer> {
        let mut registry = Registry::default();
        registry.register_collector(Box::new(Exporter(live, sources)));
        let page = Page {
            path: "/metrics",
            content_type: prometheus_text::CONTENT_TYPE,
            render: Box::new(move || {
                let mut body = String::with_capacity(16 * 1024);
                prometheus_text::encode(&mut body, &registry)
                    .map(|()| body)
                    .map_err(|_| "metrics encoding failed".to_string())
            }),
        };
        metrics_http::serve(self.listener, Limits::default(), page, "tqfwd-metrics")
    }
}

/// The running server: dropping it closes every connection and joins the
/// thread.
pub type MetricsServer = metrics_http::HttpServer;

/// The live view as a prometheus-client collector, read on every scrape.
struct Exporter(Arc<Live>, Sources);

impl fmt::Debug for Exporter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("tqfwd live counters")
    }
}

type Labels = Vec<(&'static str, String)>;

/// One metric family: its HELP and TYPE lines, then one sample per label
/// set (none when `series` is empty).
fn family<M: EncodeMetric>(
    e: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    series: Vec<(Labels, M)>,
) -> fmt::Result {
    let Some(kind) = series.first().map(|(_, m)| m.metric_type()) else {
        return Ok(());
    };
    let mut m = e.encode_descriptor(name, help, None, kind)?;
    for (labels, metric) in &series {
        metric.encode(m.encode_family(labels)?)?;
    }
    Ok(())
}

fn counter(v: u64) -> ConstCounter<u64> {
    ConstCounter::new(v)
}

fn gauge<N>(v: N) -> ConstGauge<N> {
    ConstGauge::new(v)
}

impl Collector for Exporter {
    fn encode(&self, mut e: DescriptorEncoder) -> fmt::Result {
        let live = &*self.0;
        let t = live.totals();
        run_metrics(&mut e, live)?;
        total_metrics(&mut e, live, &t)?;
        port_metrics(&mut e, live, &t)?;
        lcore_metrics(&mut e, live)?;
        class_metrics(&mut e, live, &t)?;
        latency_metrics(&mut e, &self.1.latency)?;
        queue_metrics(&mut e, &self.1.queues)?;
        capture_metrics(&mut e, &self.1.captures)
    }
}

fn run_metrics(e: &mut DescriptorEncoder, live: &Live) -> fmt::Result {
    let none = Labels::new;
    family(
        e,
        "tqfwd_up",
        "1 while tqfwd serves metrics",
        vec![(none(), gauge(1i64))],
    )?;
    let forwarding = live.running.load(Ordering::Relaxed) && !signal::quit_requested();
    family(
        e,
        "tqfwd_forwarding",
        "1 while forwarding, 0 once the quit is requested (draining)",
        vec![(none(), gauge(forwarding as i64))],
    )?;
    family(
        e,
        "tqfwd_info",
        "hand-off queue backend and topology of this run",
        vec![(
            vec![
                ("backend", live.backend.to_string()),
                ("topology", live.topology.to_string()),
            ],
            gauge(1i64),
        )],
    )?;
    family(
        e,
        "tqfwd_uptime_seconds",
        "seconds since the counters were set up",
        vec![(none(), gauge(live.started.elapsed().as_secs_f64()))],
    )?;
    family(
        e,
        "tqfwd_tsc_hz",
        "TSC frequency: the unit of the lcore cycle counters",
        vec![(none(), gauge(dpdk::tsc_hz()))],
    )
}

fn total_metrics(e: &mut DescriptorEncoder, live: &Live, t: &Totals) -> fmt::Result {
    let none = Labels::new;
    family(
        e,
        "tqfwd_rx_packets",
        "packets received",
        vec![(none(), counter(t.rx))],
    )?;
    family(
        e,
        "tqfwd_tx_packets",
        "packets transmitted",
        vec![(none(), counter(t.tx))],
    )?;
    family(
        e,
        "tqfwd_drops",
        "packets freed without transmission, by reason (rx = tx + sum of drops once drained)",
        DropReason::ALL
            .iter()
            .map(|r| {
                (
                    vec![("reason", r.name().to_string())],
                    counter(t.drops[r.index()]),
                )
            })
            .collect(),
    )?;
    family(
        e,
        "tqfwd_in_flight_packets",
        "packets received and neither transmitted nor dropped yet (held in hand-off queues and stage buffers)",
        vec![(none(), gauge(t.in_flight()))],
    )?;
    family(
        e,
        "tqfwd_mbufs_in_use",
        "mbufs taken from the mempools (NIC rings, queues, in flight)",
        vec![(none(), gauge(live.mbufs_in_use.load(Ordering::Relaxed)))],
    )
}

fn port_metrics(e: &mut DescriptorEncoder, live: &Live, t: &Totals) -> fmt::Result {
    let labels = |id: u16, name: &str| vec![("port", id.to_string()), ("name", name.to_string())];
    let per_port = |f: &dyn Fn(u16) -> u64| -> Vec<(Labels, ConstCounter<u64>)> {
        live.ports
            .iter()
            .map(|(id, name, _)| (labels(*id, name), counter(f(*id))))
            .collect()
    };
    family(
        e,
        "tqfwd_port_rx_packets",
        "packets tqfwd received from the port",
        per_port(&|p| t.rx_port[p as usize]),
    )?;
    family(
        e,
        "tqfwd_port_tx_packets",
        "packets tqfwd transmitted on the port",
        per_port(&|p| t.tx_port[p as usize]),
    )?;
    family(
        e,
        "tqfwd_port_link_up",
        "1 while the port's link is up, 0 while it is down or unknown (rte_eth_link_get_nowait)",
        live.ports
            .iter()
            .map(|(id, name, _)| {
                let up = Port::by_id(*id).and_then(Port::link).is_some_and(|l| l.up);
                (labels(*id, name), gauge(u64::from(up)))
            })
            .collect(),
    )?;
    let hw: Vec<_> = live
        .ports
        .iter()
        .map(|(p, _, _)| Port::by_id(*p).map(Port::stats).unwrap_or_default())
        .collect();
    let pmd = |name: &str, help: &str, f: &dyn Fn(&dpdk::PortStats) -> u64| {
        let series = live
            .ports
            .iter()
            .zip(&hw)
            .map(|((id, port, _), s)| (labels(*id, port), counter(f(s))))
            .collect();
        (name.to_string(), help.to_string(), series)
    };
    for (name, help, series) in [
        pmd(
            "tqfwd_port_ipackets",
            "PMD counter: packets received",
            &|s| s.ipackets,
        ),
        pmd(
            "tqfwd_port_opackets",
            "PMD counter: packets transmitted",
            &|s| s.opackets,
        ),
        pmd(
            "tqfwd_port_imissed",
            "PMD counter: packets the NIC dropped for lack of RX descriptors",
            &|s| s.imissed,
        ),
        pmd(
            "tqfwd_port_rx_nombuf",
            "PMD counter: RX mbuf allocation failures",
            &|s| s.rx_nombuf,
        ),
        pmd(
            "tqfwd_port_ierrors",
            "PMD counter: erroneous received packets",
            &|s| s.ierrors,
        ),
        pmd(
            "tqfwd_port_oerrors",
            "PMD counter: failed transmissions",
            &|s| s.oerrors,
        ),
    ] {
        family(e, &name, &help, series)?;
    }
    let rxq = live
        .ports
        .iter()
        .flat_map(|(id, name, _)| {
            live.rxq_packets(*id).into_iter().map(move |(q, l, n)| {
                let mut labels = labels(*id, name);
                labels.extend([("queue", q.to_string()), ("lcore", l.to_string())]);
                (labels, counter(n))
            })
        })
        .collect();
    family(
        e,
        "tqfwd_rxq_packets",
        "packets received from one RX queue of a port (the lcore polls it)",
        rxq,
    )
}

fn lcore_metrics(e: &mut DescriptorEncoder, live: &Live) -> fmt::Result {
    let labels = |l: &crate::dpdk::Lcore, roles: &Roles| {
        vec![("lcore", l.to_string()), ("role", roles.names().join("+"))]
    };
    let loads: Vec<_> = live.lcores.iter().map(|(_, _, c)| c.load()).collect();
    let per_lcore = |f: &dyn Fn(&LcoreLoad) -> u64| -> Vec<(Labels, ConstCounter<u64>)> {
        live.lcores
            .iter()
            .zip(&loads)
            .map(|((l, roles, _), load)| (labels(l, roles), counter(f(load))))
            .collect()
    };
    family(
        e,
        "tqfwd_lcore_busy_cycles",
        "TSC cycles of loop iterations that moved packets",
        per_lcore(&|l| l.busy_cycles),
    )?;
    family(
        e,
        "tqfwd_lcore_idle_cycles",
        "TSC cycles of loop iterations that found nothing to do",
        per_lcore(&|l| l.idle_cycles),
    )?;
    family(
        e,
        "tqfwd_lcore_busy_polls",
        "loop iterations that moved packets",
        per_lcore(&|l| l.busy_polls),
    )?;
    family(
        e,
        "tqfwd_lcore_idle_polls",
        "loop iterations that found nothing to do",
        per_lcore(&|l| l.idle_polls),
    )?;
    let per_role = |has: fn(&Roles) -> bool, f: fn(&LcoreCounters) -> u64| {
        live.lcores
            .iter()
            .filter(|(_, roles, _)| has(roles))
            .map(|(l, roles, c)| (labels(l, roles), counter(f(c))))
            .collect::<Vec<_>>()
    };
    family(
        e,
        "tqfwd_lcore_rx_packets",
        "packets the lcore received (RX role)",
        per_role(|r| r.rx, |c| c.rx_total()),
    )?;
    family(
        e,
        "tqfwd_lcore_worker_packets",
        "packets the lcore took from its input queues (worker role)",
        per_role(|r| r.worker, |c| c.worker_total()),
    )?;
    family(
        e,
        "tqfwd_lcore_tx_packets",
        "packets the lcore transmitted (TX role)",
        per_role(|r| r.tx, |c| c.tx_total()),
    )
}

fn class_metrics(e: &mut DescriptorEncoder, live: &Live, t: &Totals) -> fmt::Result {
    let per_class = |v: &[u64]| -> Vec<(Labels, ConstCounter<u64>)> {
        live.class_names
            .iter()
            .enumerate()
            .map(|(k, name)| (vec![("class", name.clone())], counter(v[k])))
            .collect()
    };
    family(
        e,
        "tqfwd_class_packets",
        "packets of the class, classified at RX",
        per_class(&t.class_rx),
    )?;
    family(
        e,
        "tqfwd_class_dedicated_queue_packets",
        "packets of the class received on its own (rte_flow) RX queue",
        per_class(&t.class_rx_dedicated),
    )?;
    family(
        e,
        "tqfwd_class_drops",
        "hand-off drops of the class's packets",
        per_class(&t.class_drops),
    )
}

/// Upper bounds of the exported latency buckets, in nanoseconds: 1-2-5
/// steps from 100 ns to 100 ms (the `+Inf` bucket follows them).
const LATENCY_BOUNDS_NS: [u64; 19] = [
    100,
    200,
    500,
    1_000,
    2_000,
    5_000,
    10_000,
    20_000,
    50_000,
    100_000,
    200_000,
    500_000,
    1_000_000,
    2_000_000,
    5_000_000,
    10_000_000,
    20_000_000,
    50_000_000,
    100_000_000,
];

/// `--latency` as a Prometheus histogram: per bound, the samples not above
/// it (the encoder turns these per-bucket counts into cumulative ones).
struct LatencyHistogram {
    sum_seconds: f64,
    count: u64,
    /// (upper bound in seconds, samples in this bucket only).
    buckets: Vec<(f64, u64)>,
}

impl LatencyHistogram {
    /// From the merged histogram (TSC cycles) at `tsc_hz`. A bound of `le`
    /// seconds is `floor(le × tsc_hz)` cycles, computed in integers; its
    /// count is [`Histogram::count_at_most`] of that: never a sample above
    /// `le`, and whatever lies within 1/32 below `le` in an internal
    /// bucket that straddles it counts at the next bound.
    fn new(all: &Histogram, tsc_hz: u64) -> LatencyHistogram {
        let mut buckets = Vec::with_capacity(LATENCY_BOUNDS_NS.len() + 1);
        let mut below = 0;
        for ns in LATENCY_BOUNDS_NS {
            let cycles = (ns as u128 * tsc_hz as u128 / 1_000_000_000) as u64;
            let at_most = all.count_at_most(cycles);
            buckets.push((ns as f64 / 1e9, at_most - below));
            below = at_most;
        }
        buckets.push((f64::INFINITY, all.count() - below));
        LatencyHistogram {
            sum_seconds: cycles_to_ns(all.sum() as f64, tsc_hz) / 1e9,
            count: all.count(),
            buckets,
        }
    }
}

impl EncodeMetric for LatencyHistogram {
    fn encode(&self, mut encoder: MetricEncoder) -> fmt::Result {
        encoder.encode_histogram::<NoLabelSet>(self.sum_seconds, self.count, &self.buckets, None)
    }

    fn metric_type(&self) -> MetricType {
        MetricType::Histogram
    }
}

/// `--latency`: the TX lcores' histograms as last published, merged, as
/// one Prometheus histogram in seconds (`histogram_quantile` over its
/// buckets aggregates across lcores and instances).
fn latency_metrics(e: &mut DescriptorEncoder, slots: &[Arc<HistogramSlot>]) -> fmt::Result {
    if slots.is_empty() {
        return Ok(());
    }
    let mut all = Histogram::boxed();
    for s in slots {
        s.merge_into(&mut all);
    }
    family(
        e,
        "tqfwd_latency_seconds",
        "RX to TX latency of sampled packets over the TX lcores (a copy at most 0.1 s old)",
        vec![(Labels::new(), LatencyHistogram::new(&all, dpdk::tsc_hz()))],
    )
}

fn queue_metrics(e: &mut DescriptorEncoder, queues: &[HandoffQueue]) -> fmt::Result {
    let per_queue = |f: fn(&QueueProbe) -> usize| {
        queues
            .iter()
            .map(|q| {
                (
                    vec![
                        ("stage", q.stage.to_string()),
                        ("from", q.from.clone()),
                        ("to", q.to.clone()),
                    ],
                    gauge(f(&q.probe) as i64),
                )
            })
            .collect()
    };
    family(
        e,
        "tqfwd_handoff_queue_packets",
        "packets in the hand-off queue now (a TransferQueue counts a partly read unit whole)",
        per_queue(QueueProbe::packets),
    )?;
    family(
        e,
        "tqfwd_handoff_queue_capacity",
        "packets the hand-off queue holds at most",
        per_queue(QueueProbe::capacity),
    )
}

fn capture_metrics(
    e: &mut DescriptorEncoder,
    captures: &[(u16, Arc<CaptureCounters>)],
) -> fmt::Result {
    let per_port = |f: fn(&CaptureCounters) -> u64| {
        captures
            .iter()
            .map(|(port, c)| (vec![("port", port.to_string())], counter(f(c))))
            .collect()
    };
    family(
        e,
        "tqfwd_capture_written",
        "--capture: frames written to the port's file",
        per_port(|c| c.written.load(Ordering::Relaxed)),
    )?;
    family(
        e,
        "tqfwd_capture_dropped",
        "--capture: copies not made (the capture ring had no room: the writer is behind)",
        per_port(|c| c.dropped.load(Ordering::Relaxed)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// At 2.1 GHz, 100 ns is 210 cycles and 200 ns 420; the internal
    /// buckets there are 4 and 8 cycles wide ([204, 207], [208, 211],
    /// [416, 423]).
    #[test]
    fn latency_buckets_never_count_a_sample_above_le() {
        const HZ: u64 = 2_100_000_000;
        let mut h = Histogram::new();
        for cycles in [207, 211, 419, 424, 1 << 40] {
            h.record(cycles);
        }
        let l = LatencyHistogram::new(&h, HZ);
        let cumulative = |le: f64| -> u64 {
            l.buckets
                .iter()
                .take_while(|(b, _)| *b <= le)
                .map(|(_, n)| n)
                .sum()
        };
        // 207 cycles (98.6 ns) is wholly below 100 ns; 211 (100.5 ns) is
        // above it. 419 (199.5 ns) shares [416, 423] with values above
        // 200 ns, so it counts at 500 ns, as does 424 (201.9 ns).
        assert_eq!(cumulative(1e-7), 1);
        assert_eq!(cumulative(2e-7), 2);
        assert_eq!(cumulative(5e-7), 4);
        assert_eq!(cumulative(1e-1), 4);
        assert_eq!(l.buckets.last(), Some(&(f64::INFINITY, 1)));
        assert_eq!(l.buckets.len(), LATENCY_BOUNDS_NS.len() + 1);
        assert_eq!(l.count, 5);
        let sum = (207 + 211 + 419 + 424 + (1u64 << 40)) as f64 / HZ as f64;
        assert!((l.sum_seconds - sum).abs() < 1e-12 * sum);
    }
}
