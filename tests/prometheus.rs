//! The alert rules (`dist/prometheus/`) and the Grafana dashboard
//! (`dist/grafana/tqfwd.json`) against Prometheus itself:
//! - `promtool check rules` and `promtool test rules` on the shipped
//!   files, and every alert has a test case that fires and one that does
//!   not;
//! - a real Prometheus server (Debian package `prometheus`, installed by
//!   `scripts/install-deps.sh`), started here on 127.0.0.1 with its own
//!   configuration and data directory, scrapes a live one-lcore tqfwd
//!   once a second with the rules loaded; every dashboard query and every
//!   alert expression is evaluated through its HTTP API and must answer
//!   without error, with data where the scrape has the series, and no
//!   alert may fire on a clean run; the forwarded rate PromQL computes over
//!   10 s must agree within 10 % with tqfwd's own counters over the same
//!   10 s, and with `--rx-rate`.
//!
//! Where promtool or prometheus is missing the tests say so and skip
//! (`TQFWD_REQUIRE_PEERS=1` makes that a failure). The server is killed by
//! its guard whatever happens.

use crate::common::*;
use crate::exposition::dashboard_queries;
use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const RULES_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/dist/prometheus");
const RULES: &str = "tqfwd-alerts.yml";
const RULE_TESTS: &str = "tqfwd-alerts.test.yml";

/// The Mpps the live tqfwd is held to (`--rx-rate`).
const RX_RATE_MPPS: f64 = 1.0;
/// What Grafana makes of `$__rate_interval` with a 1 s scrape interval:
/// four scrape intervals.
const RATE_INTERVAL: &str = "4s";

/// One alert of the rules file: its name and its expression (one line or
/// a folded `>-` block).
struct Alert {
    name: String,
    expr: String,
}

fn alerts() -> Vec<Alert> {
    let text = std::fs::read_to_string(Path::new(RULES_DIR).join(RULES)).expect("rules file");
    let lines: Vec<&str> = text.lines().collect();
    let mut out: Vec<Alert> = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim_start();
        if let Some(name) = t.strip_prefix("- alert: ") {
            out.push(Alert {
                name: name.trim().to_string(),
                expr: String::new(),
            });
        } else if let Some(expr) = t.strip_prefix("expr: ") {
            let alert = out.last_mut().expect("an expr after its alert");
            if expr.starts_with(">-") || expr.starts_with('|') {
                let indent = line.len() - t.len();
                alert.expr = lines[i + 1..]
                    .iter()
                    .take_while(|l| l.len() - l.trim_start().len() > indent)
                    .map(|l| l.trim())
                    .collect::<Vec<_>>()
                    .join(" ");
            } else {
                alert.expr = expr.trim().to_string();
            }
        }
    }
    assert!(
        out.iter().all(|a| !a.expr.is_empty()),
        "an alert without expr"
    );
    out
}

fn promtool(args: &[&str]) -> Result<(bool, String), String> {
    let out = Command::new("promtool")
        .args(args)
        .current_dir(RULES_DIR)
        .output()
        .map_err(|e| format!("promtool: {e}"))?;
    Ok((
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    ))
}

#[test]
fn rules_file_parser_finds_alerts_and_expressions() {
    let all = alerts();
    let names: Vec<&str> = all.iter().map(|a| a.name.as_str()).collect();
    for want in [
        "TqfwdDown",
        "TqfwdDropsAfterRx",
        "TqfwdNicMissing",
        "TqfwdRxNoMbuf",
        "TqfwdHandoffQueueFull",
        "TqfwdMbufsGrowing",
        "TqfwdCaptureDropped",
    ] {
        assert!(names.contains(&want), "{want} missing from {names:?}");
    }
    let growing = all.iter().find(|a| a.name == "TqfwdMbufsGrowing").unwrap();
    assert!(
        growing.expr.starts_with("( min_over_time(") && growing.expr.ends_with("offset 15m) )"),
        "{:?}",
        growing.expr
    );
}

