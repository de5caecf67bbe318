//! What forwarding counts and measures, and what the reports read: the
//! per-lcore counters and drop reasons (`lcore`), the latency histograms
//! (`latency`), the capture taps' counters (`capture`), the cache-line
//! trip (`trip`) and what `/metrics` reads besides (`sources`).
//!
//! It sits below both its writer and its readers, as Firecracker keeps a
//! device's metrics apart from the logger that reads them: `forward/`
//! writes these, `report/` reads them, and neither imports the other.

pub mod capture;
pub mod latency;
pub mod lcore;
pub mod sources;
pub mod trip;
