//! Port lifecycle: which ports the lcores may poll, and the one way to stop
//! them polling a port before anything is done to it.
//!
//! - [`Quiescence`] is quiescent-state-based reclamation (QSBR, as DPDK's
//!   `rte_rcu_qsbr`): every lcore that polls ports reports the current
//!   epoch at the top of each loop iteration, when it holds no reference
//!   into a PMD. [`Quiescence::synchronize`] bumps the epoch and waits until
//!   each online lcore has reported it: every burst that began before the
//!   call has then returned, and every later one sees what was stored before
//!   the call.
//! - [`PortGates`] publishes one word, the mask of ports the lcores must
//!   not burst on, read (Acquire) once per RX poll and once per TX flush;
//!   [`PortGates::close`] sets a port's bit and synchronizes.
//! - [`PortMonitor`] (a control thread, never an lcore) polls link state,
//!   logs each change once, closes a port whose link went down and opens it
//!   when it is back; a memif *client* is reconnected by stopping and
//!   starting its port until the link comes up (the PMD never reconnects by
//!   itself). tqfwd's counters live in the stages and are untouched.
//! - [`PortControl`] carries the operator's `port_stop` / `port_start`
//!   (telemetry commands) to the monitor, the one thread that stops and
//!   starts ports: a stopped port is closed first (no lcore is in its
//!   bursts), then `rte_eth_dev_stop` returns its descriptors' mbufs to
//!   the pool; the monitor leaves it alone until `port_start` starts it and
//!   opens it again. Packets routed to a stopped port are refused at TX
//!   like a full ring and counted (`tx_full`), so conservation holds.
//!
//! ## memif: why a peer that goes away cannot crash tqfwd
//! DPDK 22.11's memif PMD maps and unmaps the regions its RX/TX bursts read
//! through in `memif_connect` / `memif_disconnect`, which run (a) on EAL's
//! interrupt thread, in memif's control-channel and listener callbacks,
//! when a peer connects, misbehaves or goes away; (b) in `dev_start`,
//! `dev_stop` and `dev_close`, which tqfwd calls only on a port that is
//! closed here (or after the lcores have stopped). Nothing orders (a)
//! against a burst in progress: `memif_disconnect` clears the CONNECTED flag
//! with plain stores and unmaps at once.
//!
//! [`MemifPark`] closes that gap. Its callback runs on the interrupt thread
//! through an [`InterruptHook`] and *parks* it: it sets `memif_open`, sleeps
//! for [`MEMIF_HOLD`] (or until told to stop), clears `memif_open`,
//! synchronizes, and asks to run again after the events that are pending.
//! The interrupt thread runs one callback at a time, so while it is parked
//! no memif callback runs; lcores call a memif burst only after reading
//! the blocked mask with memif's bits clear (Acquire, set only while
//! `memif_open`), inside one loop iteration; and the park ends
//! only after every such burst has returned (synchronize). Hence no memif
//! connect or disconnect overlaps a memif burst, and a burst after a
//! disconnect sees the CONNECTED flag cleared (the park that opened for it
//! started after the disconnect returned). A port whose link is down is
//! closed (below) and not polled at all, so the interrupt thread is not
//! parked while no memif port is polled: a reconnect handshake runs at the
//! interrupt thread's own speed.
//!
//! Cost: one Acquire load (a plain load on x86) per RX poll and per TX
//! flush, of a word that changes only when a link does or memif's park
//! turns; a bit test per queue. On memif ports, a gap of one pass of the
//! interrupt thread's event loop (microseconds) every [`MEMIF_HOLD`], during which memif ports are
//! skipped (RX) or refuse (TX, counted as for a full ring). Other interrupt
//! work (alarms, other PMDs' events) waits up to [`MEMIF_HOLD`] while memif
//! ports are polled.

