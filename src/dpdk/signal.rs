//! Signals → process-wide flags (l2fwd's `force_quit`). The handlers only
//! store to atomics: async-signal-safe.
//!
//! - SIGINT, SIGTERM, SIGQUIT: stop cleanly (drain, summary,
//!   `--stats-json`). Each one is counted: a second stop signal makes the
//!   waits of the exit path (a stalled port's drain, the JSON write) give
//!   up at once instead of after their bound.
//! - SIGHUP: asks for a reload of the `--config` file (`reload.rs`,
//!   `systemctl reload`); the run goes on. A terminal hangup therefore no
//!   longer stops tqfwd.
//! - SIGUSR1: asks for one log line with the current totals; the run goes on.
//! - SIGPIPE: ignored (a closed stdout is an error of the write, handled
//!   where it happens).

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, Ordering};

static FORCE_QUIT: AtomicBool = AtomicBool::new(false);
static LAST_SIGNAL: AtomicI32 = AtomicI32::new(0);
static STOP_SIGNALS: AtomicU32 = AtomicU32::new(0);
static TOTALS_REQUESTED: AtomicBool = AtomicBool::new(false);
static RELOAD_REQUESTED: AtomicBool = AtomicBool::new(false);

/// The signals that stop the run.
pub const STOP: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGQUIT];

extern "C" fn on_stop(sig: libc::c_int) {
    let _ = LAST_SIGNAL.compare_exchange(0, sig, Ordering::Relaxed, Ordering::Relaxed);
    STOP_SIGNALS.fetch_add(1, Ordering::AcqRel);
    FORCE_QUIT.store(true, Ordering::Release);
}

extern "C" fn on_usr1(_sig: libc::c_int) {
    TOTALS_REQUESTED.store(true, Ordering::Release);
}

extern "C" fn on_hup(_sig: libc::c_int) {
    RELOAD_REQUESTED.store(true, Ordering::Release);
}

fn install(sig: libc::c_int, handler: libc::sighandler_t) -> std::io::Result<()> {
    // SAFETY: sigaction with a zeroed struct, an empty mask and either
    // SIG_IGN or a handler that is async-signal-safe (atomic stores only).
    let rc = unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = handler;
        libc::sigemptyset(&mut sa.sa_mask);
        sa.sa_flags = libc::SA_RESTART;
        libc::sigaction(sig, &sa, std::ptr::null_mut())
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Installs the handlers: stop signals, SIGUSR1, SIGHUP, SIGPIPE ignored.
pub fn install_quit_handler() -> std::io::Result<()> {
    for sig in STOP {
        install(sig, on_stop as *const () as usize)?;
    }
    install(libc::SIGUSR1, on_usr1 as *const () as usize)?;
    install(libc::SIGHUP, on_hup as *const () as usize)?;
    install(libc::SIGPIPE, libc::SIG_IGN)
}

/// True once a stop signal arrived or [`request_quit`] was called.
#[inline]
pub fn quit_requested() -> bool {
    FORCE_QUIT.load(Ordering::Acquire)
}

/// Asks every loop to stop (used by `--duration`).
pub fn request_quit() {
    FORCE_QUIT.store(true, Ordering::Release);
}

/// The first stop signal, if one arrived.
pub fn last_signal() -> Option<i32> {
    match LAST_SIGNAL.load(Ordering::Relaxed) {
        0 => None,
        s => Some(s),
    }
}

/// How many stop signals arrived so far: a wait of the exit path notes it
/// when it starts and gives up when it grows.
pub fn stop_signals() -> u32 {
    STOP_SIGNALS.load(Ordering::Acquire)
}

/// True once per SIGUSR1 (clears the request).
pub fn take_totals_request() -> bool {
    TOTALS_REQUESTED.swap(false, Ordering::AcqRel)
}

/// True once per SIGHUP (clears the request): several hangups before it
/// is taken ask for one reload.
pub fn take_reload_request() -> bool {
    RELOAD_REQUESTED.swap(false, Ordering::AcqRel)
}
