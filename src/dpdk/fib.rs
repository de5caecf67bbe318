//! DPDK's longest-prefix-match tables as owned handles: [`Fib4`] over
//! `rte_fib` (DIR-24-8: a 2^24-entry first level indexed by the address's
//! top 24 bits, 256-entry `tbl8` groups below it for prefixes longer than
//! /24) and [`Fib6`] over `rte_fib6` (a trie: the same 24-bit first level,
//! then one 256-entry group per further byte).
//!
//! Both are built whole, off the datapath, on one NUMA socket
//! (`rte_fib_create(name, socket, ...)`: every table of the FIB lives in
//! that socket's huge-page heap), then only read: [`Fib4::lookup_bulk`] and
//! [`Fib6::lookup_bulk`] take a burst of addresses in one exported call
//! (`rte_fib_lookup_bulk`, DPDK's vector lookup where the CPU has one), so
//! no per-packet call crosses the FFI. DPDK 22.11's FIBs have no RCU of
//! their own: a change is a new table, adopted by the readers between
//! bursts and freed once none reads the old one (`forward::settings`).
//!
//! A lookup's result is a next-hop value of the table's width (1, 2 or 4
//! bytes, [`NextHopSize`]): the index the caller gave with the route, or
//! the table's default (the default route's value, else [`Fib4::miss`]).
//!
//! Sizes are decided by the caller from the routes it will add
//! ([`tbl8_groups_v4`], [`tbl8_reserve_v6`]): the `tbl8` groups are
//! allocated when the table is created and a route that needs one more
//! than the table has is refused (`ENOSPC`), as is a next-hop value above
//! the width's maximum.

use super::error::DpdkError;
use super::sys;
use std::collections::HashSet;
use std::ffi::CString;
use std::sync::atomic::{AtomicU32, Ordering};

/// Names FIBs apart (DPDK names every table's memory after its FIB).
static FIB_SEQ: AtomicU32 = AtomicU32::new(0);

/// Width of a FIB's next-hop values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NextHopSize {
    One,
    Two,
    Four,
}

impl NextHopSize {
    /// Bytes per entry.
    pub fn bytes(self) -> usize {
        match self {
            NextHopSize::One => 1,
            NextHopSize::Two => 2,
            NextHopSize::Four => 4,
        }
    }

    /// The largest next-hop value (and `tbl8` group count) an entry of
    /// this width holds: one bit of each entry marks an extended one.
    pub fn max_value(self) -> u64 {
        (1u64 << (8 * self.bytes() - 1)) - 1
    }

    /// The narrowest width for the IPv4 table (DIR-24-8 has all three)
    /// whose values reach `values` and that can count `groups` tbl8s.
    pub fn for_v4(values: u64, groups: u64) -> Option<NextHopSize> {
        let need = values.max(groups);
        [NextHopSize::One, NextHopSize::Two, NextHopSize::Four]
            .into_iter()
            .find(|s| s.max_value() >= need)
    }

    /// As [`for_v4`](Self::for_v4) for the IPv6 trie, which has no 1-byte
    /// form.
    pub fn for_v6(values: u64, groups: u64) -> Option<NextHopSize> {
        let need = values.max(groups);
        [NextHopSize::Two, NextHopSize::Four]
            .into_iter()
            .find(|s| s.max_value() >= need)
    }

    fn dir24_8(self) -> sys::rte_fib_dir24_8_nh_sz {
        match self {
            NextHopSize::One => sys::RTE_FIB_DIR24_8_1B,
            NextHopSize::Two => sys::RTE_FIB_DIR24_8_2B,
            NextHopSize::Four => sys::RTE_FIB_DIR24_8_4B,
        }
    }

    fn trie(self) -> sys::rte_fib_trie_nh_sz {
        match self {
            NextHopSize::One | NextHopSize::Two => sys::RTE_FIB6_TRIE_2B,
            NextHopSize::Four => sys::RTE_FIB6_TRIE_4B,
        }
    }
}

/// How a FIB is sized when created.
#[derive(Debug, Clone, Copy)]
pub struct FibShape {
    /// Routes it holds at most (its RIB keeps two nodes per route).
    pub max_routes: usize,
    /// `tbl8` groups allocated up front.
    pub tbl8_groups: u32,
    pub next_hop: NextHopSize,
    /// The value of an address no route covers (the default route's next
    /// hop, or a value no next hop has).
    pub default_value: u64,
}

