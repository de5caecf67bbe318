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
