//! The figures of one configuration over the rounds: its [`Key`] (producers,
//! contender, burst, depth) and its [`Samples`] (one entry per round per
//! figure, plus the pooled latency histograms), filed from each run's
//! `RunOut`, and the [`median`] taken over them.
//!
//! Promises: every per-round series gets exactly one entry per round (NaN
//! where the round has no figure, which [`median`] skips); arithmetic only,
//! no I/O, nothing timed.

use tqfwd::counters::latency::{cycles_to_ns, Histogram};

use crate::contenders::Contender;
use crate::runner::{RunOut, RunParams};

/// Key of one configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Key {
    pub(crate) producers: usize,
    pub(crate) contender: Contender,
    pub(crate) burst: usize,
    pub(crate) depth: usize,
}

/// Per-round figures of one configuration (one entry per round; NaN when a
/// round has no figure, e.g. no clean latency window).
#[derive(Debug, Default, Clone)]
pub(crate) struct Samples {
    /// Throughput from the median window of the run.
    pub(crate) mitems_s: Vec<f64>,
    pub(crate) cycles_per_item: Vec<f64>,
    /// Throughput over the whole run (start barrier to drained).
    pub(crate) mitems_s_whole: Vec<f64>,
    pub(crate) cycles_per_item_whole: Vec<f64>,
    /// Latency over the clean windows (no bench thread descheduled).
    pub(crate) p50_ns: Vec<f64>,
    pub(crate) p99_ns: Vec<f64>,
    pub(crate) p999_ns: Vec<f64>,
    pub(crate) max_ns: Vec<f64>,
    /// Latency over every window after the warm-up.
    pub(crate) p50_ns_all: Vec<f64>,
    pub(crate) p99_ns_all: Vec<f64>,
    pub(crate) p999_ns_all: Vec<f64>,
    pub(crate) max_ns_all: Vec<f64>,
    /// Share of the latency windows that were clean (%).
    pub(crate) clean_pct: Vec<f64>,
    /// Involuntary context switches of the bench threads (throughput +
    /// latency run).
    pub(crate) ctx_switches: Vec<f64>,
    /// Items/s the paced producers actually offered (Mitems/s).
    pub(crate) offered_mitems_s: Vec<f64>,
    pub(crate) latency_samples_clean: u64,
    pub(crate) latency_samples_all: u64,
    /// Latency samples of every round pooled: clean windows, and all windows.
    pub(crate) pooled_clean: Histogram,
    pub(crate) pooled_all: Histogram,
    pub(crate) windows_clean: u64,
    pub(crate) windows_total: u64,
    pub(crate) missed_slots: u64,
    pub(crate) negative: u64,
    pub(crate) items_throughput: u64,
}

/// Median of the finite values (NaN when there are none).
pub(crate) fn median(v: &[f64]) -> f64 {
    let mut s: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    if s.is_empty() {
        return f64::NAN;
    }
    s.sort_by(|a, b| a.total_cmp(b));
    let m = s.len() / 2;
    if s.len() % 2 == 1 {
        s[m]
    } else {
        (s[m - 1] + s[m]) / 2.0
    }
}

impl Samples {
    /// Files one throughput run: the median window's cycles/item (the whole
    /// run's if it had fewer than 5 windows) and the whole run's.
    pub(crate) fn record_throughput(&mut self, out: &RunOut, tp: &RunParams, tsc_hz: u64) {
        self.items_throughput += out.received;
        let whole = out.elapsed_cycles as f64 / out.received as f64;
        self.cycles_per_item_whole.push(whole);
        self.mitems_s_whole.push(tsc_hz as f64 / whole / 1e6);
        let win: Vec<f64> = out.tp_windows.iter().map(|&c| c as f64).collect();
        let cyc = if win.len() >= 5 {
            median(&win) / tp.window_items as f64
        } else {
            whole
        };
        self.cycles_per_item.push(cyc);
        self.mitems_s.push(tsc_hz as f64 / cyc / 1e6);
    }

    /// Files one latency run (`ctx_tp`: the context switches of the
    /// throughput run before it, counted with this run's).
    pub(crate) fn record_latency(&mut self, out: &RunOut, ctx_tp: u64, tsc_hz: u64) {
        let ns = |cyc: u64| cycles_to_ns(cyc as f64, tsc_hz);
        let pct = |h: &Histogram, p: f64| {
            if h.count() > 0 {
                ns(h.percentile(p))
            } else {
                f64::NAN
            }
        };
        let (hc, ha) = (&out.lat_clean, &out.lat_all);
        self.p50_ns.push(pct(hc, 50.0));
        self.p99_ns.push(pct(hc, 99.0));
        self.p999_ns.push(pct(hc, 99.9));
        self.max_ns.push(pct(hc, 100.0));
        self.p50_ns_all.push(pct(ha, 50.0));
        self.p99_ns_all.push(pct(ha, 99.0));
        self.p999_ns_all.push(pct(ha, 99.9));
        self.max_ns_all.push(pct(ha, 100.0));
        self.clean_pct
            .push(100.0 * out.windows_clean as f64 / out.windows_total.max(1) as f64);
        self.ctx_switches.push((ctx_tp + out.ctx_switches) as f64);
        let psecs = out.producer_cycles.max(1) as f64 / tsc_hz as f64;
        self.offered_mitems_s.push(out.sent as f64 / psecs / 1e6);
        self.latency_samples_clean += hc.count();
        self.latency_samples_all += ha.count();
        self.pooled_clean.merge(hc);
        self.pooled_all.merge(ha);
        self.windows_clean += out.windows_clean as u64;
        self.windows_total += out.windows_total as u64;
        self.missed_slots += out.missed_slots;
        self.negative += out.negative;
    }
}
