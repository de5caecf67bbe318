//! The output: the markdown table, the anchor and the targets on stdout, and
//! the JSON file (`--json`), all made from one [`Report`].
//!
//! Promises: the table and the JSON show the same figures, computed once per
//! configuration ([`Row`]); a figure that does not exist is `–` in the table
//! and null in the JSON, and a target without its figures is `n/a`, never
//! `met`; a report with no measured configuration is an error (no empty
//! table, no verdict). Nothing here is timed.

use std::collections::HashMap;

use serde_json::{json, Value};
use tqfwd::counters::latency::cycles_to_ns;
use tqfwd::dpdk::{self, Lcore};

use crate::anchor::{Anchor, ANCHOR_RING_SIZE};
use crate::args::{Args, Plan};
use crate::contenders::Contender;
use crate::results::{median, Key, Samples};
use crate::runner::GAP_NS;

/// Fewest pooled clean latency samples for which percentiles are reported
/// (p99.9 then rests on at least 20 samples).
const MIN_CLEAN_SAMPLES: u64 = 20_000;

/// Median, min, max and every round's value (null where a round had none).
pub(crate) fn stats(v: &[f64]) -> Value {
    let fin = v.iter().copied().filter(|x| x.is_finite());
    let min = fin.clone().fold(f64::INFINITY, f64::min);
    let max = fin.fold(f64::NEG_INFINITY, f64::max);
    json!({ "median": num(median(v)), "min": num(min), "max": num(max), "rounds": v.iter().map(|&x| num(x)).collect::<Vec<_>>() })
}

/// A JSON number rounded to 3 decimals, or null when not finite.
pub(crate) fn num(x: f64) -> Value {
    if x.is_finite() {
        json!((x * 1000.0).round() / 1000.0)
    } else {
        Value::Null
    }
}

/// Everything a report is made from.
pub(crate) struct Report<'a> {
    pub(crate) args: &'a Args,
    pub(crate) plan: &'a Plan,
    pub(crate) results: &'a HashMap<Key, Samples>,
    pub(crate) producer_counts: &'a [usize],
    pub(crate) skipped_multi: bool,
    pub(crate) lcores: &'a [Lcore],
    pub(crate) producer_lcores: &'a [Lcore],
    pub(crate) consumer: Lcore,
    pub(crate) tsc_hz: u64,
    pub(crate) anchor: &'a Anchor,
    pub(crate) window_shift: u32,
    pub(crate) load_start: &'a str,
    pub(crate) load_end: &'a str,
    pub(crate) wall_s: f64,
}

impl Report<'_> {
    /// Median over the rounds of one figure of `k` (NaN if `k` did not run).
    fn med(&self, k: &Key, f: fn(&Samples) -> &Vec<f64>) -> f64 {
        self.results
            .get(k)
            .map(|s| median(f(s)))
            .unwrap_or(f64::NAN)
    }

    /// Pooled clean-window percentile in ns; NaN with too few samples.
    fn pooled(&self, s: &Samples, p: f64) -> f64 {
        if s.pooled_clean.count() >= MIN_CLEAN_SAMPLES {
            cycles_to_ns(s.pooled_clean.percentile(p) as f64, self.tsc_hz)
        } else {
            f64::NAN
        }
    }

    fn pooled_p99(&self, k: &Key) -> f64 {
        self.results
            .get(k)
            .map(|s| self.pooled(s, 99.0))
            .unwrap_or(f64::NAN)
    }

    /// The configurations that ran, in table order.
    fn measured(&self) -> Vec<(Key, &Samples)> {
        let plan = self.plan;
        let mut out = Vec::new();
        for &producers in self.producer_counts {
            for &burst in &plan.bursts {
                for &depth in &plan.depths {
                    for &contender in &plan.contenders {
                        let k = Key {
                            producers,
                            contender,
                            burst,
                            depth,
                        };
                        if let Some(s) = self.results.get(&k) {
                            out.push((k, s));
                        }
                    }
                }
            }
        }
        out
    }

    /// The text of the skipped multi-producer rows, if there are any.
    fn skipped_why(&self) -> Option<String> {
        self.skipped_multi
            .then(|| format!("skipped: needs ≥3 lcores (have {})", self.lcores.len()))
    }
}

/// The same configuration on rte_ring SP/SC: the baseline of the ratios.
fn baseline(k: &Key) -> Key {
    Key {
        contender: Contender::RingSpsc,
        ..*k
    }
}

