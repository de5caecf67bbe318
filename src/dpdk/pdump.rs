//! `dpdk-dumpcap` / `dpdk-pdump` attaching to tqfwd: `rte_pdump_init`, and
//! the reply gate that makes their detach safe.
//!
//! DPDK 22.11's pdump server (EAL's multi-process thread) handles a
//! secondary's "disable" by removing its RX/TX callbacks with
//! `rte_eth_remove_rx_callback`, which does not wait for an lcore that is
//! inside the callback, and answers at once. The secondary then frees the
//! ring and mempool the callback copies into, and an lcore still copying
//! a burst crashes in `rte_pktmbuf_copy` (seen here: without the gate,
//! 3 of 3 runs of 6 dumpcap detaches died of SIGSEGV). Upstream fixed it
//! in 25.11 ("pdump: fix races in callbacks", 34536d08b0); 22.11.11 still
//! has it.
//!
//! The gate: `shim.c` defines `rte_mp_reply`, the executable exports it
//! (`build.rs`), so librte_pdump's answer goes through it. For an
//! `mp_pdump` answer it first calls [`tqfwd_pdump_reply_gate`], which runs
//! the gate the forwarder installed ([`set_reply_gate`]: a grace period of
//! the lcores that poll ports), then EAL's own `rte_mp_reply`. Hence the
//! secondary frees nothing before every burst that could have entered a
//! removed callback has returned. No gate installed (before and after
//! forwarding, when no lcore polls): the answer goes straight out.

use super::sys;
use std::sync::{Arc, Mutex};

/// What runs before each pdump answer: returns once no lcore is inside a
/// burst that began before it was called.
pub type ReplyGate = Arc<dyn Fn() + Send + Sync>;

static GATE: Mutex<Option<ReplyGate>> = Mutex::new(None);

/// Installs (Some) or removes (None) the gate run before pdump answers.
pub fn set_reply_gate(gate: Option<ReplyGate>) {
    *GATE.lock().unwrap_or_else(|e| e.into_inner()) = gate;
}

/// Called by `shim.c`'s `rte_mp_reply` on EAL's multi-process thread,
/// before it answers a pdump request.
#[no_mangle]
pub extern "C" fn tqfwd_pdump_reply_gate() {
    let gate = GATE.lock().unwrap_or_else(|e| e.into_inner()).clone();
    if let Some(g) = gate {
        // A panic must not unwind into C.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| g()));
    }
}

/// Whether pdump answers pass through the gate in this process (the
/// executable exports `rte_mp_reply`).
pub fn gate_in_place() -> bool {
    // SAFETY: a plain query of the dynamic linker, no preconditions.
    unsafe { sys::tqfwd_mp_reply_interposed() != 0 }
}