/// The `tbl8` groups a DIR-24-8 table reserves for `routes` (address,
/// length): one per /24 that holds a prefix longer than /24 (DPDK 22.11
/// `dir24_8_modify` counts one reservation per such /24).
pub fn tbl8_groups_v4(routes: impl Iterator<Item = (u32, u8)>) -> u64 {
    let mut blocks = HashSet::new();
    for (addr, len) in routes {
        if len > 24 {
            blocks.insert(addr >> 8);
        }
    }
    blocks.len() as u64
}

/// The `tbl8` groups the IPv6 trie reserves for `routes` at most: DPDK
/// 22.11's `trie_modify` reserves, for a prefix longer than /24 whose
/// byte-aligned cover holds no other route, one group per byte between
/// its covering route's depth (at least 24) and its own; this counts each
/// prefix as if no shorter route covered it, so it never falls short.
pub fn tbl8_reserve_v6(routes: impl Iterator<Item = u8>) -> u64 {
    routes
        .filter(|&len| len > 24)
        .map(|len| u64::from(u32::from(len).div_ceil(8) - 3))
        .sum()
}

/// Bytes allocated from `socket`'s DPDK heap now (to report what a table
/// took: the difference around its build).
pub fn heap_allocated(socket: i32) -> usize {
    let mut st = sys::rte_malloc_socket_stats::default();
    // SAFETY: `st` is a valid out-parameter; the call only reads the
    // heap's counters (an invalid socket returns -1 and leaves it zero).
    let ret = unsafe { sys::rte_malloc_get_socket_stats(socket.max(0), &mut st) };
    if ret < 0 {
        0
    } else {
        st.heap_allocsz_bytes
    }
}

fn fib_name(kind: &str) -> CString {
    let seq = FIB_SEQ.fetch_add(1, Ordering::Relaxed);
    // Fits RTE_FIB_NAMESIZE (64) and DPDK's memzone names built from it.
    CString::new(format!("tq{kind}{seq}")).expect("no NUL in a FIB name")
}

/// An IPv4 FIB (`rte_fib`, DIR-24-8) on one socket; freed when dropped.
pub struct Fib4 {
    raw: *mut sys::rte_fib,
    shape: FibShape,
}

// SAFETY: an rte_fib is plain memory. `add` takes `&mut self` (one writer,
// before the table is shared); `lookup_bulk` only reads the tables, which
// any number of threads may do at once (DPDK's lookups are read-only).
unsafe impl Send for Fib4 {}
// SAFETY: as above: shared references only look up.
unsafe impl Sync for Fib4 {}

impl Fib4 {
    /// Creates an empty table of `shape` on `socket`.
    pub fn new(socket: i32, shape: FibShape) -> Result<Fib4, DpdkError> {
        let name = fib_name("f4_");
        let mut conf = sys::rte_fib_conf {
            type_: sys::RTE_FIB_DIR24_8,
            default_nh: shape.default_value,
            max_routes: shape.max_routes.clamp(1, i32::MAX as usize / 2) as i32,
            rib_ext_sz: 0,
            ..Default::default()
        };
        // The dir24_8 member of the config's union, the one DIR-24-8 reads.
        conf.__bindgen_anon_1.dir24_8.nh_sz = shape.next_hop.dir24_8();
        conf.__bindgen_anon_1.dir24_8.num_tbl8 = shape.tbl8_groups.max(1);
        // SAFETY: a NUL-terminated name and a filled config; returns NULL
        // with rte_errno set on failure.
        let raw = unsafe { sys::rte_fib_create(name.as_ptr(), socket, &mut conf) };
        if raw.is_null() {
            return Err(DpdkError::from_errno("rte_fib_create"));
        }
        Ok(Fib4 { raw, shape })
    }

    /// The value no next hop has (the table's default without a default
    /// route).
    pub fn miss(size: NextHopSize) -> u64 {
        size.max_value()
    }

    /// How the table was sized.
    pub fn shape(&self) -> FibShape {
        self.shape
    }

    /// Adds `addr/len` (host byte order, host bits clear, len 1–32) with
    /// next-hop `value`.
    pub fn add(&mut self, addr: u32, len: u8, value: u64) -> Result<(), DpdkError> {
        // SAFETY: a live table only this handle writes (`&mut self`).
        let ret = unsafe { sys::rte_fib_add(self.raw, addr, len, value) };
        if ret < 0 {
            return Err(DpdkError::from_ret("rte_fib_add", ret));
        }
        Ok(())
    }

    /// Looks up every address of `addrs` (host byte order) into the same
    /// position of `values`; `values` must be at least as long.
    #[inline]
    pub fn lookup_bulk(&self, addrs: &mut [u32], values: &mut [u64]) {
        let n = addrs.len().min(values.len());
        if n == 0 {
            return;
        }
        // SAFETY: `n` addresses and `n` value slots, both valid for the
        // call; the lookup only reads the table (never written once
        // shared). DPDK takes the addresses as `uint32_t *` but does not
        // write them.
        unsafe {
            sys::rte_fib_lookup_bulk(self.raw, addrs.as_mut_ptr(), values.as_mut_ptr(), n as i32)
        };
    }
}

