//! The plan of a run: which lcore holds which role, which workers serve
//! which class, which port forwards to which, which sockets get a pool and
//! how large it must be. Resolved from the options and the machine's facts
//! (plain data read from EAL and the ports), before any resource exists,
//! so every check here is a usage error (exit 2) raised before forwarding
//! starts, and every rule is a plain unit test.

use super::class::{check_classes, ClassError, ClassSpec, WorkerRange};
use super::cli::{Backend, Handoff, Options, RequestedDevice};
use super::parts::{
    CapturePlan, HandoffPlan, LivePlan, PortsPlan, StageMode, StageModes, StagePlan,
};
use super::routes::{self, Limits, RouteError, RouteTable};
use std::path::PathBuf;
use std::sync::Arc;

/// An EAL lcore id.
pub type Lcore = u32;

/// Most ports tqfwd forwards between (per-port counters are arrays).
pub const MAX_PORTS: usize = 32;

/// Per-lcore mempool cache tqfwd asks for when the pool is large enough:
/// the most DPDK allows (`RTE_MEMPOOL_CACHE_MAX_SIZE`). An lcore that both
/// receives and transmits allocates and frees in runs of different sizes
/// while the count in flight swings, so its cache level drifts; a smaller
/// cache flushes to and refills from the pool's shared ring more often,
/// and what a refill brings has not been touched for a pool's worth of
/// packets (the measurement against 256 is in bench/README.md).
pub const POOL_CACHE: usize = 512;

/// Largest burst anywhere (RX, hand-off, TX), for pool sizing.
const MAX_BURST: usize = crate::queue::MAX_BURST;

/// Why the options cannot run on this machine: a usage error (exit 2),
/// one line naming the option and what to change.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// `--rx-lcores`, `--worker-lcores` or `--tx-lcores` (or its default) is empty.
    #[error("{role} is empty: every role needs at least one lcore")]
    EmptyRole { role: &'static str },
    #[error("lcore {lcore} in {role} is not in the EAL lcore set {eal:?}: add it to -l/--lcores or choose another")]
    RoleLcoreNotInEal {
        lcore: Lcore,
        role: &'static str,
        eal: Vec<Lcore>,
    },
    #[error("at most 255 TX lcores")]
    TooManyTxLcores,
    /// A device of `-a`/`--allow`/`--vdev` that no port came from.
    #[error("{option} {name} did not become a port (its probe failed, see EAL's log above): fix its arguments or remove it")]
    DeviceNotPort { option: &'static str, name: String },
    #[error("no Ethernet ports: pass --vdev or bind a NIC, see dpdk-config/")]
    NoPorts,
    #[error("{0} ports found; tqfwd handles at most {MAX_PORTS}")]
    TooManyPorts(usize),
    /// `option` (`--peer-mac`, `--capture`) names a port beyond the last.
    #[error("{option} names port {port}, but only ports 0-{} exist", .ports - 1)]
    NoSuchPort {
        option: &'static str,
        port: u16,
        ports: usize,
    },
    #[error("--capture names port {port} twice ({}): give one file per port", .file.display())]
    CaptureTwice { port: u16, file: PathBuf },
    #[error("port ids are not contiguous (found {id} at index {index})")]
    PortIdGap { id: u16, index: usize },
    #[error("port {port} ({driver}) allows {max} RX queues but {need} RX lcores need one each: use fewer --rx-lcores (or give the vdev more queues)")]
    RxQueues {
        port: usize,
        driver: String,
        max: u16,
        need: usize,
    },
    #[error("port {port} ({driver}) allows {max} TX queues but {need} TX lcores need one each: use fewer --tx-lcores")]
    TxQueues {
        port: usize,
        driver: String,
        max: u16,
        need: usize,
    },
    #[error(transparent)]
    Classes(#[from] ClassError),
    #[error(
        "lcore {lcore} of class {class} is not in the EAL lcore set {eal:?}: add it to -l/--lcores"
    )]
    ClassLcoreNotInEal {
        lcore: Lcore,
        class: String,
        eal: Vec<Lcore>,
    },
    #[error("--debug-stall-worker {index}: there are {workers} workers (indices 0-{})", .workers - 1)]
    NoSuchWorker { index: u32, workers: usize },
    /// `--mbufs` below what one socket's pool must hold.
    #[error("--mbufs {mbufs} is too small for socket {socket}: {rx_descriptors} RX descriptors + {lcores} lcores x --burst {burst} need at least {need} mbufs: raise --mbufs to {need} or more, or lower --rx-desc or --burst")]
    MbufsTooFew {
        mbufs: usize,
        socket: i32,
        rx_descriptors: usize,
        lcores: usize,
        burst: usize,
        need: usize,
    },
}

