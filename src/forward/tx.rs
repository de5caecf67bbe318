//! The TX stage: takes packets from the workers and transmits them on its
//! TX queue of their output port, from its input queues' slots
//! (`--handoff zero-copy`) or through per-port bursts.

use super::lifecycle::{PortGates, PortMask};
use super::rate::{FullPolicy, Hold};
use super::stages::{receive, StageCommon, TX_RETRIES, TX_STALL_GIVE_UP_S};
use crate::config::{StageMode, MAX_PORTS};
use crate::counters::latency::{Histogram, HistogramSlot};
use crate::counters::lcore::{bump, DropReason, LcoreCounters, IN_PLACE_TX};
use crate::dpdk::{
    self, Burst, MbufBurst, Packet, PacketInputs, PacketSender, TxQueue, TxRun, U64Field,
};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

/// The port queues a TX stage transmits on (it owns their handles), where
/// each input port's packets leave, and the gates saying which ports take
/// bursts now.
pub struct TxPorts {
    /// This lcore's TX queue on every port, in port order.
    pub queues: Vec<TxQueue>,
    /// out_port[in] = the port frames received on `in` leave by.
    pub out_port: [u16; MAX_PORTS],
    pub gates: Arc<PortGates>,
}

/// Takes packets from the workers, groups them by output port and
/// transmits on this lcore's TX queue of that port, retrying a partial
/// burst a bounded number of times per poll; what a port still refuses is
/// held (no input taken meanwhile) as [`Hold`] says, then freed and
/// counted as `tx_full`.
pub struct TxStage {
    /// Which ports may be polled now (port lifecycle); a closed port
    /// refuses like a full one.
    gates: Arc<PortGates>,
    inputs: PacketInputs,
    inbuf: Burst<Packet>,
    /// Indexed by port id: this lcore's TX queue on it.
    ports: Vec<TxQueue>,
    buckets: Vec<MbufBurst>,
    out_port: [u16; MAX_PORTS],
    burst: usize,
    /// Packets a poll takes at most: a transfer unit in place
    /// (`--handoff zero-copy`, sent a PMD burst at a time), else `burst`.
    pass: usize,
    /// Packets per transfer unit.
    unit: usize,
    counters: Arc<LcoreCounters>,
    /// `--latency`: RX-timestamp field and this lcore's histogram (cycles).
    latency: Option<(U64Field, Box<Histogram>)>,
    /// `--latency` with `--metrics`: where the histogram is copied for
    /// `/metrics`, when it last was (TSC), and how often (cycles).
    latency_slot: Option<(Arc<HistogramSlot>, u64, u64)>,
    policy: FullPolicy,
    /// Hold state per port.
    holds: Vec<Hold>,
    /// Buckets hold packets a port refused.
    pending: bool,
    /// Round trip: which of the RX stage's senders to take back from
    /// first (round-robin over the workers).
    next_return: usize,
    /// During shutdown: when to give up on a stalled port, and how many
    /// stop signals had arrived then (one more gives up at once).
    give_up_at: Option<(u64, u32)>,
    pub done: bool,
}

impl TxStage {
    /// Takes packets from `inputs` and transmits them on `ports`; with
    /// `latency` (`--latency`), reads the RX timestamp of the samples.
    pub fn new(
        inputs: PacketInputs,
        ports: TxPorts,
        common: StageCommon,
        latency: Option<U64Field>,
    ) -> Self {
        let TxPorts {
            queues: ports,
            out_port,
            gates,
        } = ports;
        let StageCommon {
            burst,
            unit,
            policy,
            counters,
        } = common;
        TxStage {
            gates,
            policy,
            holds: vec![Hold::default(); ports.len()],
            pending: false,
            next_return: 0,
            give_up_at: None,
            latency: latency.map(|f| (f, Histogram::boxed())),
            latency_slot: None,
            inputs,
            inbuf: Burst::new(),
            buckets: (0..ports.len()).map(|_| MbufBurst::new()).collect(),
            ports,
            out_port,
            burst,
            pass: burst,
            unit,
            counters,
            done: false,
        }
    }

