//! Dynamic mbuf fields ([`U64Field`]): 8-byte fields DPDK places in the
//! mbuf header at run time (`rte_mbuf_dynfield_register`).
//!
//! Promise: a registered field lies inside `struct rte_mbuf`, 8-byte
//! aligned, so reading or writing it through a live handle is in bounds.

use crate::dpdk::error::DpdkError;
use crate::dpdk::sys;
use std::ffi::CString;

/// An 8-byte mbuf dynamic field registered with `rte_mbuf_dynfield_register`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct U64Field {
    pub(super) offset: usize,
}

impl U64Field {
    /// Registers (or looks up) the 8-byte field `name`.
    pub fn register(name: &str) -> Result<U64Field, DpdkError> {
        let mut desc = sys::rte_mbuf_dynfield::default();
        let cname = CString::new(name).expect("field name has no NUL");
        let bytes = cname.as_bytes_with_nul();
        if bytes.len() > desc.name.len() {
            return Err(DpdkError {
                call: "rte_mbuf_dynfield_register".into(),
                code: libc::EINVAL,
                text: "name too long".into(),
            });
        }
        for (d, b) in desc.name.iter_mut().zip(bytes) {
            *d = *b as std::os::raw::c_char;
        }
        desc.size = 8;
        desc.align = 8;
        // SAFETY: valid descriptor; returns the offset or -1 with rte_errno.
        let off = unsafe { sys::rte_mbuf_dynfield_register(&desc) };
        if off < 0 {
            return Err(DpdkError::from_errno(format!(
                "rte_mbuf_dynfield_register({name})"
            )));
        }
        let offset = off as usize;
        if offset + 8 > std::mem::size_of::<sys::rte_mbuf>() || offset % 8 != 0 {
            return Err(DpdkError {
                call: "rte_mbuf_dynfield_register".into(),
                code: libc::EINVAL,
                text: format!("bad offset {offset}"),
            });
        }
        Ok(U64Field { offset })
    }
}

/// 1-in-`every` latency sampling over a stream of packets
/// (`--latency-sample`): packets `every`, `2 × every`, … of the stream
/// carry an RX timestamp in `field`. Which packets of a burst are samples
/// is worked out once per burst ([`next`](Self::next)), not by a count
/// kept per packet.
#[derive(Debug, Clone, Copy)]
pub struct Sampling {
    field: U64Field,
    /// At least 1.
    every: u32,
    /// Packets since the last sample (below `every`).
    since: u32,
    /// `every - 1` when `every` is a power of two (the count wraps with a
    /// mask, no division per burst), else 0.
    mask: u32,
}

impl Sampling {
    /// Stamps 1 packet in `every` (0 counts as 1) into `field`.
    pub fn new(field: U64Field, every: u32) -> Sampling {
        let every = every.max(1);
        Sampling {
            field,
            every,
            since: 0,
            mask: if every.is_power_of_two() {
                every - 1
            } else {
                0
            },
        }
    }

    /// The field the stamp goes into.
    #[inline]
    pub fn field(&self) -> U64Field {
        self.field
    }

    /// Counts the next `n` packets of the stream; returns the index among
    /// them of the first sample (`n` or more: none is) and the step to
    /// each further one.
    #[inline]
    pub fn next(&mut self, n: usize) -> (usize, usize) {
        let every = self.every as usize;
        let first = every - 1 - self.since as usize;
        let since = self.since as usize + n;
        self.since = if since < every {
            since
        } else if self.mask != 0 {
            since & self.mask as usize
        } else {
            since % every
        } as u32;
        (first, every)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The per-burst answer marks exactly the packets a per-packet count
    /// marks, over bursts of every size.
    #[test]
    fn sampling_matches_a_per_packet_count() {
        for every in [1u32, 2, 3, 16, 64, 100] {
            let mut s = Sampling::new(U64Field { offset: 0 }, every);
            let mut count = 0u32;
            for n in [0usize, 1, 5, 16, 32, 7, 64, 1, 0, 255, 3] {
                let (first, step) = s.next(n);
                let mut marked = vec![false; n];
                let mut i = first;
                while i < n {
                    marked[i] = true;
                    i += step;
                }
                for (k, m) in marked.iter().enumerate() {
                    count += 1;
                    let sample = count >= every;
                    if sample {
                        count = 0;
                    }
                    assert_eq!(*m, sample, "every {every}, burst {n}, packet {k}");
                }
            }
        }
    }
}
