//! Ethernet ports through the ethdev API — the same calls for `ice`, `mlx5`
//! and the software PMDs: device info, configure (RSS only when the device
//! offers it; MTU and RX/TX offloads as the caller decided), descriptor
//! adjustment, queue setup, start/stop/close, link, MAC, counters, and the
//! RX/TX burst calls.
//!
//! Queue ownership: DPDK's burst calls index the port's queue array by the
//! id they are given without a bound check, and a queue must be polled by
//! one lcore at a time. So a burst is a method of a queue handle,
//! [`RxQueue`] or [`TxQueue`], not of [`Port`]; the handles come only from
//! [`Port::configure`], one per queue it configured (ids in range by
//! construction), and are neither `Copy` nor `Clone`; bursts take
//! `&mut self`, so whoever polls a queue owns its handle or borrows it
//! exclusively. A port is configured again only once every handle of the
//! last configuration is gone, so a handle's queue exists as long as it
//! does. The handle is a port id and a queue id: a burst compiles to the
//! same `rte_eth_rx_burst` / `rte_eth_tx_burst` call as with bare ids.
//!
//! ```compile_fail,E0382
//! // A queue handle is moved, not copied: a second poller cannot be made.
//! use tqfwd::dpdk::{MbufBurst, RxQueue};
//! fn two_pollers(q: RxQueue, burst: &mut MbufBurst) {
//!     let mut mine = q;
//!     let mut theirs = q; // error[E0382]: use of moved value: `q`
//!     mine.rx_burst(burst, 32);
//!     theirs.rx_burst(burst, 32);
//! }
//! ```
//!
//! ```compile_fail,E0599
//! // ...nor cloned.
//! use tqfwd::dpdk::TxQueue;
//! fn twin(q: &TxQueue) -> TxQueue {
//!     q.clone() // error[E0599]: no method named `clone`
//! }
//! ```
//!
//! ```compile_fail,E0596
//! // A shared handle cannot poll: a burst needs the handle exclusively.
//! use tqfwd::dpdk::{MbufBurst, RxQueue};
//! fn poll_shared(q: &RxQueue, burst: &mut MbufBurst) -> usize {
//!     q.rx_burst(burst, 32) // error[E0596]: cannot borrow `*q` as mutable
//! }
//! ```
//!
//! ```compile_fail,E0451
//! // Outside `dpdk`, a handle cannot be made from raw ids.
//! use tqfwd::dpdk::RxQueue;
//! fn forge() -> RxQueue {
//!     RxQueue { port: 0, queue: 7 } // error[E0451]: field `port` is private
//! }
//! ```
//!
//! ```compile_fail,E0451
//! use tqfwd::dpdk::TxQueue;
//! fn forge() -> TxQueue {
//!     TxQueue { port: 0, queue: 7 } // error[E0451]: field `port` is private
//! }
//! ```

use super::error::DpdkError;
use super::mbuf::MbufBurst;
use super::mempool::Mempool;
use super::sys;
use std::ffi::CStr;
use std::sync::atomic::{AtomicU32, Ordering};

/// What a device reports about itself (`rte_eth_dev_info_get`).
#[derive(Debug, Clone)]
pub struct PortInfo {
    pub port: u16,
    pub name: String,
    pub driver: String,
    /// The device's arguments as given to EAL (`--vdev=name,ARGS`), or "".
    pub devargs: String,
    pub socket: i32,
    pub max_rx_queues: u16,
    pub max_tx_queues: u16,
    pub rx_desc_max: u16,
    pub tx_desc_max: u16,
    pub flow_type_rss_offloads: u64,
    pub tx_offload_capa: u64,
    pub rx_offload_capa: u64,
    pub reta_size: u16,
    /// MTU range the device accepts.
    pub min_mtu: u16,
    pub max_mtu: u16,
    /// Largest frame the device receives (MTU + its L2 overhead).
    pub max_rx_pktlen: u32,
}

/// Link state.
#[derive(Debug, Clone, Copy, Default)]
pub struct LinkStatus {
    pub up: bool,
    pub speed_mbps: u32,
    pub full_duplex: bool,
}

/// Hardware / PMD counters (`rte_eth_stats_get`).
#[derive(Debug, Clone, Copy, Default)]
pub struct PortStats {
    pub ipackets: u64,
    pub opackets: u64,
    pub imissed: u64,
    pub ierrors: u64,
    pub oerrors: u64,
    pub rx_nombuf: u64,
}

/// RSS hash functions tqfwd asks for (IP, TCP, UDP), masked by what the
/// device offers.
pub fn rss_hf_wanted() -> u64 {
    // SAFETY: reads a const defined in shim.c.
    unsafe { sys::tqfwd_rss_hf_ip_tcp_udp }
}

