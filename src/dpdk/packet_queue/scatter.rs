//! Scatter in place: a stage that hands packets to several queues (an RX
//! lcore to its flows' workers, a worker to its ports' TX lcores) writes
//! each packet straight into the lent slots of its destination's queue,
//! with one run of every destination's queue open at once
//! ([`PacketSender::scatter`], [`PacketInputs::scatter_into`]). No burst
//! per destination is filled first and copied out again.
//!
//! ## Opening the runs
//!
//! The stage first counts how many packets each destination gets
//! ([`RunStore::want`]); [`PacketSender::scatter`] then asks each queue
//! with a count for a run of at most that many slots, in ascending
//! destination order, each inside the previous one's fill (the runs
//! stay lent until the writing is done), and publishes in each what was
//! written (or, coalescing, keeps it open: below). Only the first queue
//! is opened in a way that may wait for another producer (a serialized
//! `rte_ring` whose previous reservation is unfinished: `send_with`);
//! every later one as `try_send_with`, which never waits. So a stage never waits while it holds a
//! reservation: stages scattering into shared rings cannot wait on each
//! other in a cycle (no deadlock), and one preempted while holding runs
//! (lcores sharing a CPU) holds up only producers that hold nothing,
//! on the rings it holds, as a preempted `rte_ring` producer always
//! does. A TransferQueue producer fills its own units and never waits.
//!
//! ## Coalescing
//!
//! A destination gets a fraction of each burst, so the runs are opened
//! with `send_coalesced`: a TransferQueue keeps a unit that is not full
//! open for the next scatter to fill further, and publishes it once full;
//! the stage publishes what is left open ([`PacketSender::flush`]) when
//! it runs dry and every few polls (`forward::stages::Coalescing`). An
//! `rte_ring` publishes every run.
//!
//! ## What does not fit
//!
//! A destination without a run (its queue full, or its ring held by
//! another producer) or whose run is full gives the packet back
//! ([`Runs::push`]), and so every later packet for it in the same
//! scatter: a run is never reopened, so each destination's packets keep
//! their order. The caller keeps what comes back (its bucket for that
//! destination) and hands it on before it scatters again.

use super::{prefetch_write_lines, PacketInputs, PacketSender};
use crate::dpdk::mbuf::{Burst, Packet, RawForm, RawPacket};
use std::marker::PhantomData;

/// One destination's lent run: `cap` slots from `ptr`, the first `len`
/// written. Valid only inside the scatter that opened it (`cap` is 0
/// otherwise, and then `ptr` is never read).
#[derive(Clone, Copy)]
struct Run {
    ptr: *mut RawPacket,
    cap: u32,
    len: u32,
}

/// A stage's per-destination state for [`PacketSender::scatter`], kept
/// between scatters so that nothing is allocated per burst: how many
/// slots each destination wants, and its run while one is open.
pub struct RunStore {
    runs: Box<[Run]>,
    want: Box<[u32]>,
}

// SAFETY: the run pointers are only dereferenced inside
// `PacketSender::scatter`, on the thread that called it, while the queues
// lend those slots; between scatters they are dead values never read.
unsafe impl Send for RunStore {}

impl RunStore {
    /// The store for `destinations` queues.
    pub fn new(destinations: usize) -> RunStore {
        RunStore {
            runs: vec![
                Run {
                    ptr: std::ptr::null_mut(),
                    cap: 0,
                    len: 0,
                };
                destinations
            ]
            .into_boxed_slice(),
            want: vec![0; destinations].into_boxed_slice(),
        }
    }

    /// One more packet for destination `d` in the next scatter (a
    /// destination past the store's end is ignored: its packets come
    /// back from [`Runs::push`]).
    #[inline(always)]
    pub fn want(&mut self, d: usize) {
        if let Some(w) = self.want.get_mut(d) {
            *w += 1;
        }
    }
}

/// The open runs of one scatter, lent to its `write`. The lifetime brand
/// (invariant) keeps them inside that call.
pub struct Runs<'a> {
    runs: &'a mut [Run],
    _brand: PhantomData<fn(&'a ()) -> &'a ()>,
}

impl Runs<'_> {
    /// Moves `p` into destination `d`'s run; gives it back when `d` has no
    /// run or its run is full (module doc: the caller keeps it).
    #[inline(always)]
    pub fn push(&mut self, d: usize, p: Packet) -> Result<(), Packet> {
        match self.runs.get_mut(d) {
            Some(r) if r.len < r.cap => {
                // SAFETY: `r` was opened by this scatter (its `cap` is
                // nonzero only then) and is still lent: slot `len < cap`
                // lies inside it, holds no live packet (a free slot), and
                // now takes `p`'s ownership; the queue publishes the
                // first `len` slots when the scatter closes the run.
                unsafe { r.ptr.add(r.len as usize).write(p.into_raw()) };
                r.len += 1;
                Ok(())
            }
            _ => Err(p),
        }
    }
}

impl PacketSender {
    /// Scatter in place (module doc): opens a run in each of `senders`
    /// that `store` wants slots of (at most that many), in ascending
    /// order, lends them to `write` as [`Runs`], then publishes in each
    /// what `write` pushed, and clears the store's counts.
    #[inline]
    pub fn scatter(
        senders: &mut [PacketSender],
        store: &mut RunStore,
        write: impl for<'a> FnOnce(&mut Runs<'a>),
    ) {
        let RunStore { runs, want } = store;
        let n = senders.len().min(runs.len());
        for r in runs[..n].iter_mut() {
            r.cap = 0;
            r.len = 0;
        }
        let mut write = Some(write);
        open(
            &mut senders[..n],
            0,
            &want[..n],
            &mut runs[..n],
            false,
            &mut |runs: &mut [Run]| {
                if let Some(w) = write.take() {
                    w(&mut Runs {
                        runs,
                        _brand: PhantomData,
                    });
                }
            },
        );
        for w in want.iter_mut() {
            *w = 0;
        }
    }
}

