//! `/metrics` against Prometheus' own checker and against the Grafana
//! dashboard (`dist/grafana/tqfwd.json`). One live run on `net_null` with
//! `--latency` and `--capture`, so every optional family is present:
//! - `promtool check metrics` (Debian package `prometheus`, installed by
//!   `scripts/install-deps.sh`) must report nothing on its scrape; where
//!   promtool is missing the check is skipped with a message
//!   (`TQFWD_REQUIRE_PEERS=1` makes that a failure);
//! - every series name the dashboard's queries use must be in the scrape,
//!   and every label their legends and groupings name must be on one of
//!   the query's series, so the dashboard cannot drift from the exporter.

use crate::common::*;
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const DASHBOARD: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/dist/grafana/tqfwd.json");

/// Labels Prometheus adds to every scraped series, and a histogram's `le`.
const ADDED_LABELS: [&str; 3] = ["instance", "job", "le"];

/// What the dashboard must show (the list): a panel's query uses
/// each of these.
const REQUIRED: [&str; 11] = [
    "tqfwd_port_rx_packets_total",
    "tqfwd_port_tx_packets_total",
    "tqfwd_drops_total",
    "tqfwd_handoff_queue_packets",
    "tqfwd_handoff_queue_capacity",
    "tqfwd_lcore_busy_cycles_total",
    "tqfwd_lcore_idle_cycles_total",
    "tqfwd_latency_seconds_bucket",
    "tqfwd_capture_written_total",
    "tqfwd_capture_dropped_total",
    "tqfwd_up",
];

/// One query of the dashboard: where it is, the PromQL, its legend.
pub(crate) struct Query {
    pub(crate) at: String,
    pub(crate) expr: String,
    pub(crate) legend: String,
}

/// Every panel target's `expr` (rows' nested panels too) and every
/// templating query (`tests/prometheus.rs` evaluates them too).
pub(crate) fn dashboard_queries() -> Vec<Query> {
    let text = std::fs::read_to_string(DASHBOARD).expect("dist/grafana/tqfwd.json");
    let d: serde_json::Value = serde_json::from_str(&text).expect("the dashboard is JSON");
    let mut out = Vec::new();
    let mut panels: Vec<&serde_json::Value> = d["panels"].as_array().unwrap().iter().collect();
    while let Some(p) = panels.pop() {
        if let Some(inner) = p["panels"].as_array() {
            panels.extend(inner);
        }
        for t in p["targets"].as_array().into_iter().flatten() {
            out.push(Query {
                at: format!("panel {:?}", p["title"].as_str().unwrap_or("?")),
                expr: t["expr"].as_str().expect("a target has an expr").into(),
                legend: t["legendFormat"].as_str().unwrap_or("").into(),
            });
        }
    }
    for v in d["templating"]["list"].as_array().into_iter().flatten() {
        if let Some(q) = v["query"]["query"].as_str() {
            out.push(Query {
                at: format!("variable {:?}", v["name"].as_str().unwrap_or("?")),
                expr: q.into(),
                legend: String::new(),
            });
        }
    }
    out
}

/// The `tqfwd_*` series names in a PromQL expression.
fn metric_names(expr: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let b = expr.as_bytes();
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b':';
    let mut i = 0;
    while let Some(at) = expr[i..].find("tqfwd_").map(|k| k + i) {
        let mut end = at;
        while end < b.len() && word(b[end]) {
            end += 1;
        }
        if at == 0 || !word(b[at - 1]) {
            names.insert(expr[at..end].to_string());
        }
        i = end;
    }
    names
}

/// Labels the expression groups or matches by (`by (…)`, `on (…)`, …) and
/// the legend names (`{{label}}`).
fn label_refs(expr: &str, legend: &str) -> BTreeSet<String> {
    let mut labels = BTreeSet::new();
    for kw in [
        "by",
        "without",
        "on",
        "ignoring",
        "group_left",
        "group_right",
    ] {
        let mut rest = expr;
        while let Some(k) = rest.find(kw) {
            let before = rest[..k].chars().last();
            let after = rest[k + kw.len()..].trim_start();
            rest = &rest[k + kw.len()..];
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_') || !after.starts_with('(') {
                continue;
            }
            let inside = &after[1..after.find(')').expect("closing parenthesis")];
            labels.extend(
                inside
                    .split(',')
                    .map(str::trim)
                    .filter(|l| !l.is_empty())
                    .map(String::from),
            );
        }
    }
    let mut rest = legend;
    while let Some(k) = rest.find("{{") {
        let end = rest[k..].find("}}").expect("closing }}") + k;
        labels.insert(rest[k + 2..end].trim().to_string());
        rest = &rest[end + 2..];
    }
    labels
}