/// The figures of one measured configuration that the table and the JSON
/// both show, computed once.
struct Row<'a> {
    key: Key,
    s: &'a Samples,
    cycles: f64,
    p99: f64,
    ratio_cycles: f64,
    ratio_p99: f64,
    clean_pct: f64,
    p99_all: f64,
}

fn row<'a>(r: &Report, key: Key, s: &'a Samples) -> Row<'a> {
    let cycles = median(&s.cycles_per_item);
    let p99 = r.pooled(s, 99.0);
    let b = baseline(&key);
    Row {
        key,
        s,
        cycles,
        p99,
        ratio_cycles: cycles / r.med(&b, |s| &s.cycles_per_item),
        ratio_p99: p99 / r.pooled_p99(&b),
        clean_pct: 100.0 * s.windows_clean as f64 / s.windows_total.max(1) as f64,
        p99_all: if s.pooled_all.count() > 0 {
            cycles_to_ns(s.pooled_all.percentile(99.0) as f64, r.tsc_hz)
        } else {
            f64::NAN
        },
    }
}

pub(crate) fn fmt_ratio(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.2}")
    } else {
        "–".into()
    }
}

fn fmt0(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.0}")
    } else {
        "–".into()
    }
}

pub(crate) fn fmt1(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.1}")
    } else {
        "–".into()
    }
}

/// Prints the report on stdout (markdown) and writes the JSON. A run with no
/// measured configuration is an error: no empty table, no verdict.
pub(crate) fn report(r: Report) -> Result<(), String> {
    if r.results.is_empty() {
        return Err("no configuration ran: no table, no verdict".into());
    }
    let rows: Vec<Row> = r
        .measured()
        .into_iter()
        .map(|(k, s)| row(&r, k, s))
        .collect();
    print_table(&r, &rows);
    print_anchor(r.anchor);
    let targets = targets(&r);
    print_targets(&targets);
    if let Some(path) = &r.args.json {
        write_json(&r, &rows, &targets, path)?;
    }
    Ok(())
}

// ---- Markdown table ---------------------------------------------------------

fn print_table(r: &Report, rows: &[Row]) {
    let plan = r.plan;
    println!("## Hand-off queue benchmark (tqfwd-queue-bench)");
    println!();
    println!(
        "{}; TSC {} Hz; lcores {:?} (producers {:?}, consumer {}); {} rounds, medians; \
         throughput runs {} ms, latency runs {} ms at {} Mitems/s offered (first 10 % warm-up); load {} -> {}{}",
        dpdk::version(),
        r.tsc_hz,
        r.lcores,
        r.producer_lcores,
        r.consumer,
        plan.rounds,
        plan.duration_ms,
        plan.latency_ms,
        plan.rate_items_s / 1e6,
        r.load_start,
        r.load_end,
        if r.args.note.is_empty() { String::new() } else { format!("; {}", r.args.note) }
    );
    println!();
    println!(
        "| producers | contender | burst | depth | Mitems/s | cycles/item | whole-run cycles/item | p50 ns | p99 ns | p99.9 ns \
         | cycles/item ÷ ring SP/SC | p99 ÷ ring SP/SC | clean latency windows | p99 ns, all windows | preemptions |"
    );
    println!("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for w in rows {
        let (k, s) = (&w.key, w.s);
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {}% | {} | {} |",
            k.producers,
            k.contender.name(),
            k.burst,
            k.depth,
            fmt1(median(&s.mitems_s)),
            fmt1(w.cycles),
            fmt1(median(&s.cycles_per_item_whole)),
            fmt0(r.pooled(s, 50.0)),
            fmt0(w.p99),
            fmt0(r.pooled(s, 99.9)),
            fmt_ratio(w.ratio_cycles),
            fmt_ratio(w.ratio_p99),
            fmt0(w.clean_pct),
            fmt0(w.p99_all),
            fmt0(median(&s.ctx_switches)),
        );
    }
    if let Some(why) = r.skipped_why() {
        for &c in &plan.contenders {
            println!("| ≥2 | {} | – | – | {why} | | | | | | | | | | |", c.name());
        }
    }
    println!();
}

// ---- Anchor -----------------------------------------------------------------