    /// Sets up the stage for its mode, as the plan settles it (the
    /// lcore's loop then polls it with [`poll::<MODE>`](Self::poll)):
    /// [`StageMode::InPlace`] transmits what the input queues' slots hold
    /// (no staging burst; a port's refusal leaves the packets there);
    /// [`StageMode::RoundTrip`] does the same with what the worker handed
    /// back to this lcore's RX stage (its sender, passed to `poll`: the
    /// stage has no input queues of its own); both take a batch per poll.
    /// A reload's settings (`forward::settings`), between polls:
    /// `--on-full` / `--drop-after`.
    pub fn set_live(&mut self, s: &super::settings::Settings) {
        self.policy = s.policy;
    }

    pub fn with_mode(mut self, mode: StageMode) -> Self {
        if mode != StageMode::Bursts {
            self.pass = self.unit;
            self.counters.in_place.fetch_or(IN_PLACE_TX, Relaxed);
        }
        self
    }

    /// Copies the latency histogram into `slot` every `period` TSC cycles
    /// at most ([`publish_latency`](Self::publish_latency)).
    pub fn with_latency_slot(mut self, slot: Option<Arc<HistogramSlot>>, period: u64) -> Self {
        self.latency_slot = slot.map(|s| (s, 0, period));
        self
    }

    /// Publishes the latency histogram to its slot when the period has
    /// passed and no reader holds the slot; called by the lcore's loop
    /// once per loop-clock window, so never on the per-packet path.
    pub fn publish_latency(&mut self, tsc: impl FnOnce() -> u64) {
        let (Some((slot, last, period)), Some((_, hist))) =
            (self.latency_slot.as_mut(), self.latency.as_ref())
        else {
            return;
        };
        let now = tsc();
        if now.wrapping_sub(*last) >= *period && slot.publish(hist) {
            *last = now;
        }
    }

    /// The latency histogram (cycles), once the stage is done.
    pub fn take_histogram(&mut self) -> Option<Box<Histogram>> {
        self.latency.take().map(|(_, h)| h)
    }

    /// Transmits every bucket with bounded retries. What a port still
    /// refuses is kept for the next poll (back-pressure) or, when its
    /// [`Hold`] says so, freed and counted as `tx_full`; at shutdown a held
    /// bucket gets [`TX_STALL_GIVE_UP_S`] more. Returns true when all
    /// buckets are empty.
    #[inline]
    fn transmit(&mut self) -> bool {
        let mut all_sent = true;
        // A closed port refuses like a full one (port lifecycle).
        let blocked = self.gates.blocked();
        for (p, (bucket, hold)) in self
            .buckets
            .iter_mut()
            .zip(self.holds.iter_mut())
            .enumerate()
        {
            if bucket.is_empty() {
                continue;
            }
            let queue = &mut self.ports[p];
            let open = !blocked.has(queue.port_id());
            let mut tries = 0;
            loop {
                if open {
                    let sent = queue.tx_burst(bucket);
                    if sent != 0 {
                        bump(&self.counters.tx_port_packets[p], sent as u64);
                        hold.took();
                    }
                    if bucket.is_empty() {
                        break;
                    }
                    tries += 1;
                }
                if !open || tries >= TX_RETRIES {
                    if hold.refused(self.policy, dpdk::rdtsc_inline) {
                        self.counters
                            .count_drop(DropReason::TxFull, bucket.len() as u64);
                        bucket.free_all();
                    } else {
                        all_sent = false;
                    }
                    break;
                }
                dpdk::pause();
            }
        }
        all_sent
    }

    /// Packets taken per poll at most.
    #[inline]
    pub fn pass(&self) -> usize {
        self.pass
    }

    /// Frees and counts (`tx_full`) whatever the ports would not take.
    fn drop_pending(&mut self) {
        for bucket in self.buckets.iter_mut() {
            if !bucket.is_empty() {
                self.counters
                    .count_drop(DropReason::TxFull, bucket.len() as u64);
                bucket.free_all();
            }
        }
        self.pending = false;
    }

