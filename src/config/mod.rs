//! Everything decided before DPDK holds a resource, with neither DPDK nor
//! the datapath: the command line (`cli`, clap), its `--config` file
//! (`file`) and the two merged (`invocation`), DPDK corelists, the
//! `--class` grammar, the route file (`routes`), and the [`Plan`] of a
//! run resolved from the options and the machine's facts, with the
//! options' values typed for the parts that read them (`parts`). After
//! configuration the plan is the only input: setup, forward and report
//! never see [`cli::Options`].
//!
//! Imports go one way: `invocation` → `file` → `cli` → `class` →
//! `corelist`, `plan` → `parts` → `cli`, `class`, and `plan` → `routes`
//! → `file`, `cli` (`scripts/check-imports.sh`).

pub mod class;
pub mod cli;
pub mod corelist;
pub mod file;
pub mod invocation;
pub mod parts;
pub mod plan;
pub mod routes;

pub use parts::{CapturePlan, HandoffPlan, LivePlan, PortsPlan, StageMode, StageModes, StagePlan};
pub use plan::{Lcore, Machine, Plan, PlanError, PortFacts, RoleLayout, Roles, MAX_PORTS};