fn print_anchor(anchor: &Anchor) {
    println!("### Anchor: dpdk-test ring_perf_autotest, \"two physical cores\" (cycles per element, ring of {ANCHOR_RING_SIZE})");
    println!();
    match &anchor.error {
        Some(e) => println!("dpdk-test anchor failed: {e}"),
        None => {
            for l in &anchor.lines {
                let runs: Vec<String> = l.runs.iter().map(|v| format!("{v}")).collect();
                println!(
                    "- {}: {} (median of {} runs: {})",
                    l.label,
                    l.median,
                    l.runs.len(),
                    runs.join(", ")
                );
            }
        }
    }
    println!();
}

fn anchor_json(anchor: &Anchor) -> Value {
    match &anchor.error {
        Some(e) => json!({ "ok": false, "error": e }),
        None => json!({
            "ok": true,
            "source": "dpdk-test ring_perf_autotest, section \"Testing using two physical cores\", legacy APIs (8-byte elements), cycles per element = enqueue side + dequeue side (about 2x wall-clock cycles per element); median over the runs",
            "lines": anchor.lines.iter().map(|l| json!({ "what": l.label, "cycles_per_element_median": l.median, "runs": l.runs })).collect::<Vec<_>>(),
        }),
    }
}

// ---- Targets and verdicts ---------------------------------------------------

/// One target: the lines it prints and its JSON entry.
struct Target {
    lines: Vec<String>,
    json: Value,
}

/// Verdict of a ratio whose target is ≤ 0.50: `met`, `missed by N×`, or
/// `n/a` when a side has no figure (its configuration did not run).
fn verdict_half(ratio: f64) -> String {
    if !ratio.is_finite() {
        "n/a: no figure".to_string()
    } else if ratio <= 0.5 {
        "met".to_string()
    } else {
        format!("missed by {:.2}×", ratio / 0.5)
    }
}

/// The JSON `met` of a ratio whose target is ≤ 0.50 (null when n/a).
fn met_half(ratio: f64) -> Value {
    if ratio.is_finite() {
        json!(ratio <= 0.5)
    } else {
        Value::Null
    }
}

fn targets(r: &Report) -> Vec<Target> {
    let plan = r.plan;
    let have = |c: Contender| plan.contenders.contains(&c);
    let mut t = Vec::new();
    if !(have(Contender::TqSharded) && have(Contender::RingSpsc)) {
        return t;
    }
    if plan.bursts.contains(&32) {
        t.extend(plan.depths.iter().map(|&d| target_vs_ring(r, d)));
        if let Some(a) = r.anchor.get("SP/SC: bulk (size: 32)") {
            t.push(target_vs_anchor(r, a));
        }
    }
    t.push(target_p99(r));
    t
}

/// Burst 32, one producer: the TQ sharded's cycles/item of `depth` against
/// the key's rte_ring SP/SC.
fn b32_key(depth: usize) -> Key {
    Key {
        producers: 1,
        contender: Contender::TqSharded,
        burst: 32,
        depth,
    }
}

fn target_vs_ring(r: &Report, depth: usize) -> Target {
    let k = b32_key(depth);
    let tq = r.med(&k, |s| &s.cycles_per_item);
    let ring = r.med(&baseline(&k), |s| &s.cycles_per_item);
    let ratio = tq / ring;
    let line = if ratio.is_finite() {
        format!(
            "- TQ sharded burst 32, depth {depth}: {tq:.2} cycles/item vs rte_ring SP/SC {ring:.2} (this run) = {ratio:.2}× (target ≤ 0.50: {})",
            verdict_half(ratio)
        )
    } else {
        format!("- TQ sharded burst 32, depth {depth} vs rte_ring SP/SC: n/a (no single-producer figure for both in this run)")
    };
    Target {
        lines: vec![line],
        json: json!({ "target": "tq_sharded_b32_vs_ring_spsc_b32_cycles", "depth": depth, "tq": num(tq), "ring": num(ring), "ratio": num(ratio), "met": met_half(ratio) }),
    }
}

