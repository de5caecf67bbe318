//! The RX stage: polls its RX queues and hands each packet to its flow's
//! worker, in place (`--handoff zero-copy`): received straight into the
//! worker's queue where they all go to one, else scattered by flow
//! straight into each worker's lent slots.

use super::capture::Taps;
use super::lifecycle::PortGates;
use super::rate::{FullPolicy, Hold, TokenBucket};
use super::stages::{flush_buckets, reduce, Coalescing, Drops, StageCommon};
use crate::config::class::{WorkerRange, MAX_CLASSES};
use crate::config::{StageMode, MAX_PORTS};
use crate::counters::lcore::{bump, DropReason, LcoreCounters, IN_PLACE_RX};
use crate::dpdk::{
    self, Burst, MbufBurst, MbufPtr, Packet, PacketSender, RunStore, Sampling, U64Field,
};
use crate::queue::MAX_BURST;
use crate::setup::ports::PolledQueue;
use crate::wire;
use crate::wire::flow::{flow_key, FlowMatch};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

/// The port queues an RX stage polls (it owns their handles), and the
/// gates saying which ports it may poll now.
pub struct RxPorts {
    pub queues: Vec<PolledQueue>,
    pub gates: Arc<PortGates>,
}

/// What an RX stage does with what it receives, besides handing it on.
pub struct RxRules {
    /// `--rx-rate` in Mpps, in all.
    pub rate_mpps: Option<f64>,
    /// `--rx-rate`: the fraction of the rate this stage takes (a reload
    /// splits a new rate the same way), and the packets its ports' RX
    /// rings hold (the bucket's depth).
    pub rate_share: f64,
    pub nic_ring: usize,
    /// `--latency`: the RX-timestamp field and 1-in-N sampling.
    pub stamp: Option<(U64Field, u32)>,
    /// `--class`: each class's matcher, in order (empty: no classes)...
    pub classes: Vec<FlowMatch>,
    /// ...and its worker index range, index 0 = default.
    pub class_workers: Vec<WorkerRange>,
}

/// Polls one RX queue on every port and spreads packets over the workers by
/// flow (RSS hash when the NIC gave one, else a 5-tuple hash), so a flow
/// always takes one worker and keeps its order.
pub struct RxStage {
    queues: Vec<PolledQueue>,
    /// Application classes (`--class`), in order; empty = no classes.
    classes: Vec<FlowMatch>,
    /// Worker index range per class, index 0 = default.
    class_workers: Vec<WorkerRange>,
    /// Class of each worker bucket.
    bucket_class: Vec<u8>,
    senders: Vec<PacketSender>,
    /// Per worker: what waits to be handed on (through bursts; in place,
    /// what a full worker queue gave back).
    buckets: Vec<Burst<Packet>>,
    /// Scatter in place: the workers' open runs.
    runs: RunStore,
    /// Scatter in place: when the workers' open units are published.
    coalescing: Coalescing,
    /// Scatter in place: each received packet's worker, by index in the
    /// burst (a worker index fits a byte: `dpdk::MAX_DESTINATIONS`).
    dests: Box<[u8; MAX_BURST]>,
    /// Hold state per worker bucket (`--on-full drop`).
    holds: Vec<Hold>,
    rx: MbufBurst,
    burst: usize,
    /// Packets per transfer unit: what one zero-copy receive may take.
    unit: usize,
    policy: FullPolicy,
    /// `--rx-rate`: packets per second taken from the ports.
    rate: Option<TokenBucket>,
    /// `--rx-rate`: this stage's share of a rate, and its bucket's depth
    /// (`RxRules`).
    rate_share: f64,
    nic_ring: usize,
    n_workers: u32,
    counters: Arc<LcoreCounters>,
    /// `--latency`: the RX-timestamp field and 1-in-N sampling.
    sampling: Option<Sampling>,
    first_queue: usize,
    /// Which ports may be polled now (port lifecycle).
    gates: Arc<PortGates>,
    /// `--capture`: the taps of the captured ports (None: capture off or
    /// done).
    capture: Option<Box<Taps>>,
    started: bool,
    pub done: bool,
}

