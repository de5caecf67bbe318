//! Builds the hand-off queues between two stages for either backend and
//! either topology, behind one pair of trait objects, so the stages never
//! know which backend they use.
//!
//! - sharded: one single-producer queue per producer→consumer pair; the
//!   consumer polls its queues round-robin ([`PacketInputs`]).
//! - shared: one multi-producer queue per consumer.
//!
//! Every queue's memory sits on the consumer's NUMA socket (TransferQueue
//! units through `rte_zmalloc_socket`, rings through `rte_ring_create`).

use crate::config::cli::{Backend, Handoff, Topology};
use crate::dpdk::packet_queue;
use crate::dpdk::{
    DpdkError, PacketInputs, PacketReceiver, PacketSender, QueueProbe, SocketMemory,
};
use crate::queue::{self, QueueError};
use std::sync::Arc;

/// The RX→worker and worker→TX links.
pub struct Links {
    pub rx: Link,
    pub tx: Link,
}

/// The queues between one stage's producers and the next stage's consumers.
pub struct Link {
    /// senders[p][c]: producer p's way into consumer c.
    pub senders: Vec<Vec<PacketSender>>,
    /// inputs[c]: consumer c's queues.
    pub inputs: Vec<PacketInputs>,
    /// Packets the queues can hold in all (for mempool sizing): `depth` per
    /// queue for both backends (a shared TransferQueue splits it over its
    /// producers), whatever the burst sizes.
    pub capacity: usize,
    /// Every queue's occupancy probe (for `--metrics`).
    pub probes: Vec<Probed>,
}

/// One queue of a link and who uses it.
pub struct Probed {
    /// Producer indices feeding it (one when sharded, all when shared).
    pub producers: Vec<usize>,
    pub consumer: usize,
    pub probe: QueueProbe,
}

/// Why a link was not built.
#[derive(Debug, thiserror::Error)]
pub enum HandoffError {
    /// A TransferQueue refused the sizes the user chose (`--depth`,
    /// `--burst`): a usage error.
    #[error("{label} queue to consumer {consumer}: {}", sizes_advice(.source))]
    Sizes {
        /// `rw` (RX→worker) or `wt` (worker→TX).
        label: &'static str,
        consumer: usize,
        source: QueueError,
    },
    /// A queue's memory did not fit in EAL's memory (the caller says what
    /// fits).
    #[error(transparent)]
    OutOfMemory(OutOfMemory),
    /// DPDK refused an `rte_ring` for another reason: a runtime error.
    #[error(transparent)]
    Ring(DpdkError),
}

/// An allocation EAL's memory could not hold: what asked for it.
#[derive(Debug, thiserror::Error)]
pub enum OutOfMemory {
    #[error("{label} queue to consumer {consumer}: {bytes} bytes of transfer units")]
    Queue {
        label: &'static str,
        consumer: usize,
        bytes: usize,
    },
    /// A DPDK call failing with ENOMEM or ENOSPC (an `rte_ring`, a mempool).
    #[error("{}: {}", .0.call, .0.text)]
    Dpdk(DpdkError),
}

impl OutOfMemory {
    /// `e` as an out-of-memory error when it is one (ENOMEM, ENOSPC), or
    /// `e` itself.
    pub fn from_dpdk(e: DpdkError) -> Result<OutOfMemory, DpdkError> {
        if e.code == libc::ENOMEM || e.code == libc::ENOSPC {
            Ok(OutOfMemory::Dpdk(e))
        } else {
            Err(e)
        }
    }
}

/// The end of a [`HandoffError::Sizes`] line: the options to change.
fn sizes_advice(e: &QueueError) -> String {
    match e {
        QueueError::TooLarge { depth, burst, bytes } => format!(
            "--depth {depth} with --handoff-batch {burst} needs {bytes} bytes of transfer units per producer, \
             above the {} MiB limit: pass a smaller --depth or --handoff-batch",
            queue::MAX_ARENA_BYTES >> 20
        ),
        e => format!("{e} (check --depth and --handoff-batch)"),
    }
}

impl HandoffError {
    /// A size the user chose (`--depth`/`--burst`): exit 2.
    pub fn is_usage(&self) -> bool {
        matches!(self, HandoffError::Sizes { .. })
    }
}

/// A TransferQueue error as the run reports it: a size the user chose
/// (`--depth`/`--burst`) is a usage error, memory refused at run time is not.
fn queue_error(label: &'static str, c: usize, e: QueueError) -> HandoffError {
    match e {
        QueueError::OutOfMemory { bytes } => HandoffError::OutOfMemory(OutOfMemory::Queue {
            label,
            consumer: c,
            bytes,
        }),
        source => HandoffError::Sizes {
            label,
            consumer: c,
            source,
        },
    }
}

/// An `rte_ring` DPDK refused.
fn ring_error(e: DpdkError) -> HandoffError {
    match OutOfMemory::from_dpdk(e) {
        Ok(oom) => HandoffError::OutOfMemory(oom),
        Err(e) => HandoffError::Ring(e),
    }
}

/// What every queue of a link is.
#[derive(Debug, Clone, Copy)]
pub struct QueueSpec {
    pub backend: Backend,
    pub topology: Topology,
    /// Zero-copy needs rings whose producer side can lend slots (HTS when
    /// several producers share a ring).
    pub handoff: Handoff,
    /// Packets per queue (`--depth`).
    pub depth: usize,
    /// Packets per transfer unit (`--handoff-batch`).
    pub burst: usize,
    /// Round trip (`Plan::round_trip`): the RX→worker TransferQueues hand
    /// their packets back to the RX lcores, and there is no worker→TX
    /// queue ([`Link::none`]).
    pub round_trip: bool,
}

