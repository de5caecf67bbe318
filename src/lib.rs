//! tqfwd: a DPDK userspace packet forwarder.
//!
//! RX lcores pull mbuf bursts from ports and hand them, by flow, through
//! hand-off queues (the TransferQueue, or `rte_ring` for comparison) to
//! worker lcores, which classify frames and rewrite MACs and hand them on to
//! the TX lcore of the output port.
//!
//! Layout: `dpdk` (the only FFI), `queue` (the TransferQueue, pure Rust),
//! `wire` (frame parsing, never panics), `pipeline` (stages and wiring),
//! `stats` (counters and reports), `config` (corelists and the class
//! grammar, below `cli`), `cli`, `output` (output files), and, with the
//! `testkit` feature (on for the tests), test traffic (`gen`) and pcap
//! files (`pcap`).
//!
//! `unsafe` is confined to `dpdk` (FFI) and `queue` (the lock-free
//! structure, loom-checked), where clippy refuses an unsafe block without a
//! `// SAFETY:` comment; everything else is forbidden from using it.

#[deny(clippy::undocumented_unsafe_blocks, unsafe_op_in_unsafe_fn)]
pub mod dpdk;
pub mod queue;

#[forbid(unsafe_code)]
pub mod cli;
#[forbid(unsafe_code)]
pub mod config;
#[cfg(any(test, feature = "testkit"))]
#[forbid(unsafe_code)]
pub mod gen;
#[forbid(unsafe_code)]
pub mod latency;
#[forbid(unsafe_code)]
pub mod output;
#[cfg(any(test, feature = "testkit"))]
#[forbid(unsafe_code)]
pub mod pcap;
#[forbid(unsafe_code)]
pub mod pipeline;
#[forbid(unsafe_code)]
pub mod stats;
#[forbid(unsafe_code)]
pub mod wire;