/// promtool's own check of the rules, their unit tests, and a test case
/// that fires and one that does not for every alert.
#[test]
fn alert_rules_pass_promtool_and_each_is_tested_both_ways() {
    let alerts = alerts();
    let check = match promtool(&["check", "rules", RULES]) {
        Ok(r) => r,
        Err(why) => {
            skip_test(
                "alert_rules_pass_promtool_and_each_is_tested_both_ways",
                &format!("{why}: install the Debian package prometheus"),
            );
            return;
        }
    };
    assert!(
        check.0
            && check
                .1
                .contains(&format!("SUCCESS: {} rules found", alerts.len())),
        "promtool check rules: {}",
        check.1
    );
    let test = promtool(&["test", "rules", RULE_TESTS]).expect("promtool ran once");
    assert!(
        test.0 && test.1.contains("SUCCESS"),
        "promtool test rules: {}",
        test.1
    );

    // Each `alertname:` of the tests is followed by its `exp_alerts`:
    // `[]` (must not fire) or a list (fires).
    let text = std::fs::read_to_string(Path::new(RULES_DIR).join(RULE_TESTS)).unwrap();
    let mut fires = BTreeSet::new();
    let mut quiet = BTreeSet::new();
    let mut current = None;
    for line in text.lines().map(str::trim) {
        if let Some(name) = line.strip_prefix("alertname: ") {
            current = Some(name.to_string());
        } else if let Some(rest) = line.strip_prefix("exp_alerts:") {
            let name = current.take().expect("exp_alerts after an alertname");
            if rest.trim() == "[]" {
                quiet.insert(name);
            } else {
                fires.insert(name);
            }
        }
    }
    for a in &alerts {
        assert!(fires.contains(&a.name), "no test case fires {}", a.name);
        assert!(
            quiet.contains(&a.name),
            "no test case where {} must not fire",
            a.name
        );
    }
}

/// `name{...}` and `name` selectors of the `tqfwd_*` series and `up` in a
/// PromQL expression, without their ranges and offsets.
fn selectors(expr: &str) -> BTreeSet<String> {
    let b = expr.as_bytes();
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b':';
    let mut out = BTreeSet::new();
    let mut i = 0;
    while i < b.len() {
        if !word(b[i]) || (i > 0 && word(b[i - 1])) {
            i += 1;
            continue;
        }
        let mut end = i;
        while end < b.len() && word(b[end]) {
            end += 1;
        }
        let name = &expr[i..end];
        if name.starts_with("tqfwd_") || name == "up" {
            let mut sel = name.to_string();
            if expr[end..].starts_with('{') {
                let close = expr[end..].find('}').expect("closing brace") + end;
                sel.push_str(&expr[end..=close]);
                end = close + 1;
            }
            out.insert(sel);
        }
        i = end;
    }
    out
}

#[test]
fn selector_parser_keeps_matchers_drops_ranges() {
    let s: Vec<String> = selectors(
        "sum by (instance) (rate(tqfwd_drops_total{instance=~\"$i\"}[5m])) \
         / up{job=\"tqfwd\"} and xtqfwd_no + tqfwd_mbufs_in_use offset 15m",
    )
    .into_iter()
    .collect();
    assert_eq!(
        s,
        [
            "tqfwd_drops_total{instance=~\"$i\"}",
            "tqfwd_mbufs_in_use",
            "up{job=\"tqfwd\"}"
        ]
    );
}

/// Percent-encodes a query parameter.
fn encode(s: &str) -> String {
    s.bytes()
        .map(|c| match c {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (c as char).to_string()
            }
            _ => format!("%{c:02X}"),
        })
        .collect()
}

/// `GET path` as HTTP/1.0 (an unchunked body up to the close): the status
/// line and the body.
fn get(addr: SocketAddr, path: &str) -> std::io::Result<(String, String)> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(1))?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n")?;
    let mut text = String::new();
    s.read_to_string(&mut text)?;
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.lines().next().unwrap_or("").to_string();
    Ok((status, body.to_string()))
}

/// The Prometheus server this test started; killed when dropped (also
/// when the test panics), and its data directory removed.
struct Prometheus {
    proc: Option<Proc>,
    addr: SocketAddr,
    data: PathBuf,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        drop(self.proc.take());
        let _ = std::fs::remove_dir_all(&self.data);
    }
}

