//! The scatter and drain rows' output: per (row, burst, depth) a table of
//! cycles per item per role and contender (rows: k) and a detail table,
//! then the targets, on stdout (markdown), and the JSON file (`--json`),
//! all from one [`FanReport`].
//!
//! Promises: the tables and the JSON show the same figures (medians over
//! the rounds, computed here once per configuration); a figure that does
//! not exist is `–` in a table and null in the JSON; a target whose
//! configurations did not run is `n/a`, never `met`; a report with no
//! measured configuration is an error. Nothing here is timed.

use std::collections::HashMap;

use serde_json::{json, Value};
use tqfwd::dpdk::{self, Lcore};

use crate::args::Args;
use crate::fan::{FanBench, FanKey, FanSamples, NEAR_NS};
use crate::fan_plan::{FanContender, FanPlan, FanRow, TABLE_ITEMS};

use crate::report::{fmt1 as f1, fmt_ratio as f2, num, stats, write_json_file};
use crate::results::median;

/// The k-ratio targets: k = 4 against k = 1, per item, at most this.
pub(crate) const K_RATIO_TARGET: f64 = 1.2;
const K_LOW: usize = 1;
const K_HIGH: usize = 4;

/// Everything the report is made from.
pub(crate) struct FanReport<'a> {
    pub(crate) args: &'a Args,
    pub(crate) plan: &'a FanPlan,
    pub(crate) results: &'a HashMap<FanKey, FanSamples>,
    pub(crate) lcores: &'a [Lcore],
    pub(crate) producer: Lcore,
    pub(crate) consumer: Lcore,
    pub(crate) tsc_hz: u64,
    /// Cycles of one TSC read (measured at the start), which every busy
    /// iteration includes once.
    pub(crate) tsc_read_cycles: f64,
    pub(crate) load_start: &'a str,
    pub(crate) load_end: &'a str,
    pub(crate) wall_s: f64,
}

/// The figures of one configuration, medians over the rounds.
#[derive(Debug, Clone, Copy)]
struct Fig {
    producer: f64,
    consumer: f64,
}

impl FanReport<'_> {
    fn med(&self, k: &FanKey, f: fn(&FanSamples) -> &Vec<f64>) -> f64 {
        self.results
            .get(k)
            .map(|s| median(f(s)))
            .unwrap_or(f64::NAN)
    }

    fn fig(&self, k: &FanKey) -> Fig {
        Fig {
            producer: self.med(k, |s| &s.producer_cpi),
            consumer: self.med(k, |s| &s.consumer_cpi),
        }
    }

    /// The (row, burst, depth) groups of the plan, in order.
    fn groups(&self) -> Vec<(FanRow, usize, usize)> {
        let mut g = Vec::new();
        for &row in &self.plan.rows {
            for &burst in &self.plan.bursts {
                for &depth in &self.plan.depths {
                    g.push((row, burst, depth));
                }
            }
        }
        g
    }
}

fn key((row, burst, depth): (FanRow, usize, usize), k: usize, contender: FanContender) -> FanKey {
    FanKey {
        row,
        burst,
        depth,
        k,
        contender,
    }
}

fn row_title(row: FanRow) -> &'static str {
    match row {
        FanRow::Scatter => {
            "Scatter: one producer lcore hashes each item to one of k queues, one consumer lcore polls the k queues"
        }
        FanRow::Drain => {
            "Drain: one producer lcore sends its bursts to k queues in turn, one consumer lcore polls the k queues"
        }
    }
}

/// Prints the report and writes the JSON.
pub(crate) fn fan_report(r: FanReport) -> Result<(), String> {
    if r.results.is_empty() {
        return Err("no configuration ran: no table, no verdict".into());
    }
    print_header(&r);
    for g in r.groups() {
        print_group(&r, g);
    }
    let targets = targets(&r);
    println!("### Targets (figures, not assertions)");
    println!();
    for t in &targets {
        println!("{}", t.line);
    }
    println!();
    if let Some(path) = &r.args.json {
        write_json(&r, &targets, path)?;
    }
    Ok(())
}

