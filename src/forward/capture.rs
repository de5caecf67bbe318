//! The RX side of `--capture`: an RX lcore's taps, one per captured port,
//! which copy the first `--capture-count` frames received on that port
//! onto the capture's ring (see `dpdk::capture` and `report::capture`).
//!
//! Cost: without `--capture` an RX stage has no taps and pays one branch
//! per received burst. With it, a burst from a captured port costs a
//! counter compare once the count is reached; a tap whose count is reached
//! is removed, and the stage drops its taps when none is left.

use crate::counters::capture::CaptureCounters;
use crate::dpdk::capture::CaptureSender;
use crate::dpdk::{self, MbufPtr};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// One captured port, as one RX lcore sees it.
pub struct Tap {
    pub port: u16,
    pub sender: CaptureSender,
    pub counters: Arc<CaptureCounters>,
}

/// An RX lcore's taps.
pub struct Taps {
    taps: Vec<Tap>,
}

impl Taps {
    /// None when there is nothing to capture.
    pub fn new(taps: Vec<Tap>) -> Option<Box<Taps>> {
        (!taps.is_empty()).then(|| Box::new(Taps { taps }))
    }

    /// Copies what `frames` (just received on `port`) holds of the
    /// capture's first N frames. `tsc`: the RX time, read here if still 0.
    /// Returns false when every tap is done (the stage then drops them).
    #[inline(never)]
    pub fn tap(&mut self, port: u16, frames: &[MbufPtr], tsc: &mut u64) -> bool {
        let mut i = 0;
        while i < self.taps.len() {
            let t = &mut self.taps[i];
            if t.port != port {
                i += 1;
                continue;
            }
            let c = &*t.counters;
            let want = frames.len() as u64;
            // Shared by the port's RX lcores: each takes its share of the
            // count with one add.
            let before = if c.taken.load(Ordering::Relaxed) < c.limit {
                c.taken.fetch_add(want, Ordering::Relaxed)
            } else {
                c.limit
            };
            let n = c.limit.saturating_sub(before).min(want) as usize;
            if n != 0 {
                if *tsc == 0 {
                    *tsc = dpdk::rdtsc_inline();
                }
                let lost = t.sender.copy_burst(&frames[..n], *tsc);
                if lost != 0 {
                    c.dropped.fetch_add(lost as u64, Ordering::Relaxed);
                }
            }
            if before.saturating_add(want) >= c.limit {
                // Count reached: this tap is done (its sender goes away).
                self.taps.swap_remove(i);
            } else {
                i += 1;
            }
        }
        !self.taps.is_empty()
    }
}