/// Series name → the label names it carries, from exposition text.
fn series(body: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for line in body
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        let name_end = line.find(['{', ' ']).unwrap_or(line.len());
        let labels = out.entry(line[..name_end].to_string()).or_default();
        if line[name_end..].starts_with('{') {
            let inside = &line[name_end + 1..line.rfind('}').expect("closing brace")];
            // Values here hold no `",`, so splitting on it is exact.
            for pair in inside.split("\",") {
                if let Some((k, _)) = pair.split_once('=') {
                    labels.insert(k.trim().to_string());
                }
            }
        }
    }
    out
}

#[test]
fn parsers_find_names_and_labels() {
    let expr = "histogram_quantile(0.9, sum by (instance, le) \
                (rate(tqfwd_latency_seconds_bucket{instance=~\"$instance\"}[5m]))) \
                / on(instance) group_left tqfwd_tsc_hz + xtqfwd_not";
    let names: Vec<String> = metric_names(expr).into_iter().collect();
    assert_eq!(names, ["tqfwd_latency_seconds_bucket", "tqfwd_tsc_hz"]);
    let labels: Vec<String> = label_refs(expr, "{{instance}} p90 {{ port }}")
        .into_iter()
        .collect();
    assert_eq!(labels, ["instance", "le", "port"]);
    let s = series("# HELP x y\na_total{port=\"0\",name=\"n,\\\"q\"} 1\nb 2\n");
    assert_eq!(s["a_total"].iter().collect::<Vec<_>>(), ["name", "port"]);
    assert!(s["b"].is_empty());
}

#[test]
fn dashboard_shows_what_an_operator_needs() {
    let used: BTreeSet<String> = dashboard_queries()
        .iter()
        .flat_map(|q| metric_names(&q.expr))
        .collect();
    for m in REQUIRED {
        assert!(used.contains(m), "no dashboard query uses {m}");
    }
    let quantiles = dashboard_queries()
        .iter()
        .filter(|q| q.expr.starts_with("histogram_quantile("))
        .count();
    assert!(quantiles >= 3, "latency quantiles from the histogram");
}

/// Scrapes every 100 ms until `ok` holds on the body (20 s at most).
fn scrape_until(p: &mut Proc, addr: SocketAddr, ok: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline && p.exited().is_none() {
        if let Ok((status, _, body)) = http_get(addr, "/metrics") {
            if status.contains("200") && ok(&body) {
                return body;
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!(
        "no scrape with latency samples and captured frames\n{}",
        p.text()
    )
}

/// `promtool check metrics` on `body`: Ok(its report) or Err(why it
/// could not run).
fn promtool(body: &str) -> Result<(bool, String), String> {
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("promtool: {e}"))?;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(body.as_bytes())
        .map_err(|e| e.to_string())?;
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Ok((out.status.success(), report))
}

#[test]
fn live_scrape_passes_promtool_and_feeds_the_dashboard() {
    let _g = serial();
    let dir = scratch("exposition");
    let pcap = dir.join("port0.pcapng");
    let capture = format!("0:{}", pcap.display());
    let (mut p, addr) =
        spawn_live_metrics(&["--latency", "--capture", &capture, "--capture-count", "100"]);
    let body = scrape_until(&mut p, addr, |b| {
        b.lines()
            .any(|l| l.starts_with("tqfwd_latency_seconds_count ") && !l.ends_with(" 0"))
            && b.lines()
                .any(|l| l.starts_with("tqfwd_capture_written_total{") && !l.ends_with(" 0"))
    });
    stop_live(&mut p);

    let have = series(&body);
    for q in dashboard_queries() {
        let names = metric_names(&q.expr);
        assert!(
            !names.is_empty(),
            "{}: no tqfwd series in {:?}",
            q.at,
            q.expr
        );
        let mut labels = BTreeSet::new();
        for n in &names {
            let l = have
                .get(n)
                .unwrap_or_else(|| panic!("{}: {n} is not in the scrape ({:?})", q.at, q.expr));
            labels.extend(l.iter().cloned());
        }
        for l in label_refs(&q.expr, &q.legend) {
            assert!(
                labels.contains(&l) || ADDED_LABELS.contains(&l.as_str()),
                "{}: label {l} is on none of {names:?} ({:?})",
                q.at,
                q.expr
            );
        }
    }

    match promtool(&body) {
        Ok((clean, report)) => assert!(
            clean && report.trim().is_empty(),
            "promtool check metrics: {report}\n{body}"
        ),
        Err(why) => skip_test(
            "live_scrape_passes_promtool_and_feeds_the_dashboard (promtool)",
            &format!("{why}: install the Debian package prometheus"),
        ),
    }
}