impl RxStage {
    /// Polls `ports` and hands what it receives to the workers through
    /// `senders` (one per worker).
    pub fn new(
        ports: RxPorts,
        senders: Vec<PacketSender>,
        common: StageCommon,
        rules: RxRules,
    ) -> Self {
        let RxPorts { queues, gates } = ports;
        let StageCommon {
            burst,
            unit,
            policy,
            counters,
        } = common;
        let RxRules {
            rate_mpps,
            rate_share,
            nic_ring,
            stamp,
            classes,
            class_workers,
        } = rules;
        let n_workers = senders.len() as u32;
        let mut bucket_class = vec![0u8; senders.len()];
        for (k, r) in class_workers.iter().enumerate() {
            for w in r.start..r.start + r.count {
                if let Some(b) = bucket_class.get_mut(w as usize) {
                    *b = k as u8;
                }
            }
        }
        let mut stage = RxStage {
            classes,
            class_workers,
            bucket_class,
            sampling: stamp.map(|(field, every)| Sampling::new(field, every)),
            first_queue: 0,
            gates,
            queues,
            buckets: (0..senders.len()).map(|_| Burst::new()).collect(),
            runs: RunStore::new(senders.len()),
            coalescing: Coalescing::default(),
            dests: Box::new([0; MAX_BURST]),
            holds: vec![Hold::default(); senders.len()],
            senders,
            rx: MbufBurst::new(),
            burst,
            unit,
            policy,
            rate: None,
            rate_share,
            nic_ring,
            n_workers,
            counters,
            capture: None,
            started: false,
            done: false,
        };
        stage.set_rate(rate_mpps);
        stage
    }

    /// A reload's settings (`forward::settings`), between polls: a new
    /// `--rx-rate` (this stage's share, a fresh bucket) and `--on-full` /
    /// `--drop-after`.
    pub fn set_live(&mut self, s: &super::settings::Settings) {
        self.set_rate(s.rx_rate_mpps);
        self.policy = s.policy;
    }

    /// `--rx-rate` `mpps` in all: this stage's share, in a fresh bucket
    /// as deep as its ports' RX rings.
    fn set_rate(&mut self, mpps: Option<f64>) {
        self.rate = mpps.map(|mpps| {
            TokenBucket::new(
                mpps * 1e6 * self.rate_share,
                dpdk::tsc_hz(),
                self.nic_ring,
                self.burst,
            )
        });
    }

    /// Marks the stage's mode in its counters (`lcores[].in_place`); the
    /// lcore's loop polls it with [`poll::<MODE>`](Self::poll), MODE the
    /// plan's: [`StageMode::InPlace`] (one worker queue, no classes)
    /// receives into the worker's queue, [`StageMode::Scatter`] scatters
    /// each burst into the workers' lent slots (their TransferQueues
    /// coalescing: `stages::Coalescing`), [`StageMode::Bursts`] through
    /// the buckets. `--capture` taps read each burst where the PMD put
    /// it, in every mode.
    pub fn with_mode(self, mode: StageMode) -> Self {
        if mode != StageMode::Bursts {
            self.counters.in_place.fetch_or(IN_PLACE_RX, Relaxed);
        }
        self
    }

    /// Zero-copy RX of queue `i` (see `packet_queue::PacketSender::receive_from`):
    /// `None` when the worker's queue has no room (nothing received).
    #[inline]
    fn receive_in_place(&mut self, i: usize, max: usize, now: &mut u64) -> Option<usize> {
        let queue = &mut self.queues[i].queue;
        let port = queue.port_id();
        let capture = &mut self.capture;
        let clock = std::cell::Cell::new(*now);
        // One TSC read per pass over the queues, at its first sample or
        // copy.
        let tsc = || {
            if clock.get() == 0 {
                clock.set(dpdk::rdtsc_inline());
            }
            clock.get()
        };
        let got = self.senders[0].receive_from(
            queue,
            max,
            self.burst,
            self.sampling.as_mut(),
            tsc,
            |frames| {
                // `--capture`: copies of the first frames (one branch
                // per burst when off).
                // The TSC is read only if a frame is copied.
                if let Some(taps) = capture.as_deref_mut() {
                    let mut t = clock.get();
                    if !taps.tap(port, frames, &mut t) {
                        *capture = None;
                    }
                    clock.set(t);
                }
            },
        );
        *now = clock.get();
        got
    }