/// What the plan needs to know about one port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortFacts {
    pub id: u16,
    pub name: String,
    pub driver: String,
    /// NUMA socket, or negative when the device reports none.
    pub socket: i32,
    pub max_rx_queues: u16,
    pub max_tx_queues: u16,
}

/// What the plan needs to know about the machine: EAL's lcores and their
/// sockets, and the ports DPDK probed, in id order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Machine {
    pub lcores: Vec<Lcore>,
    pub main: Lcore,
    /// Socket of each lcore in `lcores` (same order).
    pub lcore_sockets: Vec<u32>,
    pub ports: Vec<PortFacts>,
}

impl Machine {
    pub fn lcore_socket(&self, l: Lcore) -> i32 {
        self.lcores
            .iter()
            .position(|&x| x == l)
            .map_or(0, |i| self.lcore_sockets[i] as i32)
    }

    pub fn main_socket(&self) -> i32 {
        self.lcore_socket(self.main)
    }

    /// A port's socket; a device that reports none is taken to be on the
    /// main lcore's socket.
    pub fn port_socket(&self, port: usize) -> i32 {
        let s = self.ports[port].socket;
        if s < 0 {
            self.main_socket()
        } else {
            s
        }
    }
}

/// The roles one lcore holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Roles {
    pub rx: bool,
    pub worker: bool,
    pub tx: bool,
}

impl Roles {
    pub fn names(self) -> Vec<&'static str> {
        let mut v = Vec::new();
        if self.rx {
            v.push("rx");
        }
        if self.worker {
            v.push("worker");
        }
        if self.tx {
            v.push("tx");
        }
        v
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
    pub fn resolve(opts: &Options, lcores: &[Lcore], main: Lcore) -> Result<RoleLayout, PlanError> {
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
                return Err(PlanError::EmptyRole { role });
            }
            if let Some(&lcore) = list.iter().find(|l| !lcores.contains(l)) {
                return Err(PlanError::RoleLcoreNotInEal {
                    lcore,
                    role,
                    eal: lcores.to_vec(),
                });
            }
        }
        if layout.tx.len() > 255 {
            return Err(PlanError::TooManyTxLcores);
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
                super::cli::canonical_device_name(p)
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
        + lcores * buffers_per_lcore * MAX_BURST
        + lcores * cache * 3 / 2
        + 1024
}

/// What a socket's pool must hold whatever its size: every RX descriptor
/// of the socket's ports filled, and one burst in flight per lcore. The
/// per-lcore caches get only what is left over, so they never strand the
/// mbufs the datapath needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolSizing {
    pub socket: i32,
    /// RX descriptors of the socket's ports (all queues).
    pub rx_descriptors: usize,
    /// RX and TX descriptors of the socket's ports.
    pub descriptors: usize,
    pub lcores: usize,
    pub burst: usize,
    /// Stage buffers each lcore may hold (see [`pool_size`]).
    pub buffers_per_lcore: usize,
}

impl PoolSizing {
    pub fn minimum(&self) -> usize {
        self.rx_descriptors + self.lcores * self.burst
    }

