//! Mbuf handles and fixed-size bursts of them.
//!
//! [`MbufPtr`] is an *owned reference* to one live mbuf: the pipeline moves
//! it (RX → hand-off queue → worker → hand-off queue → TX), never keeps a
//! copy after moving it on, and ends its life exactly once — transmitted
//! (the PMD frees it) or freed here. Only `rx_burst` (see `port.rs`) makes
//! new ones. Per-packet accessors read the `rte_mbuf` fields directly in
//! Rust (no out-of-line call per packet).
//!
//! [`Packet`] is what crosses cores: the mbuf handle plus the few header
//! facts the worker and TX stages need (its length, its input port, a
//! chain mark and a latency-sample mark; the frame starts at a fixed
//! offset), read once on the RX lcore while the header is in its cache,
//! all in one 8-byte word (the address bits an mbuf leaves free hold the
//! facts). Downstream lcores then never read the mbuf header, so its cache
//! lines stay with the lcore that allocates, transmits and frees the mbuf,
//! and a hand-off moves 8 bytes per packet, as a queue of bare mbuf
//! pointers would: half the lines of a 16-byte record.
//!
//! Multi-segment frames (a chain of mbufs, as RX scatter or a PMD's jumbo
//! path builds them): a [`Packet`] notes at RX that its mbuf is a chain;
//! only then do [`Packet::head`], [`Packet::pkt_len`] and
//! [`Packet::write_at`] read the headers of the segments (one predictable
//! branch on a single-segment frame). Freeing the first segment frees the
//! chain (`rte_pktmbuf_free`, `rte_pktmbuf_free_bulk`).
//!
//! [`Burst`] is a fixed array of [`MAX_BURST`] handles plus a length
//! ([`MbufBurst`] for the PMDs, `Burst<Packet>` between stages): no
//! allocation on the data path.
//!
//! Files: `handle.rs` ([`MbufPtr`]), `packet.rs` ([`Packet`]), `burst.rs`
//! ([`Burst`] and what it holds), `dynfield.rs` ([`U64Field`]), `raw.rs`
//! (the handles' plain-data forms), `tests.rs`.
//!
//! # Why safe code cannot duplicate or double-free a handle
//!
//! - [`MbufPtr`] and [`Packet`] are neither `Copy` nor `Clone`, and no safe
//!   function builds one from a pointer: new handles come only from a PMD
//!   (`RxQueue::rx_burst`) and from a packet hand-off queue (module
//!   `packet_queue`), and `Packet::from_rx`/`Packet::into_mbuf` move one
//!   into the other. Every function that ends a handle's life (free,
//!   transmit, send, push) takes it by value, or takes it out of a
//!   [`Burst`] and forgets it there.
//! - What is copied bit for bit is the plain-data *raw* form of a handle
//!   (`RawMbuf`, `RawPacket`, private to `dpdk`): the slots of a [`Burst`]
//!   and the items of the hand-off queues. The conversions between a
//!   handle and its raw form, and from a raw form to the mbuf address
//!   (`RawForm`: `into_raw`, `raw_mbuf`, `from_raw`, `free_bulk`, the
//!   `EMPTY` filler), are private to `dpdk`: [`BurstItem`] requires
//!   `RawForm`, which code outside `dpdk` cannot name, nor call through
//!   the bound (examples below). So no code outside `dpdk` gets a raw
//!   value or an mbuf address out of a handle, and none turns a raw value
//!   into a handle except inside `dpdk`: a burst reads back only the slots
//!   it filled, and a packet receiver only items from the one queue it was
//!   built with, whose only producers are the packet senders built with it
//!   (`packet_queue` builds both ends at once, so no safe code holds a raw
//!   end of such a queue). The queues return each item once (their own
//!   contract, loom- and Miri-checked for the TransferQueue; DPDK's for
//!   `rte_ring`).
//! - A burst dropped while holding mbufs frees them (and asserts in debug
//!   builds, because the pipeline counts before it drops); a handle itself
//!   has no destructor, so a handle dropped by mistake leaks (safe, and
//!   caught by the end-of-run "0 mbufs in use" checks) but is never freed
//!   twice.
//!
//! ```compile_fail,E0382
//! // A packet is moved, not copied: after pushing it into a burst it is gone.
//! use tqfwd::dpdk::{Burst, Packet};
//! fn hand_on(burst: &mut Burst<Packet>, mut p: Packet) {
//!     let _ = burst.push_or_free(p);
//!     p.data_mut()[0] = 0; // error[E0382]: borrow of moved value: `p`
//! }
//! ```
//!
//! ```compile_fail,E0382
//! // Packet is not Copy: a second owner cannot be made by assignment.
//! use tqfwd::dpdk::Packet;
//! fn twins(p: Packet) -> (Packet, Packet) {
//!     (p, p) // error[E0382]: use of moved value: `p`
//! }
//! ```
//!
//! ```compile_fail,E0599
//! // ...nor Clone.
//! use tqfwd::dpdk::MbufPtr;
//! fn twin(m: &MbufPtr) -> MbufPtr {
//!     m.clone() // error[E0599]: no method named `clone`
//! }
//! ```
//!
//! ```compile_fail,E0624
//! // A handle's raw form is private to `dpdk`: code outside it cannot turn
//! // a handle into one, not even through the `BurstItem` bound...
//! use tqfwd::dpdk::mbuf::BurstItem;
//! fn leak<T: BurstItem>(m: T) {
//!     let _ = m.into_raw(); // error[E0624]: method `into_raw` is private
//! }
//! ```
//!
//! ```compile_fail,E0624
//! // ...nor read the mbuf address out of one.
//! use tqfwd::dpdk::mbuf::BurstItem;
//! fn address<T: BurstItem>() {
//!     let _ = T::raw_mbuf; // error[E0624]: associated function `raw_mbuf` is private
//! }
//! ```
//!
//! ```compile_fail,E0599
//! // On a handle itself, the conversion is not there at all.
//! use tqfwd::dpdk::Packet;
//! fn leak(p: Packet) {
//!     let _ = p.into_raw(); // error[E0599]: no method named `into_raw`
//! }
//! ```
//!
//! ```compile_fail,E0382
//! // A sent packet is gone too: `send` takes the burst's packets.
//! use tqfwd::dpdk::{Burst, Packet};
//! use tqfwd::dpdk::packet_queue::PacketSender;
//! fn send(tx: &mut PacketSender, mut burst: Burst<Packet>, p: Packet) {
//!     let _ = burst.push_or_free(p);
//!     tx.send(&mut burst);
//!     let _ = p.len(); // error[E0382]: borrow of moved value: `p`
//! }
//! ```

mod burst;
mod dynfield;
mod handle;
mod packet;
mod raw;

#[cfg(test)]
mod tests;

/// Largest burst tqfwd handles anywhere (RX, hand-off, TX).
pub use crate::queue::MAX_BURST;

pub(in crate::dpdk) use burst::RawForm;
pub use burst::{Burst, BurstItem, MbufBurst};
pub use dynfield::{Sampling, U64Field};
pub(in crate::dpdk) use handle::prefetch_write;
pub use handle::{MbufPtr, MBUF_F_RX_RSS_HASH};
pub(in crate::dpdk) use packet::PACKET_ADDR_MASK;
pub use packet::{Packet, STD_FRAME_OFFSET};
pub(in crate::dpdk) use raw::{RawMbuf, RawPacket};
