//! Forwarding: each lcore's stages (RX → worker → TX, `stages`), the loop
//! that polls them ([`run_lcore`]), their wiring from the plan and the
//! resources ([`Forwarding::new`]), and the port monitor (`lifecycle`)
//! beside them while they run. The threads that report on them (stats
//! lines, `--duration`, the capture writer) are the caller's (`run.rs`):
//! this module writes the counters (`crate::counters`) and reads no
//! report.
//!
//! Shutdown order: RX stops first (and hands on what it holds); workers stop
//! once every RX lcore stopped and their inputs are empty; TX stops once
//! every worker stopped and its inputs are empty. What each stage still
//! holds when it stops is handed on or freed and counted, so when the last
//! lcore returns every mbuf received is accounted for.

pub mod capture;
pub mod clock;
pub mod control;
pub mod lifecycle;
pub mod rate;
pub mod route;
pub mod rx;
pub mod settings;
pub mod stages;
pub mod trip;
pub mod tx;
pub mod worker;

use crate::config::{Lcore, Plan, StageMode, StageModes, MAX_PORTS};
use crate::counters::capture::CaptureCounters;
use crate::counters::latency::{Histogram, HistogramSlot};
use crate::counters::lcore::LcoreCounters;
use crate::counters::sources::{HandoffQueue, Sources};
use crate::dpdk::capture::{CaptureReceiver, RING_BYTES};
use crate::dpdk::{self, signal, Eal, PacketInputs, PacketSender, TxQueue};
use crate::error::RunError;
use crate::setup::handoff::{Links, Probed};
use crate::setup::ports::{LcoreQueues, PolledQueue};
use crate::setup::routes::Routes;
use crate::setup::Resources;
use lifecycle::{PortGates, PortMonitor};
use rx::{RxPorts, RxRules, RxStage};
use settings::{Settings, SettingsCell};
use stages::StageCommon;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tx::{TxPorts, TxStage};
use worker::{PortMap, WorkerRules, WorkerStage};

/// Progress of the shutdown, shared by all lcores.
struct Phase {
    rx_done: AtomicUsize,
    workers_done: AtomicUsize,
    n_rx: usize,
    n_workers: usize,
}

/// The stages one lcore runs, and the loop that polls them.
pub struct LcoreWork {
    rx: Option<RxStage>,
    worker: Option<WorkerStage>,
    tx: Option<TxStage>,
    /// Quiescence slot of an lcore that polls ports (RX or TX stage).
    port_slot: Option<usize>,
    /// The loop for the stages' modes, chosen when the lcore is wired
    /// ([`lcore_loop`]).
    run: LcoreLoop,
    /// The run's live settings (a reload replaces them), and the epoch
    /// of those the stages have.
    settings: Arc<SettingsCell>,
    seen: u64,
    /// This lcore's acknowledgement slot in `settings`.
    slot: usize,
}

impl LcoreWork {
    /// Hands the current live settings to the lcore's stages and notes
    /// their epoch. Called between polls, off the hot path.
    #[cold]
    fn apply_settings(&mut self) {
        let (epoch, s) = self.settings.current();
        if let Some(rx) = self.rx.as_mut() {
            rx.set_live(&s);
        }
        if let Some(w) = self.worker.as_mut() {
            w.set_live(&s);
        }
        if let Some(t) = self.tx.as_mut() {
            t.set_live(&s);
        }
        drop(s);
        self.seen = epoch;
        self.settings.acknowledge(self.slot, epoch);
    }
}

/// One `--capture`'s writer end: the port, its rings' receiving end and
/// the counters it shares with the RX lcores' taps.
pub struct CaptureEnd {
    pub port: u16,
    pub receiver: CaptureReceiver,
    pub counters: Arc<CaptureCounters>,
}