/// Opens the run of the first sender from `senders[0]` (destination
/// `base`) that `want`s slots, and inside it the later ones; at the last,
/// calls `write` with every run. `holding`: a run is already open, so
/// this one is opened without waiting.
fn open(
    senders: &mut [PacketSender],
    base: usize,
    want: &[u32],
    runs: &mut [Run],
    holding: bool,
    write: &mut dyn FnMut(&mut [Run]),
) {
    let Some(i) = (0..senders.len()).find(|&i| want[base + i] != 0) else {
        write(runs);
        return;
    };
    let d = base + i;
    let (first, rest) = senders[i..].split_at_mut(1);
    let sender = &mut first[0];
    let mut fill = |slots: &mut [RawPacket]| {
        // The slots were last read on the consumer's core: ask for all
        // their lines at once.
        prefetch_write_lines(slots);
        runs[d] = Run {
            ptr: slots.as_mut_ptr(),
            cap: slots.len() as u32,
            len: 0,
        };
        open(rest, d + 1, want, runs, true, write);
        let written = runs[d].len as usize;
        runs[d].cap = 0;
        written
    };
    let opened = sender
        .0
        .send_coalesced(want[d] as usize, !holding, &mut fill);
    if opened.is_none() {
        open(rest, d + 1, want, runs, holding, write);
    }
}

/// The most destinations a scatter tells apart (a destination is a byte
/// in the stages' per-packet arrays).
pub const MAX_DESTINATIONS: usize = 256;

// Destinations are lcores (workers, TX lcores): every lcore fits a byte.
const _: () = assert!(crate::dpdk::sys::RTE_MAX_LCORE as usize <= MAX_DESTINATIONS);

impl PacketInputs {
    /// Scatter in place, the worker's pass: the next run of waiting
    /// packets (one input, up to `max`) goes through `work` ([`RunWork`]:
    /// the run begun, then each packet), in order; each packet it keeps (`Some(destination)`, an index into `outs`)
    /// moves straight into its destination's lent slots
    /// ([`PacketSender::scatter`]), or, where that has no room, into
    /// `held[destination]` (in order: the caller hands those on before it
    /// takes more, so `held` must have room for a run); those it does not
    /// keep are freed.
    #[inline]
    pub fn scatter_into(
        &mut self,
        outs: &mut [PacketSender],
        store: &mut RunStore,
        held: &mut [Burst<Packet>],
        max: usize,
        work: &mut impl super::RunWork,
    ) -> Scattered {
        let mut out = Scattered::default();
        let PacketInputs(inputs, scratch) = self;
        let gathered = &mut scratch.0;
        let dests = &mut scratch.1;
        let store = &mut *store;
        let max = max.min(gathered.len());
        let n_outs = outs.len().min(MAX_DESTINATIONS);
        out.taken = inputs.first(|input| {
            input.0.recv_with(max, &mut |src: &mut [RawPacket]| {
                for &raw in src.iter() {
                    // SAFETY: a view of a lent packet, to prefetch its
                    // frame; the slot keeps it.
                    unsafe { Packet::from_raw(raw) }.prefetch_data();
                }
                work.begin(super::as_packets(src));
                // Pass one: each packet's work and destination; the kept
                // ones are gathered (the input's slots are only read, see
                // `Scratch`).
                let mut j = 0;
                for &raw in src.iter() {
                    // SAFETY: a packet the input lent us; it is consumed
                    // (gathered, then moved into a run or `held`, or
                    // freed) and the input forgets it.
                    let mut p = unsafe { Packet::from_raw(raw) };
                    match work.each(&mut p) {
                        Some(d) if d < n_outs => {
                            store.want(d);
                            gathered[j] = p.into_raw();
                            dests[j] = d as u8;
                            j += 1;
                        }
                        Some(_) => {
                            super::free_packet(p);
                            out.lost += 1;
                        }
                        None => {
                            super::free_packet(p);
                            out.rejected += 1;
                        }
                    }
                }
                // Pass two: into the runs, in order.
                PacketSender::scatter(outs, store, |runs| {
                    for (&raw, &d) in gathered[..j].iter().zip(dests[..j].iter()) {
                        // SAFETY: a packet gathered above, owned here once.
                        let p = unsafe { Packet::from_raw(raw) };
                        if let Err(p) = runs.push(d as usize, p) {
                            match held.get_mut(d as usize) {
                                Some(h) => {
                                    if h.push_or_free(p) {
                                        out.held += 1;
                                    } else {
                                        out.lost += 1;
                                    }
                                }
                                None => {
                                    super::free_packet(p);
                                    out.lost += 1;
                                }
                            }
                        }
                    }
                });
                src.len()
            })
        });
        out
    }
}

/// What one [`PacketInputs::scatter_into`] pass did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Scattered {
    /// Packets taken from the input.
    pub taken: usize,
    /// Not kept by `each` (freed).
    pub rejected: usize,
    /// Kept in `held`: their destination had no room.
    pub held: usize,
    /// Kept by `each` but freed: a destination `outs` or `held` does not
    /// have, or `held` full (the caller's bug; counted, never silent).
    pub lost: usize,
}
