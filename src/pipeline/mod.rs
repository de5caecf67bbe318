//! The forwarder: lays out roles on lcores, sets up ports, mempools and the
//! two hand-off links (RX→workers, workers→TX), runs every lcore's stages
//! until a quit is requested, drains, shuts down, and reports.
//!
//! Promises (checked at the end and reported): every mbuf received is
//! transmitted or freed exactly once and counted under a drop reason
//! (`rx = tx + Σ drops`), and after the ports are closed no mbuf is in use.
//!
//! Shutdown order: RX stops first (and hands on what it holds); workers stop
//! once every RX lcore stopped and their inputs are empty; TX stops once
//! every worker stopped and its inputs are empty. Then ports stop and
//! close, queues and pools are freed, and EAL is cleaned up by the caller.

pub mod classes;
pub mod clock;
pub mod frames;
pub mod handoff;
pub mod lifecycle;
pub mod rate;
pub mod stages;
pub mod telemetry;

use crate::cli::{Options, RequestedDevice};
use crate::dpdk::{self, signal, Eal, Lcore, Mempool, Port, PortInfo};
use crate::latency::{cycles_to_ns, Histogram};
use crate::stats::{self, LcoreCounters, Report, Roles, Totals, MAX_PORTS};
use handoff::{build_link, InputSet, Link};
use lifecycle::{PortGates, PortMonitor};
use stages::{PortMap, RxStage, TxStage, WorkerStage};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How a run failed.
#[derive(Debug)]
pub enum RunError {
    /// The user asked for something impossible: exit 2.
    Usage(String),
    /// DPDK refused at run time: exit 1.
    Runtime(String),
    /// A queue or pool did not fit in EAL's memory (turned into a usage
    /// error naming the option before `run` returns).
    OutOfMemory(String),
}

impl From<dpdk::DpdkError> for RunError {
    fn from(e: dpdk::DpdkError) -> Self {
        RunError::Runtime(e.to_string())
    }
}

/// Which lcores hold which role.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoleLayout {
    pub rx: Vec<Lcore>,
    pub worker: Vec<Lcore>,
    pub tx: Vec<Lcore>,
}

impl RoleLayout {
    /// The default split for the EAL lcore set: 1 lcore does everything;
    /// 2 lcores = main RX+TX, the other worker; 3+ = main RX, last TX, the
    /// rest workers.
    pub fn default_for(lcores: &[Lcore], main: Lcore) -> RoleLayout {
        let others: Vec<Lcore> = lcores.iter().copied().filter(|&l| l != main).collect();
        match others.len() {
            0 => RoleLayout {
                rx: vec![main],
                worker: vec![main],
                tx: vec![main],
            },
            1 => RoleLayout {
                rx: vec![main],
                worker: others.clone(),
                tx: vec![main],
            },
            _ => {
                let (last, middle) = others.split_last().expect("two or more");
                RoleLayout {
                    rx: vec![main],
                    worker: middle.to_vec(),
                    tx: vec![*last],
                }
            }
        }
    }

    /// Applies the user's role lists over the default and checks them
    /// against the EAL lcore set.
    pub fn resolve(opts: &Options, lcores: &[Lcore], main: Lcore) -> Result<RoleLayout, String> {
        let d = RoleLayout::default_for(lcores, main);
        let layout = RoleLayout {
            rx: opts.rx_lcores.clone().map(|c| c.0).unwrap_or(d.rx),
            worker: opts.worker_lcores.clone().map(|c| c.0).unwrap_or(d.worker),
            tx: opts.tx_lcores.clone().map(|c| c.0).unwrap_or(d.tx),
        };
        for (role, list) in [
            ("--rx-lcores", &layout.rx),
            ("--worker-lcores", &layout.worker),
            ("--tx-lcores", &layout.tx),
        ] {
            if list.is_empty() {
                return Err(format!(
                    "{role} is empty: every role needs at least one lcore"
                ));
            }
            for l in list {
                if !lcores.contains(l) {
                    return Err(format!(
                        "lcore {l} in {role} is not in the EAL lcore set {lcores:?}: add it to -l/--lcores or choose another"
                    ));
                }
            }
        }
        if layout.tx.len() > 255 {
            return Err("at most 255 TX lcores".into());
        }
        Ok(layout)
    }
}

/// The first requested device that no port came from. A port comes from a
/// device when its name is the device's name, or starts with it followed
/// by `_` (ports a PCI device spawns, e.g. representors).
pub fn missing_device<'a>(
    requested: &'a [RequestedDevice],
    port_names: &[String],
) -> Option<&'a RequestedDevice> {
    requested.iter().find(|d| {
        !port_names.iter().any(|p| {
            let p = if d.option == "--vdev" {
                p.clone()
            } else {
                crate::cli::canonical_device_name(p)
            };
            p == d.name
                || p.strip_prefix(d.name.as_str())
                    .is_some_and(|rest| rest.starts_with('_'))
        })
    })
}

/// l2fwd pairing: 0<->1, 2<->3; an odd last port forwards to itself.
pub fn peer_port(index: usize, n_ports: usize) -> usize {
    if index % 2 == 0 {
        if index + 1 < n_ports {
            index + 1
        } else {
            index
        }
    } else {
        index - 1
    }
}

/// Mbufs one socket's pool needs:
///   Σ over its ports (RX descriptors × RX queues + TX descriptors × TX queues)
/// + what all hand-off queues can hold (mbufs may travel across sockets)
/// + per lcore: its stage buffers (MAX_BURST each: RX burst + one per worker,
///   worker inbuf + one per TX lcore, TX inbuf + one per port)
/// + per lcore: 1.5 × the mempool cache (caches can hold that much)
/// + 1024 slack.
pub fn pool_size(
    descriptors: usize,
    queue_capacity: usize,
    lcores: usize,
    buffers_per_lcore: usize,
    cache: usize,
) -> usize {
    descriptors
        + queue_capacity
        + lcores * buffers_per_lcore * dpdk::mbuf::MAX_BURST
        + lcores * cache * 3 / 2
        + 1024
}