    /// The pool size: `--mbufs` when given (a usage error saying what
    /// fits when it is below [`minimum`](Self::minimum)), else
    /// [`pool_size`] for hand-off queues holding `queued` mbufs.
    pub fn size(&self, mbufs: Option<u32>, queued: usize) -> Result<usize, PlanError> {
        let Some(n) = mbufs.map(|n| n as usize) else {
            return Ok(pool_size(
                self.descriptors,
                queued,
                self.lcores,
                self.buffers_per_lcore,
                POOL_CACHE,
            ));
        };
        let need = self.minimum();
        if n < need {
            return Err(PlanError::MbufsTooFew {
                mbufs: n,
                socket: self.socket,
                rx_descriptors: self.rx_descriptors,
                lcores: self.lcores,
                burst: self.burst,
                need,
            });
        }
        Ok(n)
    }

    /// The per-lcore cache for a pool of `size`: caches may hold 1.5x
    /// their size each, so together they get at most half of what the
    /// minimum leaves.
    pub fn cache(&self, size: usize) -> usize {
        let spare = size.saturating_sub(self.minimum());
        POOL_CACHE
            .min(size / 3)
            .min(spare / (3 * self.lcores.max(1)))
            .min(512)
    }
}

/// A run's plan (module doc): what was resolved against the machine, and
/// what the options say, typed for the parts that read it
/// ([`super::parts`]). Setup, forward and report take this, never the
/// [`Options`].
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub layout: RoleLayout,
    /// Every worker: the default workers, then each class's lcores.
    pub workers: Vec<Lcore>,
    /// Index 0: the default workers; k: class k's (indices into `workers`).
    pub class_workers: Vec<WorkerRange>,
    /// Lcores with an RX stage: the RX lcores, then each class's first
    /// lcore (it polls the class's dedicated queue where rte_flow steers).
    pub rx_stages: Vec<Lcore>,
    /// Every lcore with a role, sorted.
    pub lcores: Vec<Lcore>,
    /// Lcores that burst on ports (RX or TX stage), sorted.
    pub port_lcores: Vec<Lcore>,
    /// EAL lcores without a role.
    pub idle: Vec<Lcore>,
    pub n_ports: usize,
    /// Output port of each input port (l2fwd pairing).
    pub out_port: [u16; MAX_PORTS],
    /// One pool per socket that has ports, sized for these.
    pub pools: Vec<PoolSizing>,
    /// `--class`, in order: class k + 1 is `classes[k]` (0 = default).
    pub classes: Vec<ClassSpec>,
    /// RX, hand-off and TX burst size (`--burst`).
    pub burst: u16,
    /// `--latency`: Some(N), 1 packet in N stamped at RX.
    pub latency: Option<u32>,
    pub handoff: HandoffPlan,
    pub ports: PortsPlan,
    pub stages: StagePlan,
    pub capture: CapturePlan,
    pub live: LivePlan,
    /// Each worker's NUMA socket (in `workers` order): where its route
    /// tables live.
    pub worker_sockets: Vec<i32>,
    /// L3 mode: the route file, parsed and checked against the ports
    /// ([`Plan::load_routes`]; None in L2 mode).
    pub routes: Option<Arc<RouteTable>>,
}

impl Plan {
    /// `--handoff round-trip` takes effect: the backend is tq and the RX
    /// lcores are the TX lcores (the same set: an RX lcore that is not a
    /// TX lcore could not transmit what comes back, and a TX lcore that is
    /// not an RX lcore would get nothing back), so each RX lcore transmits
    /// what it received once its worker, whichever of them, hands it back.
    /// Any number of workers and `--class`es, as long as every lcore that
    /// receives (a class's too) transmits. Otherwise round-trip works as
    /// zero-copy.
    pub fn round_trip(&self) -> bool {
        let mut rx = self.rx_stages.clone();
        let mut tx = self.layout.tx.clone();
        rx.sort_unstable();
        tx.sort_unstable();
        self.handoff.mode == Handoff::RoundTrip && self.handoff.backend == Backend::Tq && rx == tx
    }

