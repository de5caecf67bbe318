//! Builds the hand-off queues between two stages for either backend and
//! either topology, behind one pair of trait objects, so the stages never
//! know which backend they use.
//!
//! - sharded: one single-producer queue per producer→consumer pair; the
//!   consumer polls its queues round-robin ([`InputSet`]).
//! - shared: one multi-producer queue per consumer.
//!
//! Every queue's memory sits on the consumer's NUMA socket (TransferQueue
//! units through `rte_zmalloc_socket`, rings through `rte_ring_create`).

use crate::config::cli::{Backend, Topology};
use crate::dpdk::packet_queue;
use crate::dpdk::{PacketInputs, PacketReceiver, PacketSender, QueueProbe, SocketMemory};
use crate::error::{out_of_memory, RunError};
use crate::queue::{self, QueueError};
use std::sync::Arc;

pub type Sender = PacketSender;
pub type Receiver = PacketReceiver;

/// A consumer's input queues, polled round-robin (one input later each
/// call, so no producer is starved).
pub type InputSet = PacketInputs;

/// The queues between one stage's producers and the next stage's consumers.
pub struct Link {
    /// senders[p][c]: producer p's way into consumer c.
    pub senders: Vec<Vec<Sender>>,
    /// inputs[c]: consumer c's queues.
    pub inputs: Vec<InputSet>,
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

/// A TransferQueue error as the run reports it: a size the user chose
/// (`--depth`/`--burst`) is a usage error, memory refused at run time is not.
fn queue_error(label: &str, c: usize, e: QueueError) -> RunError {
    match e {
        QueueError::TooLarge { depth, burst, bytes } => RunError::Usage(format!(
            "{label} queue to consumer {c}: --depth {depth} with --burst {burst} needs {bytes} bytes of transfer units per producer, \
             above the {} MiB limit: pass a smaller --depth or --burst",
            queue::MAX_ARENA_BYTES >> 20
        )),
        QueueError::BadBurst(_) | QueueError::BadDepth(_) | QueueError::NoProducers => {
            RunError::Usage(format!("{label} queue to consumer {c}: {e} (check --depth and --burst)"))
        }
        QueueError::OutOfMemory { bytes } => RunError::OutOfMemory(format!(
            "{label} queue to consumer {c}: {bytes} bytes of transfer units"
        )),
    }
}

/// Builds the queues from `producers` producers to consumers on the given
/// NUMA sockets.
pub fn build_link(
    label: &str,
    backend: Backend,
    topology: Topology,
    producers: usize,
    consumer_sockets: &[i32],
    depth: usize,
    burst: usize,
) -> Result<Link, RunError> {
    let consumers = consumer_sockets.len();
    let mut senders: Vec<Vec<Option<Sender>>> = (0..producers)
        .map(|_| (0..consumers).map(|_| None).collect())
        .collect();
    let mut inputs = Vec::with_capacity(consumers);
    let mut capacity = 0usize;
    let mut probes = Vec::new();
    for (c, &socket) in consumer_sockets.iter().enumerate() {
        let mut receivers: Vec<Receiver> = Vec::new();
        match (backend, topology) {
            (Backend::Tq, Topology::Sharded) => {
                for (p, row) in senders.iter_mut().enumerate() {
                    let (mut prods, cons, probe) = packet_queue::tq_channel(
                        1,
                        depth,
                        burst,
                        Arc::new(SocketMemory { socket }),
                    )
                    .map_err(|e| queue_error(label, c, e))?;
                    capacity += queue::items_per_producer(1, depth);
                    row[c] = Some(prods.pop().expect("one producer"));
                    receivers.push(cons);
                    probes.push(Probed {
                        producers: vec![p],
                        consumer: c,
                        probe,
                    });
                }
            }
            (Backend::Tq, Topology::Shared) => {
                let (prods, cons, probe) = packet_queue::tq_channel(
                    producers,
                    depth,
                    burst,
                    Arc::new(SocketMemory { socket }),
                )
                .map_err(|e| queue_error(label, c, e))?;
                capacity += queue::items_per_producer(producers, depth) * producers;
                for (row, prod) in senders.iter_mut().zip(prods) {
                    row[c] = Some(prod);
                }
                receivers.push(cons);
                probes.push(Probed {
                    producers: (0..producers).collect(),
                    consumer: c,
                    probe,
                });
            }
            (Backend::Ring, Topology::Sharded) => {
                for (p, row) in senders.iter_mut().enumerate() {
                    let (tx, rx, probe) =
                        packet_queue::ring_spsc(&format!("{label}{p}_{c}"), depth as u32, socket)
                            .map_err(out_of_memory)?;
                    capacity += depth;
                    row[c] = Some(tx);
                    receivers.push(rx);
                    probes.push(Probed {
                        producers: vec![p],
                        consumer: c,
                        probe,
                    });
                }
            }
            (Backend::Ring, Topology::Shared) => {
                let (txs, rx, probe) = packet_queue::ring_mpsc(
                    &format!("{label}_{c}"),
                    depth as u32,
                    socket,
                    senders.len(),
                )
                .map_err(out_of_memory)?;
                capacity += depth;
                for (row, tx) in senders.iter_mut().zip(txs) {
                    row[c] = Some(tx);
                }
                receivers.push(rx);
                probes.push(Probed {
                    producers: (0..producers).collect(),
                    consumer: c,
                    probe,
                });
            }
        }
        inputs.push(InputSet::new(receivers));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_sizes_are_usage_errors_naming_the_flags() {
        let e = queue::channel::<u64>(1, 1 << 22, 256, Arc::new(queue::GlobalMemory)).unwrap_err();
        match queue_error("rw", 1, e) {
            RunError::Usage(m) => {
                assert!(m.starts_with("rw queue to consumer 1: "), "{m}");
                assert!(
                    m.contains("--depth 4194304 with --burst 256")
                        && m.contains("smaller --depth or --burst"),
                    "{m}"
                );
            }
            RunError::Runtime(m) | RunError::OutOfMemory(m) => panic!("not a usage error: {m}"),
        }
        // Memory refused is reported as such (run() then finds the
        // largest --depth that fits).
        assert!(matches!(
            queue_error("wt", 0, QueueError::OutOfMemory { bytes: 64 }),
            RunError::OutOfMemory(_)
        ));
    }
}