    /// Scatter in place: receives up to a unit from queue `i` (at most
    /// `allowance`), `burst` per `rte_eth_rx_burst` for as long as the
    /// port fills them, as the in-place receive does: the units each
    /// worker gets are fuller, and at most a unit (what one worker gets
    /// fits its run).
    #[inline]
    fn receive_unit(&mut self, i: usize, allowance: usize) -> usize {
        let max = self.unit.min(allowance);
        let queue = &mut self.queues[i].queue;
        let mut n = 0;
        while n < max {
            let want = (max - n).min(self.burst);
            let got = queue.rx_burst(&mut self.rx, want);
            n += got;
            if got < want {
                break;
            }
        }
        n
    }

    /// The senders to the workers (round trip: what a worker hands back
    /// comes back to them, and this lcore's TX stage transmits it).
    pub fn returns(&mut self) -> &mut [PacketSender] {
        &mut self.senders
    }

    /// Copies the first frames of some ports for `--capture`.
    pub fn with_capture(mut self, capture: Option<Box<Taps>>) -> Self {
        self.capture = capture;
        self
    }

    /// Hands the buckets to the workers ([`flush_buckets`]); false when
    /// something stayed behind.
    #[inline]
    fn flush(&mut self) -> bool {
        flush_buckets(
            &mut self.buckets,
            &mut self.senders,
            &mut self.holds,
            self.policy,
            Drops {
                counters: &self.counters,
                reason: DropReason::RxHandoffFull,
                bucket_class: &self.bucket_class,
            },
        )
    }

    /// Moves the received burst into the worker buckets: each mbuf becomes
    /// a [`Packet`] (header facts read once, while hot; 1-in-N stamped with
    /// `now` under `--latency`) and goes to its flow's worker (of its
    /// class, with `--class`). `port`: the port whose queue it came from;
    /// `dedicated`: the class whose rte_flow queue the burst came from (0:
    /// a normal queue).
    #[inline(always)]
    fn spread(&mut self, port: u16, dedicated: u8, now: u64) {
        // The header is hot here: read what later stages need into the
        // Packet once (they never touch the header), stamp samples (the
        // burst's k-th packet is one when k == next).
        let field = self.sampling.map(|s| s.field());
        let (mut next, step) = match self.sampling.as_mut() {
            Some(s) => s.next(self.rx.len()),
            None => (usize::MAX, 0),
        };
        let mut k = 0usize;
        // Headers of a frame whose first segment is too short to hold
        // them are copied here (see Packet::head).
        let mut scratch = [0u8; wire::PARSE_HEAD_LEN];
        let mut to_packet = |m: dpdk::MbufPtr| {
            let mut p = Packet::from_rx(m, port);
            if k == next {
                if let Some(field) = field {
                    p.stamp(field, now);
                }
                next += step;
            }
            k += 1;
            p
        };
        // Packets a bucket could not take (never, while the room check
        // above holds): freed by push_or_free, counted here.
        let mut lost = 0u64;
        if !self.classes.is_empty() {
            // Software classification (also on dedicated queues: a rule
            // steers, the classifier decides).
            let mut per_class = [0u64; MAX_CLASSES + 1];
            self.rx.move_each(|m| {
                let p = to_packet(m);
                let (head, frame_len) = p.head(&mut scratch);
                let info = wire::parse_head(head, frame_len);
                let key = flow_key(head, &info);
                let class = self
                    .classes
                    .iter()
                    .position(|c| c.matches(&key))
                    .map_or(0, |k| k + 1);
                per_class[class] += 1;
                let hash = p.rss_hash().unwrap_or(info.flow_hash);
                let r = self.class_workers[class];
                let bucket = &mut self.buckets[r.start as usize + reduce(hash, r.count)];
                lost += u64::from(!bucket.push_or_free(p));
            });
            self.count_classes(&per_class, dedicated);
        } else if self.n_workers == 1 {
            let bucket = &mut self.buckets[0];
            self.rx
                .move_each(|m| lost += u64::from(!bucket.push_or_free(to_packet(m))));
        } else {
            self.rx.move_each(|m| {
                let p = to_packet(m);
                let hash = match p.rss_hash() {
                    Some(h) => h,
                    None => {
                        let (head, frame_len) = p.head(&mut scratch);
                        wire::parse_head(head, frame_len).flow_hash
                    }
                };
                let bucket = &mut self.buckets[reduce(hash, self.n_workers)];
                lost += u64::from(!bucket.push_or_free(p));
            });
        }
        if lost != 0 {
            self.counters.count_drop(DropReason::RxHandoffFull, lost);
        }
    }