    /// Each role's hand-off mode: RX receives in place where all it
    /// receives goes to one worker queue (one worker, no `--class`; the
    /// round trip's queue too), else scatters in place into its workers'
    /// queues; a worker hands back in place where the round trip holds,
    /// else moves slot to slot where it has one TX lcore and scatters
    /// into the TX lcores' queues where it has several; TX transmits from
    /// the slots (or from what comes back, round trip) whenever the stages
    /// work in place. `--handoff copy`: bursts everywhere.
    pub fn stage_modes(&self) -> StageModes {
        let (in_place, round_trip) = (self.handoff.zero_copy(), self.round_trip());
        // In place: into one queue, or scattered into several.
        let pick = |one_queue| match (in_place, one_queue) {
            (false, _) => StageMode::Bursts,
            (true, true) => StageMode::InPlace,
            (true, false) => StageMode::Scatter,
        };
        StageModes {
            rx: pick(self.workers.len() == 1 && self.classes.is_empty()),
            worker: if round_trip {
                StageMode::RoundTrip
            } else {
                pick(self.layout.tx.len() == 1)
            },
            tx: if round_trip {
                StageMode::RoundTrip
            } else if in_place {
                StageMode::InPlace
            } else {
                StageMode::Bursts
            },
        }
    }

    /// Resolves and checks everything the options decide.
    pub fn new(opts: &Options, m: &Machine) -> Result<Plan, PlanError> {
        let layout = RoleLayout::resolve(opts, &m.lcores, m.main)?;
        check_ports(opts, m, &layout)?;
        let classes = &opts.class;
        check_classes(classes, &layout.worker)?;
        let (workers, class_workers) = class_workers(&layout, classes, &m.lcores)?;
        if let Some((idx, _)) = opts.debug_stall_worker {
            if idx as usize >= workers.len() {
                return Err(PlanError::NoSuchWorker {
                    index: idx,
                    workers: workers.len(),
                });
            }
        }
        let mut rx_stages = layout.rx.clone();
        for c in classes {
            if !rx_stages.contains(&c.lcores[0]) {
                rx_stages.push(c.lcores[0]);
            }
        }
        let mut lcores: Vec<Lcore> = rx_stages
            .iter()
            .chain(&workers)
            .chain(&layout.tx)
            .copied()
            .collect();
        lcores.sort_unstable();
        lcores.dedup();
        let port_lcores = lcores
            .iter()
            .copied()
            .filter(|l| rx_stages.contains(l) || layout.tx.contains(l))
            .collect();
        let idle = m
            .lcores
            .iter()
            .copied()
            .filter(|l| !lcores.contains(l))
            .collect();
        let n_ports = m.ports.len();
        let mut out_port = [0u16; MAX_PORTS];
        for (i, o) in out_port.iter_mut().enumerate().take(n_ports) {
            // L3 mode: the worker writes each packet's output port into
            // it (its route's), so TX maps every port to itself.
            *o = if opts.routes.is_some() {
                i as u16
            } else {
                peer_port(i, n_ports) as u16
            };
        }
        let worker_sockets = workers.iter().map(|&l| m.lcore_socket(l)).collect();
        let mut plan = Plan {
            layout,
            workers,
            class_workers,
            rx_stages,
            lcores,
            port_lcores,
            idle,
            n_ports,
            out_port,
            pools: Vec::new(),
            classes: classes.clone(),
            burst: opts.burst,
            latency: opts.latency.then_some(opts.latency_sample),
            handoff: HandoffPlan::new(opts),
            ports: PortsPlan::new(opts),
            stages: StagePlan::new(opts),
            capture: CapturePlan::new(opts),
            live: LivePlan::new(opts),
            worker_sockets,
            routes: None,
        };
        plan.pools = plan.pool_sizing(m);
        Ok(plan)
    }

    /// L3 mode (`--routes`): reads and checks the route file against the
    /// run's ports (bounded read; every refused line is an error naming
    /// the file and line).
    pub fn load_routes(&mut self) -> Result<(), RouteError> {
        if let Some(path) = &self.stages.routes {
            let limits = Limits {
                max_routes: self.stages.max_routes,
            };
            self.routes = Some(Arc::new(routes::load(path, self.n_ports, limits)?));
        }
        Ok(())
    }