/// `RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE`.
pub fn tx_offload_fast_free() -> u64 {
    // SAFETY: reads a const defined in shim.c.
    unsafe { sys::tqfwd_tx_offload_mbuf_fast_free }
}

/// `RTE_ETH_RX_OFFLOAD_SCATTER`.
pub fn rx_offload_scatter() -> u64 {
    // SAFETY: reads a const defined in shim.c.
    unsafe { sys::tqfwd_rx_offload_scatter }
}

/// `RTE_ETH_RX_OFFLOAD_IPV4_CKSUM`.
pub fn rx_offload_ipv4_cksum() -> u64 {
    // SAFETY: reads a const defined in shim.c.
    unsafe { sys::tqfwd_rx_offload_ipv4_cksum }
}

/// `RTE_ETH_TX_OFFLOAD_MULTI_SEGS`.
pub fn tx_offload_multi_segs() -> u64 {
    // SAFETY: reads a const defined in shim.c.
    unsafe { sys::tqfwd_tx_offload_multi_segs }
}

/// Handle to one ethdev port (a port id; the device lives in DPDK), for
/// the control path: configure, start, link, MAC, counters. The id is
/// private: a `Port` comes only from [`Port::all`] or [`Port::by_id`],
/// which check it against the ports DPDK has. Bursts go through the queue
/// handles [`configure`](Port::configure) returns (module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Port(u16);

/// What [`Port::configure`] asks `rte_eth_dev_configure` for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PortConf {
    /// RX and TX queues: one handle each comes back.
    pub rx_queues: u16,
    pub tx_queues: u16,
    /// RSS over these hash functions; 0: no RSS.
    pub rss_hf: u64,
    /// 0: the device's default MTU.
    pub mtu: u32,
    pub rx_offloads: u64,
    pub tx_offloads: u64,
}

/// The queues of a port as [`Port::configure`] set it up: one handle per
/// queue, in id order (`rx[q]` is RX queue `q`).
pub struct PortQueues {
    pub rx: Vec<RxQueue>,
    pub tx: Vec<TxQueue>,
}

/// Ports with room in the handle counts below.
const MAX_ETHPORTS: usize = sys::RTE_MAX_ETHPORTS as usize;

/// Per port id: how many queue handles are alive, or [`CONFIGURING`] while
/// [`Port::configure`] runs. A port is configured only from 0, so no
/// handle outlives the configuration it was made for.
static HANDLES: [AtomicU32; MAX_ETHPORTS] = [const { AtomicU32::new(0) }; MAX_ETHPORTS];

/// [`HANDLES`] of a port being configured.
const CONFIGURING: u32 = u32::MAX;

/// One RX queue of one port, owned by the one stage that polls it (module
/// doc). Made only by [`Port::configure`].
#[derive(Debug, PartialEq, Eq)]
pub struct RxQueue {
    port: u16,
    queue: u16,
}

/// One TX queue of one port, owned by the one stage that transmits on it
/// (module doc). Made only by [`Port::configure`].
#[derive(Debug, PartialEq, Eq)]
pub struct TxQueue {
    port: u16,
    queue: u16,
}

impl Port {
    /// Ports DPDK has probed (vdevs and bound NICs), in id order.
    pub fn all() -> Vec<Port> {
        let mut out = Vec::new();
        // SAFETY: rte_eth_find_next returns the next valid id >= the one
        // given, or RTE_MAX_ETHPORTS.
        let mut p = unsafe { sys::rte_eth_find_next(0) };
        while (p as u32) < sys::RTE_MAX_ETHPORTS {
            out.push(Port(p));
            // SAFETY: as above.
            p = unsafe { sys::rte_eth_find_next(p + 1) };
        }
        out
    }

    /// The port with id `id`, when DPDK has one.
    pub fn by_id(id: u16) -> Option<Port> {
        // SAFETY: plain query; any id is accepted.
        (unsafe { sys::rte_eth_dev_is_valid_port(id) } != 0).then_some(Port(id))
    }

    pub fn id(self) -> u16 {
        self.0
    }

