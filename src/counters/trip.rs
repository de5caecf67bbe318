//! The cache-line trip between two lcores as measured at the start and
//! end of forwarding (`forward::trip`), as the report gives it.

use serde::Serialize;

/// The trip as the report gives it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TripReport {
    /// The two lcores.
    pub between: [u32; 2],
    /// One way, ns, as forwarding started and after it stopped (`None`:
    /// not measured, one lcore did not get there in time).
    pub start: Option<f64>,
    pub end: Option<f64>,
}
