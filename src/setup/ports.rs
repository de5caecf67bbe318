//! Ports: configure each with its queues, MTU and offloads, start it (a
//! memif client waits for its server), steer classes to dedicated queues
//! with rte_flow where the PMD accepts the rules, and wait for the links.
//! A port that was configured is stopped and closed again on any early
//! error ([`OpenPorts`]), before the pools it uses are freed.
//!
//! Each queue's handle (`dpdk::RxQueue`, `dpdk::TxQueue`: one per queue,
//! made when the port is configured) goes to the one stage that polls the
//! queue ([`LcoreQueues::hand_out`]).

use super::frames::{self, FramePlan};
use crate::config::class::ClassSpec;
use crate::config::{Lcore, Plan, PortsPlan};
use crate::dpdk::flow::{FlowRule, InstalledFlow};
use crate::dpdk::{
    self, signal, DpdkError, Mempool, Port, PortConf, PortInfo, PortQueues, RxQueue, TxQueue,
};
use crate::wire::MacAddr;
use std::time::{Duration, Instant};

/// Why a port was not brought up.
#[derive(Debug, thiserror::Error)]
pub enum PortError {
    /// DPDK refused to configure or start it: a runtime error.
    #[error(transparent)]
    Dpdk(#[from] DpdkError),
    /// A stop signal came while a memif client waited for its server: a
    /// usage error (start the server first).
    #[error("{device}: stopped while waiting for the memif server on socket {socket}: start the server first")]
    MemifStopped { device: String, socket: String },
    /// No memif server within `--link-timeout`: a usage error.
    #[error("{device}: no memif server on socket {socket} within --link-timeout {timeout} s ({}): start the server first or raise --link-timeout", .source.text)]
    NoMemifServer {
        device: String,
        socket: String,
        timeout: f64,
        /// The last start's failure.
        source: DpdkError,
    },
}

impl PortError {
    /// Something the user must change or start first: exit 2.
    pub fn is_usage(&self) -> bool {
        !matches!(self, PortError::Dpdk(_))
    }
}

/// What one port is brought up from.
pub struct PortSpec<'a> {
    pub index: usize,
    pub port: Port,
    pub info: &'a PortInfo,
    /// Every port's frame plan (chains received anywhere leave everywhere).
    pub frames: &'a [FramePlan],
    pub socket: i32,
    /// One pool for the whole run (MBUF_FAST_FREE is allowed).
    pub single_pool: bool,
}

/// What a port was brought up with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortSetup {
    /// RX descriptors per queue after the PMD's adjustment.
    pub rx_desc: u16,
    /// Classes have dedicated RX queues here (rte_flow accepted).
    pub class_queues: bool,
    /// How classes are steered on this port, for the report.
    pub steering: String,
}

/// A port that is up, its rules and its queues.
pub struct PortUp {
    pub setup: PortSetup,
    pub flows: Vec<InstalledFlow>,
    pub mac: [u8; 6],
    /// A handle per queue: RX queue `n_rx + k` is class k + 1's when
    /// `setup.class_queues`.
    pub queues: PortQueues,
}

/// One RX queue an RX stage polls, and the class it is dedicated to.
pub struct PolledQueue {
    pub queue: RxQueue,
    /// 0: a normal queue; k: class k's dedicated (rte_flow) queue.
    pub class: u8,
}

/// Every port queue, handed to the stage that polls it: no queue is
/// polled by two lcores.
pub struct LcoreQueues {
    /// rx[s]: what RX stage s (`plan.rx_stages[s]`) polls: its queue on
    /// every port, then, on the ports that steer classes to dedicated
    /// queues, the queue of each class it leads (a class's first lcore).
    pub rx: Vec<Vec<PolledQueue>>,
    /// tx[t]: TX lcore t's queue on every port, in port order.
    pub tx: Vec<Vec<TxQueue>>,
}

impl LcoreQueues {
    /// Hands out every port's queues (in port order): RX queue q of each
    /// port to RX lcore q, its class queues to each class's first lcore,
    /// TX queue t to TX lcore t.
    pub fn hand_out(plan: &Plan, ports: Vec<PortQueues>) -> LcoreQueues {
        let stage = |l: Lcore| {
            plan.rx_stages
                .iter()
                .position(|&x| x == l)
                .expect("an RX stage per RX lcore and class")
        };
        let mut rx: Vec<Vec<PolledQueue>> = plan.rx_stages.iter().map(|_| Vec::new()).collect();
        let mut tx: Vec<Vec<TxQueue>> = plan.layout.tx.iter().map(|_| Vec::new()).collect();
        // Per port, its class queues (none where classes are not steered).
        let mut class_queues = Vec::new();
        for port in ports {
            let mut queues = port.rx.into_iter();
            for (&l, queue) in plan.layout.rx.iter().zip(queues.by_ref()) {
                rx[stage(l)].push(PolledQueue { queue, class: 0 });
            }
            class_queues.push(queues);
            for (t, queue) in port.tx.into_iter().enumerate() {
                tx[t].push(queue);
            }
        }
        for (k, c) in plan.classes.iter().enumerate() {
            let s = stage(c.lcores[0]);
            for queue in class_queues.iter_mut().filter_map(Iterator::next) {
                rx[s].push(PolledQueue {
                    queue,
                    class: (k + 1) as u8,
                });
            }
        }
        LcoreQueues { rx, tx }
    }
}