    pub fn info(self) -> Result<PortInfo, DpdkError> {
        let mut info = sys::rte_eth_dev_info::default();
        // SAFETY: valid out-pointer to a zeroed struct.
        let ret = unsafe { sys::rte_eth_dev_info_get(self.0, &mut info) };
        control_result("rte_eth_dev_info_get", self.0, ret)?;
        let driver = if info.driver_name.is_null() {
            String::from("?")
        } else {
            // SAFETY: driver_name is a static NUL-terminated string of the PMD.
            unsafe { CStr::from_ptr(info.driver_name) }
                .to_string_lossy()
                .into_owned()
        };
        let mut name_buf = [0 as std::os::raw::c_char; 64];
        // SAFETY: buffer of RTE_ETH_NAME_MAX_LEN (64) bytes as the API requires.
        let name =
            if unsafe { sys::rte_eth_dev_get_name_by_port(self.0, name_buf.as_mut_ptr()) } == 0 {
                // SAFETY: the call wrote a NUL-terminated name into the buffer.
                unsafe { CStr::from_ptr(name_buf.as_ptr()) }
                    .to_string_lossy()
                    .into_owned()
            } else {
                format!("port{}", self.0)
            };
        // SAFETY: `info.device` is the port's rte_device (or NULL); its
        // devargs (or NULL) live as long as the device, and `args` is a
        // NUL-terminated string (or NULL) owned by them. Copied at once.
        let devargs = unsafe {
            let da = if info.device.is_null() {
                std::ptr::null()
            } else {
                sys::rte_dev_devargs(info.device)
            };
            if da.is_null() || (*da).__bindgen_anon_1.args.is_null() {
                String::new()
            } else {
                CStr::from_ptr((*da).__bindgen_anon_1.args)
                    .to_string_lossy()
                    .into_owned()
            }
        };
        // SAFETY: plain query.
        let socket = unsafe { sys::rte_eth_dev_socket_id(self.0) };
        Ok(PortInfo {
            port: self.0,
            name,
            driver,
            devargs,
            socket,
            max_rx_queues: info.max_rx_queues,
            max_tx_queues: info.max_tx_queues,
            rx_desc_max: info.rx_desc_lim.nb_max,
            tx_desc_max: info.tx_desc_lim.nb_max,
            flow_type_rss_offloads: info.flow_type_rss_offloads,
            tx_offload_capa: info.tx_offload_capa,
            rx_offload_capa: info.rx_offload_capa,
            reta_size: info.reta_size,
            min_mtu: info.min_mtu,
            max_mtu: info.max_mtu,
            max_rx_pktlen: info.max_rx_pktlen,
        })
    }

    /// `rte_eth_dev_configure` as `conf` says (RSS when `rss_hf` != 0,
    /// MTU 0 = the device's default); returns a handle for each queue it
    /// configured. Refused (EBUSY) while a handle of an earlier
    /// configuration is alive: drop them first.
    pub fn configure(self, conf: &PortConf) -> Result<PortQueues, DpdkError> {
        let (rx_queues, tx_queues) = (conf.rx_queues, conf.tx_queues);
        let call = || {
            format!(
                "rte_eth_dev_configure(port {}, {rx_queues} RX, {tx_queues} TX queues)",
                self.0
            )
        };
        let handles = &HANDLES[self.0 as usize % MAX_ETHPORTS];
        if handles
            .compare_exchange(0, CONFIGURING, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return Err(DpdkError {
                call: call(),
                code: libc::EBUSY,
                text: "queue handles of its last configuration are still alive".into(),
            });
        }
        let mut c = sys::rte_eth_conf::default();
        c.rxmode.mtu = conf.mtu;
        c.rxmode.offloads = conf.rx_offloads;
        if conf.rss_hf != 0 {
            c.rxmode.mq_mode = sys::RTE_ETH_MQ_RX_RSS;
            c.rx_adv_conf.rss_conf.rss_key = std::ptr::null_mut();
            c.rx_adv_conf.rss_conf.rss_hf = conf.rss_hf;
        }
        c.txmode.offloads = conf.tx_offloads;
        // SAFETY: valid pointer to an initialised config struct that DPDK
        // copies.
        let ret = unsafe { sys::rte_eth_dev_configure(self.0, rx_queues, tx_queues, &c) };
        if ret != 0 {
            handles.store(0, Ordering::Release);
            return Err(DpdkError::from_ret(call(), ret));
        }
        // The queues DPDK now has, one handle each (dropping one counts
        // it off).
        handles.store(
            u32::from(rx_queues) + u32::from(tx_queues),
            Ordering::Release,
        );
        let port = self.0;
        Ok(PortQueues {
            rx: (0..rx_queues)
                .map(|queue| RxQueue { port, queue })
                .collect(),
            tx: (0..tx_queues)
                .map(|queue| TxQueue { port, queue })
                .collect(),
        })
    }