/// Against `ring_perf_autotest`'s SP/SC bulk 32 line `a`. It prints
/// enqueue-side + dequeue-side cycles per element; both sides run for the
/// whole test, so half of it is the wall-clock cycles per element, the
/// footing of our cycles/item.
fn target_vs_anchor(r: &Report, a: f64) -> Target {
    let plan = r.plan;
    let depth = if plan.depths.contains(&ANCHOR_RING_SIZE) {
        ANCHOR_RING_SIZE
    } else {
        plan.depths[0]
    };
    let k = b32_key(depth);
    let tq = r.med(&k, |s| &s.cycles_per_item);
    let ring = r.med(&baseline(&k), |s| &s.cycles_per_item);
    let ratio = tq / a;
    if !(tq.is_finite() && ring.is_finite()) {
        return Target {
            lines: vec![format!("- TQ sharded burst 32, depth {depth} vs ring_perf_autotest SP/SC bulk 32: n/a (no single-producer figure for TQ sharded and rte_ring SP/SC in this run)")],
            json: json!({ "target": "tq_sharded_b32_vs_ring_perf_spsc_bulk32", "depth": depth, "tq": num(tq), "anchor_as_printed": a, "met": Value::Null }),
        };
    }
    let mut lines = vec![
        format!(
            "- TQ sharded burst 32, depth {depth}: {tq:.2} cycles/item vs ring_perf_autotest SP/SC bulk 32 as printed {a:.2} = {ratio:.2}× (target ≤ 0.50: {})",
            verdict_half(ratio)
        ),
        format!(
            "- ring_perf_autotest prints the sum of its enqueue-side and dequeue-side cycles per element, so its wall-clock \
             equivalent is {:.2}; our rte_ring SP/SC burst 32 depth {depth}: {ring:.2} cycles/item ({:.2}× that), TQ sharded {:.2}×",
            a / 2.0,
            ring / (a / 2.0),
            tq / (a / 2.0)
        ),
    ];
    let disturbed = a / 2.0 > ring;
    if disturbed {
        lines.push(
            "- warning: the anchor's wall-clock equivalent is above our own rte_ring SP/SC figure; \
             ring_perf_autotest has no stall filtering, so it was probably disturbed: rerun on a quiet machine"
                .to_string(),
        );
    }
    Target {
        lines,
        json: json!({
            "anchor_probably_disturbed": disturbed,
            "target": "tq_sharded_b32_vs_ring_perf_spsc_bulk32",
            "depth": depth,
            "tq": num(tq),
            "anchor_as_printed": a,
            "anchor_wall_equivalent": num(a / 2.0),
            "ratio_vs_printed": num(ratio),
            "ratio_vs_wall_equivalent": num(tq / (a / 2.0)),
            "our_ring_spsc_vs_wall_equivalent": num(ring / (a / 2.0)),
            "met": met_half(ratio),
        }),
    }
}

/// p99 of TQ sharded below rte_ring SP/SC's, one producer, every (burst,
/// depth) where both ran and have enough clean samples; `n/a` when none
/// has.
fn target_p99(r: &Report) -> Target {
    let (mut met, mut total, mut skipped) = (0, 0, 0);
    for &burst in &r.plan.bursts {
        for &depth in &r.plan.depths {
            let k = Key {
                producers: 1,
                contender: Contender::TqSharded,
                burst,
                depth,
            };
            if !(r.results.contains_key(&k) && r.results.contains_key(&baseline(&k))) {
                continue; // not run: neither compared nor short of samples
            }
            let tq = r.pooled_p99(&k);
            let ring = r.pooled_p99(&baseline(&k));
            if !(tq.is_finite() && ring.is_finite()) {
                skipped += 1;
                continue;
            }
            total += 1;
            if tq < ring {
                met += 1;
            }
        }
    }
    let without = if skipped > 0 {
        format!(" ({skipped} without enough clean samples)")
    } else {
        String::new()
    };
    let line = if total == 0 {
        format!("- p99 (clean windows) of TQ sharded below rte_ring SP/SC at equal load: n/a, no (burst, depth) configuration to compare{without}")
    } else {
        format!("- p99 (clean windows) of TQ sharded below rte_ring SP/SC at equal load: {met} of {total} (burst, depth) configurations{without}")
    };
    Target {
        lines: vec![line],
        json: json!({ "target": "tq_sharded_p99_below_ring_spsc", "met_configs": met, "total_configs": total, "configs_without_enough_clean_samples": skipped }),
    }
}

fn print_targets(targets: &[Target]) {
    println!("### Targets (figures, not assertions)");
    println!();
    for l in targets.iter().flat_map(|t| &t.lines) {
        println!("{l}");
    }
    println!();
}

// ---- JSON -------------------------------------------------------------------

