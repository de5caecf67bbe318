//! Hugepage-backed, NUMA-local memory for TransferQueue units:
//! `rte_zmalloc_socket` on the consumer's socket, `rte_free` to release.

use super::sys;
use crate::queue::UnitMemory;
use std::alloc::Layout;
use std::ptr::NonNull;

/// Allocates from DPDK's heap on one NUMA socket.
#[derive(Debug, Clone, Copy)]
pub struct SocketMemory {
    pub socket: i32,
}

impl UnitMemory for SocketMemory {
    fn alloc_zeroed(&self, layout: Layout) -> Option<NonNull<u8>> {
        // SAFETY: a NULL name is allowed; align is a power of two (Layout
        // guarantees it); returns NULL on failure.
        let p = unsafe {
            sys::rte_zmalloc_socket(
                std::ptr::null(),
                layout.size(),
                layout.align() as u32,
                self.socket,
            )
        };
        NonNull::new(p as *mut u8)
    }

    unsafe fn free(&self, ptr: NonNull<u8>, _layout: Layout) {
        // SAFETY: the caller passes a pointer from alloc_zeroed above.
        unsafe { sys::rte_free(ptr.as_ptr() as *mut std::ffi::c_void) };
    }
}