    /// Scatter in place: hands the received burst to the workers by flow
    /// (as [`spread`](Self::spread) decides), each packet written straight
    /// into its worker's lent slots (`PacketSender::scatter`). Pass one
    /// reads each frame's worker from its header; pass two makes each mbuf
    /// a [`Packet`] (stamped as `spread` stamps) and writes it into its
    /// worker's run, or, where that worker's queue has no room, into its
    /// bucket, handed on before the next receive.
    #[inline(always)]
    fn scatter(&mut self, port: u16, dedicated: u8, now: u64) {
        let mut scratch = [0u8; wire::PARSE_HEAD_LEN];
        if !self.classes.is_empty() {
            let mut per_class = [0u64; MAX_CLASSES + 1];
            for (k, m) in self.rx.as_slice().iter().enumerate() {
                let (class, hash) = classify(&self.classes, m, &mut scratch);
                per_class[class] += 1;
                let r = self.class_workers[class];
                let d = r.start as usize + reduce(hash, r.count);
                self.dests[k] = d as u8;
                self.runs.want(d);
            }
            self.count_classes(&per_class, dedicated);
        } else {
            for (k, m) in self.rx.as_slice().iter().enumerate() {
                let hash = match m.rss_hash() {
                    Some(h) => h,
                    None => {
                        let (head, frame_len) = mbuf_head(m, &mut scratch);
                        wire::parse_head(head, frame_len).flow_hash
                    }
                };
                let d = reduce(hash, self.n_workers);
                self.dests[k] = d as u8;
                self.runs.want(d);
            }
        }
        let field = self.sampling.map(|s| s.field());
        let (mut next, step) = match self.sampling.as_mut() {
            Some(s) => s.next(self.rx.len()),
            None => (usize::MAX, 0),
        };
        let (rx, dests, buckets) = (&mut self.rx, &*self.dests, &mut self.buckets);
        let mut k = 0usize;
        let mut lost = 0u64;
        PacketSender::scatter(&mut self.senders, &mut self.runs, |runs| {
            rx.move_each(|m| {
                let mut p = Packet::from_rx(m, port);
                if k == next {
                    if let Some(field) = field {
                        p.stamp(field, now);
                    }
                    next += step;
                }
                let d = dests[k] as usize;
                k += 1;
                if let Err(p) = runs.push(d, p) {
                    // The bucket is empty (flushed before the receive)
                    // and holds a burst: never false.
                    lost += u64::from(!buckets[d].push_or_free(p));
                }
            });
        });
        if lost != 0 {
            self.counters.count_drop(DropReason::RxHandoffFull, lost);
        }
    }

    /// Counts a burst's packets per class (and per class on a dedicated
    /// queue, `dedicated` its class, 0: a normal queue).
    #[inline]
    fn count_classes(&self, per_class: &[u64; MAX_CLASSES + 1], dedicated: u8) {
        for (k, &c) in per_class.iter().enumerate() {
            if c != 0 {
                bump(&self.counters.class_rx[k], c);
                if dedicated != 0 {
                    bump(&self.counters.class_rx_dedicated[k], c);
                }
            }
        }
    }

