//! The hand-off links and one mempool per socket that has ports, sized by
//! the plan. When they do not fit in EAL's memory, the usage error names
//! what does: the largest `--depth` that fits (found by halving), or
//! `--mbufs`.

use super::handoff::build_link;
use super::Links;
use crate::config::cli::Options;
use crate::config::{Machine, Plan};
use crate::dpdk::Mempool;
use crate::error::{out_of_memory, RunError};

/// Links (queues on their consumer's socket) and pools for `opts.depth`,
/// or a usage error saying what fits.
pub fn allocate(
    opts: &Options,
    plan: &Plan,
    m: &Machine,
) -> Result<(Links, Vec<Mempool>), RunError> {
    let depth = opts.depth as usize;
    match allocate_depth(opts, plan, m, depth, false) {
        Ok(a) => Ok(a),
        Err(RunError::OutOfMemory(what)) => {
            let fits = std::iter::successors(Some(depth / 2), |d| Some(d / 2))
                .take_while(|&d| d >= 2)
                .find(|&d| allocate_depth(opts, plan, m, d, true).is_ok());
            Err(RunError::Usage(match (fits, opts.mbufs) {
                (Some(d), _) => format!(
                    "--depth {depth} does not fit in EAL's memory ({what}): at most --depth {d} fits with these lcores and ports, or give EAL more memory (-m, huge pages)"
                ),
                (None, Some(n)) => format!(
                    "--mbufs {n} does not fit in EAL's memory ({what}): lower --mbufs or give EAL more memory (-m, huge pages)"
                ),
                (None, None) => format!(
                    "the hand-off queues and mempools do not fit in EAL's memory ({what}): give EAL more memory (-m, huge pages) or use fewer lcores"
                ),
            }))
        }
        Err(e) => Err(e),
    }
}

fn allocate_depth(
    opts: &Options,
    plan: &Plan,
    m: &Machine,
    depth: usize,
    quiet: bool,
) -> Result<(Links, Vec<Mempool>), RunError> {
    let burst = opts.burst as usize;
    let sockets = |ls: &[u32]| ls.iter().map(|&l| m.lcore_socket(l)).collect::<Vec<_>>();
    let rx = build_link(
        "rw",
        opts.backend,
        opts.topology,
        plan.rx_stages.len(),
        &sockets(&plan.workers),
        depth,
        burst,
    )?;
    let tx = build_link(
        "wt",
        opts.backend,
        opts.topology,
        plan.workers.len(),
        &sockets(&plan.layout.tx),
        depth,
        burst,
    )?;
    let queued = rx.capacity + tx.capacity;
    let mut pools = Vec::new();
    for sizing in &plan.pools {
        let s = sizing.socket;
        let size = sizing.size(opts.mbufs, queued).map_err(RunError::Usage)?;
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
            .map_err(out_of_memory)?,
        );
    }
    Ok((Links { rx, tx }, pools))
}
