//! Test traffic and pcap files, for the tests, the benches and
//! `tqfwd-gen` (the `testkit` feature): not part of the forwarder.

pub mod gen;
pub mod pcap;