    /// The class whose workers include worker `w` (0 = default).
    pub fn worker_class(&self, w: usize) -> u8 {
        self.class_workers
            .iter()
            .rposition(|r| r.contains(w as u32))
            .unwrap_or(0) as u8
    }

    pub fn roles(&self, l: Lcore) -> Roles {
        Roles {
            rx: self.rx_stages.contains(&l),
            worker: self.workers.contains(&l),
            tx: self.layout.tx.contains(&l),
        }
    }

    /// Stage buffers one lcore may hold: RX burst + one per worker, worker
    /// inbuf + one per TX lcore, TX inbuf + one per port.
    pub fn buffers_per_lcore(&self) -> usize {
        1 + self.workers.len() + 1 + self.layout.tx.len() + 1 + self.n_ports
    }

    fn pool_sizing(&self, m: &Machine) -> Vec<PoolSizing> {
        let mut sockets: Vec<i32> = (0..m.ports.len()).map(|i| m.port_socket(i)).collect();
        sockets.sort_unstable();
        sockets.dedup();
        let (n_rx, n_tx) = (self.layout.rx.len(), self.layout.tx.len());
        sockets
            .into_iter()
            .map(|s| {
                let here = (0..m.ports.len())
                    .filter(|&i| m.port_socket(i) == s)
                    .count();
                let rx_descriptors =
                    here * self.ports.rx_desc as usize * (n_rx + self.classes.len());
                PoolSizing {
                    socket: s,
                    rx_descriptors,
                    descriptors: rx_descriptors + here * self.ports.tx_desc as usize * n_tx,
                    lcores: self.lcores.len(),
                    burst: self.burst as usize,
                    buffers_per_lcore: self.buffers_per_lcore(),
                }
            })
            .collect()
    }

    /// The NUMA affinity table, one line per port (its socket and the
    /// sockets of the lcores serving it) and one for the workers; `true`
    /// marks a line whose sockets differ (a warning).
    pub fn numa_lines(&self, m: &Machine) -> Vec<(String, bool)> {
        let describe = |ls: &[Lcore]| {
            ls.iter()
                .map(|&l| format!("{l}(s{})", m.lcore_socket(l)))
                .collect::<Vec<_>>()
                .join(" ")
        };
        let mut lines = Vec::new();
        for (i, p) in m.ports.iter().enumerate() {
            let psock = m.port_socket(i);
            let far: Vec<Lcore> = self
                .rx_stages
                .iter()
                .chain(&self.layout.tx)
                .copied()
                .filter(|&l| m.lcore_socket(l) != psock)
                .collect();
            let mut row = format!(
                "NUMA: port {} ({}) socket {psock}{} | rx lcores {} | tx lcores {}",
                p.id,
                p.name,
                if p.socket < 0 {
                    " (device reports none; assumed main's)"
                } else {
                    ""
                },
                describe(&self.rx_stages),
                describe(&self.layout.tx)
            );
            if !far.is_empty() {
                row.push_str(&format!(
                    " <- lcores {far:?} are on another socket: expect remote-memory costs"
                ));
            }
            lines.push((row, !far.is_empty()));
        }
        lines.push((
            format!(
                "NUMA: worker lcores {} (hand-off queues live on their consumer's socket)",
                describe(&self.workers)
            ),
            false,
        ));
        lines
    }
}