impl Drop for Fib4 {
    fn drop(&mut self) {
        // SAFETY: the handle owns the table; no lookup can run once it is
        // dropped (lookups borrow it).
        unsafe { sys::rte_fib_free(self.raw) };
    }
}

/// An IPv6 FIB (`rte_fib6`, trie) on one socket; freed when dropped.
pub struct Fib6 {
    raw: *mut sys::rte_fib6,
    shape: FibShape,
}

// SAFETY: as for Fib4.
unsafe impl Send for Fib6 {}
// SAFETY: as for Fib4.
unsafe impl Sync for Fib6 {}

impl Fib6 {
    /// Creates an empty table of `shape` on `socket`.
    pub fn new(socket: i32, shape: FibShape) -> Result<Fib6, DpdkError> {
        let name = fib_name("f6_");
        let mut conf = sys::rte_fib6_conf {
            type_: sys::RTE_FIB6_TRIE,
            default_nh: shape.default_value,
            max_routes: shape.max_routes.clamp(1, i32::MAX as usize / 2) as i32,
            rib_ext_sz: 0,
            ..Default::default()
        };
        // The trie member of the config's union, the one the trie reads.
        conf.__bindgen_anon_1.trie.nh_sz = shape.next_hop.trie();
        conf.__bindgen_anon_1.trie.num_tbl8 = shape.tbl8_groups.max(1);
        // SAFETY: as for Fib4::new.
        let raw = unsafe { sys::rte_fib6_create(name.as_ptr(), socket, &mut conf) };
        if raw.is_null() {
            return Err(DpdkError::from_errno("rte_fib6_create"));
        }
        Ok(Fib6 { raw, shape })
    }

    /// How the table was sized.
    pub fn shape(&self) -> FibShape {
        self.shape
    }

    /// Adds `addr/len` (network byte order, host bits clear, len 1–128)
    /// with next-hop `value`.
    pub fn add(&mut self, addr: &[u8; 16], len: u8, value: u64) -> Result<(), DpdkError> {
        // SAFETY: a live table only this handle writes; `addr` is 16 bytes.
        let ret = unsafe { sys::rte_fib6_add(self.raw, addr.as_ptr(), len, value) };
        if ret < 0 {
            return Err(DpdkError::from_ret("rte_fib6_add", ret));
        }
        Ok(())
    }

    /// Looks up every address of `addrs` into the same position of
    /// `values`; `values` must be at least as long.
    #[inline]
    pub fn lookup_bulk(&self, addrs: &mut [[u8; 16]], values: &mut [u64]) {
        let n = addrs.len().min(values.len());
        if n == 0 {
            return;
        }
        // SAFETY: `n` 16-byte addresses and `n` value slots, valid for the
        // call; the lookup only reads the table and the addresses.
        unsafe {
            sys::rte_fib6_lookup_bulk(self.raw, addrs.as_mut_ptr(), values.as_mut_ptr(), n as i32)
        };
    }
}

impl Drop for Fib6 {
    fn drop(&mut self) {
        // SAFETY: as for Fib4.
        unsafe { sys::rte_fib6_free(self.raw) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widths_hold_their_values() {
        assert_eq!(NextHopSize::One.max_value(), 127);
        assert_eq!(NextHopSize::Two.max_value(), 32767);
        assert_eq!(NextHopSize::for_v4(3, 0), Some(NextHopSize::One));
        assert_eq!(NextHopSize::for_v4(3, 200), Some(NextHopSize::Two));
        assert_eq!(NextHopSize::for_v6(3, 0), Some(NextHopSize::Two));
        assert_eq!(NextHopSize::for_v6(3, 40_000), Some(NextHopSize::Four));
        assert_eq!(NextHopSize::for_v6(1 << 40, 0), None);
    }

    #[test]
    fn tbl8_counts() {
        let v4 = [
            (0x0a00_0000, 8),
            (0x0a00_0100, 25),
            (0x0a00_0180, 25),
            (0x0a00_0200, 32),
        ];
        assert_eq!(tbl8_groups_v4(v4.into_iter()), 2);
        assert_eq!(
            tbl8_reserve_v6([16u8, 24, 25, 32, 33, 48, 64, 128].into_iter()),
            1 + 1 + 2 + 3 + 5 + 13
        );
    }
}
