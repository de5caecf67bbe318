//! Operator port control over DPDK telemetry: `/tqfwd/port_stop,N` and
//! `/tqfwd/port_start,N` (as testpmd's `port stop` / `port start`). The
//! handlers run on DPDK's telemetry thread and only pass the request to the
//! port monitor ([`PortControl`]), which closes the port to the lcores
//! before stopping it and starts it before opening it again: nothing is
//! lost, every mbuf stays accounted.

use super::lifecycle::{AdminOp, PortControl};
use crate::dpdk::telemetry::{register, TelValue};
use crate::dpdk::DpdkError;
use std::sync::Arc;
use std::time::Duration;

/// How long a command waits for the monitor (it polls every 50 ms; a
/// memif start may take longer).
const ANSWER_WITHIN: Duration = Duration::from_secs(5);

/// Registers the port commands for this run (replacing a previous run's).
pub fn register_all(control: Arc<PortControl>) -> Result<(), DpdkError> {
    for (cmd, op, help) in [
        (
            "/tqfwd/port_stop",
            AdminOp::Stop,
            "tqfwd: stop polling port N and stop it (param: N); packets routed to it are counted as tx_full",
        ),
        (
            "/tqfwd/port_start",
            AdminOp::Start,
            "tqfwd: start port N and poll it again (param: N)",
        ),
    ] {
        let control = control.clone();
        register(cmd, help, move |param| answer(&control, op, param))?;
    }
    Ok(())
}

fn answer(control: &PortControl, op: AdminOp, param: &str) -> Vec<(String, TelValue)> {
    let result = match param.trim().parse::<u16>() {
        Ok(port) => control.request(port, op, ANSWER_WITHIN),
        Err(_) => Err(format!(
            "'{}' is not a port number: use e.g. ,0",
            param.trim()
        )),
    };
    match result {
        Ok(done) => vec![("ok".into(), TelValue::Str(done))],
        Err(e) => vec![("error".into(), TelValue::Str(e))],
    }
}