/// Every lcore's work, ready to launch.
pub struct Forwarding {
    work: Vec<(Lcore, Mutex<Option<LcoreWork>>)>,
    /// Each lcore's counters (the report and telemetry read them).
    pub counters: Vec<(Lcore, Arc<LcoreCounters>)>,
    gates: Arc<PortGates>,
    monitor: PortMonitor,
    phase: Phase,
    /// `--capture`: the writer's end of each capture, until taken.
    captures: Vec<CaptureEnd>,
    /// What `/metrics` reads besides the counters.
    sources: Sources,
    /// What a reload changes while forwarding.
    settings: Arc<SettingsCell>,
}

/// What forwarding leaves for the report and the teardown.
pub struct Finished {
    /// Lcores' work never taken (an lcore that did not launch): dropped
    /// after the ports are closed.
    pub leftover: Vec<(Lcore, Mutex<Option<LcoreWork>>)>,
    /// TX lcores' latency histograms (`--latency`).
    pub histograms: Vec<Box<Histogram>>,
    /// The cache-line trip between the first two lcores (None with one).
    pub trip: Option<crate::counters::trip::TripReport>,
}

impl Forwarding {
    /// Builds each lcore's stages from the plan, moving the hand-off
    /// queues of `links` and the port queues of `queues` into them, with
    /// a `--capture` tap on each port of `captured`.
    pub fn new(
        plan: &Plan,
        res: &Resources,
        links: Links,
        queues: LcoreQueues,
        captured: &[u16],
        routes: Option<Arc<Routes>>,
    ) -> Result<Forwarding, RunError> {
        let mut memif = [false; MAX_PORTS];
        for (i, info) in res.infos.iter().enumerate() {
            memif[i] = info.driver == "net_memif";
        }
        let gates = Arc::new(PortGates::new(memif, plan.port_lcores.len()));
        let monitor = PortMonitor::new(
            gates.clone(),
            &res.ports
                .iter()
                .zip(&res.infos)
                .map(|(p, i)| (*p, i.name.clone(), i.driver.clone(), i.devargs.clone()))
                .collect::<Vec<_>>(),
        )?;
        let counters: Vec<(Lcore, Arc<LcoreCounters>)> = plan
            .lcores
            .iter()
            .map(|&l| (l, Arc::new(LcoreCounters::default())))
            .collect();
        let (captures, taps) = captures(plan, res, captured)?;
        let probes = handoff_queues(plan, &links);
        let settings = SettingsCell::new(
            Settings {
                routes,
                ..Settings::new(&plan.stages, &res.macs[..plan.n_ports])
            },
            plan.lcores.len(),
        );
        let mut wiring = Wiring::new(plan, res, links, queues, gates.clone(), taps, &settings);
        let work = counters
            .iter()
            .map(|(l, c)| (*l, Mutex::new(Some(wiring.lcore(*l, c)))))
            .collect();
        let sources = Sources {
            latency: wiring.latency_slots,
            queues: probes,
            captures: captures
                .iter()
                .map(|c| (c.port, c.counters.clone()))
                .collect(),
        };
        Ok(Forwarding {
            work,
            counters,
            gates,
            monitor,
            phase: Phase {
                rx_done: AtomicUsize::new(0),
                workers_done: AtomicUsize::new(0),
                n_rx: plan.rx_stages.len(),
                n_workers: plan.workers.len(),
            },
            captures,
            sources,
            settings,
        })
    }

    /// Where a reload publishes the settings it changes
    /// ([`settings`]).
    pub fn settings(&self) -> Arc<SettingsCell> {
        self.settings.clone()
    }

    /// What `/metrics` reads besides the live counters: the latency
    /// histograms' slots, the hand-off queues' probes (they keep the
    /// queues' memory until dropped) and the capture counters.
    pub fn metrics_sources(&self) -> Sources {
        self.sources.clone()
    }

    /// `--capture`: the writer's end of each capture, in `captured` order
    /// (empty once taken).
    pub fn take_captures(&mut self) -> Vec<CaptureEnd> {
        std::mem::take(&mut self.captures)
    }

    /// Where operator port requests go (`forward::control`).
    pub fn port_control(&self) -> Arc<lifecycle::PortControl> {
        self.monitor.control()
    }

