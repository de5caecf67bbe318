//! A callback of tqfwd's on EAL's interrupt thread, run when tqfwd asks.
//!
//! EAL runs one interrupt thread (`eal-intr-thread`): it waits in
//! `epoll_wait` on every registered file descriptor and runs the callbacks
//! of ready descriptors one at a time. PMDs do their control-plane work
//! there (memif's connect and disconnect, link-state interrupts, alarms).
//! [`InterruptHook`] registers a callback on an `eventfd` of its own
//! (handle type `RTE_INTR_HANDLE_EXT`, for which EAL reads nothing and
//! calls the callback while the descriptor is readable); [`InterruptHook::kick`]
//! makes it readable, so the callback runs on that thread at its next turn,
//! after the events already pending (epoll's ready list is in arrival
//! order). The trampoline drains the eventfd first; a callback that returns
//! true is kicked again, to run after what became pending meanwhile.
//!
//! Promise: while the callback runs, no other callback of the interrupt
//! thread runs (EAL 22.11, `eal_intr_process_interrupts`, calls them in
//! turn from the one thread). Dropping the hook unregisters the callback,
//! waiting while it is running, then frees the closure.

use super::error::DpdkError;
use super::sys;
use std::ffi::c_void;
use std::os::raw::c_int;

/// What the interrupt thread calls; lives in a `Box` whose address is the
/// callback argument, until the hook is dropped.
struct Shared {
    efd: c_int,
    /// Returns true to run again after the events pending now.
    callback: Box<dyn Fn() -> bool + Send + Sync>,
}

/// A registered callback on EAL's interrupt thread (see the module doc).
pub struct InterruptHook {
    shared: *mut Shared,
    handle: *mut sys::rte_intr_handle,
}

// SAFETY: the raw pointers are only dereferenced by EAL's interrupt thread
// (through the callback argument) and by `kick`/`drop`, which touch only
// the eventfd (thread-safe) and the registration calls (EAL locks them).
unsafe impl Send for InterruptHook {}
// SAFETY: `kick` takes &self and only writes to the eventfd.
unsafe impl Sync for InterruptHook {}

unsafe extern "C" fn trampoline(arg: *mut c_void) {
    // SAFETY: `arg` is the `Shared` box registered with this trampoline; it
    // is freed only after the callback is unregistered and not running.
    let shared = unsafe { &*(arg as *const Shared) };
    let mut buf = 0u64;
    // SAFETY: reads 8 bytes from our own non-blocking eventfd into a u64.
    let _ = unsafe { libc::read(shared.efd, &mut buf as *mut u64 as *mut c_void, 8) };
    if (shared.callback)() {
        let one = 1u64;
        // SAFETY: an 8-byte write to our own eventfd.
        let _ = unsafe { libc::write(shared.efd, &one as *const u64 as *const c_void, 8) };
    }
}

impl InterruptHook {
    /// Registers `callback` on the interrupt thread. It runs after each
    /// [`kick`](Self::kick) (several kicks before it runs: once), and again
    /// after the pending events when it returns true.
    pub fn register(
        callback: Box<dyn Fn() -> bool + Send + Sync>,
    ) -> Result<InterruptHook, DpdkError> {
        // SAFETY: plain syscall creating a non-blocking eventfd.
        let efd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if efd < 0 {
            return Err(DpdkError {
                call: "eventfd".into(),
                code: std::io::Error::last_os_error().raw_os_error().unwrap_or(0),
                text: std::io::Error::last_os_error().to_string(),
            });
        }
        // RTE_INTR_INSTANCE_F_PRIVATE is `UINT32_C(0)`, a macro bindgen
        // cannot evaluate.
        const INSTANCE_F_PRIVATE: u32 = 0;
        // SAFETY: allocates a process-private interrupt handle (or NULL).
        let handle = unsafe { sys::rte_intr_instance_alloc(INSTANCE_F_PRIVATE) };
        if handle.is_null() {
            // SAFETY: closes the eventfd created above.
            unsafe { libc::close(efd) };
            return Err(DpdkError::from_errno("rte_intr_instance_alloc"));
        }
        // SAFETY: `handle` is a valid handle we own; setters only store.
        let set = unsafe {
            let t = sys::rte_intr_type_set(handle, sys::RTE_INTR_HANDLE_EXT);
            if t != 0 {
                t
            } else {
                sys::rte_intr_fd_set(handle, efd)
            }
        };
        let shared = Box::into_raw(Box::new(Shared { efd, callback }));
        let ret = if set != 0 {
            set
        } else {
            // SAFETY: `handle` is set up; `shared` stays valid until the
            // callback is unregistered (Drop). EAL copies the handle.
            unsafe {
                sys::rte_intr_callback_register(handle, Some(trampoline), shared as *mut c_void)
            }
        };
        if ret != 0 {
            // SAFETY: nothing was registered; free what we allocated.
            unsafe {
                drop(Box::from_raw(shared));
                sys::rte_intr_instance_free(handle);
                libc::close(efd);
            }
            return Err(DpdkError::from_ret("rte_intr_callback_register", ret));
        }
        Ok(InterruptHook { shared, handle })
    }

    /// Asks the interrupt thread to run the callback at its next turn.
    pub fn kick(&self) {
        let one = 1u64;
        // SAFETY: `shared` is valid while `self` lives; an 8-byte write to
        // our eventfd (EAGAIN at counter overflow is harmless: it is
        // readable anyway).
        let _ = unsafe { libc::write((*self.shared).efd, &one as *const u64 as *const c_void, 8) };
    }
}

impl Drop for InterruptHook {
    fn drop(&mut self) {
        loop {
            // SAFETY: unregisters the callback registered in `register`;
            // returns -EAGAIN while it is running on the interrupt thread.
            let ret = unsafe {
                sys::rte_intr_callback_unregister(
                    self.handle,
                    Some(trampoline),
                    self.shared as *mut c_void,
                )
            };
            if ret != -libc::EAGAIN {
                break;
            }
            std::thread::sleep(std::time::Duration::from_micros(200));
        }
        // SAFETY: the callback is unregistered and not running, so nothing
        // else uses `shared`, the handle or the eventfd any more.
        unsafe {
            let shared = Box::from_raw(self.shared);
            libc::close(shared.efd);
            sys::rte_intr_instance_free(self.handle);
        }
    }
}