    /// Clamps descriptor counts to the device's limits and alignment.
    pub fn adjust_descriptors(self, rxd: &mut u16, txd: &mut u16) -> Result<(), DpdkError> {
        // SAFETY: valid pointers to u16.
        let ret = unsafe { sys::rte_eth_dev_adjust_nb_rx_tx_desc(self.0, rxd, txd) };
        control_result("rte_eth_dev_adjust_nb_rx_tx_desc", self.0, ret)
    }

    pub fn start(self) -> Result<(), DpdkError> {
        // SAFETY: configured port.
        let ret = unsafe { sys::rte_eth_dev_start(self.0) };
        control_result("rte_eth_dev_start", self.0, ret)
    }

    /// Stops the port: its RX descriptors' mbufs go back to the pool.
    /// Crate-private: the caller makes sure no lcore is in a burst on it
    /// (its lcores have returned, or its gate is closed and synchronized,
    /// `forward::lifecycle`); a burst after the stop gets nothing (ethdev
    /// points the port's bursts at dummies).
    pub(crate) fn stop(self) -> Result<(), DpdkError> {
        // SAFETY: valid port id; no burst on it is in progress (above).
        let ret = unsafe { sys::rte_eth_dev_stop(self.0) };
        control_result("rte_eth_dev_stop", self.0, ret)
    }

    /// Closes the port: its queues' mbufs go back to the pool.
    /// Crate-private, as [`stop`](Self::stop): called once the lcores have
    /// returned (`setup::ports::OpenPorts`). Queue handles may outlive it;
    /// their bursts then get nothing, and the port is not configured again
    /// while they live.
    pub(crate) fn close(self) -> Result<(), DpdkError> {
        // SAFETY: stopped port, no burst on it in progress.
        let ret = unsafe { sys::rte_eth_dev_close(self.0) };
        control_result("rte_eth_dev_close", self.0, ret)
    }

    pub fn enable_promiscuous(self) -> Result<(), DpdkError> {
        // SAFETY: valid port id.
        let ret = unsafe { sys::rte_eth_promiscuous_enable(self.0) };
        control_result("rte_eth_promiscuous_enable", self.0, ret)
    }

    pub fn link(self) -> Option<LinkStatus> {
        let mut link = sys::rte_eth_link::default();
        // SAFETY: valid out-pointer.
        let ret = unsafe { sys::rte_eth_link_get_nowait(self.0, &mut link) };
        if ret != 0 {
            return None;
        }
        Some(LinkStatus {
            up: link.link_status() != 0,
            speed_mbps: link.link_speed,
            full_duplex: link.link_duplex() != 0,
        })
    }

    pub fn mac(self) -> Result<[u8; 6], DpdkError> {
        let mut addr = sys::rte_ether_addr::default();
        // SAFETY: valid out-pointer.
        let ret = unsafe { sys::rte_eth_macaddr_get(self.0, &mut addr) };
        control_result("rte_eth_macaddr_get", self.0, ret)?;
        Ok(addr.addr_bytes)
    }

    pub fn stats(self) -> PortStats {
        let mut s = sys::rte_eth_stats::default();
        // SAFETY: valid out-pointer.
        let ret = unsafe { sys::rte_eth_stats_get(self.0, &mut s) };
        if ret != 0 {
            return PortStats::default();
        }
        PortStats {
            ipackets: s.ipackets,
            opackets: s.opackets,
            imissed: s.imissed,
            ierrors: s.ierrors,
            oerrors: s.oerrors,
            rx_nombuf: s.rx_nombuf,
        }
    }
}

/// The result of a control-path call (`rte_eth_dev_start`, `_stop`,
/// `_close`, set-up and queries; never a burst) on `port` that returned
/// `ret`: Ok for 0, else the error naming the call and the port.
fn control_result(call: &str, port: u16, ret: i32) -> Result<(), DpdkError> {
    checked(ret, || format!("{call}(port {port})"))
}

/// [`control_result`] for a call on queue `queue` of `port` (its set-up).
fn queue_control_result(call: &str, port: u16, queue: u16, ret: i32) -> Result<(), DpdkError> {
    checked(ret, || format!("{call}(port {port}, queue {queue})"))
}

/// Ok for `ret` 0, else the error of the call `what` names.
fn checked(ret: i32, what: impl FnOnce() -> String) -> Result<(), DpdkError> {
    if ret == 0 {
        Ok(())
    } else {
        Err(DpdkError::from_ret(what(), ret))
    }
}

impl RxQueue {
    /// The port's id.
    #[inline]
    pub fn port_id(&self) -> u16 {
        self.port
    }

    /// The queue's id on its port.
    #[inline]
    pub fn id(&self) -> u16 {
        self.queue
    }