impl Link {
    /// No queues: `producers` producers with no way to any consumer, and
    /// `consumers` consumers with no input (round trip: the worker→TX
    /// link).
    pub fn none(producers: usize, consumers: usize) -> Link {
        Link {
            senders: (0..producers).map(|_| Vec::new()).collect(),
            inputs: (0..consumers)
                .map(|_| PacketInputs::new(Vec::new()))
                .collect(),
            capacity: 0,
            probes: Vec::new(),
        }
    }
}

/// Builds the queues from `producers` producers to consumers on the given
/// NUMA sockets: the topology decides which producers feed each queue,
/// `build_queue` the backend.
pub fn build_link(
    label: &'static str,
    spec: QueueSpec,
    producers: usize,
    consumer_sockets: &[i32],
) -> Result<Link, HandoffError> {
    let consumers = consumer_sockets.len();
    let mut senders: Vec<Vec<Option<PacketSender>>> = (0..producers)
        .map(|_| (0..consumers).map(|_| None).collect())
        .collect();
    let mut inputs = Vec::with_capacity(consumers);
    let mut capacity = 0usize;
    let mut probes = Vec::new();
    for (c, &socket) in consumer_sockets.iter().enumerate() {
        // Sharded: a queue per producer; shared: one queue all feed.
        let queues: Vec<Vec<usize>> = match spec.topology {
            Topology::Sharded => (0..producers).map(|p| vec![p]).collect(),
            Topology::Shared => vec![(0..producers).collect()],
        };
        let mut receivers: Vec<PacketReceiver> = Vec::with_capacity(queues.len());
        for feeders in queues {
            let q = build_queue(label, spec, &feeders, c, socket)?;
            capacity += q.capacity;
            for (&p, tx) in feeders.iter().zip(q.senders) {
                senders[p][c] = Some(tx);
            }
            receivers.push(q.receiver);
            probes.push(Probed {
                producers: feeders,
                consumer: c,
                probe: q.probe,
            });
        }
        inputs.push(PacketInputs::new(receivers));
    }
    let senders = senders
        .into_iter()
        .map(|row| {
            row.into_iter()
                .map(|s| s.expect("every pair wired"))
                .collect()
        })
        .collect();
    Ok(Link {
        senders,
        inputs,
        capacity,
        probes,
    })
}

/// One queue of a link, before it is wired in.
struct Queue {
    /// One sender per producer feeding the queue, in the order given.
    senders: Vec<PacketSender>,
    receiver: PacketReceiver,
    probe: QueueProbe,
    /// Packets it holds at most.
    capacity: usize,
}

/// Builds the queue that producers `feeders` feed and consumer `c` reads,
/// on NUMA node `socket`, with the backend `spec` names. An `rte_ring` is
/// SP/SC when sharded (it has one producer) and MP/SC when shared, HTS
/// for zero-copy (whatever its producer count); a TransferQueue takes
/// one producer or several alike.
fn build_queue(
    label: &'static str,
    spec: QueueSpec,
    feeders: &[usize],
    c: usize,
    socket: i32,
) -> Result<Queue, HandoffError> {
    let producers = feeders.len();
    let (senders, receiver, probe, capacity) = match (spec.backend, spec.topology) {
        (Backend::Tq, _) => {
            let (txs, rx, probe) = packet_queue::tq_channel(
                producers,
                spec.depth,
                spec.burst,
                Arc::new(SocketMemory { socket }),
                spec.round_trip,
            )
            .map_err(|e| queue_error(label, c, e))?;
            let capacity = queue::items_per_producer(producers, spec.depth) * producers;
            (txs, rx, probe, capacity)
        }
        (Backend::Ring, Topology::Sharded) => {
            let name = format!("{label}{}_{c}", feeders[0]);
            let (tx, rx, probe) =
                packet_queue::ring_spsc(&name, spec.depth as u32, socket).map_err(ring_error)?;
            (vec![tx], rx, probe, spec.depth)
        }
        (Backend::Ring, Topology::Shared) => {
            let (txs, rx, probe) = packet_queue::ring_mpsc(
                &format!("{label}_{c}"),
                spec.depth as u32,
                socket,
                producers,
                spec.handoff != Handoff::Copy,
            )
            .map_err(ring_error)?;
            (txs, rx, probe, spec.depth)
        }
    };
    Ok(Queue {
        senders,
        receiver,
        probe,
        capacity,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_sizes_are_usage_errors_naming_the_flags() {
        let e = queue::channel::<u64>(1, 1 << 22, 256, Arc::new(queue::GlobalMemory)).unwrap_err();
        let e = queue_error("rw", 1, e);
        assert!(e.is_usage(), "{e:?}");
        let m = e.to_string();
        assert!(m.starts_with("rw queue to consumer 1: "), "{m}");
        assert!(
            m.contains("--depth 4194304 with --handoff-batch 256")
                && m.contains("smaller --depth or --handoff-batch"),
            "{m}"
        );
        assert_eq!(
            queue_error("wt", 2, QueueError::BadDepth(3)).to_string(),
            format!(
                "wt queue to consumer 2: {} (check --depth and --handoff-batch)",
                QueueError::BadDepth(3)
            )
        );
        // Memory refused is reported as such (run() then finds the
        // largest --depth that fits).
        let oom = queue_error("wt", 0, QueueError::OutOfMemory { bytes: 64 });
        assert!(!oom.is_usage());
        assert!(matches!(oom, HandoffError::OutOfMemory(_)));
        assert_eq!(
            oom.to_string(),
            "wt queue to consumer 0: 64 bytes of transfer units"
        );
    }
}