/// Ports: every requested device became one, there are some and not too
/// many, ids are contiguous, each has a queue per RX and TX lcore, and
/// `--peer-mac` names existing ports.
fn check_ports(opts: &Options, m: &Machine, layout: &RoleLayout) -> Result<(), PlanError> {
    let names: Vec<String> = m.ports.iter().map(|p| p.name.clone()).collect();
    if let Some(d) = missing_device(&opts.devices, &names) {
        return Err(PlanError::DeviceNotPort {
            option: d.option,
            name: d.name.clone(),
        });
    }
    if m.ports.is_empty() {
        return Err(PlanError::NoPorts);
    }
    if m.ports.len() > MAX_PORTS {
        return Err(PlanError::TooManyPorts(m.ports.len()));
    }
    let ports = m.ports.len();
    let no_such = |option, port: u16| PlanError::NoSuchPort {
        option,
        port,
        ports,
    };
    for &(p, _) in &opts.peer_mac {
        if p as usize >= ports {
            return Err(no_such("--peer-mac", p));
        }
    }
    for (k, (p, file)) in opts.capture.iter().enumerate() {
        if *p as usize >= ports {
            return Err(no_such("--capture", *p));
        }
        if opts.capture[..k].iter().any(|(q, _)| q == p) {
            return Err(PlanError::CaptureTwice {
                port: *p,
                file: file.clone(),
            });
        }
    }
    let (n_rx, n_tx) = (layout.rx.len(), layout.tx.len());
    for (i, p) in m.ports.iter().enumerate() {
        if p.id as usize != i {
            return Err(PlanError::PortIdGap { id: p.id, index: i });
        }
        if (p.max_rx_queues as usize) < n_rx {
            return Err(PlanError::RxQueues {
                port: i,
                driver: p.driver.clone(),
                max: p.max_rx_queues,
                need: n_rx,
            });
        }
        if (p.max_tx_queues as usize) < n_tx {
            return Err(PlanError::TxQueues {
                port: i,
                driver: p.driver.clone(),
                max: p.max_tx_queues,
                need: n_tx,
            });
        }
    }
    Ok(())
}

