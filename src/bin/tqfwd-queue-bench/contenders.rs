//! The queues compared: [`Contender`] (TransferQueue sharded and shared,
//! rte_ring SP/SC and MP/SC) with its command-line key and display name, and
//! [`run_config`], which builds a fresh queue of one contender for one run and
//! hands its ends to `runner::run_once`.
//!
//! Promises: every run gets a queue of its own, built just before it (nothing
//! carries over between runs or contenders); several SP/SC rings split the
//! depth over the producers as TQ sharded does, and are polled with the
//! rotation TQ sharded's consumer uses.

use tqfwd::dpdk::Ring;
use tqfwd::queue;

use crate::runner::{run_once, Lab, Roles, RunOut, RunParams};

/// One of the queues compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Contender {
    TqSharded,
    TqShared,
    RingSpsc,
    RingMpsc,
}

impl Contender {
    pub(crate) const ALL: [Contender; 4] = [
        Contender::TqSharded,
        Contender::TqShared,
        Contender::RingSpsc,
        Contender::RingMpsc,
    ];

    pub(crate) fn parse(s: &str) -> Option<Contender> {
        Contender::ALL.into_iter().find(|c| c.key() == s.trim())
    }

    pub(crate) fn key(self) -> &'static str {
        match self {
            Contender::TqSharded => "tq-sharded",
            Contender::TqShared => "tq-shared",
            Contender::RingSpsc => "ring-spsc",
            Contender::RingMpsc => "ring-mpsc",
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Contender::TqSharded => "TQ sharded",
            Contender::TqShared => "TQ shared",
            Contender::RingSpsc => "rte_ring SP/SC",
            Contender::RingMpsc => "rte_ring MP/SC",
        }
    }
}

/// Builds a fresh queue of contender `c` for `producers` producers,
/// `depth` deep, in `lab`'s memory and socket, and runs one measurement
/// on it on `lab`'s lcores.
pub(crate) fn run_config(
    lab: &Lab,
    c: Contender,
    producers: usize,
    depth: usize,
    rp: &RunParams,
) -> Result<RunOut, String> {
    let (eal, mem, socket) = (lab.eal, &lab.mem, lab.socket);
    let roles = Roles {
        producers: &lab.roles.producers[..producers],
        consumer: lab.roles.consumer,
    };
    let burst = rp.burst;
    match c {
        Contender::TqSharded => {
            let (txs, rx) = queue::sharded::<u64>(producers, depth, burst, mem.clone())
                .map_err(|e| e.to_string())?;
            run_once(eal, &roles, txs, rx, rp)
        }
        Contender::TqShared => {
            let (txs, rx) = queue::channel::<u64>(producers, depth, burst, mem.clone())
                .map_err(|e| e.to_string())?;
            run_once(eal, &roles, txs, rx, rp)
        }
        Contender::RingSpsc if producers == 1 => {
            let (tx, rx) =
                Ring::<u64>::spsc("qbs", depth as u32, socket).map_err(|e| e.to_string())?;
            run_once(eal, &roles, vec![tx], rx, rp)
        }
        Contender::RingSpsc => {
            // One SP/SC ring per producer, the depth split as for the TQ,
            // polled with the rotation TQ sharded's consumer uses.
            let per = (depth / producers).max(burst) as u32;
            let mut txs = Vec::with_capacity(producers);
            let mut rxs = Vec::with_capacity(producers);
            for _ in 0..producers {
                let (tx, rx) = Ring::<u64>::spsc("qbs", per, socket).map_err(|e| e.to_string())?;
                txs.push(tx);
                rxs.push(rx);
            }
            run_once(eal, &roles, txs, queue::RoundRobin::new(rxs), rp)
        }
        Contender::RingMpsc => {
            let (txs, rx) = Ring::<u64>::mpsc("qbm", depth as u32, socket, producers, false)
                .map_err(|e| e.to_string())?;
            run_once(eal, &roles, txs, rx, rp)
        }
    }
}