fn print_header(r: &FanReport) {
    let plan = r.plan;
    println!("## Scatter and drain rows (tqfwd-queue-bench --scatter)");
    println!();
    println!(
        "{}; TSC {} Hz; lcores {:?} (producer {}, consumer {}); {} rounds, medians; runs of {} ms; \
         items: a table of {TABLE_ITEMS} pseudo-random u64 read in bursts; scatter destination: multiply-shift hash onto k; \
         one TSC read per loop iteration ({:.0} cycles each, included in the busy cycles); load {} -> {}{}",
        dpdk::version(),
        r.tsc_hz,
        r.lcores,
        r.producer,
        r.consumer,
        plan.rounds,
        plan.duration_ms,
        r.tsc_read_cycles,
        r.load_start,
        r.load_end,
        if r.args.note.is_empty() {
            String::new()
        } else {
            format!("; {}", r.args.note)
        }
    );
    println!();
}

fn print_group(r: &FanReport, g: (FanRow, usize, usize)) {
    let (row, burst, depth) = g;
    let cs = &r.plan.contenders;
    println!(
        "### {} (burst {burst}, {depth} items per queue)",
        row_title(row)
    );
    println!();
    println!("Busy cycles per item, producer / consumer (median window, median over rounds):");
    println!();
    let mut head = "| k |".to_string();
    let mut rule = "|---:|".to_string();
    for c in cs {
        head += &format!(" {} producer | {} consumer |", c.name(), c.name());
        rule += "---:|---:|";
    }
    println!("{head}");
    println!("{rule}");
    for &k in &r.plan.queues {
        let mut line = format!("| {k} |");
        for &c in cs {
            let f = r.fig(&key(g, k, c));
            line += &format!(" {} | {} |", f1(f.producer), f1(f.consumer));
        }
        println!("{line}");
    }
    println!();
    println!(
        "| k | contender | Mitems/s | producer cyc/item | consumer cyc/item | producer ÷ ring | consumer ÷ ring \
         | producer whole-run | consumer whole-run | producer busy % | consumer busy % | items / producer iteration \
         | items / consumer poll | producer short % | trip ns | near/far | preemptions |"
    );
    println!(
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|"
    );
    for &k in &r.plan.queues {
        for &c in cs {
            let kk = key(g, k, c);
            let Some(s) = r.results.get(&kk) else {
                continue;
            };
            let f = r.fig(&kk);
            let ring = r.fig(&key(g, k, c.ring_twin()));
            let (near, far, unknown) = s.placements();
            println!(
                "| {k} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {near}/{far}{} | {} |",
                c.name(),
                f1(median(&s.mitems_s)),
                f1(f.producer),
                f1(f.consumer),
                f2(f.producer / ring.producer),
                f2(f.consumer / ring.consumer),
                f1(median(&s.producer_cpi_whole)),
                f1(median(&s.consumer_cpi_whole)),
                f1(median(&s.producer_busy_pct)),
                f1(median(&s.consumer_busy_pct)),
                f1(median(&s.producer_items_per_iter)),
                f1(median(&s.consumer_items_per_poll)),
                f1(median(&s.producer_short_pct)),
                f1(median(&s.trip_ns)),
                if unknown > 0 {
                    format!(" ({unknown} unknown)")
                } else {
                    String::new()
                },
                f1(median(&s.ctx_switches)),
            );
        }
    }
    println!();
}

// ---- Targets --------------------------------------------------------------------

/// One verdict: its printed line and its JSON entry.
struct Verdict {
    line: String,
    json: Value,
}

fn met_json(ok: Option<bool>) -> Value {
    ok.map(Value::Bool).unwrap_or(Value::Null)
}