/// Brings one port up as the plan says; it joins `open` before it is
/// configured.
pub fn bring_up_port(
    p: PortSpec,
    plan: &Plan,
    pool: &Mempool,
    open: &mut OpenPorts,
) -> Result<PortUp, PortError> {
    let (i, port, info) = (p.index, p.port, p.info);
    let classes = &plan.classes;
    let n_rx = plan.layout.rx.len();
    let n_tx = plan.layout.tx.len();
    let rss_hf = if n_rx > 1 {
        let hf = dpdk::port::rss_hf_wanted() & info.flow_type_rss_offloads;
        if hf == 0 {
            log::warn!(
                "port {i} ({}) offers no RSS: its {n_rx} RX queues get whatever the device spreads",
                info.driver
            );
        }
        hf
    } else {
        0
    };
    open.0.push(port);
    // With classes, try one extra RX queue per class and steer each class
    // to its queue with rte_flow; a PMD that refuses gets the port brought
    // up again without them (software classification).
    let n_class_q = if !classes.is_empty() && (info.max_rx_queues as usize) >= n_rx + classes.len()
    {
        classes.len()
    } else {
        0
    };
    let mut steering = String::new();
    if !classes.is_empty() && n_class_q == 0 {
        steering = format!(
            "port {i}: software (device allows {} RX queues, needs {})",
            info.max_rx_queues,
            n_rx + classes.len()
        );
    }
    // MBUF_FAST_FREE: every mbuf tqfwd sends comes from one pool and has
    // refcnt 1; allowed only when there is one pool, and when offered.
    let fast_free = if p.single_pool {
        info.tx_offload_capa & dpdk::port::tx_offload_fast_free()
    } else {
        0
    };
    // Chains received on any port leave by every port.
    let multi_segs = frames::tx_offloads(p.frames.iter().any(|f| f.chained), info);
    // L3 mode checks every IPv4 header checksum: where the port offers
    // to, the NIC does (its verdict rides in the packet word).
    let ip_cksum = if plan.routes.is_some() {
        info.rx_offload_capa & dpdk::port::rx_offload_ipv4_cksum()
    } else {
        0
    };
    let frame = &p.frames[i];
    let configure = |n_rxq: usize| {
        let conf = PortConf {
            rx_queues: n_rxq as u16,
            tx_queues: n_tx as u16,
            rss_hf,
            mtu: frame.mtu,
            rx_offloads: frame.rx_offloads | ip_cksum,
            tx_offloads: fast_free | multi_segs,
        };
        configure_and_start(&p, &conf, &plan.ports, pool)
    };
    let mut started = configure(n_rx + n_class_q)?;
    let mut flows = Vec::new();
    let mut class_queues = false;
    if n_class_q > 0 {
        match install_class_rules(port.id(), classes, n_rx) {
            Ok(f) => {
                steering = format!(
                    "port {i}: rte_flow to queues {}..{}",
                    n_rx,
                    n_rx + n_class_q - 1
                );
                class_queues = true;
                flows = f;
            }
            Err(e) => {
                log::info!("port {i} ({}): rte_flow rules refused ({e}); classes use software classification on this port", info.driver);
                steering = format!("port {i}: software (rte_flow refused: {})", e.text);
                port.stop()?;
                // The handles of this configuration go before the next.
                drop(started);
                started = configure(n_rx)?;
            }
        }
    }
    let (r, t) = (started.rx_desc, started.tx_desc);
    let mac = port.mac()?;
    // L2 mode forwards whatever arrives; a router (L3 mode) takes only
    // frames addressed to it, and the NIC's own MAC filter drops the rest
    // where that costs nothing.
    if plan.routes.is_none() {
        if let Err(e) = port.enable_promiscuous() {
            log::warn!("port {i}: promiscuous mode not enabled ({e})");
        }
    }
    log::info!(
        "port {i}: {} ({}), socket {}, mac {}, {} RX x {r} desc, {n_tx} TX x {t} desc, RSS {}, MBUF_FAST_FREE {}, max frame {} in {}{}",
        info.name,
        info.driver,
        p.socket,
        MacAddr(mac),
        n_rx + if class_queues { classes.len() } else { 0 },
        if rss_hf != 0 { "on" } else { "off" },
        if fast_free != 0 { "on" } else { "off" },
        frame.max_frame,
        frame.describe(),
        if multi_segs != 0 { ", TX MULTI_SEGS on" } else { "" }
    );
    Ok(PortUp {
        setup: PortSetup {
            rx_desc: r,
            class_queues,
            steering,
        },
        flows,
        mac,
        queues: started.queues,
    })
}