    /// During shutdown with a port refusing: true once the port has had
    /// [`TX_STALL_GIVE_UP_S`] (or another stop signal came): what it
    /// refuses is freed then.
    fn give_up(&mut self) -> bool {
        if !crate::dpdk::signal::quit_requested() {
            return false;
        }
        let now = dpdk::rdtsc();
        let signals = crate::dpdk::signal::stop_signals();
        let (deadline, seen) = *self.give_up_at.get_or_insert((
            now + (dpdk::tsc_hz() as f64 * TX_STALL_GIVE_UP_S) as u64,
            signals,
        ));
        now >= deadline || signals > seen
    }

    /// The zero-copy round: up to a batch, run by run, transmitted from
    /// the input queues' slots (`PacketInputs::transmit`), each run on its
    /// output port with bounded retries ([`send_run`]); what a port
    /// refuses stays in the queue (no more input this round) unless its
    /// [`Hold`] says to drop it. `ROUND_TRIP`: from what came back to
    /// `returns`, this lcore's RX senders (one per worker), taken
    /// round-robin (`PacketInputs::transmit_returned`).
    #[inline]
    fn poll_in_place<const ROUND_TRIP: bool>(
        &mut self,
        upstream_done: bool,
        returns: &mut [PacketSender],
    ) -> usize {
        let rules = SendRules {
            give_up: self.pending && self.give_up(),
            blocked: self.gates.blocked(),
            pmd_burst: self.burst,
            policy: self.policy,
        };
        let (mut total, mut packets, mut refused) = (0, 0, false);
        let pass = self.pass;
        let Self {
            inputs,
            ports,
            out_port,
            holds,
            counters,
            latency,
            next_return,
            ..
        } = self;
        while total < pass && !refused {
            // Read at the run's first latency sample, before its first
            // `rte_eth_tx_burst` (a run without samples reads no TSC); per
            // run, not per round: a later run's unit may have been filled
            // after this run's reading.
            let mut now = 0u64;
            let sample = |p: &Packet| {
                if let Some((field, hist)) = latency.as_mut() {
                    if now == 0 {
                        now = dpdk::rdtsc_inline();
                    }
                    hist.record_since(now, p.field(*field));
                }
            };
            let tx = |in_port: u16, run: &mut TxRun<'_>| {
                let out = out_port[in_port as usize % MAX_PORTS] as usize;
                refused |= !send_run(run, &mut ports[out], &mut holds[out], out, counters, &rules);
            };
            let (left, sent) = if ROUND_TRIP {
                let (mut sample, mut tx) = (sample, tx);
                take_back(returns, next_return, |from| {
                    inputs.transmit_returned(from, pass - total, &mut sample, &mut tx)
                })
            } else {
                let n = inputs.transmit(pass - total, sample, tx);
                (n, n)
            };
            if left == 0 {
                break;
            }
            total += left;
            packets += sent;
        }
        self.pending = refused;
        if total == 0 {
            let drained = if ROUND_TRIP {
                returns.iter().all(|from| from.outstanding() == 0)
            } else {
                self.inputs.is_empty()
            };
            if !refused && upstream_done && drained {
                self.done = true;
            }
            return 0;
        }
        if packets != 0 {
            bump(&self.counters.tx_in_packets, packets as u64);
        }
        total
    }

    /// One round in the stage's mode (`MODE`: a [`StageMode`] as `u8`,
    /// fixed for its lcore's loop); returns how many packets it took.
    /// `returns`: this lcore's RX senders, for a round-trip stage.
    #[inline]
    pub fn poll<const MODE: u8>(
        &mut self,
        upstream_done: bool,
        returns: &mut [PacketSender],
    ) -> usize {
        if MODE == StageMode::RoundTrip as u8 {
            // Without its RX stage's senders nothing can come back.
            if returns.is_empty() {
                self.done |= upstream_done;
                return 0;
            }
            self.poll_in_place::<true>(upstream_done, returns)
        } else if MODE == StageMode::InPlace as u8 {
            self.poll_in_place::<false>(upstream_done, &mut [])
        } else {
            self.poll_bursts(upstream_done)
        }
    }

    /// One receive/transmit round through the stage's bursts.
    #[inline]
    fn poll_bursts(&mut self, upstream_done: bool) -> usize {
        if self.pending {
            // A port refused: take no more input until it accepts or its
            // hold runs out (the worker→TX queues fill, then RX stops).
            self.pending = !self.transmit();
            if self.pending {
                if self.give_up() {
                    self.drop_pending();
                }
                return 0;
            }
        }
        let n = receive(
            &mut self.inputs,
            &mut self.inbuf,
            self.burst,
            upstream_done,
            &mut self.done,
        );
        if n == 0 {
            return 0;
        }
        bump(&self.counters.tx_in_packets, n as u64);
        // Packets a bucket could not take (never: the buckets were empty
        // when this burst was received): freed by push_or_free, counted here.
        let mut lost = 0u64;
        if let Some((field, hist)) = self.latency.as_mut() {
            // Read just before the first rte_eth_tx_burst of the batch; only
            // sampled packets' headers are read.
            let now = dpdk::rdtsc_inline();
            self.inbuf.move_each(|p| {
                if p.is_sampled() {
                    hist.record_since(now, p.field(*field));
                }
                let out = self.out_port[p.port() as usize % MAX_PORTS] as usize;
                lost += u64::from(!self.buckets[out].push_or_free(p.into_mbuf()));
            });
        } else {
            self.inbuf.move_each(|p| {
                let out = self.out_port[p.port() as usize % MAX_PORTS] as usize;
                lost += u64::from(!self.buckets[out].push_or_free(p.into_mbuf()));
            });
        }
        if lost != 0 {
            self.counters.count_drop(DropReason::TxFull, lost);
        }
        self.pending = !self.transmit();
        n
    }
}