use crate::config::MAX_PORTS;
use crate::dpdk::intr::InterruptHook;
use crate::dpdk::{DpdkError, Port};
use crossbeam_utils::CachePadded;
use std::sync::atomic::{fence, AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long the interrupt thread stays parked (memif ports polled) before
/// it runs the events that arrived meanwhile.
pub const MEMIF_HOLD: Duration = Duration::from_millis(10);

/// How often the monitor reads link state.
pub const MONITOR_PERIOD: Duration = Duration::from_millis(50);

/// How long a memif client's restart is given to connect before the next.
const RECONNECT_EVERY: Duration = Duration::from_millis(500);

/// `seen` value of an lcore that is not in its loop (not started, or done).
const OFFLINE: u64 = u64::MAX;

/// Quiescent-state tracking for the lcores that poll ports (module doc).
pub struct Quiescence {
    /// Bumped by each [`synchronize`](Self::synchronize).
    epoch: CachePadded<AtomicU64>,
    /// Per lcore slot: the last epoch it reported, or [`OFFLINE`]. Only the
    /// slot's lcore stores to it.
    seen: Box<[CachePadded<AtomicU64>]>,
}

impl Quiescence {
    pub fn new(slots: usize) -> Quiescence {
        Quiescence {
            epoch: CachePadded::new(AtomicU64::new(0)),
            seen: (0..slots)
                .map(|_| CachePadded::new(AtomicU64::new(OFFLINE)))
                .collect(),
        }
    }

    /// The lcore of `slot` enters its loop; returns its first report.
    /// Sequentially consistent so that a concurrent `synchronize` either
    /// waits for this lcore or is seen by it before its first burst.
    pub fn online(&self, slot: usize) -> u64 {
        let e = self.epoch.load(Ordering::SeqCst);
        self.seen[slot].store(e, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        let mut last = e;
        self.report(slot, &mut last);
        last
    }

    /// The lcore of `slot` holds no reference into any port: reports the
    /// current epoch (`last`: its previous report, to store only changes).
    #[inline]
    pub fn report(&self, slot: usize, last: &mut u64) {
        let e = self.epoch.load(Ordering::Acquire);
        if e != *last {
            *last = e;
            self.seen[slot].store(e, Ordering::Release);
        }
    }

    /// The lcore of `slot` left its loop and polls nothing any more.
    pub fn offline(&self, slot: usize) {
        self.seen[slot].store(OFFLINE, Ordering::Release);
    }

    /// Returns once every lcore has passed a quiescent point after this
    /// call began (or is offline).
    pub fn synchronize(&self) {
        let e = self.epoch.fetch_add(1, Ordering::SeqCst) + 1;
        for s in self.seen.iter() {
            let mut spins = 0u32;
            while s.load(Ordering::SeqCst) < e {
                spins += 1;
                if spins < 64 {
                    std::hint::spin_loop();
                } else if spins < 256 {
                    std::thread::yield_now();
                } else {
                    std::thread::sleep(Duration::from_micros(20));
                }
            }
        }
    }
}

/// Ports the lcores must not call a burst on: bit `p` set = port `p`
/// blocked. Read once per poll.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortMask(u64);

impl PortMask {
    #[inline]
    pub fn has(self, port: u16) -> bool {
        self.0 & (1u64 << (port as usize % MAX_PORTS)) != 0
    }
}

const _: () = assert!(MAX_PORTS <= 64);

/// What the writers (monitor, memif park) decided; `blocked` is derived
/// from it under the lock.
struct GateState {
    /// Ports closed by the lifecycle (link down, stopped).
    closed: u64,
    /// Ports stopped by the operator (`port_stop`).
    admin: u64,
    /// The interrupt thread is parked (memif bursts allowed).
    memif_open: bool,
}

/// Which ports the lcores may poll (module doc).
pub struct PortGates {
    /// `closed | (memif ports unless memif_open)`: the one word lcores read.
    blocked: CachePadded<AtomicU64>,
    /// Set at setup: which ports are memif ports.
    memif: u64,
    state: Mutex<GateState>,
    pub quiescence: Quiescence,
}

impl PortGates {
    /// Every port polled; `memif[p]`: port p is a memif port. `slots`: the
    /// lcores that poll ports.
    pub fn new(memif: [bool; MAX_PORTS], slots: usize) -> PortGates {
        let memif = memif
            .iter()
            .enumerate()
            .filter(|(_, &m)| m)
            .fold(0u64, |acc, (p, _)| acc | 1 << p);
        PortGates {
            blocked: CachePadded::new(AtomicU64::new(memif)),
            memif,
            state: Mutex::new(GateState {
                closed: 0,
                admin: 0,
                memif_open: false,
            }),
            quiescence: Quiescence::new(slots),
        }
    }

    /// The ports an lcore must skip in this loop iteration (between two
    /// quiescence reports): one load per poll.
    #[inline]
    pub fn blocked(&self) -> PortMask {
        PortMask(self.blocked.load(Ordering::Acquire))
    }

    /// May an lcore call a burst on `port` now (same rule as [`blocked`](Self::blocked))?
    #[inline]
    pub fn pollable(&self, port: u16) -> bool {
        !self.blocked().has(port)
    }

    /// Applies `f` to the state and publishes the derived mask.
    fn update(&self, f: impl FnOnce(&mut GateState)) {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut st);
        let memif_blocked = if st.memif_open { 0 } else { self.memif };
        self.blocked
            .store(st.closed | st.admin | memif_blocked, Ordering::SeqCst);
    }

    fn closed(&self) -> u64 {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).closed
    }

    pub fn is_polled(&self, port: u16) -> bool {
        self.closed() & (1u64 << (port as usize % MAX_PORTS)) == 0
    }

    /// Stops the lcores polling `port`; returns once none is in its bursts.
    pub fn close(&self, port: u16) {
        self.update(|st| st.closed |= 1u64 << (port as usize % MAX_PORTS));
        self.quiescence.synchronize();
    }

    /// Lets the lcores poll `port` again (after it was started).
    pub fn open(&self, port: u16) {
        self.update(|st| st.closed &= !(1u64 << (port as usize % MAX_PORTS)));
    }

    /// memif bursts allowed (true) or not; after `false` returns, no lcore
    /// is in a memif burst.
    fn set_memif_open(&self, open: bool) {
        self.update(|st| st.memif_open = open);
        if !open {
            self.quiescence.synchronize();
        }
    }

    /// The operator stops (`true`) or lets the lcores poll `port`; after
    /// a stop returns, no lcore is in its bursts.
    fn set_admin(&self, port: u16, stopped: bool) {
        let bit = 1u64 << (port as usize % MAX_PORTS);
        self.update(|st| {
            if stopped {
                st.admin |= bit
            } else {
                st.admin &= !bit
            }
        });
        if stopped {
            self.quiescence.synchronize();
        }
    }

    fn any_memif_polled(&self) -> bool {
        let st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        self.memif & !(st.closed | st.admin) != 0
    }

    pub fn has_memif(&self) -> bool {
        self.memif != 0
    }
}