/// A configured and started port: its queues and the (RX, TX) descriptor
/// counts the PMD adjusted them to.
struct Started {
    queues: PortQueues,
    rx_desc: u16,
    tx_desc: u16,
}

/// Configures port `p` as `conf` says, sets up its queues with the
/// descriptors `ports` asks for (as the PMD adjusts them), on `pool`, and
/// starts it.
fn configure_and_start(
    p: &PortSpec,
    conf: &PortConf,
    ports: &PortsPlan,
    pool: &Mempool,
) -> Result<Started, PortError> {
    let queues = p.port.configure(conf)?;
    let (mut r, mut t) = (ports.rx_desc, ports.tx_desc);
    p.port.adjust_descriptors(&mut r, &mut t)?;
    for q in &queues.rx {
        q.setup(r, p.socket, pool)?;
    }
    for q in &queues.tx {
        q.setup(t, p.socket)?;
    }
    start_port(p.port, p.info, ports)?;
    Ok(Started {
        queues,
        rx_desc: r,
        tx_desc: t,
    })
}

/// Starts `port`. A memif client cannot start while its server is absent
/// (its start fails connecting to the socket): the start is retried every
/// 100 ms until `--link-timeout` passes or a stop is requested, then one
/// line (exit 2) names the device and its socket.
fn start_port(port: Port, info: &PortInfo, ports: &PortsPlan) -> Result<(), PortError> {
    let device = ports.devices.iter().find(|d| d.name == info.name);
    let memif_client =
        info.driver == "net_memif" && device.and_then(|d| d.devarg("role")) != Some("server");
    let socket = device
        .and_then(|d| d.devarg("socket"))
        .unwrap_or("/run/memif.sock");
    let deadline = Instant::now() + Duration::from_secs_f64(ports.link_timeout);
    let mut waiting = false;
    loop {
        let e = match port.start() {
            Ok(()) => return Ok(()),
            Err(e) if !memif_client => return Err(e.into()),
            Err(e) => e,
        };
        if signal::quit_requested() {
            return Err(PortError::MemifStopped {
                device: info.name.clone(),
                socket: socket.to_string(),
            });
        }
        if Instant::now() >= deadline {
            return Err(PortError::NoMemifServer {
                device: info.name.clone(),
                socket: socket.to_string(),
                timeout: ports.link_timeout,
                source: e,
            });
        }
        if !waiting {
            waiting = true;
            log::info!(
                "port {} ({}): waiting up to {} s for the memif server on {socket}",
                info.port,
                info.name,
                ports.link_timeout
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Validates and creates one rule per class on `port`, steering class k to
/// RX queue `first_queue + k`; all or none (created ones are destroyed on
/// a failure).
fn install_class_rules(
    port: u16,
    classes: &[ClassSpec],
    first_queue: usize,
) -> Result<Vec<InstalledFlow>, DpdkError> {
    let rules: Vec<FlowRule> = classes
        .iter()
        .enumerate()
        .map(|(k, c)| FlowRule::build(&c.matcher, (first_queue + k) as u16))
        .collect();
    for r in &rules {
        r.validate(port)?;
    }
    let mut flows = Vec::new();
    for r in rules {
        match r.create(port) {
            Ok(f) => flows.push(f),
            Err(e) => {
                for f in flows {
                    let _ = f.destroy();
                }
                return Err(e);
            }
        }
    }
    Ok(flows)
}

/// Ports configured so far; stopped and closed on drop so that an early
/// error never frees a pool a port still uses.
#[derive(Default)]
pub struct OpenPorts(Vec<Port>);

impl OpenPorts {
    pub fn close_all(&mut self) {
        for port in self.0.drain(..) {
            if let Err(e) = port.stop() {
                log::warn!("{e}");
            }
            if let Err(e) = port.close() {
                log::warn!("{e}");
            }
        }
    }
}

impl Drop for OpenPorts {
    fn drop(&mut self) {
        self.close_all();
    }
}

/// Waits up to `timeout_s` for every link to come up (one line per port),
/// then forwards anyway with a warning.
pub fn wait_for_links(ports: &[Port], timeout_s: f64) {
    let deadline = Instant::now() + Duration::from_secs_f64(timeout_s);
    loop {
        let down: Vec<u16> = ports
            .iter()
            .filter(|p| !p.link().map(|l| l.up).unwrap_or(false))
            .map(|p| p.id())
            .collect();
        if down.is_empty() {
            for p in ports {
                if let Some(l) = p.link() {
                    log::info!(
                        "port {}: link up, {} Mbps{}",
                        p.id(),
                        l.speed_mbps,
                        if l.full_duplex { " full-duplex" } else { "" }
                    );
                }
            }
            return;
        }
        if Instant::now() >= deadline || signal::quit_requested() {
            log::warn!("links still down after {timeout_s} s on ports {down:?}: forwarding anyway");
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}