/// Per-lcore mempool cache tqfwd asks for when the pool is large enough.
const POOL_CACHE: usize = 256;

/// What a socket's pool must hold whatever its size: every RX descriptor
/// of the socket's ports filled, and one burst in flight per lcore. The
/// per-lcore caches get only what is left over, so they never strand the
/// mbufs the datapath needs.
struct PoolSizing {
    rx_descriptors: usize,
    lcores: usize,
    burst: usize,
}

impl PoolSizing {
    fn minimum(&self) -> usize {
        self.rx_descriptors + self.lcores * self.burst
    }

    /// `--mbufs n` on socket `socket`: a usage error saying what fits when
    /// `n` is below [`minimum`](Self::minimum).
    fn check(&self, n: usize, socket: i32) -> Result<(), String> {
        let need = self.minimum();
        if n < need {
            return Err(format!(
                "--mbufs {n} is too small for socket {socket}: {} RX descriptors + {} lcores x --burst {} need at least {need} mbufs: raise --mbufs to {need} or more, or lower --rx-desc or --burst",
                self.rx_descriptors, self.lcores, self.burst
            ));
        }
        Ok(())
    }

    /// The per-lcore cache for a pool of `size`: caches may hold 1.5x
    /// their size each, so together they get at most half of what the
    /// minimum leaves.
    fn cache(&self, size: usize) -> usize {
        let spare = size.saturating_sub(self.minimum());
        POOL_CACHE
            .min(size / 3)
            .min(spare / (3 * self.lcores.max(1)))
            .min(512)
    }
}

/// A DPDK allocation error: out of memory (ENOMEM, ENOSPC) becomes
/// [`RunError::OutOfMemory`], the rest a runtime error.
pub(crate) fn out_of_memory(e: dpdk::DpdkError) -> RunError {
    if e.code == libc::ENOMEM || e.code == libc::ENOSPC {
        RunError::OutOfMemory(format!("{}: {}", e.call, e.text))
    } else {
        RunError::Runtime(e.to_string())
    }
}

/// Progress of the shutdown, shared by all lcores.
struct Phase {
    rx_done: AtomicUsize,
    workers_done: AtomicUsize,
    n_rx: usize,
    n_workers: usize,
}

/// The stages one lcore runs.
struct LcoreWork {
    rx: Option<RxStage>,
    worker: Option<WorkerStage>,
    tx: Option<TxStage>,
    /// Quiescence slot of an lcore that polls ports (RX or TX stage).
    port_slot: Option<usize>,
}

fn run_lcore(work: &mut LcoreWork, phase: &Phase, gates: &PortGates, counters: &LcoreCounters) {
    // Busy/idle accounting (sampled, see `LoopClock`), published once per
    // window and at the end.
    let mut clock = clock::LoopClock::new(dpdk::rdtsc_inline());
    // Port lifecycle: the top of each iteration is a quiescent point (no
    // burst in progress), reported so a port can be closed safely.
    let q = &gates.quiescence;
    let mut reported = work.port_slot.map(|s| q.online(s)).unwrap_or(0);
    loop {
        if let Some(s) = work.port_slot {
            q.report(s, &mut reported);
        }
        clock.begin(dpdk::rdtsc_inline);
        let mut pending = false;
        let mut moved = 0usize;
        // Output before input: an lcore holding several roles first makes
        // room downstream (TX, then the worker), then receives. Under
        // overload the reverse order lets RX fill the queues that the
        // lcore's own TX should be draining (receive livelock).
        if let Some(t) = work.tx.as_mut() {
            if !t.done {
                let upstream_done = phase.workers_done.load(Ordering::Acquire) == phase.n_workers;
                moved += t.poll(upstream_done);
                pending |= !t.done;
            }
        }
        if let Some(w) = work.worker.as_mut() {
            if !w.done {
                let upstream_done = phase.rx_done.load(Ordering::Acquire) == phase.n_rx;
                moved += w.poll(upstream_done);
                if w.done {
                    phase.workers_done.fetch_add(1, Ordering::Release);
                } else {
                    pending = true;
                }
            }
        }
        if let Some(rx) = work.rx.as_mut() {
            if !rx.done {
                moved += rx.poll(signal::quit_requested());
                if rx.done {
                    phase.rx_done.fetch_add(1, Ordering::Release);
                } else {
                    pending = true;
                }
            }
        }
        let window_closed = clock.end(moved != 0, dpdk::rdtsc_inline);
        if !pending {
            clock.close(dpdk::rdtsc_inline());
        }
        if window_closed || !pending {
            counters
                .busy_polls
                .store(clock.busy_polls, Ordering::Relaxed);
            counters
                .busy_cycles
                .store(clock.busy_cycles, Ordering::Relaxed);
            counters
                .idle_polls
                .store(clock.idle_polls, Ordering::Relaxed);
            counters
                .idle_cycles
                .store(clock.idle_cycles, Ordering::Relaxed);
        }
        if !pending {
            break;
        }
    }
    if let Some(s) = work.port_slot {
        q.offline(s);
    }
}

fn socket_or(s: i32, fallback: i32) -> i32 {
    if s < 0 {
        fallback
    } else {
        s
    }
}

