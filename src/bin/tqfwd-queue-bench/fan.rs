//! The scatter and drain rows (`--scatter`): the queues built fresh for
//! every run of each contender ([`FanContender`], `fan_plan.rs`),
//! the rounds over the configurations ([`FanBench`]), each run's
//! accounting check and the per-configuration figures over the rounds
//! ([`FanSamples`]). The measured code is `fan_loops.rs`, the report
//! `fan_report.rs`.
//!
//! Every configuration is (row, burst, depth, k, contender): k queues of
//! `depth` items each, one per destination (scatter) or per producer's
//! queue (drain), all written on the producer lcore and read on the
//! consumer lcore. The contenders of one (row, burst, depth, k) run back
//! to back, the first one rotating every round; figures are medians over
//! the rounds of each run's median window.
//!
//! Promises: every run gets queues of its own, built just before it; a
//! run whose items were lost, duplicated, corrupted or sent to the wrong
//! queue (each queue's count and sum against the stream's), or that sent
//! nothing, ends the bench with an error (exit code 1).

use std::collections::HashMap;
use std::time::Instant;

use tqfwd::dpdk::Ring;
use tqfwd::queue;

use crate::fan_loops::{expected, item_table, run_fan, FanOut, FanParams, RoleOut};
use crate::fan_plan::{FanContender, FanPlan, FanRow};
use crate::results::median;
use crate::rounds::round_done;
use crate::runner::{Lab, TP_WINDOW_BURSTS};

/// Key of one configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct FanKey {
    pub(crate) row: FanRow,
    pub(crate) burst: usize,
    pub(crate) depth: usize,
    pub(crate) k: usize,
    pub(crate) contender: FanContender,
}

/// Per-round figures of one configuration (one entry per round).
#[derive(Debug, Default, Clone)]
pub(crate) struct FanSamples {
    /// Busy cycles per item, median window, producer and consumer.
    pub(crate) producer_cpi: Vec<f64>,
    pub(crate) consumer_cpi: Vec<f64>,
    /// The same over the whole run (stalls included).
    pub(crate) producer_cpi_whole: Vec<f64>,
    pub(crate) consumer_cpi_whole: Vec<f64>,
    /// Consumer's elapsed cycles per item, median window, and the
    /// throughput it gives.
    pub(crate) wall_cpi: Vec<f64>,
    pub(crate) mitems_s: Vec<f64>,
    /// Share of each role's run spent in busy iterations (%).
    pub(crate) producer_busy_pct: Vec<f64>,
    pub(crate) consumer_busy_pct: Vec<f64>,
    /// Items per busy iteration.
    pub(crate) producer_items_per_iter: Vec<f64>,
    pub(crate) consumer_items_per_poll: Vec<f64>,
    /// Producer iterations that left items pending, % of its busy
    /// iterations and idle ones together.
    pub(crate) producer_short_pct: Vec<f64>,
    /// One-way lcore trip before the run (ns).
    pub(crate) trip_ns: Vec<f64>,
    pub(crate) ctx_switches: Vec<f64>,
    pub(crate) items: u64,
}

/// A one-way trip below this is a *near* placement (the two vCPUs share
/// a cache), at or above it *far* (as the pipeline bench classifies).
pub(crate) const NEAR_NS: f64 = 100.0;

/// Median of the windows' `f` (the whole run's when it had fewer than 5
/// windows).
fn per_item(r: &RoleOut, f: fn(&crate::fan_loops::Window) -> u64, whole: f64) -> f64 {
    if r.windows.len() < 5 {
        return whole;
    }
    let v: Vec<f64> = r
        .windows
        .iter()
        .map(|w| f(w) as f64 / w.items as f64)
        .collect();
    median(&v)
}

impl FanSamples {
    fn record(&mut self, out: &FanOut, tsc_hz: u64) {
        let (p, c) = (&out.producer, &out.consumer);
        let pw = p.busy as f64 / p.items as f64;
        let cw = c.busy as f64 / c.items as f64;
        self.producer_cpi.push(per_item(p, |w| w.busy, pw));
        self.consumer_cpi.push(per_item(c, |w| w.busy, cw));
        self.producer_cpi_whole.push(pw);
        self.consumer_cpi_whole.push(cw);
        let wall = per_item(c, |w| w.elapsed, c.elapsed as f64 / c.items as f64);
        self.wall_cpi.push(wall);
        self.mitems_s.push(tsc_hz as f64 / wall / 1e6);
        self.producer_busy_pct
            .push(100.0 * p.busy as f64 / p.elapsed.max(1) as f64);
        self.consumer_busy_pct
            .push(100.0 * c.busy as f64 / c.elapsed.max(1) as f64);
        self.producer_items_per_iter
            .push(p.items as f64 / p.busy_iters.max(1) as f64);
        self.consumer_items_per_poll
            .push(c.items as f64 / c.busy_iters.max(1) as f64);
        self.producer_short_pct
            .push(100.0 * out.short_iters as f64 / p.iters.max(1) as f64);
        self.trip_ns.push(out.trip_ns);
        self.ctx_switches.push(out.ctx_switches as f64);
        self.items += out.sent;
    }

