//! Everything decided before DPDK holds a resource, with neither DPDK nor
//! the datapath: the command line (`cli`, clap) and its `--config` file
//! (`file`), DPDK corelists, the
//! `--class` grammar, and the [`Plan`] of a run resolved from the options
//! and the machine's facts.

pub mod class;
pub mod cli;
pub mod corelist;
pub mod file;
pub mod plan;

pub use plan::{Lcore, Machine, Plan, PortFacts, RoleLayout, Roles, MAX_PORTS};
