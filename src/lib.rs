//! tqfwd: a DPDK userspace packet forwarder.
//!
//! RX lcores pull mbuf bursts from ports and hand them, by flow, through
//! hand-off queues (the TransferQueue, or `rte_ring` for comparison) to
//! worker lcores, which classify frames and rewrite MACs and hand them on to
//! the TX lcore of the output port.
//!
//! Layout, in the order a run goes through it:
//! - `config`: the command line (clap), corelists, the class grammar, and
//!   the [`config::Plan`] that resolves roles, lcores, queues and pool sizes
//!   from the options and the ports' facts. No DPDK. The plan is the only
//!   input of the three below.
//! - `setup`: brings DPDK resources up from a plan (ports, rte_flow rules,
//!   mempools, hand-off queues) into one [`setup::Resources`], and hands
//!   each port queue's handle to the stage that polls it.
//! - `forward`: the lcore loop, its stages, and the port lifecycle.
//! - `report`: counters, the one fold over them, the summary, JSON,
//!   telemetry and latency histograms.
//! - `run`: the page that calls the four in order; `error`: how it fails.
//! - Below the application, importing none of it: `dpdk` (the only FFI),
//!   `queue` (the TransferQueue, pure Rust) and `wire` (frame parsing,
//!   never panics).
//! - With the `testkit` feature (on for the tests): test traffic and pcap
//!   files (`testkit`).
//!
//! `unsafe` is confined to `dpdk` (FFI) and `queue` (the lock-free
//! structure, loom-checked), where clippy refuses an unsafe block without a
//! `// SAFETY:` comment; everything else is forbidden from using it.

#[deny(clippy::undocumented_unsafe_blocks, unsafe_op_in_unsafe_fn)]
pub mod dpdk;
pub mod queue;
#[forbid(unsafe_code)]
pub mod wire;

#[forbid(unsafe_code)]
pub mod config;
#[forbid(unsafe_code)]
pub mod counters;
#[forbid(unsafe_code)]
pub mod error;
#[forbid(unsafe_code)]
pub mod forward;
#[forbid(unsafe_code)]
pub mod reload;
#[forbid(unsafe_code)]
pub mod report;
pub mod run;
#[forbid(unsafe_code)]
pub mod setup;
#[cfg(any(test, feature = "testkit"))]
#[forbid(unsafe_code)]
pub mod testkit;
