//! systemd service notifications (`Type=notify`): `READY=1` once the ports
//! are started and the lcores are about to poll, `STATUS=` with the rates
//! once a second, `RELOADING=1` then `READY=1` around a reload (SIGHUP,
//! `systemctl reload`), `STOPPING=1` once when the quit is requested
//! (signal or `--duration`), and nothing after it.
//!
//! The protocol is one datagram per message to the `AF_UNIX` socket named
//! by `NOTIFY_SOCKET` (a path, or an abstract name written `@name`), as
//! `sd_notify(3)` sends it; written here with std's `UnixDatagram` rather
//! than a crate (the `sd-notify` crate asks for a newer Rust than this
//! crate's 1.75). Without `NOTIFY_SOCKET` nothing is sent and nothing
//! fails; a socket that cannot be reached is logged once and the run goes
//! on. Sends never block for more than [`SEND_TIMEOUT`].

use std::os::unix::net::{SocketAddr, UnixDatagram};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Longest a notification may wait for room in the receiver's queue.
pub const SEND_TIMEOUT: Duration = Duration::from_millis(500);

/// The notification socket of this run, if systemd gave one.
#[derive(Debug, Default)]
pub struct Notify {
    target: Option<(UnixDatagram, SocketAddr)>,
    stopping: AtomicBool,
    warned: AtomicBool,
}

impl Notify {
    /// From `NOTIFY_SOCKET`; inactive when it is unset or empty.
    pub fn from_env() -> Notify {
        match std::env::var_os("NOTIFY_SOCKET") {
            Some(name) if !name.is_empty() => Notify::to(&name.to_string_lossy()),
            _ => Notify::default(),
        }
    }

    /// Sends to `name` (a path, or `@name` for an abstract socket).
    pub fn to(name: &str) -> Notify {
        match open(name) {
            Ok(target) => Notify {
                target: Some(target),
                ..Notify::default()
            },
            Err(e) => {
                log::warn!("NOTIFY_SOCKET {name}: {e}; no systemd notifications");
                Notify::default()
            }
        }
    }

    /// True when notifications go somewhere.
    pub fn active(&self) -> bool {
        self.target.is_some()
    }

    /// `READY=1`: forwarding starts.
    pub fn ready(&self) {
        self.send("READY=1");
    }

    /// `STATUS=<line>` (one line), unless stopping was sent.
    pub fn status(&self, line: &str) {
        if !self.stopping.load(Ordering::Acquire) {
            self.send(&format!("STATUS={line}"));
        }
    }

    /// `RELOADING=1`: a reload starts (`READY=1` follows when it is
    /// done, applied or refused), unless stopping was sent.
    pub fn reloading(&self) {
        if !self.stopping.load(Ordering::Acquire) {
            self.send("RELOADING=1");
        }
    }

    /// `STOPPING=1`, once.
    pub fn stopping(&self) {
        if self.active() && !self.stopping.swap(true, Ordering::AcqRel) {
            self.send("STOPPING=1");
        }
    }

    fn send(&self, msg: &str) {
        let Some((sock, addr)) = &self.target else {
            return;
        };
        if let Err(e) = sock.send_to_addr(msg.as_bytes(), addr) {
            if !self.warned.swap(true, Ordering::Relaxed) {
                log::warn!("systemd notification failed ({e}); later failures are not logged");
            }
        }
    }
}

fn open(name: &str) -> std::io::Result<(UnixDatagram, SocketAddr)> {
    let addr = match name.strip_prefix('@') {
        Some(abstract_name) => {
            use std::os::linux::net::SocketAddrExt;
            SocketAddr::from_abstract_name(abstract_name.as_bytes())?
        }
        None => SocketAddr::from_pathname(name)?,
    };
    let sock = UnixDatagram::unbound()?;
    sock.set_write_timeout(Some(SEND_TIMEOUT))?;
    Ok((sock, addr))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recv_all(sock: &UnixDatagram) -> Vec<String> {
        sock.set_nonblocking(true).unwrap();
        let mut buf = [0u8; 512];
        let mut v = Vec::new();
        while let Ok(n) = sock.recv(&mut buf) {
            v.push(String::from_utf8_lossy(&buf[..n]).into_owned());
        }
        v
    }

    #[test]
    fn path_socket_gets_ready_status_and_one_stopping_last() {
        let dir = std::env::temp_dir().join(format!("tqfwd-notify-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let path = dir.join("notify.sock");
        let _ = std::fs::remove_file(&path);
        let rx = UnixDatagram::bind(&path).unwrap();
        let n = Notify::to(path.to_str().unwrap());
        assert!(n.active());
        n.ready();
        n.status("rx 1.000 Mpps");
        n.stopping();
        n.stopping();
        n.status("too late");
        assert_eq!(
            recv_all(&rx),
            ["READY=1", "STATUS=rx 1.000 Mpps", "STOPPING=1"]
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn abstract_socket_is_reached() {
        use std::os::linux::net::SocketAddrExt;
        let name = format!("tqfwd-notify-test-{}", std::process::id());
        let rx = UnixDatagram::bind_addr(&SocketAddr::from_abstract_name(name.as_bytes()).unwrap())
            .unwrap();
        Notify::to(&format!("@{name}")).ready();
        assert_eq!(recv_all(&rx), ["READY=1"]);
    }

    #[test]
    fn no_socket_sends_nothing_and_does_not_fail() {
        let n = Notify::default();
        assert!(!n.active());
        n.ready();
        n.status("x");
        n.stopping();
        // A socket nobody binds: sends fail quietly.
        let gone = Notify::to("/nonexistent-dir-tqfwd/notify.sock");
        gone.ready();
        gone.stopping();
    }
}