    /// Runs every lcore until a quit is requested and all have drained,
    /// with the port monitor beside them.
    pub fn run(self, eal: &Eal) -> Result<Finished, RunError> {
        let Forwarding {
            work,
            counters,
            gates,
            monitor,
            phase,
            captures: _,
            sources: _,
            settings: _,
        } = self;
        let finished = AtomicBool::new(false);
        let histograms: Mutex<Vec<Box<Histogram>>> = Mutex::new(Vec::new());
        let lcores: Vec<Lcore> = counters.iter().map(|(l, _)| *l).collect();
        let trip = trip::TripProbe::between_first_two(&lcores);
        // A dpdk-dumpcap that detaches frees its pool only after every
        // burst that could be in DPDK's pdump callback has returned.
        let grace = gates.clone();
        dpdk::pdump::set_reply_gate(Some(Arc::new(move || grace.quiescence.synchronize())));
        let launch = std::thread::scope(|scope| {
            // Link state off the datapath; the monitor (and its memif park
            // on the interrupt thread) ends before the ports are stopped.
            let mut monitor = monitor;
            let watcher = std::thread::Builder::new()
                .name("tqfwd-ports".into())
                .spawn_scoped(scope, || {
                    while !finished.load(Ordering::Acquire) {
                        monitor.poll();
                        std::thread::sleep(lifecycle::MONITOR_PERIOD);
                    }
                    drop(monitor);
                });
            if let Err(e) = &watcher {
                log::warn!("no port monitor thread ({e}): link changes are not followed");
            }
            let launch = eal.run_on_all_lcores(|lcore| {
                let taken = work
                    .iter()
                    .find(|(l, _)| *l == lcore)
                    .and_then(|(_, m)| m.lock().ok().and_then(|mut g| g.take()));
                let c = counters.iter().find(|(l, _)| *l == lcore);
                if let (Some(mut w), Some((_, c))) = (taken, c) {
                    if let Some(t) = &trip {
                        t.play(lcore, trip::When::Start);
                    }
                    (w.run)(&mut w, &phase, &gates, c);
                    if let Some(t) = &trip {
                        t.play(lcore, trip::When::End);
                    }
                    if let Some(h) = w.tx.as_mut().and_then(|t| t.take_histogram()) {
                        if let Ok(mut v) = histograms.lock() {
                            v.push(h);
                        }
                    }
                    // Stage buffers are empty here; dropping them frees
                    // nothing (their hand-off queues go back to DPDK, or
                    // once `/metrics` stops, whose probes hold them too).
                    drop(w);
                }
            });
            finished.store(true, Ordering::Release);
            launch
        });
        dpdk::pdump::set_reply_gate(None);
        launch?;
        Ok(Finished {
            leftover: work,
            histograms: histograms.into_inner().unwrap_or_default(),
            trip: trip.map(|t| t.report()),
        })
    }
}

/// Every hand-off queue of the links, named by stage and lcores (a shared
/// queue's producers joined by `+`).
fn handoff_queues(plan: &Plan, links: &Links) -> Vec<HandoffQueue> {
    let named = |stage, from: &[Lcore], to: &[Lcore], p: &Probed| {
        let producers: Vec<String> = p.producers.iter().map(|&i| from[i].to_string()).collect();
        HandoffQueue {
            stage,
            from: producers.join("+"),
            to: to[p.consumer].to_string(),
            probe: p.probe.clone(),
        }
    };
    let rx = links
        .rx
        .probes
        .iter()
        .map(|p| named("rx_to_worker", &plan.rx_stages, &plan.workers, p));
    let tx = links
        .tx
        .probes
        .iter()
        .map(|p| named("worker_to_tx", &plan.workers, &plan.layout.tx, p));
    rx.chain(tx).collect()
}