/// What [`send_run`] needs besides the run and its port.
struct SendRules {
    /// Shutdown gave up on stalled ports: what a port refuses is dropped.
    give_up: bool,
    /// Ports closed by the lifecycle (nothing is sent to them).
    blocked: PortMask,
    /// Packets per `rte_eth_tx_burst`.
    pmd_burst: usize,
    policy: FullPolicy,
}

/// Round trip: what one of `returns` (this lcore's RX senders, one per
/// worker) gives back, through `take` ((slots that left, packets sent)):
/// from the sender after the one that gave last (`next`), each tried once
/// until one gives something, so that no worker's returns wait behind
/// another's.
#[inline(always)]
fn take_back(
    returns: &mut [PacketSender],
    next: &mut usize,
    mut take: impl FnMut(&mut PacketSender) -> (usize, usize),
) -> (usize, usize) {
    let n = returns.len();
    for _ in 0..n {
        let k = if *next >= n { 0 } else { *next };
        *next = k + 1;
        let got = take(&mut returns[k]);
        if got.0 != 0 {
            return got;
        }
    }
    (0, 0)
}

/// Transmits a run on `queue` (output port index `out`), one PMD burst at
/// a time (a run is up to a transfer unit; only a short burst is a
/// retry), up to [`TX_RETRIES`] retries. What the port still refuses is
/// dropped and counted as `tx_full` when shutdown gave up or the port's
/// [`Hold`] says it is stalled; else it stays in the run and this returns
/// false (the port refused).
#[inline(always)]
fn send_run(
    run: &mut TxRun<'_>,
    queue: &mut TxQueue,
    hold: &mut Hold,
    out: usize,
    counters: &LcoreCounters,
    rules: &SendRules,
) -> bool {
    let open = !rules.blocked.has(queue.port_id());
    let mut tries = 0;
    loop {
        if open {
            let want = run.len().min(rules.pmd_burst);
            let sent = run.tx_burst(queue, rules.pmd_burst);
            if sent != 0 {
                bump(&counters.tx_port_packets[out], sent as u64);
                hold.took();
            }
            if run.is_empty() {
                return true;
            }
            if sent == want {
                continue;
            }
            tries += 1;
        }
        if !open || tries >= TX_RETRIES {
            if rules.give_up || hold.refused(rules.policy, dpdk::rdtsc_inline) {
                counters.count_drop(DropReason::TxFull, run.len() as u64);
                run.free_rest();
                return true;
            }
            return false;
        }
        dpdk::pause();
    }
}