fn mac_string(m: &[u8; 6]) -> String {
    m.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// Sets up everything, forwards until quit, shuts down, and reports.
pub fn run(eal: &Eal, opts: &Options) -> Result<Report, RunError> {
    let lcores = eal.lcores();
    let main = eal.main_lcore();
    let layout = RoleLayout::resolve(opts, &lcores, main).map_err(RunError::Usage)?;
    let ports = Port::all();
    let port_names: Vec<String> = ports
        .iter()
        .map(|p| p.info().map(|i| i.name).unwrap_or_default())
        .collect();
    if let Some(d) = missing_device(&opts.devices, &port_names) {
        return Err(RunError::Usage(format!(
            "{} {} did not become a port (its probe failed, see EAL's log above): fix its arguments or remove it",
            d.option, d.name
        )));
    }
    if ports.is_empty() {
        return Err(RunError::Usage(
            "no Ethernet ports: pass --vdev or bind a NIC, see dpdk-config/".into(),
        ));
    }
    if ports.len() > MAX_PORTS {
        return Err(RunError::Usage(format!(
            "{} ports found; tqfwd handles at most {MAX_PORTS}",
            ports.len()
        )));
    }
    for (p, _) in &opts.peer_mac {
        if *p as usize >= ports.len() {
            return Err(RunError::Usage(format!(
                "--peer-mac names port {p}, but only ports 0-{} exist",
                ports.len() - 1
            )));
        }
    }
    let main_socket = eal.lcore_socket(main) as i32;
    let n_rx = layout.rx.len();
    let n_tx = layout.tx.len();
    let burst = opts.burst as usize;
    let depth = opts.depth as usize;

    // --- application classes: dedicated workers after the default ones ---
    let classes = &opts.class;
    classes::check_classes(classes, &layout.worker).map_err(RunError::Usage)?;
    let mut workers: Vec<Lcore> = layout.worker.clone();
    let mut class_workers = vec![classes::WorkerRange {
        start: 0,
        count: workers.len() as u32,
    }];
    for c in classes {
        for l in &c.lcores {
            if !lcores.contains(l) {
                return Err(RunError::Usage(format!(
                    "lcore {l} of class {} is not in the EAL lcore set {lcores:?}: add it to -l/--lcores",
                    c.name
                )));
            }
        }
        class_workers.push(classes::WorkerRange {
            start: workers.len() as u32,
            count: c.lcores.len() as u32,
        });
        workers.extend(&c.lcores);
    }
    let n_workers = workers.len();
    if let Some((idx, _)) = opts.debug_stall_worker {
        if idx as usize >= n_workers {
            return Err(RunError::Usage(format!(
                "--debug-stall-worker {idx}: there are {n_workers} workers (indices 0-{})",
                n_workers - 1
            )));
        }
    }
    let worker_class = |w: usize| -> u8 {
        class_workers
            .iter()
            .rposition(|r| r.contains(w as u32))
            .unwrap_or(0) as u8
    };
    // RX stages: the RX lcores, plus each class's first lcore, which polls
    // the class's dedicated queue on ports that accept rte_flow rules.
    let mut rx_stages: Vec<Lcore> = layout.rx.clone();
    if !classes.is_empty() {
        for c in classes {
            if !rx_stages.contains(&c.lcores[0]) {
                rx_stages.push(c.lcores[0]);
            }
        }
    }

    // --- ports: check limits before touching anything ---
    let mut infos: Vec<PortInfo> = Vec::new();
    let mut frame_plans: Vec<frames::FramePlan> = Vec::new();
    for (i, port) in ports.iter().enumerate() {
        let info = port.info()?;
        if port.id() as usize != i {
            return Err(RunError::Usage(format!(
                "port ids are not contiguous (found {} at index {i})",
                port.id()
            )));
        }
        if (info.max_rx_queues as usize) < n_rx {
            return Err(RunError::Usage(format!(
                "port {i} ({}) allows {} RX queues but {n_rx} RX lcores need one each: use fewer --rx-lcores (or give the vdev more queues)",
                info.driver, info.max_rx_queues
            )));
        }
        if (info.max_tx_queues as usize) < n_tx {
            return Err(RunError::Usage(format!(
                "port {i} ({}) allows {} TX queues but {n_tx} TX lcores need one each: use fewer --tx-lcores",
                info.driver, info.max_tx_queues
            )));
        }
        frame_plans.push(
            frames::plan(opts.max_frame, i, &info, Mempool::mbuf_data_len())
                .map_err(RunError::Usage)?,
        );
        infos.push(info);
    }
    let any_chained = frame_plans.iter().any(|p| p.chained);

    // NUMA affinity table: each port's socket and the sockets of the lcores
    // serving it (RX, TX); a row whose sockets differ is a warning.
    for info in &infos {
        let psock = socket_or(info.socket, main_socket);
        let describe = |ls: &[Lcore]| {
            ls.iter()
                .map(|&l| format!("{l}(s{})", eal.lcore_socket(l)))
                .collect::<Vec<_>>()
                .join(" ")
        };
        let far: Vec<Lcore> = rx_stages
            .iter()
            .chain(layout.tx.iter())
            .copied()
            .filter(|&l| eal.lcore_socket(l) as i32 != psock)
            .collect();
        let row = format!(
            "NUMA: port {} ({}) socket {psock}{} | rx lcores {} | tx lcores {}",
            info.port,
            info.name,
            if info.socket < 0 {
                " (device reports none; assumed main's)"
            } else {
                ""
            },
            describe(&rx_stages),
            describe(&layout.tx)
        );
        if far.is_empty() {
            log::info!("{row}");
        } else {
            log::warn!("{row} <- lcores {far:?} are on another socket: expect remote-memory costs");
        }
    }
    log::info!(
        "NUMA: worker lcores {} (hand-off queues live on their consumer's socket)",
        workers
            .iter()
            .map(|&l| format!("{l}(s{})", eal.lcore_socket(l)))
            .collect::<Vec<_>>()
            .join(" ")
    );

    // --- hand-off links (queues on the consumer's socket) and mempools,
    // one per socket that has ports ---
    let worker_sockets: Vec<i32> = workers
        .iter()
        .map(|&l| eal.lcore_socket(l) as i32)
        .collect();
    let tx_sockets: Vec<i32> = layout
        .tx
        .iter()
        .map(|&l| eal.lcore_socket(l) as i32)
        .collect();
    let mut rxd = opts.rx_desc;
    let mut txd = opts.tx_desc;
    let mut all_lcores: Vec<Lcore> = rx_stages
        .iter()
        .chain(&workers)
        .chain(&layout.tx)
        .copied()
        .collect();
    all_lcores.sort_unstable();
    all_lcores.dedup();
    let buffers_per_lcore = 1 + n_workers + 1 + n_tx + 1 + ports.len();
    let mut sockets: Vec<i32> = infos
        .iter()
        .map(|i| socket_or(i.socket, main_socket))
        .collect();
    sockets.sort_unstable();
    sockets.dedup();
    let allocate = |depth: usize, quiet: bool| -> Result<(Link, Link, Vec<Mempool>), RunError> {
        let rx_link = build_link(
            "rw",
            opts.backend,
            opts.topology,
            rx_stages.len(),
            &worker_sockets,
            depth,
            burst,
        )?;
        let tx_link = build_link(
            "wt",
            opts.backend,
            opts.topology,
            n_workers,
            &tx_sockets,
            depth,
            burst,
        )?;
        let mut pools: Vec<Mempool> = Vec::new();
        for &s in &sockets {
            let n_ports_here = infos
                .iter()
                .filter(|i| socket_or(i.socket, main_socket) == s)
                .count();
            let rx_descriptors = n_ports_here * opts.rx_desc as usize * (n_rx + classes.len());
            let descriptors = rx_descriptors + n_ports_here * opts.tx_desc as usize * n_tx;
            let queued = rx_link.capacity + tx_link.capacity;
            let sizing = PoolSizing {
                rx_descriptors,
                lcores: all_lcores.len(),
                burst,
            };
            let size = match opts.mbufs {
                Some(n) => {
                    sizing.check(n as usize, s).map_err(RunError::Usage)?;
                    n as usize
                }
                None => pool_size(
                    descriptors,
                    queued,
                    all_lcores.len(),
                    buffers_per_lcore,
                    POOL_CACHE,
                ),
            };
            if !quiet {
                log::info!("mempool on socket {s}: {size} mbufs ({descriptors} for descriptors, {queued} for hand-off queues)");
            }
            pools.push(
                Mempool::create(
                    &format!("tqfwd_pool_s{s}"),
                    size as u32,
                    sizing.cache(size) as u32,
                    s,
                )
                .map_err(out_of_memory)?,
            );
        }
        Ok((rx_link, tx_link, pools))
    };
    let (rx_link, tx_link, pools) = match allocate(depth, false) {
        Ok(a) => a,
        Err(RunError::OutOfMemory(what)) => {
            // Say what fits: the largest --depth whose queues and pools fit.
            let fits = std::iter::successors(Some(depth / 2), |d| Some(d / 2))
                .take_while(|&d| d >= 2)
                .find(|&d| allocate(d, true).is_ok());
            return Err(RunError::Usage(match (fits, opts.mbufs) {
                (Some(d), _) => format!(
                    "--depth {depth} does not fit in EAL's memory ({what}): at most --depth {d} fits with these lcores and ports, or give EAL more memory (-m, huge pages)"
                ),
                (None, Some(n)) => format!(
                    "--mbufs {n} does not fit in EAL's memory ({what}): lower --mbufs or give EAL more memory (-m, huge pages)"
                ),
                (None, None) => format!(
                    "the hand-off queues and mempools do not fit in EAL's memory ({what}): give EAL more memory (-m, huge pages) or use fewer lcores"
                ),
            }));
        }
        Err(e) => return Err(e),
    };
    let pool_for = |socket: i32| -> &Mempool {
        pools
            .iter()
            .find(|p| p.socket == socket)
            .expect("pool per socket")
    };

    // --- configure and start ports (closed on any early return, before
    // the pools they use are freed) ---
    let mut open_ports = OpenPorts(Vec::new());
    let mut macs = [[0u8; 6]; MAX_PORTS];
    let mut port_steering: Vec<String> = vec![String::new(); ports.len()];
    let mut class_queues: Vec<bool> = vec![false; ports.len()];
    let mut installed_flows: Vec<dpdk::flow::InstalledFlow> = Vec::new();
    for (i, (port, info)) in ports.iter().zip(&infos).enumerate() {
        let psock = socket_or(info.socket, main_socket);
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
        open_ports.0.push(*port);
        // With classes, try one extra RX queue per class and steer each
        // class to its queue with rte_flow; a PMD that refuses gets the
        // port brought up again without them (software classification).
        let n_class_q =
            if !classes.is_empty() && (info.max_rx_queues as usize) >= n_rx + classes.len() {
                classes.len()
            } else {
                0
            };
        if !classes.is_empty() && n_class_q == 0 {
            port_steering[i] = format!(
                "port {i}: software (device allows {} RX queues, needs {})",
                info.max_rx_queues,
                n_rx + classes.len()
            );
        }
        // MBUF_FAST_FREE: every mbuf tqfwd sends comes from one pool and has
        // refcnt 1; allowed only when there is one pool, and when offered.
        let fast_free = if pools.len() == 1 {
            info.tx_offload_capa & dpdk::port::tx_offload_fast_free()
        } else {
            0
        };
        // Chains received on any port leave by every port.
        let multi_segs = frames::tx_offloads(any_chained, info);
        let plan = &frame_plans[i];
        let (r, t) = bring_up(
            *port,
            info,
            n_rx + n_class_q,
            n_tx,
            rss_hf,
            plan,
            fast_free | multi_segs,
            opts,
            psock,
            pool_for(psock),
        )?;
        if n_class_q > 0 {
            match install_class_rules(port.id(), classes, n_rx) {
                Ok(flows) => {
                    port_steering[i] = format!(
                        "port {i}: rte_flow to queues {}..{}",
                        n_rx,
                        n_rx + n_class_q - 1
                    );
                    class_queues[i] = true;
                    installed_flows.extend(flows);
                }
                Err(e) => {
                    log::info!("port {i} ({}): rte_flow rules refused ({e}); classes use software classification on this port", info.driver);
                    port_steering[i] = format!("port {i}: software (rte_flow refused: {})", e.text);
                    port.stop()?;
                    bring_up(
                        *port,
                        info,
                        n_rx,
                        n_tx,
                        rss_hf,
                        plan,
                        fast_free | multi_segs,
                        opts,
                        psock,
                        pool_for(psock),
                    )?;
                }
            }
        }
        rxd = rxd.max(r);
        txd = txd.max(t);
        macs[i] = port.mac()?;
        if let Err(e) = port.enable_promiscuous() {
            log::warn!("port {i}: promiscuous mode not enabled ({e})");
        }
        log::info!(
            "port {i}: {} ({}), socket {psock}, mac {}, {} RX x {r} desc, {n_tx} TX x {t} desc, RSS {}, MBUF_FAST_FREE {}, max frame {} in {}{}",
            info.name,
            info.driver,
            mac_string(&macs[i]),
            n_rx + if class_queues[i] { classes.len() } else { 0 },
            if rss_hf != 0 { "on" } else { "off" },
            if fast_free != 0 { "on" } else { "off" },
            plan.max_frame,
            plan.describe(),
            if multi_segs != 0 { ", TX MULTI_SEGS on" } else { "" }
        );
    }
    wait_for_links(&ports, opts.link_timeout);

    // --- forwarding tables ---
    let mut map = PortMap {
        out_port: [0; MAX_PORTS],
        tx_index: [0; MAX_PORTS],
        dst_mac: [[0; 6]; MAX_PORTS],
        src_mac: [[0; 6]; MAX_PORTS],
    };
    for (i, mac) in macs.iter().enumerate().take(ports.len()) {
        map.out_port[i] = peer_port(i, ports.len()) as u16;
        map.tx_index[i] = (i % n_tx) as u8;
        map.src_mac[i] = *mac;
        map.dst_mac[i] = [0x02, 0, 0, 0, 0, i as u8];
    }
    for (p, mac) in &opts.peer_mac {
        map.dst_mac[*p as usize] = mac.0;
    }

    // --- latency stamping (mbuf dynfield) ---
    let stamp_field = if opts.latency {
        Some(dpdk::U64Field::register("tqfwd_rx_tsc")?)
    } else {
        None
    };

    // --- port lifecycle: gates the lcores check, a monitor that moves them ---
    let port_lcores: Vec<Lcore> = all_lcores
        .iter()
        .copied()
        .filter(|l| rx_stages.contains(l) || layout.tx.contains(l))
        .collect();
    let mut memif = [false; MAX_PORTS];
    for (i, info) in infos.iter().enumerate() {
        memif[i] = info.driver == "net_memif";
    }
    let gates = Arc::new(PortGates::new(memif, port_lcores.len()));
    let monitor = PortMonitor::new(
        gates.clone(),
        &ports
            .iter()
            .zip(&infos)
            .map(|(p, i)| (*p, i.name.clone(), i.driver.clone(), i.devargs.clone()))
            .collect::<Vec<_>>(),
    )?;

    // --- per-lcore work ---
    let counters: Vec<(Lcore, Arc<LcoreCounters>)> = all_lcores
        .iter()
        .map(|&l| (l, Arc::new(LcoreCounters::default())))
        .collect();
    let counters_of = |l: Lcore| {
        counters
            .iter()
            .find(|(x, _)| *x == l)
            .map(|(_, c)| c.clone())
            .expect("counters")
    };
    let policy = rate::FullPolicy::new(opts.on_full, opts.drop_after as u64, dpdk::tsc_hz());
    let mut rx_senders: Vec<Option<Vec<handoff::Sender>>> =
        rx_link.senders.into_iter().map(Some).collect();
    let mut worker_inputs: Vec<Option<InputSet>> = rx_link.inputs.into_iter().map(Some).collect();
    let mut worker_senders: Vec<Option<Vec<handoff::Sender>>> =
        tx_link.senders.into_iter().map(Some).collect();
    let mut tx_inputs: Vec<Option<InputSet>> = tx_link.inputs.into_iter().map(Some).collect();
    let mut work: Vec<(Lcore, Mutex<Option<LcoreWork>>)> = Vec::new();
    for &l in &all_lcores {
        let c = counters_of(l);
        let rx = rx_stages.iter().position(|&x| x == l).map(|stage| {
            let mut queues: Vec<(Port, u16, u8)> = Vec::new();
            if let Some(q) = layout.rx.iter().position(|&x| x == l) {
                queues.extend(ports.iter().map(|&p| (p, q as u16, 0u8)));
            }
            for (k, c) in classes.iter().enumerate() {
                if c.lcores[0] == l {
                    for (i, &p) in ports.iter().enumerate() {
                        if class_queues[i] {
                            queues.push((p, (n_rx + k) as u16, (k + 1) as u8));
                        }
                    }
                }
            }
            let nic_ring = rxd as usize * queues.len().max(1);
            RxStage::new(
                queues,
                rx_senders[stage].take().expect("rx senders"),
                burst,
                policy,
                // Each RX lcore takes its share of the rate; what the NIC
                // can hold for it is its queues' descriptors.
                opts.rx_rate.map(|mpps| {
                    rate::TokenBucket::new(
                        mpps * 1e6 / rx_stages.len() as f64,
                        dpdk::tsc_hz(),
                        nic_ring,
                        burst,
                    )
                }),
                stamp_field.map(|f| (f, opts.latency_sample)),
                classes.iter().map(|c| c.matcher).collect(),
                class_workers.clone(),
                gates.clone(),
                c.clone(),
            )
        });
        let worker = workers.iter().position(|&x| x == l).map(|w| {
            WorkerStage::new(
                worker_inputs[w].take().expect("worker inputs"),
                worker_senders[w].take().expect("worker senders"),
                burst,
                policy,
                map.clone(),
                !opts.no_mac_rewrite,
                opts.worker_cycles as u64,
                worker_class(w),
                opts.debug_stall_worker
                    .filter(|&(idx, _)| idx as usize == w)
                    .map(|(_, ms)| Duration::from_millis(ms as u64)),
                c.clone(),
            )
        });
        let tx = layout.tx.iter().position(|&x| x == l).map(|t| {
            let tx_ports = ports.iter().map(|&p| (p, t as u16)).collect();
            TxStage::new(
                tx_inputs[t].take().expect("tx inputs"),
                tx_ports,
                map.out_port,
                burst,
                stamp_field,
                policy,
                gates.clone(),
                c.clone(),
            )
        });
        let port_slot = port_lcores.iter().position(|&x| x == l);
        work.push((
            l,
            Mutex::new(Some(LcoreWork {
                rx,
                worker,
                tx,
                port_slot,
            })),
        ));
    }
    let idle: Vec<Lcore> = lcores
        .iter()
        .copied()
        .filter(|l| !all_lcores.contains(l))
        .collect();
    if !idle.is_empty() {
        log::warn!("EAL lcores {idle:?} have no role and stay idle");
    }
    log::info!(
        "forwarding: backend {} topology {} burst {burst} depth {depth} on-full {}; rx lcores {:?}, worker lcores {:?}, tx lcores {:?}",
        opts.backend.name(),
        opts.topology.name(),
        opts.on_full.name(),
        rx_stages,
        workers,
        layout.tx
    );

    // --- run ---
    let phase = Phase {
        rx_done: AtomicUsize::new(0),
        workers_done: AtomicUsize::new(0),
        n_rx: rx_stages.len(),
        n_workers,
    };
    let class_names: Vec<String> = if classes.is_empty() {
        Vec::new()
    } else {
        std::iter::once("default".to_string())
            .chain(classes.iter().map(|c| c.name.clone()))
            .collect()
    };
    let live = Arc::new(telemetry::Live {
        backend: opts.backend.name(),
        topology: opts.topology.name(),
        lcores: counters
            .iter()
            .map(|(l, c)| {
                (
                    *l,
                    Roles {
                        rx: rx_stages.contains(l),
                        worker: workers.contains(l),
                        tx: layout.tx.contains(l),
                    },
                    c.clone(),
                )
            })
            .collect(),
        ports: ports
            .iter()
            .zip(&infos)
            .map(|(p, i)| (p.id(), i.name.clone(), i.driver.clone()))
            .collect(),
        rx_lcores: layout.rx.clone(),
        class_names: class_names.clone(),
        started: Instant::now(),
        mbufs_in_use: AtomicU64::new(0),
        running: AtomicBool::new(true),
    });
    if let Err(e) = telemetry::register_all(&live) {
        log::warn!("telemetry commands not registered: {e}");
    }
    let finished = AtomicBool::new(false);
    let histograms: Mutex<Vec<Box<Histogram>>> = Mutex::new(Vec::new());
    let launch = std::thread::scope(|scope| {
        let reporter = std::thread::Builder::new()
            .name("tqfwd-stats".into())
            .spawn_scoped(scope, || {
                stats_thread(
                    &finished,
                    &live,
                    &pools,
                    &ports,
                    opts.stats_interval,
                    opts.duration,
                )
            });
        if let Err(e) = &reporter {
            log::warn!("no stats thread ({e}): stats lines and --duration are off");
        }
        // Link state off the datapath; the monitor (and its memif park on
        // the interrupt thread) ends before the ports are stopped.
        let mut monitor = monitor;
        let watcher = std::thread::Builder::new()
            .name("tqfwd-ports".into())
            .spawn_scoped(scope, || {
                while !finished.load(Ordering::Acquire) {
                    monitor.poll();
                    std::thread::sleep(lifecycle::MONITOR_PERIOD);
                }
                drop(monitor);
            });
        if let Err(e) = &watcher {
            log::warn!("no port monitor thread ({e}): link changes are not followed");
        }
        let launch = eal.run_on_all_lcores(|lcore| {
            let taken = work
                .iter()
                .find(|(l, _)| *l == lcore)
                .and_then(|(_, m)| m.lock().ok().and_then(|mut g| g.take()));
            if let Some(mut w) = taken {
                run_lcore(&mut w, &phase, &gates, &counters_of(lcore));
                if let Some(h) = w.tx.as_mut().and_then(|t| t.take_histogram()) {
                    if let Ok(mut v) = histograms.lock() {
                        v.push(h);
                    }
                }
                // Stage buffers are empty here; dropping them frees nothing.
                drop(w);
            }
        });
        finished.store(true, Ordering::Release);
        launch
    });
    live.running.store(false, Ordering::Relaxed);
    launch?;

    // --- shutdown: flow rules, ports, then count what is still in use ---
    for f in installed_flows {
        if let Err(e) = f.destroy() {
            log::warn!("{e}");
        }
    }
    let mut port_reports = Vec::new();
    let totals = Totals::collect(counters.iter().map(|(_, c)| &**c));
    let duration_s = totals.rx_duration_s(dpdk::tsc_hz().max(1) as f64);
    for (i, (port, info)) in ports.iter().zip(&infos).enumerate() {
        let hw = port.stats();
        let rx_queues: Vec<u64> = layout
            .rx
            .iter()
            .map(|&l| counters_of(l).rx_port_packets[i].load(Ordering::Relaxed))
            .collect();
        let tx_packets = totals.tx_port[i];
        port_reports.push(stats::PortReport {
            port: i as u16,
            name: info.name.clone(),
            driver: info.driver.clone(),
            socket: info.socket,
            mac: mac_string(&macs[i]),
            peer_port: map.out_port[i],
            rx_packets: rx_queues.iter().sum(),
            tx_packets,
            rx_queues,
            hw_ipackets: hw.ipackets,
            hw_opackets: hw.opackets,
            hw_imissed: hw.imissed,
            hw_rx_nombuf: hw.rx_nombuf,
            hw_ierrors: hw.ierrors,
            hw_oerrors: hw.oerrors,
        });
    }
    open_ports.close_all();
    drop(work); // hand-off queues: units and rings go back to DPDK's heap
    let mbufs_in_use: u64 = pools.iter().map(|p| p.in_use() as u64).sum();
    drop(pools);

    let latency_ns = if opts.latency {
        let mut all = Histogram::boxed();
        for h in histograms.into_inner().unwrap_or_default() {
            all.merge(&h);
        }
        let ns = |c: u64| cycles_to_ns(c as f64, dpdk::tsc_hz());
        Some(stats::LatencyReport {
            p50: ns(all.percentile(50.0)),
            p90: ns(all.percentile(90.0)),
            p99: ns(all.percentile(99.0)),
            p999: ns(all.percentile(99.9)),
            max: ns(all.max()),
            samples: all.count(),
        })
    } else {
        None
    };
    let mut app_classes = Vec::new();
    if !classes.is_empty() {
        let names = std::iter::once((
            "default".to_string(),
            "(unclassified)".to_string(),
            layout.worker.clone(),
        ))
        .chain(
            classes
                .iter()
                .map(|c| (c.name.clone(), c.match_text.clone(), c.lcores.clone())),
        );
        for (k, (name, matcher, class_lcores)) in names.enumerate() {
            let rx_lcores = counters
                .iter()
                .filter_map(|(l, c)| {
                    let n = c.class_rx[k].load(Ordering::Relaxed);
                    (n > 0).then_some((*l, n))
                })
                .collect();
            let worker_lcores = class_lcores
                .iter()
                .map(|&l| (l, counters_of(l).worker_total()))
                .collect();
            app_classes.push(stats::ClassReport {
                name,
                matcher,
                lcores: class_lcores,
                packets: totals.class_rx[k],
                dedicated_queue_packets: totals.class_rx_dedicated[k],
                drops: totals.class_drops[k],
                rx_lcores,
                worker_lcores,
                steering: if k == 0 {
                    Vec::new()
                } else {
                    port_steering.clone()
                },
            });
        }
    }
    let conservation_ok = totals.conserved();
    let rate = |n: u64| {
        if duration_s > 0.0 {
            n as f64 / duration_s / 1e6
        } else {
            0.0
        }
    };
    Ok(Report {
        backend: opts.backend.name(),
        topology: opts.topology.name(),
        on_full: opts.on_full.name(),
        burst: opts.burst,
        depth: opts.depth,
        duration_s,
        rx_packets: totals.rx,
        tx_packets: totals.tx,
        rx_mpps: rate(totals.rx),
        tx_mpps: rate(totals.tx),
        drops: totals.drops_map(),
        drops_total: totals.drops_total(),
        classes: totals.frame_classes_map(),
        mbufs_in_use,
        conservation_ok,
        ports: port_reports,
        lcores: counters
            .iter()
            .map(|(l, c)| {
                let roles = Roles {
                    rx: rx_stages.contains(l),
                    worker: workers.contains(l),
                    tx: layout.tx.contains(l),
                };
                stats::lcore_report(*l, eal.lcore_socket(*l), roles, c)
            })
            .collect(),
        latency_ns,
        app_classes,
        signal: signal::last_signal(),
    })
}

/// Configures `port` with `n_rxq` RX and `n_tx` TX queues (MTU and RX
/// scatter as `plan` says), sets them up and starts it; returns the
/// adjusted (RX, TX) descriptor counts.
#[allow(clippy::too_many_arguments)]
fn bring_up(
    port: Port,
    info: &PortInfo,
    n_rxq: usize,
    n_tx: usize,
    rss_hf: u64,
    plan: &frames::FramePlan,
    tx_offloads: u64,
    opts: &Options,
    socket: i32,
    pool: &Mempool,
) -> Result<(u16, u16), RunError> {
    port.configure(
        n_rxq as u16,
        n_tx as u16,
        rss_hf,
        plan.mtu,
        plan.rx_offloads,
        tx_offloads,
    )?;
    let (mut r, mut t) = (opts.rx_desc, opts.tx_desc);
    port.adjust_descriptors(&mut r, &mut t)?;
    for q in 0..n_rxq {
        port.setup_rx_queue(q as u16, r, socket, pool)?;
    }
    for q in 0..n_tx {
        port.setup_tx_queue(q as u16, t, socket)?;
    }
    start_port(port, info, opts)?;
    Ok((r, t))
}

/// Starts `port`. A memif client cannot start while its server is absent
/// (its start fails connecting to the socket): the start is retried every
/// 100 ms until `--link-timeout` passes or a stop is requested, then one
/// line (exit 2) names the device and its socket.
fn start_port(port: Port, info: &PortInfo, opts: &Options) -> Result<(), RunError> {
    let device = opts.devices.iter().find(|d| d.name == info.name);
    let memif_client =
        info.driver == "net_memif" && device.and_then(|d| d.devarg("role")) != Some("server");
    let socket = device
        .and_then(|d| d.devarg("socket"))
        .unwrap_or("/run/memif.sock");
    let deadline = Instant::now() + Duration::from_secs_f64(opts.link_timeout);
    let mut waiting = false;
    loop {
        let e = match port.start() {
            Ok(()) => return Ok(()),
            Err(e) if !memif_client => return Err(e.into()),
            Err(e) => e,
        };
        if signal::quit_requested() {
            return Err(RunError::Usage(format!(
                "{}: stopped while waiting for the memif server on socket {socket}: start the server first",
                info.name
            )));
        }
        if Instant::now() >= deadline {
            return Err(RunError::Usage(format!(
                "{}: no memif server on socket {socket} within --link-timeout {} s ({}): start the server first or raise --link-timeout",
                info.name, opts.link_timeout, e.text
            )));
        }
        if !waiting {
            waiting = true;
            log::info!(
                "port {} ({}): waiting up to {} s for the memif server on {socket}",
                info.port,
                info.name,
                opts.link_timeout
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Validates and creates one rte_flow rule per class (class k to queue
/// `first_queue + k`); all or nothing.
#[allow(clippy::type_complexity)]
/// Validates and creates one rule per class on `port`, steering class k to
/// RX queue `first_queue + k`; all or none (created ones are destroyed on
/// a failure).
fn install_class_rules(
    port: u16,
    classes: &[classes::ClassSpec],
    first_queue: usize,
) -> Result<Vec<dpdk::flow::InstalledFlow>, dpdk::DpdkError> {
    let rules: Vec<dpdk::flow::FlowRule> = classes
        .iter()
        .enumerate()
        .map(|(k, c)| {
            dpdk::flow::FlowRule::build(&c.matcher.flow_pattern(), (first_queue + k) as u16)
        })
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
struct OpenPorts(Vec<Port>);

impl OpenPorts {
    fn close_all(&mut self) {
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

fn wait_for_links(ports: &[Port], timeout_s: f64) {
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

/// Prints a stats line every `interval` seconds (with port error counters
/// when non-zero), logs the totals on SIGUSR1, keeps the live mbuf count for
/// telemetry, and requests the quit after `duration`, until `finished`.
fn stats_thread(
    finished: &AtomicBool,
    live: &telemetry::Live,
    pools: &[Mempool],
    ports: &[Port],
    interval: f64,
    duration: Option<f64>,
) {
    let start = Instant::now();
    let mut prev = Totals::default();
    let mut next_line = interval;
    // Stats lines stop (one warning) when stdout fails: a closed pipe
    // (`tqfwd … | head -1`) or a full disk must not stop forwarding.
    let mut stdout_ok = true;
    while !finished.load(Ordering::Acquire) {
        std::thread::sleep(Duration::from_millis(20));
        live.mbufs_in_use.store(
            pools.iter().map(|p| p.in_use() as u64).sum(),
            Ordering::Relaxed,
        );
        let t = start.elapsed().as_secs_f64();
        if let Some(d) = duration {
            if t >= d && !signal::quit_requested() {
                signal::request_quit();
            }
        }
        if signal::take_totals_request() {
            let now = Totals::collect(live.lcores.iter().map(|(_, _, c)| &**c));
            log::info!("SIGUSR1: {}", stats::totals_line(t, &now));
        }
        if interval > 0.0 && t >= next_line {
            let now = Totals::collect(live.lcores.iter().map(|(_, _, c)| &**c));
            let mut line = stats::stats_line(t, &prev, &now, interval, &live.class_names);
            for p in ports {
                let hw = p.stats();
                for (name, v) in [
                    ("imissed", hw.imissed),
                    ("rx_nombuf", hw.rx_nombuf),
                    ("ierrors", hw.ierrors),
                    ("oerrors", hw.oerrors),
                ] {
                    if v != 0 {
                        line.push_str(&format!(" | port{} {name}={v}", p.id()));
                    }
                }
            }
            if stdout_ok {
                use std::io::Write;
                let mut out = std::io::stdout().lock();
                if let Err(e) = writeln!(out, "{line}").and_then(|_| out.flush()) {
                    stdout_ok = false;
                    log::warn!("stdout: {e}; no more stats lines (the summary goes to stderr)");
                }
            }
            prev = now;
            next_line += interval;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_requested_device_is_a_port() {
        let req = crate::cli::requested_devices(
            &[
                "tqfwd",
                "--vdev=net_pcap0,x=1",
                "--vdev=net_pcap1",
                "-a",
                "01:00.0",
            ]
            .map(String::from),
        );
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(
            missing_device(&req, &names(&["net_pcap0", "net_pcap1", "0000:01:00.0"])).is_none()
        );
        assert!(missing_device(
            &req,
            &names(&["net_pcap0", "net_pcap1", "0000:01:00.0_representor_vf0"])
        )
        .is_none());
        assert_eq!(
            missing_device(&req, &names(&["net_pcap0", "0000:01:00.0"])).map(|d| d.name.as_str()),
            Some("net_pcap1")
        );
        assert_eq!(
            missing_device(&req, &names(&["net_pcap0", "net_pcap1", "0000:01:00.1"]))
                .map(|d| d.option),
            Some("-a")
        );
    }

    #[test]
    fn pairing() {
        assert_eq!(peer_port(0, 2), 1);
        assert_eq!(peer_port(1, 2), 0);
        assert_eq!(peer_port(2, 3), 2);
        assert_eq!(peer_port(0, 1), 0);
        assert_eq!(peer_port(3, 4), 2);
    }

    #[test]
    fn default_layouts() {
        assert_eq!(
            RoleLayout::default_for(&[0], 0),
            RoleLayout {
                rx: vec![0],
                worker: vec![0],
                tx: vec![0]
            }
        );
        assert_eq!(
            RoleLayout::default_for(&[0, 1], 0),
            RoleLayout {
                rx: vec![0],
                worker: vec![1],
                tx: vec![0]
            }
        );
        assert_eq!(
            RoleLayout::default_for(&[0, 1, 2, 3], 0),
            RoleLayout {
                rx: vec![0],
                worker: vec![1, 2],
                tx: vec![3]
            }
        );
    }
}
