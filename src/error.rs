//! How a run fails: a usage error (exit 2, one line naming the option,
//! device or file), a runtime error from DPDK (exit 1), or an allocation
//! that did not fit (turned into a usage error naming the option before
//! `run` returns).

use crate::dpdk;

/// How a run failed.
#[derive(Debug)]
pub enum RunError {
    /// The user asked for something impossible: exit 2.
    Usage(String),
    /// DPDK refused at run time: exit 1.
    Runtime(String),
    /// A queue or pool did not fit in EAL's memory (turned into a usage
    /// error naming the option before `run` returns).
    OutOfMemory(String),
}

impl From<dpdk::DpdkError> for RunError {
    fn from(e: dpdk::DpdkError) -> Self {
        RunError::Runtime(e.to_string())
    }
}

/// A DPDK allocation error: out of memory (ENOMEM, ENOSPC) becomes
/// [`RunError::OutOfMemory`], the rest a runtime error.
pub(crate) fn out_of_memory(e: dpdk::DpdkError) -> RunError {
    if e.code == libc::ENOMEM || e.code == libc::ENOSPC {
        RunError::OutOfMemory(format!("{}: {}", e.call, e.text))
    } else {
        RunError::Runtime(e.to_string())
    }
}