/// Builds each captured port's rings: the writer's ends, and per RX
/// stage the taps it copies into (one sender per RX stage and capture).
fn captures(
    plan: &Plan,
    res: &Resources,
    captured: &[u16],
) -> Result<(Vec<CaptureEnd>, Vec<Vec<capture::Tap>>), RunError> {
    let n_rx = plan.rx_stages.len();
    let mut taps: Vec<Vec<capture::Tap>> = (0..n_rx).map(|_| Vec::new()).collect();
    let mut ends = Vec::new();
    for &port in captured {
        let info = &res.infos[port as usize];
        let (senders, receiver) =
            crate::dpdk::capture::capture_channel(RING_BYTES, info.socket, n_rx)
                .map_err(|e| RunError::Runtime(format!("--capture {port}: {e}")))?;
        let counters = Arc::new(CaptureCounters::new(plan.capture.count));
        for (stage, sender) in senders.into_iter().enumerate() {
            taps[stage].push(capture::Tap {
                port,
                sender,
                counters: counters.clone(),
            });
        }
        ends.push(CaptureEnd {
            port,
            receiver,
            counters,
        });
    }
    Ok((ends, taps))
}

fn some<T>(v: Vec<T>) -> Vec<Option<T>> {
    v.into_iter().map(Some).collect()
}

/// Hands out the stages' parts, lcore by lcore.
struct Wiring<'a> {
    plan: &'a Plan,
    res: &'a Resources,
    gates: Arc<PortGates>,
    map: PortMap,
    policy: rate::FullPolicy,
    rx_senders: Vec<Option<Vec<PacketSender>>>,
    worker_inputs: Vec<Option<PacketInputs>>,
    worker_senders: Vec<Option<Vec<PacketSender>>>,
    tx_inputs: Vec<Option<PacketInputs>>,
    /// Each RX stage's port queues.
    rx_queues: Vec<Option<Vec<PolledQueue>>>,
    /// RX stages that poll a queue (a class's lcore whose rule no port
    /// took has none): `--rx-rate` is split over them.
    polling_rx_stages: usize,
    /// Each TX lcore's port queues (one per port).
    tx_queues: Vec<Option<Vec<TxQueue>>>,
    /// `--capture` taps per RX stage.
    taps: Vec<Vec<capture::Tap>>,
    /// `--latency` with `--metrics`: each TX stage's histogram slot.
    latency_slots: Vec<Arc<HistogramSlot>>,
    /// Each role's hand-off mode, as the plan settles it.
    modes: StageModes,
    /// The live settings the stages start with.
    settings: Arc<SettingsCell>,
}

impl<'a> Wiring<'a> {
    fn new(
        plan: &'a Plan,
        res: &'a Resources,
        links: Links,
        queues: LcoreQueues,
        gates: Arc<PortGates>,
        taps: Vec<Vec<capture::Tap>>,
        settings: &Arc<SettingsCell>,
    ) -> Self {
        let (_, live) = settings.current();
        let mut map = PortMap {
            out_port: plan.out_port,
            tx_index: [0; MAX_PORTS],
            macs: live.macs,
        };
        for i in 0..plan.n_ports {
            map.tx_index[i] = (i % plan.layout.tx.len()) as u8;
        }
        Wiring {
            plan,
            res,
            gates,
            map,
            policy: live.policy,
            rx_senders: some(links.rx.senders),
            worker_inputs: some(links.rx.inputs),
            worker_senders: some(links.tx.senders),
            tx_inputs: some(links.tx.inputs),
            polling_rx_stages: queues.rx.iter().filter(|q| !q.is_empty()).count().max(1),
            rx_queues: some(queues.rx),
            tx_queues: some(queues.tx),
            taps,
            latency_slots: Vec::new(),
            modes: plan.stage_modes(),
            settings: settings.clone(),
        }
    }

