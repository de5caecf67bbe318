//! The hand-off links and one mempool per socket that has ports, sized by
//! the plan. When they do not fit in EAL's memory, the usage error names
//! what does: the largest `--depth` that fits (found by halving), or
//! `--mbufs`.

use super::handoff::{build_link, HandoffError, Link, Links, OutOfMemory, QueueSpec};
use crate::config::{Machine, Plan, PlanError};
use crate::dpdk::{DpdkError, Mempool};

/// Why the links and pools were not allocated.
#[derive(Debug, thiserror::Error)]
pub enum PoolError {
    /// They do not fit in EAL's memory at `--depth {depth}`: a usage
    /// error naming the largest depth that fits (`fits`), else `--mbufs`
    /// when given, else EAL's memory and the lcores.
    #[error("{}", no_fit_line(*.depth, *.fits, *.mbufs, .source))]
    DoesNotFit {
        depth: usize,
        fits: Option<usize>,
        mbufs: Option<u32>,
        source: OutOfMemory,
    },
    /// An allocation EAL could not hold, before [`allocate`] says what fits.
    #[error(transparent)]
    OutOfMemory(OutOfMemory),
    /// A link refused its sizes (usage) or DPDK refused a ring (runtime).
    #[error(transparent)]
    Handoff(HandoffError),
    /// `--mbufs` below what a pool must hold: a usage error.
    #[error(transparent)]
    Mbufs(#[from] PlanError),
    /// DPDK refused a mempool for a reason other than memory.
    #[error(transparent)]
    Mempool(DpdkError),
}

impl PoolError {
    /// Something the user chose and must change: exit 2.
    pub fn is_usage(&self) -> bool {
        match self {
            PoolError::DoesNotFit { .. } | PoolError::Mbufs(_) => true,
            PoolError::Handoff(e) => e.is_usage(),
            PoolError::OutOfMemory(_) | PoolError::Mempool(_) => false,
        }
    }
}

impl From<HandoffError> for PoolError {
    fn from(e: HandoffError) -> Self {
        match e {
            HandoffError::OutOfMemory(o) => PoolError::OutOfMemory(o),
            e => PoolError::Handoff(e),
        }
    }
}

/// The [`PoolError::DoesNotFit`] line.
fn no_fit_line(
    depth: usize,
    fits: Option<usize>,
    mbufs: Option<u32>,
    what: &OutOfMemory,
) -> String {
    match (fits, mbufs) {
        (Some(d), _) => format!(
            "--depth {depth} does not fit in EAL's memory ({what}): at most --depth {d} fits with these lcores and ports, or give EAL more memory (-m, huge pages)"
        ),
        (None, Some(n)) => format!(
            "--mbufs {n} does not fit in EAL's memory ({what}): lower --mbufs or give EAL more memory (-m, huge pages)"
        ),
        (None, None) => format!(
            "the hand-off queues and mempools do not fit in EAL's memory ({what}): give EAL more memory (-m, huge pages) or use fewer lcores"
        ),
    }
}

/// Links (queues on their consumer's socket) and pools for `--depth`,
/// or a usage error saying what fits.
pub fn allocate(plan: &Plan, m: &Machine) -> Result<(Links, Vec<Mempool>), PoolError> {
    let depth = plan.handoff.depth as usize;
    match allocate_depth(plan, m, depth, false) {
        Ok(a) => Ok(a),
        Err(PoolError::OutOfMemory(what)) => {
            let fits = std::iter::successors(Some(depth / 2), |d| Some(d / 2))
                .take_while(|&d| d >= 2)
                .find(|&d| allocate_depth(plan, m, d, true).is_ok());
            Err(PoolError::DoesNotFit {
                depth,
                fits,
                mbufs: plan.handoff.mbufs,
                source: what,
            })
        }
        Err(e) => Err(e),
    }
}

fn allocate_depth(
    plan: &Plan,
    m: &Machine,
    depth: usize,
    quiet: bool,
) -> Result<(Links, Vec<Mempool>), PoolError> {
    let sockets = |ls: &[u32]| ls.iter().map(|&l| m.lcore_socket(l)).collect::<Vec<_>>();
    let spec = QueueSpec {
        backend: plan.handoff.backend,
        topology: plan.handoff.topology,
        handoff: plan.handoff.mode,
        depth,
        burst: plan.handoff.batch as usize,
        round_trip: plan.round_trip(),
    };
    let rx = build_link("rw", spec, plan.rx_stages.len(), &sockets(&plan.workers))?;
    let tx = if spec.round_trip {
        Link::none(plan.workers.len(), plan.layout.tx.len())
    } else {
        build_link("wt", spec, plan.workers.len(), &sockets(&plan.layout.tx))?
    };
    let queued = rx.capacity + tx.capacity;
    let mut pools = Vec::new();
    for sizing in &plan.pools {
        let s = sizing.socket;
        let size = sizing.size(plan.handoff.mbufs, queued)?;
        if !quiet {
            log::info!(
                "mempool on socket {s}: {size} mbufs ({} for descriptors, {queued} for hand-off queues)",
                sizing.descriptors
            );
        }
        pools.push(
            Mempool::create(
                &format!("tqfwd_pool_s{s}"),
                size as u32,
                sizing.cache(size) as u32,
                s,
            )
            .map_err(|e| match OutOfMemory::from_dpdk(e) {
                Ok(oom) => PoolError::OutOfMemory(oom),
                Err(e) => PoolError::Mempool(e),
            })?,
        );
    }
    Ok((Links { rx, tx }, pools))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_fits_is_named() {
        let what = || OutOfMemory::Queue {
            label: "rw",
            consumer: 0,
            bytes: 4096,
        };
        let line = |fits, mbufs| {
            let e = PoolError::DoesNotFit {
                depth: 1 << 20,
                fits,
                mbufs,
                source: what(),
            };
            assert!(e.is_usage());
            e.to_string()
        };
        assert_eq!(
            line(Some(4096), Some(5000)),
            "--depth 1048576 does not fit in EAL's memory (rw queue to consumer 0: 4096 bytes of transfer units): at most --depth 4096 fits with these lcores and ports, or give EAL more memory (-m, huge pages)"
        );
        assert_eq!(
            line(None, Some(5000)),
            "--mbufs 5000 does not fit in EAL's memory (rw queue to consumer 0: 4096 bytes of transfer units): lower --mbufs or give EAL more memory (-m, huge pages)"
        );
        assert_eq!(
            line(None, None),
            "the hand-off queues and mempools do not fit in EAL's memory (rw queue to consumer 0: 4096 bytes of transfer units): give EAL more memory (-m, huge pages) or use fewer lcores"
        );
        assert!(!PoolError::OutOfMemory(what()).is_usage());
    }
}
