//! Packet-mbuf pools (`rte_pktmbuf_pool_create`), one per NUMA socket, and
//! their in-use counts for the "0 mbufs in use" check at shutdown.

use super::error::DpdkError;
use super::sys;
use std::ffi::CString;

/// An mbuf pool. Freed (`rte_mempool_free`) on drop: drop it only after the
/// ports that use it are closed.
pub struct Mempool {
    raw: *mut sys::rte_mempool,
    pub name: String,
    pub size: u32,
    pub socket: i32,
}

// SAFETY: rte_mempool is designed for concurrent use from many lcores; the
// handle is only a pointer to it.
unsafe impl Send for Mempool {}
// SAFETY: as above.
unsafe impl Sync for Mempool {}

impl Mempool {
    /// Creates a pool of `size` mbufs with the default data room (2048 B +
    /// headroom) and a per-lcore cache of `cache` on `socket`.
    pub fn create(name: &str, size: u32, cache: u32, socket: i32) -> Result<Mempool, DpdkError> {
        let cname = CString::new(name).expect("pool name has no NUL");
        // SAFETY: valid C string; EAL initialised; returns NULL with rte_errno
        // on failure.
        let raw = unsafe {
            sys::rte_pktmbuf_pool_create(
                cname.as_ptr(),
                size,
                cache,
                0,
                sys::tqfwd_mbuf_default_buf_size,
                socket,
            )
        };
        if raw.is_null() {
            return Err(DpdkError::from_errno(format!(
                "rte_pktmbuf_pool_create({name}, {size} mbufs, socket {socket})"
            )));
        }
        let pool = Mempool {
            raw,
            name: name.to_string(),
            size,
            socket,
        };
        // A packet handle keeps an mbuf's address in 41 bits (see
        // `mbuf::Packet`): check every mbuf once, here, not per packet.
        let mut misfits = 0u32;
        // SAFETY: a pool we just created; the callback only reads the
        // object addresses and counts into `misfits`, which outlives the call.
        unsafe {
            sys::rte_mempool_obj_iter(
                raw,
                Some(count_misfit),
                &mut misfits as *mut u32 as *mut std::ffi::c_void,
            )
        };
        if misfits != 0 {
            return Err(DpdkError {
                call: format!("rte_pktmbuf_pool_create({name})"),
                code: libc::EFAULT,
                text: format!(
                    "{misfits} mbufs lie above 2^47 or are not 64-byte aligned; \
                     tqfwd's packet handles need both (use 4-level page tables or a lower --base-virtaddr)"
                ),
            });
        }
        Ok(pool)
    }

    /// Bytes of frame one mbuf of a [`create`](Self::create)d pool holds
    /// (its data room less the headroom); longer frames take a chain.
    pub fn mbuf_data_len() -> u32 {
        // SAFETY: reads a const defined in shim.c.
        let room = u32::from(unsafe { sys::tqfwd_mbuf_default_buf_size });
        room - sys::RTE_PKTMBUF_HEADROOM
    }

    pub(crate) fn raw(&self) -> *mut sys::rte_mempool {
        self.raw
    }

    /// Mbufs currently allocated from the pool (per-lcore caches count as
    /// available).
    pub fn in_use(&self) -> u32 {
        // SAFETY: valid pool pointer for self's lifetime.
        unsafe { sys::rte_mempool_in_use_count(self.raw) }
    }
}

/// `rte_mempool_obj_iter` callback: counts objects whose address does not
/// fit a packet handle's address bits.
unsafe extern "C" fn count_misfit(
    _mp: *mut sys::rte_mempool,
    opaque: *mut std::ffi::c_void,
    obj: *mut std::ffi::c_void,
    _idx: std::os::raw::c_uint,
) {
    if obj as u64 & !super::mbuf::PACKET_ADDR_MASK != 0 {
        // SAFETY: `opaque` is the `u32` counter `create` passed in.
        unsafe { *(opaque as *mut u32) += 1 };
    }
}

impl Drop for Mempool {
    fn drop(&mut self) {
        // SAFETY: the pool was created by us and is freed once; callers drop
        // it after closing the ports that reference it.
        unsafe { sys::rte_mempool_free(self.raw) };
    }
}