    fn lcore(&mut self, l: Lcore, c: &Arc<LcoreCounters>) -> LcoreWork {
        let plan = self.plan;
        LcoreWork {
            run: lcore_loop(self.modes),
            rx: plan
                .rx_stages
                .iter()
                .position(|&x| x == l)
                .map(|stage| self.rx_stage(stage, c)),
            worker: plan
                .workers
                .iter()
                .position(|&x| x == l)
                .map(|w| self.worker_stage(w, c)),
            tx: plan
                .layout
                .tx
                .iter()
                .position(|&x| x == l)
                .map(|t| self.tx_stage(t, c)),
            port_slot: plan.port_lcores.iter().position(|&x| x == l),
            settings: self.settings.clone(),
            seen: self.settings.epoch(),
            slot: plan
                .lcores
                .iter()
                .position(|&x| x == l)
                .unwrap_or(usize::MAX),
        }
    }

    /// What every stage of the lcore with counters `c` shares.
    fn common(&self, c: &Arc<LcoreCounters>) -> StageCommon {
        StageCommon {
            burst: self.plan.burst as usize,
            unit: self.plan.handoff.batch as usize,
            policy: self.policy,
            counters: c.clone(),
        }
    }

    fn rx_stage(&mut self, stage: usize, c: &Arc<LcoreCounters>) -> RxStage {
        let plan = self.plan;
        let queues = self.rx_queues[stage].take().expect("rx queues");
        let nic_ring = self.res.rx_desc as usize * queues.len().max(1);
        let n_stages = self.polling_rx_stages as f64;
        let rules = RxRules {
            // Each RX lcore that polls a queue takes its share of the
            // rate; what the NIC can hold for it is its queues'
            // descriptors.
            rate_mpps: plan.stages.rx_rate_mpps,
            rate_share: 1.0 / n_stages,
            nic_ring,
            stamp: self.res.stamp.zip(plan.latency),
            classes: plan.classes.iter().map(|c| c.matcher).collect(),
            class_workers: plan.class_workers.clone(),
        };
        RxStage::new(
            RxPorts {
                queues,
                gates: self.gates.clone(),
            },
            self.rx_senders[stage].take().expect("rx senders"),
            self.common(c),
            rules,
        )
        .with_capture(capture::Taps::new(std::mem::take(&mut self.taps[stage])))
        .with_mode(self.modes.rx)
    }

    fn worker_stage(&mut self, w: usize, c: &Arc<LcoreCounters>) -> WorkerStage {
        let plan = self.plan;
        let (_, live) = self.settings.current();
        let rules = WorkerRules {
            routes: live
                .routes
                .as_ref()
                .map(|r| r.for_socket(plan.worker_sockets[w])),
            map: self.map.clone(),
            rewrite: plan.stages.mac_rewrite,
            work_cycles: plan.stages.worker_cycles as u64,
            class: plan.worker_class(w),
            stall: plan
                .stages
                .stall_worker
                .filter(|&(idx, _)| idx as usize == w)
                .map(|(_, length)| length),
        };
        WorkerStage::new(
            self.worker_inputs[w].take().expect("worker inputs"),
            self.worker_senders[w].take().expect("worker senders"),
            self.common(c),
            rules,
        )
        .with_mode(self.modes.worker)
    }

    fn tx_stage(&mut self, t: usize, c: &Arc<LcoreCounters>) -> TxStage {
        let slot = (self.res.stamp.is_some() && self.plan.stages.publish_latency).then(|| {
            let slot = Arc::new(HistogramSlot::default());
            self.latency_slots.push(slot.clone());
            slot
        });
        TxStage::new(
            self.tx_inputs[t].take().expect("tx inputs"),
            TxPorts {
                queues: self.tx_queues[t].take().expect("tx queues"),
                out_port: self.map.out_port,
                gates: self.gates.clone(),
            },
            self.common(c),
            self.res.stamp,
        )
        .with_latency_slot(slot, dpdk::tsc_hz() / LATENCY_PUBLISH_PER_S)
        .with_mode(self.modes.tx)
    }
}

/// How often per second a TX lcore copies its latency histogram for
/// `/metrics` at most (8 KiB each time, see `HistogramSlot`).
const LATENCY_PUBLISH_PER_S: u64 = 10;