fn targets(r: &FanReport) -> Vec<Verdict> {
    let mut v = Vec::new();
    for g in r.groups() {
        let (row, burst, depth) = g;
        let (role, what) = match row {
            FanRow::Scatter => ("producer", "scattering to 4 queues vs 1"),
            FanRow::Drain => ("consumer", "draining 4 queues vs 1"),
        };
        for &c in &r.plan.contenders {
            let pick = |f: Fig| match row {
                FanRow::Scatter => f.producer,
                FanRow::Drain => f.consumer,
            };
            let lo = pick(r.fig(&key(g, K_LOW, c)));
            let hi = pick(r.fig(&key(g, K_HIGH, c)));
            let ratio = hi / lo;
            let (line, met) = if ratio.is_finite() {
                let ok = ratio <= K_RATIO_TARGET;
                (
                    format!(
                        "- {} {what}, {role} cycles/item (burst {burst}, depth {depth}): {hi:.2} vs {lo:.2} = {ratio:.2}× (target ≤ {K_RATIO_TARGET}: {})",
                        c.name(),
                        if ok {
                            "met".to_string()
                        } else {
                            format!("missed by {:.2}×", ratio / K_RATIO_TARGET)
                        }
                    ),
                    Some(ok),
                )
            } else {
                (
                    format!(
                        "- {} {what}, {role} cycles/item (burst {burst}, depth {depth}): n/a (k = {K_LOW} and k = {K_HIGH} did not both run)",
                        c.name()
                    ),
                    None,
                )
            };
            v.push(Verdict {
                line,
                json: json!({
                    "target": format!("{}_k{K_HIGH}_vs_k{K_LOW}_{role}_cycles_per_item", row.key()),
                    "contender": c.key(), "burst": burst, "depth": depth,
                    "k_high": num(hi), "k_low": num(lo), "ratio": num(ratio),
                    "limit": K_RATIO_TARGET, "met": met_json(met),
                }),
            });
        }
    }
    v.push(tq_vs_ring(r));
    v
}

/// tq at or below its ring twin in every row that ran: scatter producer
/// and consumer, drain consumer.
fn tq_vs_ring(r: &FanReport) -> Verdict {
    let mut total = 0;
    let mut missed = Vec::new();
    let mut rows = Vec::new();
    for g in r.groups() {
        let (row, burst, depth) = g;
        for &k in &r.plan.queues {
            for &c in r.plan.contenders.iter().filter(|c| c.is_tq()) {
                let ring_c = c.ring_twin();
                if !(r.results.contains_key(&key(g, k, c))
                    && r.results.contains_key(&key(g, k, ring_c)))
                {
                    continue;
                }
                let tq = r.fig(&key(g, k, c));
                let ring = r.fig(&key(g, k, ring_c));
                let roles: &[(&str, f64, f64)] = match row {
                    FanRow::Scatter => &[
                        ("producer", tq.producer, ring.producer),
                        ("consumer", tq.consumer, ring.consumer),
                    ],
                    FanRow::Drain => &[("consumer", tq.consumer, ring.consumer)],
                };
                for &(role, t, g) in roles {
                    total += 1;
                    let ok = t <= g;
                    rows.push(json!({
                        "row": row.key(), "burst": burst, "depth": depth, "k": k,
                        "contender": c.key(), "role": role, "tq": num(t), "ring": num(g),
                        "ratio": num(t / g), "met": ok,
                    }));
                    if !ok {
                        missed.push(format!(
                            "{} k={k} {} {role} {t:.1} vs {g:.1} ({:.2}×)",
                            row.key(),
                            c.name(),
                            t / g
                        ));
                    }
                }
            }
        }
    }
    let line = if total == 0 {
        "- tq at or below the ring in every row: n/a (no row has both)".to_string()
    } else if missed.is_empty() {
        format!("- tq at or below the ring in every row: met ({total} of {total})")
    } else {
        format!(
            "- tq at or below the ring in every row: missed in {} of {total}: {}",
            missed.len(),
            missed.join("; ")
        )
    };
    Verdict {
        line,
        json: json!({
            "target": "tq_at_or_below_ring_every_row",
            "met": if total == 0 { Value::Null } else { json!(missed.is_empty()) },
            "rows": rows,
        }),
    }
}