/// Parks EAL's interrupt thread while memif ports are polled (module doc).
pub struct MemifPark {
    hook: InterruptHook,
    state: Arc<ParkState>,
}

struct ParkState {
    gates: Arc<PortGates>,
    stopping: AtomicBool,
}

impl ParkState {
    /// One park, on the interrupt thread; true = run again after the events
    /// that are pending.
    fn park(&self) -> bool {
        let wanted = || !self.stopping.load(Ordering::Acquire) && self.gates.any_memif_polled();
        if !wanted() {
            return false;
        }
        self.gates.set_memif_open(true);
        let until = Instant::now() + MEMIF_HOLD;
        while wanted() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(1));
        }
        self.gates.set_memif_open(false);
        wanted()
    }
}

impl MemifPark {
    pub fn start(gates: Arc<PortGates>) -> Result<MemifPark, DpdkError> {
        let state = Arc::new(ParkState {
            gates,
            stopping: AtomicBool::new(false),
        });
        let s = state.clone();
        let hook = InterruptHook::register(Box::new(move || s.park()))?;
        hook.kick();
        Ok(MemifPark { hook, state })
    }

    /// A memif port was opened: park again if the thread is not parked.
    pub fn wake(&self) {
        self.hook.kick();
    }
}

impl Drop for MemifPark {
    fn drop(&mut self) {
        // The callback returns within a millisecond; dropping the hook then
        // waits for it and unregisters it.
        self.state.stopping.store(true, Ordering::Release);
    }
}

/// What the monitor knows about one port.
struct Watch {
    port: Port,
    name: String,
    /// A memif port in the client role: reconnected by stop/start.
    memif_client: bool,
    /// The link was seen up at least once (a port that never reports its
    /// link up is polled regardless, as before the monitor existed).
    seen_up: bool,
    /// When the next stop/start of a down memif client is due.
    reconnect_at: Option<Instant>,
    reconnect_logged: bool,
    /// Stopped by the operator: left alone until `port_start`.
    admin_down: bool,
}

/// What the operator asks of a port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AdminOp {
    Stop,
    Start,
}

type Reply = std::sync::mpsc::Sender<Result<String, String>>;

/// Operator requests (telemetry's `port_stop` / `port_start`) on their way
/// to the monitor thread, which alone stops and starts ports.
#[derive(Default)]
pub struct PortControl {
    pending: Mutex<Vec<(u16, AdminOp, Reply)>>,
    /// The monitor has ended (forwarding is over): requests are refused.
    ended: AtomicBool,
}

