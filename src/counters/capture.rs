//! The counters one `--capture` shares between the RX lcores that copy
//! frames (`forward::capture`) and the writer and reports that read them.

use std::sync::atomic::AtomicU64;

/// What one capture's RX lcores and writer share.
#[derive(Debug)]
pub struct CaptureCounters {
    /// `--capture-count`: frames to take.
    pub limit: u64,
    /// Frames taken so far by the RX lcores (may pass `limit` by the part
    /// of a burst beyond it, which is not copied).
    pub taken: AtomicU64,
    /// Copies not made: the ring had no room (the writer is behind).
    pub dropped: AtomicU64,
    /// Frames written to the file.
    pub written: AtomicU64,
}

impl CaptureCounters {
    pub fn new(limit: u64) -> Self {
        CaptureCounters {
            limit,
            taken: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            written: AtomicU64::new(0),
        }
    }
}