// ---- JSON -----------------------------------------------------------------------

fn write_json(r: &FanReport, targets: &[Verdict], path: &std::path::Path) -> Result<(), String> {
    let plan = r.plan;
    let mut results = Vec::new();
    for kk in FanBench::keys(plan) {
        let Some(s) = r.results.get(&kk) else {
            continue;
        };
        let f = r.fig(&kk);
        let ring = r.fig(&FanKey {
            contender: kk.contender.ring_twin(),
            ..kk
        });
        let (near, far, unknown) = s.placements();
        results.push(json!({
            "row": kk.row.key(),
            "burst": kk.burst,
            "depth_per_queue": kk.depth,
            "k": kk.k,
            "contender": kk.contender.key(),
            "contender_name": kk.contender.name(),
            "producer_cycles_per_item": stats(&s.producer_cpi),
            "consumer_cycles_per_item": stats(&s.consumer_cpi),
            "producer_cycles_per_item_whole_run": stats(&s.producer_cpi_whole),
            "consumer_cycles_per_item_whole_run": stats(&s.consumer_cpi_whole),
            "producer_ratio_vs_ring": num(f.producer / ring.producer),
            "consumer_ratio_vs_ring": num(f.consumer / ring.consumer),
            "wall_cycles_per_item": stats(&s.wall_cpi),
            "mitems_per_s": stats(&s.mitems_s),
            "producer_busy_pct": stats(&s.producer_busy_pct),
            "consumer_busy_pct": stats(&s.consumer_busy_pct),
            "items_per_producer_iteration": stats(&s.producer_items_per_iter),
            "items_per_consumer_poll": stats(&s.consumer_items_per_poll),
            "producer_short_pct": stats(&s.producer_short_pct),
            "trip_ns": stats(&s.trip_ns),
            "placements": { "near": near, "far": far, "unknown": unknown },
            "involuntary_context_switches": stats(&s.ctx_switches),
            "items_total": s.items,
        }));
    }
    let doc = json!({
        "tool": "tqfwd-queue-bench",
        "mode": "scatter",
        "version": env!("CARGO_PKG_VERSION"),
        "label": r.args.label,
        "note": r.args.note,
        "dpdk": dpdk::version(),
        "tsc_hz": r.tsc_hz,
        "lcores": r.lcores,
        "producer_lcore": r.producer,
        "consumer_lcore": r.consumer,
        "item": "u64",
        "method": {
            "rounds": plan.rounds,
            "run_ms": plan.duration_ms,
            "alternation": "per (row, burst, depth, k): contenders back to back, order rotated each round; medians over rounds",
            "items": format!("a table of {TABLE_ITEMS} splitmix64 values (fixed seed) read in order in bursts; every run sends the same stream"),
            "hash": "destination = ((((v * 0x9E3779B97F4A7C15) mod 2^64) >> 32) * k) >> 32, for every contender and every k",
            "cycles_per_item": "per role: cycles of the loop iterations that moved items (one TSC read per iteration, TSC to TSC) / items, median over windows of 2048 bursts; *_whole_run: the same over the whole run",
            "tsc_read_cycles": num(r.tsc_read_cycles),
            "wall_cycles_per_item": "consumer's elapsed cycles per item, median window; mitems_per_s = TSC Hz / that",
            "trip_ns": format!("one-way cache-line trip between the two lcores before each run (ping-pong, median of 5 batches of 200); near below {NEAR_NS} ns"),
        },
        "load_avg_start": r.load_start,
        "load_avg_end": r.load_end,
        "wall_seconds": num(r.wall_s),
        "results": results,
        "targets": targets.iter().map(|t| t.json.clone()).collect::<Vec<_>>(),
    });
    write_json_file(&doc, path)
}
