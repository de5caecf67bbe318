//! SIGINT / SIGTERM → a process-wide quit flag (l2fwd's `force_quit`).
//! The handler only stores to an atomic: async-signal-safe.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

static FORCE_QUIT: AtomicBool = AtomicBool::new(false);
static LAST_SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    LAST_SIGNAL.store(sig, Ordering::Relaxed);
    FORCE_QUIT.store(true, Ordering::Release);
}

/// Installs the handler for SIGINT and SIGTERM.
pub fn install_quit_handler() -> std::io::Result<()> {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: sigaction with a zeroed struct, an empty mask and a handler
        // that is async-signal-safe (two atomic stores).
        let rc = unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as *const () as usize;
            libc::sigemptyset(&mut sa.sa_mask);
            sa.sa_flags = libc::SA_RESTART;
            libc::sigaction(sig, &sa, std::ptr::null_mut())
        };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// True once SIGINT/SIGTERM arrived or [`request_quit`] was called.
#[inline]
pub fn quit_requested() -> bool {
    FORCE_QUIT.load(Ordering::Acquire)
}

/// Asks every loop to stop (used by `--duration`).
pub fn request_quit() {
    FORCE_QUIT.store(true, Ordering::Release);
}

/// The signal that requested the quit, if one did.
pub fn last_signal() -> Option<i32> {
    match LAST_SIGNAL.load(Ordering::Relaxed) {
        0 => None,
        s => Some(s),
    }
}
