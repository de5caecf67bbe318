//! Brings DPDK resources up from a [`Plan`]: the hand-off links and one
//! mempool per socket (`pools`), the ports with their queues, MTU and
//! rte_flow rules (`ports`), into one [`Resources`]. Everything that can be
//! refused is checked before forwarding starts; an early error tears down
//! what was built, in order.
//!
//! Teardown order is the field order of [`Resources`] (Rust drops fields in
//! declaration order): rte_flow rules, then ports (stopped and closed, so no
//! descriptor holds an mbuf), and the pools last. The hand-off queues and
//! the port queues' handles ([`LcoreQueues`]: one per queue, for the stage
//! that polls it) leave `Resources` for the lcores' stages and are dropped
//! by the caller between the ports and the pools ([`Resources::teardown`]).
//!
//! Each part has its own error ([`frames::FrameError`],
//! [`pools::PoolError`], [`ports::PortError`]); [`crate::error::RunError`]
//! wraps them, and only this file (the whole bring-up) returns it, so the
//! parts import neither this file nor `error`.

pub mod frames;
pub mod handoff;
pub mod pools;
pub mod ports;
pub mod routes;

use crate::config::{Machine, Plan, PortFacts, MAX_PORTS};
use crate::dpdk::{flow::InstalledFlow, Eal, Mempool, Port, PortInfo, U64Field};
use crate::error::RunError;
use handoff::Links;
use ports::{LcoreQueues, OpenPorts};
use std::sync::Arc;

/// The machine's facts from EAL and the probed ports, and the ports
/// themselves (in id order, as `Machine::ports`).
pub fn machine(eal: &Eal) -> Result<(Machine, Vec<Port>, Vec<PortInfo>), RunError> {
    let lcores = eal.lcores();
    let ports = Port::all();
    let mut infos = Vec::with_capacity(ports.len());
    for p in &ports {
        infos.push(p.info()?);
    }
    let m = Machine {
        lcore_sockets: lcores.iter().map(|&l| eal.lcore_socket(l)).collect(),
        lcores,
        main: eal.main_lcore(),
        ports: infos
            .iter()
            .map(|i| PortFacts {
                id: i.port,
                name: i.name.clone(),
                driver: i.driver.clone(),
                socket: i.socket,
                max_rx_queues: i.max_rx_queues,
                max_tx_queues: i.max_tx_queues,
            })
            .collect(),
    };
    Ok((m, ports, infos))
}

/// What a run holds from DPDK. Field order is the teardown order.
pub struct Resources {
    /// rte_flow rules steering classes to their queues.
    pub flows: Vec<InstalledFlow>,
    /// Every configured port; stopped and closed on drop.
    open: OpenPorts,
    /// One pool per socket that has ports; dropped last.
    pub pools: Vec<Mempool>,
    /// The ports, in id order.
    pub ports: Vec<Port>,
    pub infos: Vec<PortInfo>,
    /// What each port was brought up with.
    pub port_setup: Vec<ports::PortSetup>,
    /// Source MAC of each port.
    pub macs: [[u8; 6]; MAX_PORTS],
    /// RX descriptors per queue (the largest any port adjusted to).
    pub rx_desc: u16,
    /// The mbuf field RX stamps latency samples in (`--latency`).
    pub stamp: Option<U64Field>,
    /// L3 mode: the route tables of every worker's socket, until the run
    /// hands them to the live settings (whose reloads replace them).
    pub routes: Option<Arc<routes::Routes>>,
}

impl Resources {
    /// Links and pools, then ports (configured, started, rules installed),
    /// then what moves into the lcores (the links and the port queues) and
    /// the rest.
    pub fn bring_up(
        plan: &Plan,
        m: &Machine,
        ports: Vec<Port>,
        infos: Vec<PortInfo>,
    ) -> Result<(Resources, Links, LcoreQueues), RunError> {
        let frame_plans = frames::plan_all(plan.ports.max_frame, &infos)?;
        let (links, pools) = pools::allocate(plan, m)?;
        let mut res = Resources {
            flows: Vec::new(),
            open: OpenPorts::default(),
            pools,
            ports,
            infos,
            port_setup: Vec::new(),
            macs: [[0; 6]; MAX_PORTS],
            rx_desc: plan.ports.rx_desc,
            stamp: None,
            routes: None,
        };
        let mut queues = Vec::with_capacity(res.ports.len());
        for i in 0..res.ports.len() {
            let pool = res
                .pools
                .iter()
                .find(|p| p.socket == m.port_socket(i))
                .expect("a pool per port socket");
            let up = ports::bring_up_port(
                ports::PortSpec {
                    index: i,
                    port: res.ports[i],
                    info: &res.infos[i],
                    frames: &frame_plans,
                    socket: m.port_socket(i),
                    single_pool: res.pools.len() == 1,
                },
                plan,
                pool,
                &mut res.open,
            )?;
            res.flows.extend(up.flows);
            res.rx_desc = res.rx_desc.max(up.setup.rx_desc);
            res.macs[i] = up.mac;
            res.port_setup.push(up.setup);
            queues.push(up.queues);
        }
        if let Some(table) = &plan.routes {
            let macs = plan.stages.mac_headers(&res.macs[..res.ports.len()]);
            let built = routes::build(table.clone(), &plan.worker_sockets, &macs)?;
            log::info!("{}", built.summary());
            res.routes = Some(Arc::new(built));
        }
        ports::wait_for_links(&res.ports, plan.ports.link_timeout);
        if plan.latency.is_some() {
            res.stamp = Some(U64Field::register("tqfwd_rx_tsc")?);
        }
        Ok((res, links, LcoreQueues::hand_out(plan, queues)))
    }

    /// After forwarding: destroys the rules and closes the ports, then
    /// drops `queues` (the lcores' stages and their hand-off queues), counts
    /// the mbufs still in use, and frees the pools. Returns that count.
    pub fn teardown<Q>(mut self, queues: Q) -> u64 {
        for f in std::mem::take(&mut self.flows) {
            if let Err(e) = f.destroy() {
                log::warn!("{e}");
            }
        }
        self.open.close_all();
        drop(queues);
        let in_use = self.pools.iter().map(|p| p.in_use() as u64).sum();
        drop(self);
        in_use
    }
}

impl Drop for Resources {
    fn drop(&mut self) {
        // Rules before their ports; OpenPorts then closes the ports
        // (dropped before the pools by field order).
        for f in self.flows.drain(..) {
            if let Err(e) = f.destroy() {
                log::warn!("{e}");
            }
        }
    }
}