fn row_json(w: &Row, r: &Report) -> Value {
    let (k, s) = (&w.key, w.s);
    json!({
        "producers": k.producers,
        "contender": k.contender.key(),
        "contender_name": k.contender.name(),
        "burst": k.burst,
        "depth": k.depth,
        "status": "ok",
        "mitems_per_s": stats(&s.mitems_s),
        "cycles_per_item": stats(&s.cycles_per_item),
        "mitems_per_s_whole_run": stats(&s.mitems_s_whole),
        "cycles_per_item_whole_run": stats(&s.cycles_per_item_whole),
        "p50_ns": num(r.pooled(s, 50.0)),
        "p99_ns": num(w.p99),
        "p999_ns": num(r.pooled(s, 99.9)),
        "max_ns": num(r.pooled(s, 100.0)),
        "clean_latency_windows_pct": num(w.clean_pct),
        "all_windows_p99_ns": num(w.p99_all),
        "per_round_p50_ns": stats(&s.p50_ns),
        "per_round_p99_ns": stats(&s.p99_ns),
        "per_round_p999_ns": stats(&s.p999_ns),
        "per_round_max_ns": stats(&s.max_ns),
        "per_round_all_windows_p50_ns": stats(&s.p50_ns_all),
        "per_round_all_windows_p99_ns": stats(&s.p99_ns_all),
        "per_round_all_windows_p999_ns": stats(&s.p999_ns_all),
        "per_round_all_windows_max_ns": stats(&s.max_ns_all),
        "per_round_clean_latency_windows_pct": stats(&s.clean_pct),
        "involuntary_context_switches": stats(&s.ctx_switches),
        "offered_mitems_per_s": stats(&s.offered_mitems_s),
        "ratio_cycles_vs_ring_spsc": num(w.ratio_cycles),
        "ratio_p99_vs_ring_spsc": num(w.ratio_p99),
        "throughput_items_total": s.items_throughput,
        "latency_samples_clean_total": s.latency_samples_clean,
        "latency_samples_all_total": s.latency_samples_all,
        "latency_missed_pacing_slots": s.missed_slots,
        "latency_negative_samples": s.negative,
    })
}

fn write_json(
    r: &Report,
    rows: &[Row],
    targets: &[Target],
    path: &std::path::Path,
) -> Result<(), String> {
    let plan = r.plan;
    let mut results: Vec<Value> = rows.iter().map(|w| row_json(w, r)).collect();
    if let Some(why) = r.skipped_why() {
        for &c in &plan.contenders {
            results.push(json!({ "producers": ">=2", "contender": c.key(), "contender_name": c.name(), "status": why }));
        }
    }
    let doc = json!({
        "tool": "tqfwd-queue-bench",
        "version": env!("CARGO_PKG_VERSION"),
        "label": r.args.label,
        "note": r.args.note,
        "dpdk": dpdk::version(),
        "tsc_hz": r.tsc_hz,
        "lcores": r.lcores,
        "producer_lcores": r.producer_lcores,
        "consumer_lcore": r.consumer,
        "item": "u64",
        "method": {
            "rounds": plan.rounds,
            "throughput_run_ms": plan.duration_ms,
            "latency_run_ms": plan.latency_ms,
            "latency_warmup_fraction": 0.1,
            "latency_offered_mitems_per_s": plan.rate_items_s / 1e6,
            "alternation": "per (producers, burst, depth): contenders back to back, order rotated each round; medians over rounds",
            "cycles_per_item": "median over the run's windows of (consumer TSC cycles per window / items per window), windows of 2048 bursts; *_whole_run: start barrier to last item drained / items received",
            "latency": "consumer TSC after receive minus producer TSC before send, log-linear histogram, bucket upper bound (<= 3.1 % above); p50/p99/p999/max pooled over all rounds' ~0.23 ms windows in which no bench thread stalled > 20 us (null below 20000 samples), all_windows_p99 pooled over every window after warm-up; per_round_*: each round's own figures",
            "latency_window_cycles": 1u64 << r.window_shift,
            "stall_gap_ns": GAP_NS,
        },
        "load_avg_start": r.load_start,
        "load_avg_end": r.load_end,
        "wall_seconds": num(r.wall_s),
        "results": results,
        "anchor": anchor_json(r.anchor),
        "targets": targets.iter().map(|t| t.json.clone()).collect::<Vec<_>>(),
    });
    write_json_file(&doc, path)
}

/// Writes `doc` to `path`, pretty-printed, and says so on stderr.
pub(crate) fn write_json_file(doc: &Value, path: &std::path::Path) -> Result<(), String> {
    let text = serde_json::to_string_pretty(doc).map_err(|e| e.to_string())?;
    std::fs::write(path, text + "\n")
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    eprintln!("tqfwd-queue-bench: wrote {}", path.display());
    Ok(())
}
