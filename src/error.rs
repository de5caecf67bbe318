//! How a run fails: a usage error (exit 2, one line naming the option,
//! device or file) or a runtime error from DPDK (exit 1). Each variant
//! wraps the error of the part that failed, by value; its line is the one
//! the user sees after `tqfwd: error: `.
//!
//! The parts' errors live with the parts ([`PlanError`] in `config::plan`,
//! [`FrameError`], [`PoolError`], [`PortError`] in `setup`), which import
//! neither this module nor what wraps them.

use crate::config::routes::RouteError;
use crate::config::PlanError;
use crate::dpdk::DpdkError;
use crate::setup::frames::FrameError;
use crate::setup::pools::PoolError;
use crate::setup::ports::PortError;
use crate::setup::routes::RouteBuildError;

/// How a run failed.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The options do not fit the machine (roles, ports, classes,
    /// `--mbufs`): exit 2.
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// A port cannot take `--max-frame`: exit 2.
    #[error(transparent)]
    Frame(#[from] FrameError),
    /// The hand-off queues and mempools: exit 2 when the sizes asked for do
    /// not fit (naming what does), 1 when DPDK refused otherwise.
    #[error(transparent)]
    Pools(#[from] PoolError),
    /// A port did not come up: exit 2 when a memif client found no
    /// server, 1 when DPDK refused.
    #[error(transparent)]
    Port(#[from] PortError),
    /// The `--routes` file is refused (a line, its size, its kind): exit 2.
    #[error(transparent)]
    Routes(#[from] RouteError),
    /// The route tables do not fit (their width, huge-page memory): exit 2.
    #[error(transparent)]
    RouteBuild(#[from] RouteBuildError),
    /// DPDK refused at run time: exit 1.
    #[error(transparent)]
    Dpdk(#[from] DpdkError),
    /// The `--metrics` server thread did not start: exit 1.
    #[error("--metrics: no server thread: {0}")]
    MetricsThread(#[source] std::io::Error),
    /// Anything else that failed at run time, as one line with its context
    /// (`forward` builds these): exit 1.
    #[error("{0}")]
    Runtime(String),
}

impl RunError {
    /// The user asked for something impossible (exit 2), rather than DPDK
    /// failing (exit 1).
    pub fn is_usage(&self) -> bool {
        match self {
            RunError::Plan(_)
            | RunError::Frame(_)
            | RunError::Routes(_)
            | RunError::RouteBuild(_) => true,
            RunError::Pools(e) => e.is_usage(),
            RunError::Port(e) => e.is_usage(),
            RunError::Dpdk(_) | RunError::MetricsThread(_) | RunError::Runtime(_) => false,
        }
    }

    /// The process's exit code for this error: 2 or 1.
    pub fn exit_code(&self) -> u8 {
        if self.is_usage() {
            2
        } else {
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::setup::handoff::OutOfMemory;

    fn dpdk(code: i32) -> DpdkError {
        DpdkError {
            call: "rte_mempool_create".into(),
            code,
            text: "Cannot allocate memory".into(),
        }
    }

    #[test]
    fn lines_and_exit_codes() {
        let cases: Vec<(RunError, u8, &str)> = vec![
            (PlanError::NoPorts.into(), 2, "no Ethernet ports: pass --vdev or bind a NIC, see dpdk-config/"),
            (
                dpdk(12).into(),
                1,
                "rte_mempool_create failed: Cannot allocate memory (errno 12)",
            ),
            (
                PoolError::DoesNotFit {
                    depth: 4096,
                    fits: Some(1024),
                    mbufs: None,
                    source: OutOfMemory::Dpdk(dpdk(12)),
                }
                .into(),
                2,
                "--depth 4096 does not fit in EAL's memory (rte_mempool_create: Cannot allocate memory): at most --depth 1024 fits with these lcores and ports, or give EAL more memory (-m, huge pages)",
            ),
            (PoolError::Mempool(dpdk(22)).into(), 1, "rte_mempool_create failed: Cannot allocate memory (errno 22)"),
            (
                PortError::MemifStopped {
                    device: "net_memif0".into(),
                    socket: "/run/memif.sock".into(),
                }
                .into(),
                2,
                "net_memif0: stopped while waiting for the memif server on socket /run/memif.sock: start the server first",
            ),
            (PortError::Dpdk(dpdk(5)).into(), 1, "rte_mempool_create failed: Cannot allocate memory (errno 5)"),
            (
                RunError::MetricsThread(std::io::Error::other("no threads")),
                1,
                "--metrics: no server thread: no threads",
            ),
            (RunError::Runtime("--capture 0: x".into()), 1, "--capture 0: x"),
        ];
        for (e, code, line) in cases {
            assert_eq!(
                (e.exit_code(), e.to_string().as_str()),
                (code, line),
                "{e:?}"
            );
        }
    }
}