    /// One pass over the ports; returns how many packets it received.
    /// `stop`: RX must stop; pending packets are still handed on (or, with
    /// `drop`, already were). `MODE`: the stage's mode (a [`StageMode`] as
    /// `u8`, [`with_mode`](Self::with_mode)), fixed for its lcore's loop.
    #[inline]
    pub fn poll<const MODE: u8>(&mut self, stop: bool) -> usize {
        if !self.started {
            self.started = true;
            self.counters
                .rx_start_tsc
                .store(dpdk::rdtsc(), std::sync::atomic::Ordering::Relaxed);
        }
        // Nothing is received while a bucket is held back: the excess
        // stays in the NIC's RX ring (both on-full modes; see `Hold`).
        if !self.flush() {
            self.end_poll::<MODE>(true);
            return 0;
        }
        if stop {
            for s in self.senders.iter_mut() {
                s.flush();
            }
            self.counters
                .rx_stop_tsc
                .store(dpdk::rdtsc(), std::sync::atomic::Ordering::Relaxed);
            self.done = true;
            return 0;
        }
        let mut pass = Pass {
            total: 0,
            now: 0,
            allowance: usize::MAX,
            drained: false,
        };
        // `--rx-rate`: what this pass may take in all.
        if let Some(rate) = self.rate.as_mut() {
            pass.now = dpdk::rdtsc_inline();
            pass.allowance = rate.allowance(pass.now);
            if pass.allowance == 0 {
                self.end_poll::<MODE>(true);
                return 0;
            }
        }
        // Start at a different port each poll: under back-pressure the poll
        // ends early, and a fixed start would starve the later ports.
        let nq = self.queues.len();
        // Ports closed by the lifecycle are skipped (one load per pass).
        let blocked = self.gates.blocked();
        self.first_queue = if self.first_queue + 1 >= nq {
            0
        } else {
            self.first_queue + 1
        };
        for k in 0..nq {
            let i = if self.first_queue + k >= nq {
                self.first_queue + k - nq
            } else {
                self.first_queue + k
            };
            if blocked.has(self.queues[i].queue.port_id()) {
                continue;
            }
            if !self.poll_queue::<MODE>(i, &mut pass) {
                pass.drained = true;
                break;
            }
        }
        if let Some(rate) = self.rate.as_mut() {
            rate.spend(pass.total);
        }
        // What does not fit stays in the buckets: the next poll tries again
        // before receiving more.
        self.flush();
        self.end_poll::<MODE>(pass.drained || pass.total == 0);
        pass.total
    }

    /// Scatter in place: the end of a poll for the workers' open units
    /// (`stages::Coalescing`); `drained`: the poll ran a queue dry or
    /// stopped short. Nothing in the other modes.
    #[inline(always)]
    fn end_poll<const MODE: u8>(&mut self, drained: bool) {
        if MODE == StageMode::Scatter as u8 {
            self.coalescing.end_poll(&mut self.senders, drained);
        }
    }

