//! Option grammars that need neither clap nor DPDK: DPDK corelists and the
//! `--class` grammar. `cli` parses the command line with them; `pipeline`
//! and `stats` read what they produce.

pub mod class;
pub mod corelist;
