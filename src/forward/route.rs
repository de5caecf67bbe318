//! The worker's work in L3 mode (`--routes`): each run its inputs lend it
//! is checked and looked up whole, then each packet is rewritten and sent
//! towards its route's port (`dpdk::RunWork`).
//!
//! Per run ([`RunWork::begin`]): every frame's L2 and L3 headers are
//! checked as a router does (`wire::router::inspect`), the destinations
//! gathered per address family, and each family looked up in one bulk
//! call (`rte_fib_lookup_bulk` / `rte_fib6_lookup_bulk`, out of line once
//! per run, never per packet) in the tables of the worker's own socket.
//! Per packet ([`RunWork::each`], in the same order): a frame that failed
//! a check or found no route is dropped (counted under its reason);
//! the rest get the TTL or hop limit one lower (the IPv4 checksum updated
//! incrementally), the next hop's MACs, and their output port in the
//! packet word (`Packet::set_port`: TX sends each packet out of the port
//! it names, the plan's port map being the identity in L3 mode).
//!
//! The tables are shared, read-only, by every worker of the socket; a
//! reload hands each worker new ones between polls (`set_tables`), and
//! the old ones are freed by the thread that built the new ones once no
//! worker holds them.

use super::stages::synthetic_work;
use crate::config::MAX_PORTS;
use crate::counters::lcore::{DropReason, LcoreCounters};
use crate::dpdk::{Packet, RunWork};
use crate::queue::MAX_BURST;
use crate::setup::routes::SocketRoutes;
use crate::wire::router::{self, L3Drop, L3Head};
use crate::wire::{self, PARSE_HEAD_LEN};
use std::sync::Arc;

/// What [`RunWork::begin`] found for one packet of the run.
#[derive(Debug, Clone, Copy, Default)]
struct Pending {
    /// [`KIND_V4`], [`KIND_V6`], or [`KIND_DROP`] + the reason's index.
    kind: u8,
    /// Offset of the L3 header.
    l3: u8,
    /// IPv4: the TTL and protocol; IPv6: the hop limit.
    word: u16,
    /// IPv4: the header checksum.
    checksum: u16,
}

const KIND_V4: u8 = 0;
const KIND_V6: u8 = 1;
const KIND_DROP: u8 = 2;

/// One run's destinations of one family and their lookups' results.
struct Lookups<A> {
    addrs: [A; MAX_BURST],
    /// Position in the run of each address.
    pos: [u8; MAX_BURST],
    values: [u64; MAX_BURST],
    n: usize,
}

impl<A: Copy> Lookups<A> {
    fn new(zero: A) -> Self {
        Lookups {
            addrs: [zero; MAX_BURST],
            pos: [0; MAX_BURST],
            values: [0; MAX_BURST],
            n: 0,
        }
    }

    /// Looks the gathered addresses up with `lookup` (one call for all)
    /// and writes each result at its packet's position of `out`.
    #[inline(always)]
    fn resolve(&mut self, out: &mut [u64; MAX_BURST], lookup: impl FnOnce(&mut [A], &mut [u64])) {
        let n = self.n;
        if n == 0 {
            return;
        }
        lookup(&mut self.addrs[..n], &mut self.values[..n]);
        for k in 0..n {
            out[self.pos[k] as usize] = self.values[k];
        }
    }

    #[inline(always)]
    fn push(&mut self, addr: A, at: usize) {
        // n < MAX_BURST: a run has at most MAX_BURST packets.
        self.addrs[self.n] = addr;
        self.pos[self.n] = at as u8;
        self.n += 1;
    }
}

// A run's positions are bytes.
const _: () = assert!(MAX_BURST <= 256);

/// A worker's L3 state: its socket's tables and the current run's
/// findings (fixed arrays, allocated with the stage).
pub struct L3Work {
    tables: Arc<SocketRoutes>,
    /// tx_index[port]: the TX lcore (index) serving the port.
    tx_index: [u8; MAX_PORTS],
    pending: [Pending; MAX_BURST],
    /// Per packet of the run: the next-hop value of its route.
    values: [u64; MAX_BURST],
    v4: Lookups<u32>,
    v6: Lookups<[u8; 16]>,
    /// Packets of the run begun, and the next one `each` sees.
    begun: usize,
    next: usize,
    /// Drops of the current round, per reason (`L3Drop::index`).
    drops: [u64; L3Drop::COUNT],
    /// `--worker-cycles` for the current round.
    work_cycles: u64,
    scratch: [u8; PARSE_HEAD_LEN],
}

impl L3Work {
    /// The work of a worker reading `tables`, whose TX lcores serve the
    /// ports as `tx_index` says.
    pub fn new(tables: Arc<SocketRoutes>, tx_index: [u8; MAX_PORTS]) -> Box<L3Work> {
        Box::new(L3Work {
            tables,
            tx_index,
            pending: [Pending::default(); MAX_BURST],
            values: [0; MAX_BURST],
            v4: Lookups::new(0),
            v6: Lookups::new([0; 16]),
            begun: 0,
            next: 0,
            drops: [0; L3Drop::COUNT],
            work_cycles: 0,
            scratch: [0; PARSE_HEAD_LEN],
        })
    }

    /// A reload's tables, between polls; the old ones are released here
    /// (their last holder, the reload thread, frees them).
    pub fn set_tables(&mut self, tables: Arc<SocketRoutes>) {
        self.tables = tables;
    }

