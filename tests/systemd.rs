//! systemd `Type=notify`: with `NOTIFY_SOCKET` pointing at a datagram
//! socket the test binds, tqfwd sends `READY=1` when forwarding starts,
//! `STATUS=` lines with the rates once a second, and `STOPPING=1` once,
//! last, when the quit is requested, and `RELOADING=1` then `READY=1`
//! around a reload (SIGHUP); the run ends with its checks holding.
//! Without `NOTIFY_SOCKET` (every other test) nothing is sent.

use crate::common::*;
use std::os::unix::net::UnixDatagram;
use std::time::Duration;

#[test]
fn notify_ready_status_stopping_in_order() {
    let _g = serial();
    let dir = scratch("systemd");
    let sock_path = dir.join("notify.sock");
    let sock = UnixDatagram::bind(&sock_path).expect("bind notify socket");
    sock.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    // Collect datagrams while tqfwd runs.
    let reader = std::thread::spawn(move || {
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        let mut quiet = 0;
        // Until the run is long over: 3 s of forwarding plus start and
        // stop, then 2 s without a datagram after the first STOPPING.
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while std::time::Instant::now() < deadline && quiet < 10 {
            match sock.recv(&mut buf) {
                Ok(n) => {
                    got.push(String::from_utf8_lossy(&buf[..n]).into_owned());
                    quiet = 0;
                }
                Err(_) if got.iter().any(|m| m == "STOPPING=1") => quiet += 1,
                Err(_) => {}
            }
        }
        got
    });
    let eal = eal_args(
        "0-1",
        &[
            "net_null0,size=64".to_string(),
            "net_null1,size=64".to_string(),
        ],
    );
    let run = run_tqfwd_env(
        &dir,
        &eal,
        &["--duration", "3", "--stats-interval", "0.5"],
        Duration::from_secs(60),
        &[("NOTIFY_SOCKET", sock_path.as_os_str())],
    );
    assert_clean_end(&run);
    let got = reader.join().unwrap();
    let ready = got.iter().position(|m| m == "READY=1");
    let stopping: Vec<usize> = got
        .iter()
        .enumerate()
        .filter(|(_, m)| *m == "STOPPING=1")
        .map(|(i, _)| i)
        .collect();
    let status: Vec<&String> = got.iter().filter(|m| m.starts_with("STATUS=")).collect();
    assert_eq!(
        got.iter().filter(|m| *m == "READY=1").count(),
        1,
        "one READY=1: {got:?}"
    );
    assert_eq!(stopping.len(), 1, "one STOPPING=1: {got:?}");
    assert!(ready.unwrap() < stopping[0], "READY=1 first: {got:?}");
    assert_eq!(stopping[0], got.len() - 1, "STOPPING=1 last: {got:?}");
    assert!(!status.is_empty(), "a STATUS= line: {got:?}");
    for s in &status {
        let words: Vec<&str> = s["STATUS=".len()..].split_whitespace().collect();
        assert!(
            words.len() == 8
                && words[0] == "rx"
                && words[1].parse::<f64>().is_ok()
                && words[2] == "Mpps"
                && words[3] == "tx"
                && words[4].parse::<f64>().is_ok()
                && words[6] == "drops"
                && words[7].parse::<u64>().is_ok(),
            "STATUS format: {s:?}"
        );
    }
    // Traffic flows endlessly on net_null: the rates are not zero.
    assert!(
        status.iter().any(|s| !s.starts_with("STATUS=rx 0.000 ")),
        "{status:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A reload (SIGHUP, what `systemctl reload` sends through the unit's
/// `ExecReload`) is told to systemd as `RELOADING=1` then `READY=1`,
/// after the first `READY=1` and before `STOPPING=1`; the run goes on
/// and ends clean.
#[test]
fn notify_reloading_then_ready_on_sighup() {
    let _g = serial();
    let dir = scratch("systemd-reload");
    let sock_path = dir.join("notify.sock");
    let sock = UnixDatagram::bind(&sock_path).expect("bind notify socket");
    sock.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let recv_until = |got: &mut Vec<String>, what: &str| {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        let mut buf = [0u8; 4096];
        while !got.iter().any(|m| m == what) {
            assert!(
                std::time::Instant::now() < deadline,
                "no {what} within 30 s: {got:?}"
            );
            if let Ok(n) = sock.recv(&mut buf) {
                got.push(String::from_utf8_lossy(&buf[..n]).into_owned());
            }
        }
    };
    let conf = dir.join("conf.toml");
    std::fs::write(&conf, "stats-interval = 0\n").unwrap();
    let eal = eal_args(
        "0-1",
        &[
            "net_null0,size=64".to_string(),
            "net_null1,size=64".to_string(),
        ],
    );
    let mut p = Proc::spawn(
        "tqfwd",
        std::process::Command::new(bin())
            .args(&eal)
            .arg("--")
            .arg("--config")
            .arg(&conf)
            .args(["--duration", "60"])
            .env("NOTIFY_SOCKET", &sock_path)
            .env("RUST_LOG", "info"),
    );
    let mut got = Vec::new();
    recv_until(&mut got, "READY=1");
    std::fs::write(&conf, "stats-interval = 0.5\n").unwrap();
    p.signal("HUP");
    recv_until(&mut got, "RELOADING=1");
    let reloading = got.len() - 1;
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let mut buf = [0u8; 4096];
    while got[reloading..].iter().all(|m| m != "READY=1") {
        assert!(
            std::time::Instant::now() < deadline,
            "no READY=1 after RELOADING=1: {got:?}"
        );
        if let Ok(n) = sock.recv(&mut buf) {
            got.push(String::from_utf8_lossy(&buf[..n]).into_owned());
        }
    }
    p.wait_until("the reload line", Duration::from_secs(5), |t| {
        t.contains(": applied stats-interval")
    })
    .unwrap();
    p.signal("INT");
    let st = p
        .wait_exit(Duration::from_secs(20))
        .expect("exit on SIGINT");
    assert!(st.success(), "{st}\n{}", p.text());
    recv_until(&mut got, "STOPPING=1");
    assert_eq!(
        got.iter().filter(|m| *m == "RELOADING=1").count(),
        1,
        "{got:?}"
    );
    assert_eq!(got.iter().filter(|m| *m == "READY=1").count(), 2, "{got:?}");
    assert_eq!(
        got.last().map(String::as_str),
        Some("STOPPING=1"),
        "{got:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