impl PortControl {
    /// Asks the monitor to stop or start `port`; waits up to `timeout` for
    /// its answer (what it did, or why not).
    pub fn request(&self, port: u16, op: AdminOp, timeout: Duration) -> Result<String, String> {
        let (tx, rx) = std::sync::mpsc::channel();
        {
            let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
            if self.ended.load(Ordering::Acquire) {
                return Err("forwarding has ended".into());
            }
            pending.push((port, op, tx));
        }
        rx.recv_timeout(timeout)
            .unwrap_or_else(|_| Err("the port monitor did not answer (tqfwd is stopping)".into()))
    }

    /// Refuses what is pending and what comes later (the monitor ended).
    fn end(&self) {
        let pending = {
            let mut p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
            self.ended.store(true, Ordering::Release);
            std::mem::take(&mut *p)
        };
        for (_, _, reply) in pending {
            let _ = reply.send(Err("forwarding has ended".into()));
        }
    }

    fn take(&self) -> Vec<(u16, AdminOp, Reply)> {
        std::mem::take(&mut *self.pending.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// Watches link state off the datapath (module doc). Call
/// [`poll`](Self::poll) every [`MONITOR_PERIOD`] from a control thread.
pub struct PortMonitor {
    gates: Arc<PortGates>,
    park: Option<MemifPark>,
    watches: Vec<Watch>,
    control: Arc<PortControl>,
}

impl PortMonitor {
    /// `ports`: (port, name, driver, devargs) in port order.
    pub fn new(
        gates: Arc<PortGates>,
        ports: &[(Port, String, String, String)],
    ) -> Result<PortMonitor, DpdkError> {
        let park = if gates.has_memif() {
            Some(MemifPark::start(gates.clone())?)
        } else {
            None
        };
        let watches = ports
            .iter()
            .map(|(port, name, driver, devargs)| Watch {
                port: *port,
                name: name.clone(),
                memif_client: driver == "net_memif" && memif_role_is_client(devargs),
                seen_up: port.link().map(|l| l.up).unwrap_or(false),
                reconnect_at: None,
                reconnect_logged: false,
                admin_down: false,
            })
            .collect();
        Ok(PortMonitor {
            gates,
            park,
            watches,
            control: Arc::new(PortControl::default()),
        })
    }

    /// Where operator requests for this monitor go.
    pub fn control(&self) -> Arc<PortControl> {
        self.control.clone()
    }

    /// Carries out one operator request.
    fn admin(&mut self, port: u16, op: AdminOp) -> Result<String, String> {
        let Some(w) = self.watches.iter_mut().find(|w| w.port.id() == port) else {
            return Err(format!(
                "no port {port}: ports are 0-{}",
                self.watches.len().saturating_sub(1)
            ));
        };
        match (op, w.admin_down) {
            (AdminOp::Stop, true) => Ok(format!("port {port} is already stopped")),
            (AdminOp::Start, false) => Ok(format!("port {port} is already started")),
            (AdminOp::Stop, false) => {
                // Closed first: no lcore is in its bursts when it stops.
                self.gates.set_admin(port, true);
                w.admin_down = true;
                w.reconnect_at = None;
                if let Err(e) = w.port.stop() {
                    log::warn!("port {port} ({}): {e}", w.name);
                }
                log::warn!("port {port} ({}): stopped by the operator (port_stop): not polled until port_start", w.name);
                Ok(format!("port {port} stopped"))
            }
            (AdminOp::Start, true) => {
                w.port
                    .start()
                    .map_err(|e| format!("port {port} ({}) did not start: {e}", w.name))?;
                w.admin_down = false;
                // Polled from now on; a link still coming up is followed
                // by the monitor as usual.
                w.seen_up = false;
                self.gates.set_admin(port, false);
                if let Some(p) = &self.park {
                    p.wake();
                }
                log::info!(
                    "port {port} ({}): started by the operator (port_start): polled again",
                    w.name
                );
                Ok(format!("port {port} started"))
            }
        }
    }

    /// One look at every port's link.
    pub fn poll(&mut self) {
        for (port, op, reply) in self.control.take() {
            let _ = reply.send(self.admin(port, op));
        }
        let now = Instant::now();
        for w in &mut self.watches {
            if w.admin_down {
                continue;
            }
            let id = w.port.id();
            let link = w.port.link();
            let up = link.map(|l| l.up).unwrap_or(false);
            let polled = self.gates.is_polled(id);
            if up {
                if !polled {
                    let l = link.unwrap_or_default();
                    log::info!(
                        "port {id} ({}): link up, {} Mbps: polled again",
                        w.name,
                        l.speed_mbps
                    );
                    self.gates.open(id);
                    if let Some(p) = &self.park {
                        p.wake();
                    }
                }
                w.seen_up = true;
                w.reconnect_at = None;
                w.reconnect_logged = false;
                continue;
            }
            if polled && w.seen_up {
                log::warn!(
                    "port {id} ({}): link down: not polled until it is back{}",
                    w.name,
                    if w.memif_client {
                        " (memif client: reconnecting)"
                    } else {
                        ""
                    }
                );
                self.gates.close(id);
                if w.memif_client {
                    w.reconnect_at = Some(now);
                }
            }
            if let Some(at) = w.reconnect_at {
                if now >= at {
                    // The port is closed: no lcore is in its bursts.
                    let _ = w.port.stop();
                    match w.port.start() {
                        Ok(()) => log::debug!("port {id}: memif client restarted"),
                        Err(e) => {
                            if !w.reconnect_logged {
                                log::info!(
                                    "port {id} ({}): memif server not back yet ({}); retrying every {} ms",
                                    w.name,
                                    e.text,
                                    RECONNECT_EVERY.as_millis()
                                );
                                w.reconnect_logged = true;
                            }
                        }
                    }
                    w.reconnect_at = Some(now + RECONNECT_EVERY);
                }
            }
        }
    }
}

impl Drop for PortMonitor {
    fn drop(&mut self) {
        self.control.end();
    }
}

/// The memif role given in a vdev's arguments (`role=client|slave` or
/// `server|master`; the PMD's default is client).
pub fn memif_role_is_client(devargs: &str) -> bool {
    !devargs
        .split(',')
        .filter_map(|kv| kv.trim().strip_prefix("role="))
        .any(|r| r == "server" || r == "master")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memif_roles() {
        assert!(memif_role_is_client("socket=/x,id=0"));
        assert!(memif_role_is_client("role=client,socket=/x"));
        assert!(memif_role_is_client("role=slave"));
        assert!(!memif_role_is_client("id=0,role=server,socket=/x"));
        assert!(!memif_role_is_client("role=master"));
    }

    #[test]
    fn synchronize_waits_for_an_online_lcore_and_not_for_an_offline_one() {
        let q = Arc::new(Quiescence::new(2));
        // Both offline: returns at once.
        q.synchronize();
        let mut last = q.online(0);
        let q2 = q.clone();
        let done = Arc::new(AtomicBool::new(false));
        let d2 = done.clone();
        let t = std::thread::spawn(move || {
            q2.synchronize();
            d2.store(true, Ordering::SeqCst);
        });
        std::thread::sleep(Duration::from_millis(50));
        assert!(!done.load(Ordering::SeqCst), "must wait for slot 0");
        q.report(0, &mut last);
        t.join().unwrap();
        assert!(done.load(Ordering::SeqCst));
        q.offline(0);
        q.synchronize();
    }

    #[test]
    fn a_closed_gate_is_seen_after_close_returns() {
        let gates = Arc::new(PortGates::new([false; MAX_PORTS], 1));
        let stop = Arc::new(AtomicBool::new(false));
        let bursts_after_close = Arc::new(AtomicU64::new(0));
        let closed = Arc::new(AtomicBool::new(false));
        let (g, s, b, c) = (
            gates.clone(),
            stop.clone(),
            bursts_after_close.clone(),
            closed.clone(),
        );
        let lcore = std::thread::spawn(move || {
            let mut last = g.quiescence.online(0);
            while !s.load(Ordering::Relaxed) {
                g.quiescence.report(0, &mut last);
                if g.pollable(3) && c.load(Ordering::SeqCst) {
                    b.fetch_add(1, Ordering::Relaxed);
                }
            }
            g.quiescence.offline(0);
        });
        std::thread::sleep(Duration::from_millis(10));
        gates.close(3);
        closed.store(true, Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(20));
        stop.store(true, Ordering::Relaxed);
        lcore.join().unwrap();
        assert_eq!(bursts_after_close.load(Ordering::Relaxed), 0);
        assert!(gates.pollable(2));
    }
}