    /// The tables this worker reads now.
    pub fn tables(&self) -> &Arc<SocketRoutes> {
        &self.tables
    }

    /// Starts a round with `work_cycles` of synthetic work per packet.
    #[inline]
    pub fn start_round(&mut self, work_cycles: u64) {
        self.work_cycles = work_cycles;
    }

    /// Counts the round's drops (each under its reason) and returns how
    /// many there were.
    #[inline]
    pub fn finish_round(&mut self, counters: &LcoreCounters) -> u64 {
        let mut total = 0;
        for d in L3Drop::ALL {
            let n = std::mem::take(&mut self.drops[d.index()]);
            if n != 0 {
                counters.count_drop(DropReason::of_l3(d), n);
                total += n;
            }
        }
        total
    }

    /// The checks of one frame, into `pending[i]` and the family's
    /// lookups.
    #[inline(always)]
    fn inspect(&mut self, p: &Packet, i: usize) {
        let (head, len) = p.head(&mut self.scratch);
        self.pending[i] = match router::inspect(head, len, p.ip_checksum_verdict()) {
            L3Head::V4 {
                l3,
                dst,
                ttl_proto,
                checksum,
            } => {
                self.v4.push(dst, i);
                Pending {
                    kind: KIND_V4,
                    l3,
                    word: ttl_proto,
                    checksum,
                }
            }
            L3Head::V6 { l3, dst, hop_limit } => {
                self.v6.push(dst, i);
                Pending {
                    kind: KIND_V6,
                    l3,
                    word: u16::from(hop_limit),
                    checksum: 0,
                }
            }
            L3Head::Drop(d) => Pending {
                kind: KIND_DROP + d as u8,
                ..Pending::default()
            },
        };
    }

    /// Looks up the run's destinations, each family in one call, into
    /// `values` at each packet's position.
    #[inline(always)]
    fn look_up(&mut self) {
        let t = &*self.tables;
        let miss = |default: Option<u16>| default.map_or(u64::MAX, u64::from);
        self.v4
            .resolve(&mut self.values, |addrs, values| match &t.v4 {
                Some(fib) => fib.lookup_bulk(addrs, values),
                None => values.fill(miss(t.default_v4)),
            });
        self.v6
            .resolve(&mut self.values, |addrs, values| match &t.v6 {
                Some(fib) => fib.lookup_bulk(addrs, values),
                None => values.fill(miss(t.default_v6)),
            });
    }

    /// A packet `begin` did not see (never for runs of at most a burst,
    /// which is all the inputs lend): checked and looked up alone.
    #[cold]
    #[inline(never)]
    fn unbegun(&mut self, p: &mut Packet) -> Option<usize> {
        self.v4.n = 0;
        self.v6.n = 0;
        self.inspect(p, 0);
        self.look_up();
        self.forward(p, 0)
    }

    /// The packet at position `i` of the run, as its checks and lookup
    /// decided: dropped (counted), or rewritten for its next hop.
    #[inline(always)]
    fn forward(&mut self, p: &mut Packet, i: usize) -> Option<usize> {
        let pend = self.pending[i];
        if pend.kind >= KIND_DROP {
            self.drops[(pend.kind - KIND_DROP) as usize % L3Drop::COUNT] += 1;
            return None;
        }
        let Some(nh) = self.tables.next_hop(self.values[i]) else {
            self.drops[L3Drop::NoRoute.index()] += 1;
            return None;
        };
        let l3 = usize::from(pend.l3);
        if pend.kind == KIND_V4 {
            let bytes = router::forwarded_v4(pend.word, pend.checksum);
            write(p, l3 + router::IPV4_TTL_OFFSET, &bytes);
        } else {
            let hop = router::forwarded_v6(pend.word as u8);
            write(p, l3 + router::IPV6_HOP_LIMIT_OFFSET, &[hop]);
        }
        // A chain whose first segment is shorter than an Ethernet header
        // gets its MACs written across segments.
        if !wire::rewrite_macs(p.data_mut(), &nh.macs) {
            p.write_at(0, &nh.macs);
        }
        let port = nh.port;
        p.set_port(port);
        if self.work_cycles != 0 && !synthetic_work(self.work_cycles) {
            self.work_cycles = 0;
        }
        Some(self.tx_index[port as usize % MAX_PORTS] as usize)
    }
}

/// Writes `bytes` at `offset` of the frame: in the first segment where it
/// holds them (always, but for a chain cut inside the L3 header), else
/// across the chain.
#[inline(always)]
fn write(p: &mut Packet, offset: usize, bytes: &[u8]) {
    let data = p.data_mut();
    if let Some(dst) = data.get_mut(offset..offset + bytes.len()) {
        dst.copy_from_slice(bytes);
    } else {
        // inspect saw the header whole, so the frame holds these bytes.
        p.write_at(offset, bytes);
    }
}

impl RunWork for L3Work {
    #[inline]
    fn begin(&mut self, run: &[Packet]) {
        let n = run.len().min(MAX_BURST);
        self.v4.n = 0;
        self.v6.n = 0;
        for (i, p) in run[..n].iter().enumerate() {
            self.inspect(p, i);
        }
        self.look_up();
        self.begun = n;
        self.next = 0;
    }

    #[inline]
    fn each(&mut self, p: &mut Packet) -> Option<usize> {
        let i = self.next;
        if i >= self.begun {
            return self.unbegun(p);
        }
        self.next = i + 1;
        self.forward(p, i)
    }
}