/// An lcore's loop over its stages, for one combination of their modes.
type LcoreLoop = fn(&mut LcoreWork, &Phase, &PortGates, &LcoreCounters);

/// The loop for `modes`, chosen once, when the lcore is wired (DPDK
/// l3fwd's one main loop per lookup mode): each is [`run_lcore`] built for
/// one combination, so no stage tests its mode while it polls. A role the
/// lcore does not hold is never polled, whatever its mode.
fn lcore_loop(modes: StageModes) -> LcoreLoop {
    // RX has no round trip of its own (it receives in place into the
    // round trip's queue) and TX never scatters (a run of one input goes
    // to one port): the plan does not give them those modes.
    let rx = match modes.rx {
        StageMode::RoundTrip => StageMode::InPlace,
        m => m,
    };
    let tx = match modes.tx {
        StageMode::Scatter => StageMode::InPlace,
        m => m,
    };
    macro_rules! pick {
        ($(($r:ident, $w:ident, $t:ident)),*) => {
            match (rx, modes.worker, tx) {
                $(
                    (StageMode::$r, StageMode::$w, StageMode::$t) => run_lcore::<
                        { StageMode::$r as u8 },
                        { StageMode::$w as u8 },
                        { StageMode::$t as u8 },
                    >,
                )*
                // Not reached: the modes were mapped above.
                _ => run_lcore::<
                    { StageMode::Bursts as u8 },
                    { StageMode::Bursts as u8 },
                    { StageMode::Bursts as u8 },
                >,
            }
        };
    }
    pick!(
        (Bursts, Bursts, Bursts),
        (Bursts, Bursts, InPlace),
        (Bursts, Bursts, RoundTrip),
        (Bursts, InPlace, Bursts),
        (Bursts, InPlace, InPlace),
        (Bursts, InPlace, RoundTrip),
        (Bursts, RoundTrip, Bursts),
        (Bursts, RoundTrip, InPlace),
        (Bursts, RoundTrip, RoundTrip),
        (Bursts, Scatter, Bursts),
        (Bursts, Scatter, InPlace),
        (Bursts, Scatter, RoundTrip),
        (InPlace, Bursts, Bursts),
        (InPlace, Bursts, InPlace),
        (InPlace, Bursts, RoundTrip),
        (InPlace, InPlace, Bursts),
        (InPlace, InPlace, InPlace),
        (InPlace, InPlace, RoundTrip),
        (InPlace, RoundTrip, Bursts),
        (InPlace, RoundTrip, InPlace),
        (InPlace, RoundTrip, RoundTrip),
        (InPlace, Scatter, Bursts),
        (InPlace, Scatter, InPlace),
        (InPlace, Scatter, RoundTrip),
        (Scatter, Bursts, Bursts),
        (Scatter, Bursts, InPlace),
        (Scatter, Bursts, RoundTrip),
        (Scatter, InPlace, Bursts),
        (Scatter, InPlace, InPlace),
        (Scatter, InPlace, RoundTrip),
        (Scatter, RoundTrip, Bursts),
        (Scatter, RoundTrip, InPlace),
        (Scatter, RoundTrip, RoundTrip),
        (Scatter, Scatter, Bursts),
        (Scatter, Scatter, InPlace),
        (Scatter, Scatter, RoundTrip)
    )
}

