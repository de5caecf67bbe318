//! The rounds of a bench ([`Bench`]): every configuration of the plan, a
//! throughput run then a latency run each, the contenders of one
//! configuration back to back and their order rotated every round, each
//! run's accounting checked and its figures filed.
//!
//! Promises: a run whose items were lost, duplicated or corrupted, or that
//! sent nothing, ends the bench with an error (exit code 1).

use std::collections::HashMap;
use std::time::Instant;

use crate::args::Plan;
use crate::contenders::run_config;
use crate::results::{Key, Samples};
use crate::runner::{loadavg, Lab, Mode, RunOut, RunParams, TP_WINDOW_BURSTS};

/// What every measurement of one bench shares.
pub(crate) struct Bench<'a> {
    pub(crate) lab: Lab<'a>,
    pub(crate) plan: &'a Plan,
    pub(crate) tsc_hz: u64,
    /// Latency windows are `2^window_shift` TSC cycles.
    pub(crate) window_shift: u32,
    /// A gap of [`GAP_NS`](crate::runner::GAP_NS) in TSC cycles.
    pub(crate) gap_cycles: u64,
}

impl Bench<'_> {
    fn ms_to_cycles(&self, ms: u64) -> u64 {
        (ms as u128 * self.tsc_hz as u128 / 1000) as u64
    }

    fn throughput_params(&self, burst: usize) -> RunParams {
        RunParams {
            mode: Mode::Throughput,
            burst,
            run_cycles: self.ms_to_cycles(self.plan.duration_ms),
            interval_cycles: 0,
            window_items: TP_WINDOW_BURSTS * burst as u64,
            window_shift: self.window_shift,
            warmup_windows: 0,
            windows: 0,
            gap_cycles: self.gap_cycles,
        }
    }

    /// Each producer offers `rate / producers`, one burst per interval.
    fn latency_params(&self, burst: usize, producers: usize) -> RunParams {
        let per_producer = self.plan.rate_items_s / producers as f64;
        let run_cycles = self.ms_to_cycles(self.plan.latency_ms);
        RunParams {
            mode: Mode::Latency,
            burst,
            run_cycles,
            interval_cycles: ((burst as f64 * self.tsc_hz as f64 / per_producer).round() as u64)
                .max(1),
            window_items: 0,
            window_shift: self.window_shift,
            // First 10 % of the run, rounded up to whole windows.
            warmup_windows: (run_cycles / 10).div_ceil(1 << self.window_shift) as usize,
            windows: (run_cycles >> self.window_shift) as usize + 2,
            gap_cycles: self.gap_cycles,
        }
    }

    /// One configuration, one round: a throughput run then a latency run,
    /// each on a fresh queue and checked; their figures go into `s`.
    fn measure(&self, key: &Key, s: &mut Samples) -> Result<(), String> {
        let tp = self.throughput_params(key.burst);
        let out = self.run(key, &tp)?;
        check_accounting(key, Mode::Throughput, &out)?;
        s.record_throughput(&out, &tp, self.tsc_hz);
        let ctx_tp = out.ctx_switches;

        let lp = self.latency_params(key.burst, key.producers);
        let out = self.run(key, &lp)?;
        check_accounting(key, Mode::Latency, &out)?;
        s.record_latency(&out, ctx_tp, self.tsc_hz);
        Ok(())
    }

    fn run(&self, key: &Key, rp: &RunParams) -> Result<RunOut, String> {
        run_config(&self.lab, key.contender, key.producers, key.depth, rp)
    }

    /// Every round over every configuration; the contenders of one
    /// configuration run back to back, starting one later every round so
    /// none always goes first.
    pub(crate) fn rounds(
        &self,
        producer_counts: &[usize],
    ) -> Result<HashMap<Key, Samples>, String> {
        let plan = self.plan;
        let mut results: HashMap<Key, Samples> = HashMap::new();
        for round in 0..plan.rounds {
            let t_round = Instant::now();
            for &producers in producer_counts {
                for &burst in &plan.bursts {
                    for &depth in &plan.depths {
                        let n = plan.contenders.len();
                        for k in 0..n {
                            let key = Key {
                                producers,
                                contender: plan.contenders[(k + round as usize) % n],
                                burst,
                                depth,
                            };
                            self.measure(&key, results.entry(key).or_default())?;
                        }
                    }
                }
            }
            round_done(round, plan.rounds, t_round);
        }
        Ok(results)
    }
}

/// Says on stderr that round `round` (from 0) of `rounds`, started at
/// `t_round`, is done.
pub(crate) fn round_done(round: u32, rounds: u32, t_round: Instant) {
    eprintln!(
        "tqfwd-queue-bench: round {}/{rounds} done in {:.1} s (load {})",
        round + 1,
        t_round.elapsed().as_secs_f64(),
        loadavg()
    );
}

/// Received == sent, and (throughput mode) every item carried the 1 it was
/// sent with; otherwise an error that ends the bench with exit code 1.
fn check_accounting(key: &Key, mode: Mode, out: &RunOut) -> Result<(), String> {
    let what = format!(
        "{} with {} producer(s), burst {}, depth {}, {:?} run",
        key.contender.name(),
        key.producers,
        key.burst,
        key.depth,
        mode
    );
    if out.received != out.sent {
        return Err(format!(
            "items lost or duplicated: {what}: sent {}, received {}",
            out.sent, out.received
        ));
    }
    if mode == Mode::Throughput && out.checksum != out.received {
        return Err(format!(
            "items corrupted: {what}: {} items should sum to {}, got {}",
            out.received, out.received, out.checksum
        ));
    }
    if out.sent == 0 {
        return Err(format!("nothing was sent: {what}"));
    }
    Ok(())
}
