//! `--metrics` keeps answering whatever other clients do, on one tqfwd
//! forwarding net_null traffic: with 300 idle connections open (more
//! than the server's cap of 256, so the oldest are closed) and a client
//! sending a 1 MiB request head (answered 431 or closed), a scrape is
//! answered within 1 s and tqfwd starts no thread per connection; then 50
//! clients scraping at once, twice each on one keep-alive connection, are
//! all answered; and the run still ends with conservation and 0 mbufs in
//! use.

use crate::common::*;
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind port 0");
    l.local_addr().unwrap().port()
}

/// Reads one response (head, then a Content-Length body) off `s`.
fn response(s: &mut TcpStream) -> std::io::Result<(String, String)> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if s.read(&mut byte)? == 0 {
            return Err(ErrorKind::UnexpectedEof.into());
        }
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let len: usize = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-length:")
                .and_then(|v| v.trim().parse().ok())
        })
        .unwrap_or(0);
    let mut body = vec![0u8; len];
    s.read_exact(&mut body)?;
    Ok((head, String::from_utf8_lossy(&body).into_owned()))
}

/// `n` scrapes on one connection (the last with `Connection: close`);
/// the bodies.
fn scrapes(addr: SocketAddr, n: usize) -> std::io::Result<Vec<String>> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    let mut bodies = Vec::new();
    for i in 0..n {
        let close = if i + 1 == n {
            "Connection: close\r\n"
        } else {
            ""
        };
        write!(s, "GET /metrics HTTP/1.1\r\nHost: {addr}\r\n{close}\r\n")?;
        let (head, body) = response(&mut s)?;
        if !head.starts_with("HTTP/1.1 200 OK") {
            return Err(std::io::Error::other(head));
        }
        bodies.push(body);
    }
    Ok(bodies)
}

fn threads_of(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("Threads:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

/// True when the server has closed `s` (read gives EOF or a reset now).
fn closed(s: &mut TcpStream) -> bool {
    s.set_nonblocking(true).unwrap();
    let mut b = [0u8; 64];
    !matches!(s.read(&mut b), Err(e) if e.kind() == ErrorKind::WouldBlock)
}

#[test]
fn scrapes_are_answered_beside_idle_hostile_and_concurrent_clients() {
    let _g = serial();
    let dir = scratch("metrics-server");
    let json = dir.join("stats.json");
    let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let (mut p, _) = spawn_live_null(
        "0-1",
        &[
            "--metrics",
            &addr.to_string(),
            "--stats-json",
            json.to_str().unwrap(),
        ],
    );
    let start = Instant::now();
    while scrapes(addr, 1).is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "no scrape answered\n{}",
            p.text()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let threads_before = threads_of(p.pid());

    let mut idle: Vec<TcpStream> = (0..300)
        .map(|i| {
            // 5 s: room for a SYN retry should the accept queue overflow.
            TcpStream::connect_timeout(&addr, Duration::from_secs(5))
                .unwrap_or_else(|e| panic!("idle connection {i}: {e}"))
        })
        .collect();
    let hog = std::thread::spawn(move || {
        let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut head = b"GET /metrics HTTP/1.1\r\nX-Pad: ".to_vec();
        head.resize(1 << 20, b'a');
        // The server closes before taking all of it.
        let _ = s.write_all(&head);
        let mut got = Vec::new();
        let _ = s.read_to_end(&mut got);
        String::from_utf8_lossy(&got).into_owned()
    });
    let t = Instant::now();
    let body = scrapes(addr, 1).expect("a scrape beside 300 idle clients and a 1 MiB head");
    let took = t.elapsed();
    assert!(took < Duration::from_secs(1), "scrape took {took:?}");
    assert!(body[0].contains("tqfwd_rx_packets_total"), "{}", body[0]);
    let threads_busy = threads_of(p.pid());
    let hog = hog.join().unwrap();
    assert!(
        hog.is_empty() || hog.starts_with("HTTP/1.1 431"),
        "1 MiB head: {hog:?}"
    );
    // No thread per connection (tqfwd's own helper threads may still be
    // starting when the first scrape answers, hence some slack).
    assert!(
        threads_busy < threads_before + 50,
        "{threads_before} threads before, {threads_busy} with 300 clients"
    );
    // 302 accepted under a cap of 256: at least 46 of the idle were closed,
    // the oldest first.
    let shut: Vec<bool> = idle.iter_mut().map(closed).collect();
    let n_shut = shut.iter().filter(|&&c| c).count();
    assert!(n_shut > 300 - 256, "{n_shut} idle connections closed");
    assert!(shut[0] && !shut[299], "oldest closed first: {shut:?}");
    drop(idle);

    // 50 at once, two scrapes each on one keep-alive connection.
    let clients: Vec<_> = (0..50)
        .map(|_| std::thread::spawn(move || scrapes(addr, 2)))
        .collect();
    for (i, c) in clients.into_iter().enumerate() {
        let bodies = c
            .join()
            .unwrap()
            .unwrap_or_else(|e| panic!("client {i}: {e}"));
        assert!(
            bodies.iter().all(|b| b.contains("tqfwd_up 1")),
            "client {i}"
        );
    }

    stop_live(&mut p);
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(j["conservation_ok"], true, "{j}");
    assert_eq!(j["mbufs_in_use"], 0, "{j}");
    let rx = j["rx_packets"].as_u64().unwrap();
    assert!(rx > 0);
    assert_eq!(
        rx,
        j["tx_packets"].as_u64().unwrap() + j["drops_total"].as_u64().unwrap()
    );
    let _ = std::fs::remove_dir_all(&dir);
}