    /// `rte_eth_rx_queue_setup` with `descriptors` on `socket`, receiving
    /// into `pool`, which must outlive the port (closed before the pool is
    /// freed).
    pub fn setup(&self, descriptors: u16, socket: i32, pool: &Mempool) -> Result<(), DpdkError> {
        let socket = if socket < 0 { 0 } else { socket as u32 };
        // SAFETY: NULL rxconf means the device default; the pool outlives
        // the port (above).
        let ret = unsafe {
            sys::rte_eth_rx_queue_setup(
                self.port,
                self.queue,
                descriptors,
                socket,
                std::ptr::null(),
                pool.raw(),
            )
        };
        queue_control_result("rte_eth_rx_queue_setup", self.port, self.queue, ret)
    }

    /// Receives up to `max` mbufs into the free tail of `burst`.
    #[inline]
    pub fn rx_burst(&mut self, burst: &mut MbufBurst, max: usize) -> usize {
        let (tail, room) = burst.raw_tail();
        let n = max.min(room).min(u16::MAX as usize) as u16;
        // SAFETY: `tail` points at `room` writable slots in the burst; the
        // PMD writes at most n <= room handles of mbufs it hands to us. The
        // queue id is one `configure` set up, polled only through this
        // handle (module doc).
        let got = unsafe { sys::rte_eth_rx_burst(self.port, self.queue, tail, n) } as usize;
        burst.grow(got);
        got
    }

    /// Receives up to `n` mbufs into `out`, for a queue lending its slots
    /// (`packet_queue`); returns how many the PMD wrote.
    ///
    /// # Safety
    /// `out` points at `n` writable `rte_mbuf *` slots; the mbufs written
    /// there are new handles the caller must own from then on.
    #[inline]
    pub(in crate::dpdk) unsafe fn rx_burst_raw(
        &mut self,
        out: *mut *mut sys::rte_mbuf,
        n: u16,
    ) -> usize {
        // SAFETY: caller's contract; the queue is one `configure` set up,
        // polled only through this handle (module doc).
        unsafe { sys::rte_eth_rx_burst(self.port, self.queue, out, n) as usize }
    }
}

impl TxQueue {
    /// The port's id.
    #[inline]
    pub fn port_id(&self) -> u16 {
        self.port
    }

    /// The queue's id on its port.
    #[inline]
    pub fn id(&self) -> u16 {
        self.queue
    }

    /// `rte_eth_tx_queue_setup` with `descriptors` on `socket`.
    pub fn setup(&self, descriptors: u16, socket: i32) -> Result<(), DpdkError> {
        let socket = if socket < 0 { 0 } else { socket as u32 };
        // SAFETY: NULL txconf means the device default (with port-level
        // offloads from configure()).
        let ret = unsafe {
            sys::rte_eth_tx_queue_setup(
                self.port,
                self.queue,
                descriptors,
                socket,
                std::ptr::null(),
            )
        };
        queue_control_result("rte_eth_tx_queue_setup", self.port, self.queue, ret)
    }

    /// Transmits from the front of `burst`; the sent mbufs now belong to the
    /// PMD and are removed from the burst. Returns how many were sent.
    #[inline]
    pub fn tx_burst(&mut self, burst: &mut MbufBurst) -> usize {
        let n = burst.len().min(u16::MAX as usize) as u16;
        if n == 0 {
            return 0;
        }
        // SAFETY: the first n slots are live, owned mbufs; the PMD takes the
        // first `sent` of them, which the burst then forgets. The queue id
        // is one `configure` set up, used only through this handle (module
        // doc).
        let sent =
            unsafe { sys::rte_eth_tx_burst(self.port, self.queue, burst.raw_head(), n) } as usize;
        burst.consume_front(sent);
        sent
    }

    /// Transmits from `mbufs` (`n` of them); returns how many the PMD took
    /// (the first ones), which the caller must forget.
    ///
    /// # Safety
    /// `mbufs` points at `n` live mbufs the caller owns.
    #[inline]
    pub(in crate::dpdk) unsafe fn tx_burst_raw(
        &mut self,
        mbufs: *mut *mut sys::rte_mbuf,
        n: u16,
    ) -> usize {
        // SAFETY: caller's contract; the queue is one `configure` set up,
        // used only through this handle (module doc).
        unsafe { sys::rte_eth_tx_burst(self.port, self.queue, mbufs, n) as usize }
    }
}

impl Drop for RxQueue {
    fn drop(&mut self) {
        HANDLES[self.port as usize % MAX_ETHPORTS].fetch_sub(1, Ordering::Release);
    }
}

impl Drop for TxQueue {
    fn drop(&mut self) {
        HANDLES[self.port as usize % MAX_ETHPORTS].fetch_sub(1, Ordering::Release);
    }
}