    /// (near, far, unknown) placements over the rounds.
    pub(crate) fn placements(&self) -> (usize, usize, usize) {
        let near = self.trip_ns.iter().filter(|&&t| t < NEAR_NS).count();
        let far = self.trip_ns.iter().filter(|&&t| t >= NEAR_NS).count();
        (near, far, self.trip_ns.len() - near - far)
    }
}

/// What every run of the scatter and drain rows shares.
pub(crate) struct FanBench<'a> {
    pub(crate) lab: Lab<'a>,
    pub(crate) plan: &'a FanPlan,
    pub(crate) tsc_hz: u64,
}

impl FanBench<'_> {
    fn params(&self, key: &FanKey) -> FanParams {
        FanParams {
            row: key.row,
            in_place: key.contender.in_place(),
            burst: key.burst,
            run_cycles: (self.plan.duration_ms as u128 * self.tsc_hz as u128 / 1000) as u64,
            window_items: TP_WINDOW_BURSTS * key.burst as u64,
        }
    }

    /// Builds fresh queues of `key` and runs one measurement on them.
    fn run(&self, key: &FanKey, table: &[u64]) -> Result<FanOut, String> {
        let lab = &self.lab;
        let rp = self.params(key);
        let (k, depth, burst) = (key.k, key.depth, key.burst);
        if key.contender.is_tq() {
            let mut txs = Vec::with_capacity(k);
            let mut rxs = Vec::with_capacity(k);
            for _ in 0..k {
                let (mut tx, rx) = queue::channel::<u64>(1, depth, burst, lab.mem.clone())
                    .map_err(|e| e.to_string())?;
                txs.push(tx.pop().expect("one producer"));
                rxs.push(rx);
            }
            run_fan(lab.eal, &lab.roles, txs, rxs, table, &rp, self.tsc_hz)
        } else {
            let mut txs = Vec::with_capacity(k);
            let mut rxs = Vec::with_capacity(k);
            for _ in 0..k {
                let (tx, rx) = Ring::<u64>::spsc("qfan", depth as u32, lab.socket)
                    .map_err(|e| e.to_string())?;
                txs.push(tx);
                rxs.push(rx);
            }
            run_fan(lab.eal, &lab.roles, txs, rxs, table, &rp, self.tsc_hz)
        }
    }

    /// The configurations of the plan in report order (contenders in plan
    /// order).
    pub(crate) fn keys(plan: &FanPlan) -> Vec<FanKey> {
        let mut keys = Vec::new();
        for &row in &plan.rows {
            for &burst in &plan.bursts {
                for &depth in &plan.depths {
                    for &k in &plan.queues {
                        for &contender in &plan.contenders {
                            keys.push(FanKey {
                                row,
                                burst,
                                depth,
                                k,
                                contender,
                            });
                        }
                    }
                }
            }
        }
        keys
    }

    /// Every round over every configuration; the contenders of one (row,
    /// burst, depth, k) run back to back, starting one later every round.
    pub(crate) fn rounds(&self) -> Result<HashMap<FanKey, FanSamples>, String> {
        let plan = self.plan;
        let table = item_table();
        let mut results: HashMap<FanKey, FanSamples> = HashMap::new();
        let n = plan.contenders.len();
        for round in 0..plan.rounds {
            let t_round = Instant::now();
            for &row in &plan.rows {
                for &burst in &plan.bursts {
                    for &depth in &plan.depths {
                        for &k in &plan.queues {
                            for i in 0..n {
                                let key = FanKey {
                                    row,
                                    burst,
                                    depth,
                                    k,
                                    contender: plan.contenders[(i + round as usize) % n],
                                };
                                let out = self.run(&key, &table)?;
                                check(&key, &out, &table)?;
                                results.entry(key).or_default().record(&out, self.tsc_hz);
                            }
                        }
                    }
                }
            }
            round_done(round, plan.rounds, t_round);
        }
        Ok(results)
    }
}

/// Received == sent, and each queue got exactly the stream's items for it
/// (count and wrapping sum); otherwise an error that ends the bench with
/// exit code 1.
fn check(key: &FanKey, out: &FanOut, table: &[u64]) -> Result<(), String> {
    let what = format!(
        "{} {} with {} queue(s), burst {}, depth {}",
        key.contender.name(),
        key.row.key(),
        key.k,
        key.burst,
        key.depth
    );
    if out.sent == 0 {
        return Err(format!("nothing was sent: {what}"));
    }
    let received = out.received();
    if received != out.sent {
        return Err(format!(
            "items lost or duplicated: {what}: sent {}, received {received}",
            out.sent
        ));
    }
    let exp = expected(key.row, table, key.k, key.burst, out.sent);
    for (q, (got, want)) in out.per_queue.iter().zip(&exp).enumerate() {
        if got != want {
            return Err(format!(
                "queue {q} got the wrong items: {what}: {} items summing to {:#x}, expected {} summing to {:#x}",
                got.0, got.1, want.0, want.1
            ));
        }
    }
    Ok(())
}