    /// Queue `i`'s turn in a pass: receives from it (in place, or into the
    /// burst and spread over the workers) and counts it in `pass`. False
    /// when the pass ends here (no room downstream, or the rate's
    /// allowance spent).
    #[inline(always)]
    fn poll_queue<const MODE: u8>(&mut self, i: usize, pass: &mut Pass) -> bool {
        let (port, class) = (self.queues[i].queue.port_id(), self.queues[i].class);
        // The buckets are handed on once per pass (one queue operation for
        // all ports' packets), unless one could overflow first. Scattered
        // in place, a bucket holds what a full worker queue gave back: it
        // goes first (a scatter into a worker's run now would overtake
        // it), and the scatter may give back up to a unit.
        let waiting = if MODE == StageMode::Scatter as u8 {
            self.buckets.iter().any(|b| !b.is_empty())
        } else {
            self.buckets.iter().any(|b| b.room() < self.burst)
        };
        if waiting && !self.flush() {
            return false;
        }
        // In place: received straight into the worker's queue. Its queue
        // full, the frames stay in the NIC (both modes: a worker that is
        // merely saturated frees a unit within microseconds), until the
        // Hold counts the worker as stalled (drop mode, past
        // `--drop-after`): then the burst path receives them and the flush
        // drops them, so the NIC's ring keeps moving.
        let in_place = if MODE == StageMode::InPlace as u8 {
            match self.receive_in_place(i, self.unit.min(pass.allowance), &mut pass.now) {
                None if !self.holds[0].refused(self.policy, dpdk::rdtsc_inline) => return false,
                got => got,
            }
        } else {
            None
        };
        let n = match in_place {
            Some(n) => {
                self.holds[0].took();
                n
            }
            None if MODE == StageMode::Scatter as u8 => {
                let want = self.unit.min(pass.allowance);
                let n = self.receive_unit(i, want);
                pass.drained |= n < want;
                n
            }
            None => self.queues[i]
                .queue
                .rx_burst(&mut self.rx, self.burst.min(pass.allowance)),
        };
        if n == 0 {
            return true;
        }
        pass.total += n;
        pass.allowance -= n;
        bump(
            &self.counters.rx_port_packets[port as usize % MAX_PORTS],
            n as u64,
        );
        if in_place.is_none() {
            // `--capture`: copies of the first frames (one branch when off).
            if let Some(taps) = self.capture.as_deref_mut() {
                if !taps.tap(port, self.rx.as_slice(), &mut pass.now) {
                    self.capture = None;
                }
            }
            // One TSC read per pass over the queues (not per queue): rdtsc
            // is not cheap in a VM, and a pass takes well under a µs.
            if self.sampling.is_some() && pass.now == 0 {
                pass.now = dpdk::rdtsc_inline();
            }
            if MODE == StageMode::Scatter as u8 {
                self.scatter(port, class, pass.now);
            } else {
                self.spread(port, class, pass.now);
            }
        }
        pass.allowance != 0
    }
}

/// One pass of [`RxStage::poll`] over the queues: packets received so far,
/// the TSC read for it (0 until read), what `--rx-rate` still allows, and
/// whether a queue ran dry.
struct Pass {
    total: usize,
    now: u64,
    allowance: usize,
    /// A queue gave less than the pass asked of it, or the pass stopped
    /// short (scatter in place: the open units are published).
    drained: bool,
}

/// The frame's first bytes and its length, for a parser: the first
/// segment when it holds at least `min(PARSE_HEAD_LEN, frame length)`
/// bytes (always so for one segment), else that many copied into
/// `scratch` (as [`Packet::head`], for an mbuf not yet a packet).
#[inline(always)]
fn mbuf_head<'a>(m: &'a MbufPtr, scratch: &'a mut [u8; wire::PARSE_HEAD_LEN]) -> (&'a [u8], usize) {
    let data = m.data();
    let frame_len = m.pkt_len() as usize;
    if data.len() >= frame_len.min(wire::PARSE_HEAD_LEN) {
        return (data, frame_len);
    }
    let n = m.read_into(&mut scratch[..frame_len.min(wire::PARSE_HEAD_LEN)]);
    (&scratch[..n], frame_len)
}

/// A frame's class (`--class`: the first rule that matches, 1-based; 0:
/// none) and its flow hash (the NIC's RSS hash where it gave one).
#[inline(always)]
fn classify(
    classes: &[FlowMatch],
    m: &MbufPtr,
    scratch: &mut [u8; wire::PARSE_HEAD_LEN],
) -> (usize, u32) {
    let (head, frame_len) = mbuf_head(m, scratch);
    let info = wire::parse_head(head, frame_len);
    let key = flow_key(head, &info);
    let class = classes
        .iter()
        .position(|c| c.matches(&key))
        .map_or(0, |k| k + 1);
    (class, m.rss_hash().unwrap_or(info.flow_hash))
}
