//! [`DpdkError`], what every wrapper in `dpdk` returns for a failed call,
//! and the `rte_errno` / `rte_strerror` reads it is built from.

use std::ffi::CStr;
use std::fmt;

use super::sys;

/// A failed DPDK call: which call, with what return code, and DPDK's text.
#[derive(Debug, Clone)]
pub struct DpdkError {
    pub call: String,
    pub code: i32,
    pub text: String,
}

impl DpdkError {
    /// Builds an error from a negative return code (`-errno`) or, when the
    /// code is not negative, from `rte_errno`.
    pub fn from_ret(call: impl Into<String>, ret: i32) -> Self {
        let code = if ret < 0 { -ret } else { rte_errno() };
        DpdkError {
            call: call.into(),
            code,
            text: strerror(code),
        }
    }

    /// Builds an error from the current `rte_errno` (for calls that return
    /// NULL or -1 and set `rte_errno`).
    pub fn from_errno(call: impl Into<String>) -> Self {
        let code = rte_errno();
        DpdkError {
            call: call.into(),
            code,
            text: strerror(code),
        }
    }
}

impl fmt::Display for DpdkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} failed: {} (errno {})",
            self.call, self.text, self.code
        )
    }
}

impl std::error::Error for DpdkError {}

/// The calling thread's `rte_errno`.
pub fn rte_errno() -> i32 {
    // SAFETY: reads a thread-local int through a C helper; no preconditions.
    unsafe { sys::tqfwd_rte_errno() }
}

/// DPDK's text for an errno value (covers DPDK's own codes too).
pub fn strerror(code: i32) -> String {
    // SAFETY: rte_strerror returns a pointer to a static or thread-local
    // NUL-terminated string valid until the next call on this thread; we copy
    // it out immediately.
    unsafe {
        let p = sys::rte_strerror(code);
        if p.is_null() {
            return format!("error {code}");
        }
        CStr::from_ptr(p).to_string_lossy().into_owned()
    }
}