/// One lcore's loop: polls its stages (output before input) until each
/// has drained, reporting quiescence for the port lifecycle and publishing
/// busy/idle cycles. `RX`, `WK`, `TX`: the stages' modes ([`lcore_loop`]).
fn run_lcore<const RX: u8, const WK: u8, const TX: u8>(
    work: &mut LcoreWork,
    phase: &Phase,
    gates: &PortGates,
    counters: &LcoreCounters,
) {
    // Busy/idle accounting (sampled, see `LoopClock`), published once per
    // window and at the end.
    let mut clock = clock::LoopClock::new(dpdk::rdtsc_inline());
    // Port lifecycle: the top of each iteration is a quiescent point (no
    // burst in progress), reported so a port can be closed safely.
    let q = &gates.quiescence;
    let mut reported = work.port_slot.map(|s| q.online(s)).unwrap_or(0);
    loop {
        if let Some(s) = work.port_slot {
            q.report(s, &mut reported);
        }
        // A reload: the new settings go to the stages before the next
        // poll (`settings`).
        if work.settings.epoch() != work.seen {
            work.apply_settings();
        }
        clock.begin(dpdk::rdtsc_inline);
        let (moved, pending) = poll_stages::<RX, WK, TX>(work, phase);
        let window_closed = clock.end(moved != 0, dpdk::rdtsc_inline);
        if !pending {
            clock.close(dpdk::rdtsc_inline());
        }
        if window_closed || !pending {
            publish(counters, &clock);
            if let Some(t) = work.tx.as_mut() {
                t.publish_latency(dpdk::rdtsc_inline);
            }
        }
        if !pending {
            break;
        }
    }
    if let Some(s) = work.port_slot {
        q.offline(s);
    }
    // Nothing this lcore holds is read any more.
    work.settings.acknowledge(work.slot, settings::GONE);
}

/// Publishes the loop clock's busy/idle figures for the readers.
fn publish(counters: &LcoreCounters, clock: &clock::LoopClock) {
    counters
        .busy_polls
        .store(clock.busy_polls, Ordering::Relaxed);
    counters
        .busy_cycles
        .store(clock.busy_cycles, Ordering::Relaxed);
    counters
        .idle_polls
        .store(clock.idle_polls, Ordering::Relaxed);
    counters
        .idle_cycles
        .store(clock.idle_cycles, Ordering::Relaxed);
}

/// One pass over an lcore's stages; returns (packets moved, some stage
/// still running).
#[inline]
fn poll_stages<const RX: u8, const WK: u8, const TX: u8>(
    work: &mut LcoreWork,
    phase: &Phase,
) -> (usize, bool) {
    let mut pending = false;
    let mut moved = 0usize;
    // Output before input: an lcore holding several roles first makes
    // room downstream (TX, then the worker), then receives. Under overload
    // the reverse order lets RX fill the queues that the lcore's own TX
    // should be draining (receive livelock).
    //
    // Drain before fill: a downstream stage of this lcore that took a
    // whole burst may have more waiting, so this pass receives nothing.
    // Under overload the excess then stays in the NIC instead of standing
    // in the hand-off queues: in flight stay a few bursts, not `depth`
    // per queue, so a packet does not wait behind thousands of others
    // (p50 RX→TX at saturation: ~1.6 µs, not ~93 µs with 2 × 2048 queued)
    // and its mbuf and frame are more likely still in cache at TX.
    let mut backlog = false;
    if let Some(t) = work.tx.as_mut() {
        if !t.done {
            let upstream_done = phase.workers_done.load(Ordering::Acquire) == phase.n_workers;
            // Round trip: what comes back to this lcore's RX senders.
            let returns = match work.rx.as_mut() {
                Some(rx) if TX == StageMode::RoundTrip as u8 => rx.returns(),
                _ => &mut [],
            };
            let n = t.poll::<TX>(upstream_done, returns);
            backlog |= n >= t.pass();
            moved += n;
            pending |= !t.done;
        }
    }
    if let Some(w) = work.worker.as_mut() {
        if !w.done {
            let upstream_done = phase.rx_done.load(Ordering::Acquire) == phase.n_rx;
            let n = w.poll::<WK>(upstream_done);
            backlog |= n >= w.pass();
            moved += n;
            if w.done {
                phase.workers_done.fetch_add(1, Ordering::Release);
            } else {
                pending = true;
            }
        }
    }
    if let Some(rx) = work.rx.as_mut() {
        if !rx.done {
            let stop = signal::quit_requested();
            if stop || !backlog {
                moved += rx.poll::<RX>(stop);
            }
            if rx.done {
                phase.rx_done.fetch_add(1, Ordering::Release);
            } else {
                pending = true;
            }
        }
    }
    (moved, pending)
}