/// All workers (default first, then each class's lcores) and each class's
/// range among them; class lcores must be EAL lcores.
fn class_workers(
    layout: &RoleLayout,
    classes: &[ClassSpec],
    eal_lcores: &[Lcore],
) -> Result<(Vec<Lcore>, Vec<WorkerRange>), PlanError> {
    let mut workers = layout.worker.clone();
    let mut ranges = vec![WorkerRange {
        start: 0,
        count: workers.len() as u32,
    }];
    for c in classes {
        if let Some(&lcore) = c.lcores.iter().find(|l| !eal_lcores.contains(l)) {
            return Err(PlanError::ClassLcoreNotInEal {
                lcore,
                class: c.name.clone(),
                eal: eal_lcores.to_vec(),
            });
        }
        ranges.push(WorkerRange {
            start: workers.len() as u32,
            count: c.lcores.len() as u32,
        });
        workers.extend(&c.lcores);
    }
    Ok((workers, ranges))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::cli::test_options as opts;

    fn machine(lcores: &[Lcore], ports: usize) -> Machine {
        Machine {
            lcores: lcores.to_vec(),
            main: lcores[0],
            lcore_sockets: lcores.iter().map(|&l| if l >= 8 { 1 } else { 0 }).collect(),
            ports: (0..ports)
                .map(|i| PortFacts {
                    id: i as u16,
                    name: format!("net_null{i}"),
                    driver: "net_null".into(),
                    socket: if i == 2 { 1 } else { -1 },
                    max_rx_queues: 4,
                    max_tx_queues: 4,
                })
                .collect(),
        }
    }

    #[test]
    fn every_requested_device_is_a_port() {
        let req = crate::config::cli::requested_devices(
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

    /// Each role's mode follows the layout: the round trip where RX and TX
    /// lcores are one set (any workers); in place where a stage has one
    /// queue to write; scattered in place where it has several (several
    /// workers or TX lcores, `--class`); bursts with `--handoff copy`.
    #[test]
    fn stage_modes_follow_the_layout() {
        use StageMode::{Bursts as B, InPlace as I, RoundTrip as R, Scatter as S};
        let modes = |lcores: &[Lcore], args: &[&str]| {
            let p = Plan::new(&opts(args), &machine(lcores, 2)).unwrap();
            let m = p.stage_modes();
            (m.rx, m.worker, m.tx)
        };
        assert_eq!(modes(&[0, 1], &[]), (I, R, R));
        assert_eq!(modes(&[0, 1], &["--handoff", "zero-copy"]), (I, I, I));
        assert_eq!(modes(&[0, 1], &["--handoff", "copy"]), (B, B, B));
        assert_eq!(modes(&[0, 1], &["--backend", "ring"]), (I, I, I));
        let split = [
            "--rx-lcores",
            "0",
            "--worker-lcores",
            "1-2",
            "--tx-lcores",
            "3",
        ];
        assert_eq!(modes(&[0, 1, 2, 3], &split), (S, I, I));
        let split_copy = [&split[..], &["--handoff", "copy"]].concat();
        assert_eq!(modes(&[0, 1, 2, 3], &split_copy), (B, B, B));
        let two_tx = [
            "--rx-lcores",
            "0",
            "--worker-lcores",
            "1",
            "--tx-lcores",
            "2-3",
        ];
        assert_eq!(modes(&[0, 1, 2, 3], &two_tx), (I, S, I));
        let all = [
            "--rx-lcores",
            "0-1",
            "--worker-lcores",
            "0-1",
            "--tx-lcores",
            "0-1",
        ];
        assert_eq!(modes(&[0, 1], &all), (S, R, R));
        let all_zero_copy = [&all[..], &["--handoff", "zero-copy"]].concat();
        assert_eq!(modes(&[0, 1], &all_zero_copy), (S, S, I));
        let all_ring = [&all[..], &["--backend", "ring"]].concat();
        assert_eq!(modes(&[0, 1], &all_ring), (S, S, I));
        // The round trip with two workers: RX scatters, each worker hands
        // back to the RX lcore that filled the unit.
        let rx_tx = [
            "--rx-lcores",
            "0-1",
            "--worker-lcores",
            "2-3",
            "--tx-lcores",
            "0-1",
        ];
        assert_eq!(modes(&[0, 1, 2, 3], &rx_tx), (S, R, R));
        // An RX lcore that does not transmit: no round trip.
        let overlap = [
            "--rx-lcores",
            "0-1",
            "--worker-lcores",
            "2",
            "--tx-lcores",
            "0",
        ];
        assert_eq!(modes(&[0, 1, 2], &overlap), (I, I, I));
        let class = ["--class", "kv:udp,dst-port=8080:2"];
        assert_eq!(modes(&[0, 1, 2], &class).0, S);
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

    #[test]
    fn plan_with_classes_adds_workers_and_rx_stages() {
        let o = opts(&[
            "--worker-lcores",
            "1",
            "--class",
            "voice:udp,dst-port=5060:2",
            "--class",
            "bulk:tcp:3",
        ]);
        let p = Plan::new(&o, &machine(&[0, 1, 2, 3, 4], 2)).unwrap();
        assert_eq!(p.layout.rx, vec![0]);
        assert_eq!(p.layout.tx, vec![4]);
        assert_eq!(p.workers, vec![1, 2, 3]);
        assert_eq!(
            p.class_workers,
            vec![
                WorkerRange { start: 0, count: 1 },
                WorkerRange { start: 1, count: 1 },
                WorkerRange { start: 2, count: 1 }
            ]
        );
        assert_eq!((p.worker_class(0), p.worker_class(2)), (0, 2));
        assert_eq!(p.rx_stages, vec![0, 2, 3]);
        assert_eq!(p.lcores, vec![0, 1, 2, 3, 4]);
        assert_eq!(p.port_lcores, vec![0, 2, 3, 4]);
        assert_eq!(
            p.roles(2),
            Roles {
                rx: true,
                worker: true,
                tx: false
            }
        );
        assert_eq!(&p.out_port[..2], &[1, 0]);
        assert_eq!(
            p.classes.iter().map(|c| &c.name[..]).collect::<Vec<_>>(),
            ["voice", "bulk"]
        );
        assert_eq!(p.latency, None);
    }

    #[test]
    fn latency_sampling_only_with_latency() {
        let m = machine(&[0, 1], 2);
        let p = Plan::new(&opts(&["--latency-sample", "8"]), &m).unwrap();
        assert_eq!(p.latency, None);
        let p = Plan::new(&opts(&["--latency", "--latency-sample", "8"]), &m).unwrap();
        assert_eq!(p.latency, Some(8));
    }

    #[test]
    fn plan_refuses_what_cannot_run() {
        let m = machine(&[0, 1], 2);
        let no_ports = machine(&[0, 1], 0);
        let mut few = machine(&[0, 1, 2, 3], 2);
        few.ports[1].max_tx_queues = 1;
        let mut gap = machine(&[0, 1], 2);
        gap.ports[1].id = 3;
        for (args, m, line) in [
            (&["--rx-lcores", "5"][..], &m, "lcore 5 in --rx-lcores is not in the EAL lcore set [0, 1]: add it to -l/--lcores or choose another"),
            (&["--peer-mac", "2=02:00:00:00:00:01"], &m, "--peer-mac names port 2, but only ports 0-1 exist"),
            (&["--capture", "5:x.pcapng"], &m, "--capture names port 5, but only ports 0-1 exist"),
            (&["--capture", "1:a", "--capture", "1:b"], &m, "--capture names port 1 twice (b): give one file per port"),
            (&["--debug-stall-worker", "3:10"], &m, "--debug-stall-worker 3: there are 1 workers (indices 0-0)"),
            (&[], &no_ports, "no Ethernet ports: pass --vdev or bind a NIC, see dpdk-config/"),
            (&["--tx-lcores", "2-3"], &few, "port 1 (net_null) allows 1 TX queues but 2 TX lcores need one each: use fewer --tx-lcores"),
            (&[], &gap, "port ids are not contiguous (found 3 at index 1)"),
            (&["--class", "v:udp:7"], &m, "lcore 7 of class v is not in the EAL lcore set [0, 1]: add it to -l/--lcores"),
            (&["--worker-lcores", "1", "--class", "v:udp:1"], &m, "lcore 1 is both a default worker and dedicated to class v: take it out of --worker-lcores"),
        ] {
            assert_eq!(Plan::new(&opts(args), m).unwrap_err().to_string(), line, "{args:?}");
        }
    }

    #[test]
    fn pools_per_socket_and_numa_lines() {
        let o = opts(&["--rx-desc", "512", "--tx-desc", "256"]);
        let m = machine(&[0, 1, 8], 3);
        let p = Plan::new(&o, &m).unwrap();
        // Ports 0 and 1 report no socket (main's, 0); port 2 is on socket 1.
        assert_eq!(p.pools.len(), 2);
        assert_eq!(
            (
                p.pools[0].socket,
                p.pools[0].rx_descriptors,
                p.pools[0].descriptors
            ),
            (0, 2 * 512, 2 * 512 + 2 * 256)
        );
        assert_eq!((p.pools[1].socket, p.pools[1].rx_descriptors), (1, 512));
        let lines = p.numa_lines(&m);
        assert_eq!(lines.len(), 4);
        assert!(lines[0].0.contains("assumed main's") && lines[0].1);
        assert!(lines[2].1, "port 2 on socket 1, lcores 0 and 8 on 0 and 1");
        assert!(!lines[3].1);
    }

    #[test]
    fn pool_sizing_checks_mbufs() {
        let s = PoolSizing {
            socket: 0,
            rx_descriptors: 1024,
            descriptors: 2048,
            lcores: 2,
            burst: 32,
            buffers_per_lcore: 6,
        };
        assert_eq!(s.minimum(), 1088);
        assert_eq!(
            s.size(Some(1000), 0).unwrap_err().to_string(),
            "--mbufs 1000 is too small for socket 0: 1024 RX descriptors + 2 lcores x --burst 32 need at least 1088 mbufs: raise --mbufs to 1088 or more, or lower --rx-desc or --burst"
        );
        assert_eq!(s.size(Some(5000), 0), Ok(5000));
        assert_eq!(
            s.size(None, 4096),
            Ok(2048 + 4096 + 2 * 6 * MAX_BURST + 2 * POOL_CACHE * 3 / 2 + 1024)
        );
        assert_eq!(s.cache(1088), 0);
        assert_eq!(s.cache(100_000), POOL_CACHE);
    }
}