impl Prometheus {
    /// `prometheus` on a free 127.0.0.1 port with `dir`/prometheus.yml
    /// scraping `target` every second as job `tqfwd`, the rules loaded,
    /// its data in `dir`/data; waits until it is ready.
    fn start(dir: &Path, target: SocketAddr) -> Prometheus {
        let config = dir.join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n\
                 rule_files:\n  - {}\n\
                 scrape_configs:\n  - job_name: tqfwd\n    static_configs:\n      \
                 - targets: ['{target}']\n",
                Path::new(RULES_DIR).join(RULES).display()
            ),
        )
        .expect("write prometheus.yml");
        let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
        let data = dir.join("data");
        let mut proc = Proc::spawn(
            "prometheus",
            Command::new("prometheus")
                .arg(format!("--config.file={}", config.display()))
                .arg(format!("--storage.tsdb.path={}", data.display()))
                .arg(format!("--web.listen-address={addr}"))
                .arg("--log.level=warn"),
        );
        let start = Instant::now();
        loop {
            if matches!(get(addr, "/-/ready"), Ok((status, _)) if status.contains(" 200")) {
                return Prometheus {
                    proc: Some(proc),
                    addr,
                    data,
                };
            }
            assert!(
                proc.exited().is_none() && start.elapsed() < Duration::from_secs(20),
                "prometheus did not become ready\n{}",
                proc.text()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// `/api/v1/query` at `time` (unix seconds); the answer's `data`, or
    /// the error it reported.
    fn query(&self, expr: &str, time: f64) -> Result<serde_json::Value, String> {
        let path = format!("/api/v1/query?query={}&time={time:.3}", encode(expr));
        self.api(&path)
    }

    fn api(&self, path: &str) -> Result<serde_json::Value, String> {
        let (status, body) = get(self.addr, path).map_err(|e| format!("{path}: {e}"))?;
        let v: serde_json::Value =
            serde_json::from_str(&body).map_err(|e| format!("{path}: {status}: {e}: {body}"))?;
        if v["status"] != "success" {
            return Err(format!(
                "{path}: {status}: {body}\n--- prometheus output ---\n{}",
                self.proc.as_ref().map(Proc::text).unwrap_or_default()
            ));
        }
        Ok(v["data"].clone())
    }
}

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// The value of an unlabelled sample line `name value` in a scrape.
fn scraped(body: &str, name: &str) -> f64 {
    body.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {name} in the scrape"))
}

/// The result vector's values, which must be numbers ("NaN" counts as
/// none: a query that divides by nothing).
fn values(data: &serde_json::Value) -> Vec<f64> {
    assert_eq!(data["resultType"], "vector", "{data}");
    data["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["value"][1].as_str().unwrap().parse::<f64>().unwrap())
        .collect()
}

#[test]
fn real_prometheus_scrapes_tqfwd_and_evaluates_dashboard_and_alerts() {
    const TEST: &str = "real_prometheus_scrapes_tqfwd_and_evaluates_dashboard_and_alerts";
    if !have_command("prometheus") {
        skip_test(TEST, "no prometheus: install the Debian package prometheus");
        return;
    }
    let _g = serial();
    let dir = scratch("prometheus");
    let metrics: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let (metrics_arg, rate_arg) = (metrics.to_string(), RX_RATE_MPPS.to_string());
    let capture = format!("0:{}", dir.join("port0.pcapng").display());
    // One lcore, so that the server has the other CPU; --latency and
    // --capture so that every dashboard panel has its series.
    let (mut tqfwd, _) = spawn_live_null(
        "0",
        &[
            "--metrics",
            &metrics_arg,
            "--rx-rate",
            &rate_arg,
            "--latency",
            "--capture",
            &capture,
            "--capture-count",
            "100",
        ],
    );
    let start = Instant::now();
    let body = loop {
        if let Ok((status, _, body)) = http_get(metrics, "/metrics") {
            if status.contains("200") && scraped(&body, "tqfwd_tx_packets_total") > 0.0 {
                break body;
            }
        }
        assert!(
            tqfwd.exited().is_none() && start.elapsed() < Duration::from_secs(20),
            "tqfwd does not serve metrics\n{}",
            tqfwd.text()
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let exported: BTreeSet<&str> = body
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| &l[..l.find(['{', ' ']).unwrap_or(l.len())])
        .collect();
    let prom = Prometheus::start(&dir, metrics);

    // Once the server holds a first sample (a window that begins before
    // the first scrape would be extrapolated from less), tqfwd's own
    // counters 10 s apart, the second read where the PromQL window ends.
    let start = Instant::now();
    while values(&prom.query("tqfwd_tx_packets_total", now()).unwrap()).is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "prometheus scraped nothing from {metrics}: {}",
            prom.api("/api/v1/targets").unwrap_or_else(|e| e.into())
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    std::thread::sleep(Duration::from_millis(500));
    let tx = || {
        let (_, _, b) = http_get(metrics, "/metrics").expect("scrape tqfwd");
        (now(), scraped(&b, "tqfwd_tx_packets_total"))
    };
    let (t0, tx0) = tx();
    std::thread::sleep(Duration::from_secs(10));
    let (t1, tx1) = tx();
    let own = (tx1 - tx0) / (t1 - t0);
    // The scrape at or just after t1 must be in: wait a scrape interval.
    std::thread::sleep(Duration::from_millis(1500));
    let promql = values(
        &prom
            .query("sum(rate(tqfwd_tx_packets_total[10s]))", t1)
            .unwrap(),
    );
    assert_eq!(promql.len(), 1, "one instance: {promql:?}");
    let promql = promql[0];
    assert!(
        (promql - own).abs() <= 0.1 * own,
        "PromQL rate {promql:.0}/s vs tqfwd's {own:.0}/s over the same 10 s \
         ({t0:.3}: {tx0}, {t1:.3}: {tx1}); the samples: {}",
        prom.query("tqfwd_tx_packets_total[12s]", t1).unwrap()
    );
    let want = RX_RATE_MPPS * 1e6;
    assert!(
        (own - want).abs() <= 0.1 * want,
        "tqfwd forwarded {own:.0}/s, --rx-rate {want:.0}/s"
    );

    // Every dashboard query, as Grafana sends it for this instance.
    let when = now();
    let instance = metrics.to_string();
    for q in dashboard_queries() {
        if let Some(series) = q.expr.strip_prefix("label_values(") {
            // Grafana's variable query: the label's values on the series.
            let (series, label) = series.trim_end_matches(')').split_once(',').unwrap();
            let path = format!(
                "/api/v1/label/{}/values?match[]={}",
                label.trim(),
                encode(series.trim())
            );
            let got = prom.api(&path).unwrap_or_else(|e| panic!("{}: {e}", q.at));
            assert!(
                got.as_array()
                    .unwrap()
                    .iter()
                    .any(|v| v == instance.as_str()),
                "{}: {got} lacks {instance}",
                q.at
            );
            continue;
        }
        let expr = q
            .expr
            .replace("$instance", &instance)
            .replace("$__rate_interval", RATE_INTERVAL);
        let data = prom
            .query(&expr, when)
            .unwrap_or_else(|e| panic!("{}: {expr}: {e}", q.at));
        let names: Vec<String> = selectors(&q.expr)
            .into_iter()
            .map(|s| s[..s.find('{').unwrap_or(s.len())].to_string())
            .collect();
        let v = values(&data);
        if names.iter().all(|n| exported.contains(n.as_str())) {
            assert!(
                !v.is_empty() && v.iter().all(|x| !x.is_nan()),
                "{}: {expr} gave {v:?} while tqfwd exports {names:?}",
                q.at
            );
        }
    }

    // Every alert expression: evaluates, fires on nothing in a clean run,
    // and each of its selectors finds the live series (the job name and
    // labels the rules match on are the ones the scrape gives).
    for a in alerts() {
        let data = prom
            .query(&a.expr, when)
            .unwrap_or_else(|e| panic!("{}: {}: {e}", a.name, a.expr));
        assert_eq!(
            values(&data),
            Vec::<f64>::new(),
            "{} fires on a clean run: {}",
            a.name,
            a.expr
        );
        for sel in selectors(&a.expr) {
            let name = &sel[..sel.find('{').unwrap_or(sel.len())];
            if name == "up" || exported.contains(name) {
                let v = values(&prom.query(&sel, when).unwrap());
                assert!(!v.is_empty(), "{}: {sel} finds nothing", a.name);
            }
        }
    }
    // The server loaded and evaluates the rules without error.
    let groups = prom.api("/api/v1/rules").unwrap();
    let rules: Vec<&serde_json::Value> = groups["groups"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|g| g["rules"].as_array().unwrap())
        .collect();
    assert_eq!(rules.len(), alerts().len(), "{groups}");
    for r in rules {
        assert_eq!(r["health"], "ok", "{r}");
        assert_eq!(r["state"], "inactive", "{r}");
    }

    drop(prom);
    let out = stop_live(&mut tqfwd);
    assert!(out.contains("-> OK"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}
