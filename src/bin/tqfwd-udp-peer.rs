//! `tqfwd-udp-peer`: a kernel UDP sender and receiver, the real peers of
//! tqfwd's end-to-end tests on `net_af_packet` (run them in network
//! namespaces with `ip netns exec`).
//!
//! ```text
//! tqfwd-udp-peer send --dst IP:PORT [--flows 8] [--count 1000] [--src-port-base P]
//!                     [--pps 5000] [--size 64] [--warmup-ms 500]
//! tqfwd-udp-peer recv --bind IP:PORT --expect N [--timeout 30] [--linger-ms 300]
//! ```
//!
//! `send` opens one UDP socket per flow (distinct source ports: `P + flow`,
//! or kernel-chosen ones without `--src-port-base`) and sends `--count`
//! datagrams in total, round-robin over the flows, paced at `--pps`. Each
//! payload carries `TQUP`, a kind byte, the flow id and a per-flow sequence
//! number. With `--warmup-ms` > 0 it first sends one *warm-up* datagram
//! (kind 1, not counted) and waits that long, so the sender's neighbour
//! (ARP) entry is resolved before the counted ones: datagrams the kernel
//! parks while it resolves a neighbour can be released out of order.
//!
//! `recv` counts counted datagrams until `--expect` distinct ones arrived
//! (then listens `--linger-ms` longer for duplicates) or `--timeout` passed,
//! and prints one JSON line: received, unique, duplicates, per-flow order
//! violations, missing, warm-ups, foreign datagrams. It prints
//! `listening on ADDR` on stderr once bound.
//!
//! Exit codes: 0 = everything expected arrived exactly once and in order
//! per flow (send: everything was sent); 1 = otherwise; 2 = bad arguments.

#![forbid(unsafe_code)]

use std::collections::BTreeMap;
use std::io::ErrorKind;
use std::net::{SocketAddr, UdpSocket};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{Parser, Subcommand};

const MAGIC: [u8; 4] = *b"TQUP";
const KIND_DATA: u8 = 0;
const KIND_WARMUP: u8 = 1;
/// magic(4) kind(1) pad(3) flow(4 BE) seq(8 BE)
const HEADER: usize = 20;

#[derive(Parser, Debug)]
#[command(
    name = "tqfwd-udp-peer",
    version,
    about = "Kernel UDP sender/receiver for tqfwd tests (flow id + sequence in every payload)"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Send COUNT datagrams round-robin over FLOWS sockets (one source port each)
    Send {
        /// Destination address
        #[arg(long, value_name = "IP:PORT")]
        dst: SocketAddr,
        /// Number of flows (one socket, one source port each)
        #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=4096))]
        flows: u32,
        /// Total number of counted datagrams
        #[arg(long, default_value_t = 1000)]
        count: u64,
        /// Source port of flow 0 (flow i uses BASE + i); default: kernel-chosen ports
        #[arg(long, value_name = "P", value_parser = clap::value_parser!(u16).range(1..))]
        src_port_base: Option<u16>,
        /// Datagrams per second (0 = as fast as the kernel takes them)
        #[arg(long, default_value_t = 5000)]
        pps: u64,
        /// UDP payload bytes (at least 20)
        #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u16).range(HEADER as i64..=1400))]
        size: u16,
        /// Send one uncounted warm-up datagram first and wait this long (ARP resolution); 0 = none
        #[arg(long, default_value_t = 500)]
        warmup_ms: u64,
    },
    /// Receive and check datagrams sent by `send`
    Recv {
        /// Local address to bind
        #[arg(long, value_name = "IP:PORT")]
        bind: SocketAddr,
        /// Number of distinct counted datagrams expected
        #[arg(long)]
        expect: u64,
        /// Give up after this many seconds
        #[arg(long, default_value_t = 30.0)]
        timeout: f64,
        /// After the last expected datagram, keep listening this long for duplicates
        #[arg(long, default_value_t = 300)]
        linger_ms: u64,
    },
}

fn payload(kind: u8, flow: u32, seq: u64, size: usize) -> Vec<u8> {
    let mut p = vec![0u8; size];
    p[0..4].copy_from_slice(&MAGIC);
    p[4] = kind;
    p[8..12].copy_from_slice(&flow.to_be_bytes());
    p[12..20].copy_from_slice(&seq.to_be_bytes());
    for (i, b) in p[HEADER..].iter_mut().enumerate() {
        *b = (i as u8) ^ (flow as u8);
    }
    p
}

fn parse(p: &[u8]) -> Option<(u8, u32, u64)> {
    if p.len() < HEADER || p[0..4] != MAGIC {
        return None;
    }
    let flow = u32::from_be_bytes(p[8..12].try_into().ok()?);
    let seq = u64::from_be_bytes(p[12..20].try_into().ok()?);
    Some((p[4], flow, seq))
}

/// Sends one datagram, retrying briefly when the kernel is out of buffers.
fn send_one(s: &UdpSocket, p: &[u8]) -> std::io::Result<()> {
    let mut tries = 0;
    loop {
        match s.send(p) {
            Ok(_) => return Ok(()),
            Err(e)
                if tries < 200
                    && (e.kind() == ErrorKind::WouldBlock
                        || e.raw_os_error() == Some(libc::ENOBUFS)) =>
            {
                tries += 1;
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(e) => return Err(e),
        }
    }
}

fn send(
    dst: SocketAddr,
    flows: u32,
    count: u64,
    base: Option<u16>,
    pps: u64,
    size: usize,
    warmup_ms: u64,
) -> Result<bool, String> {
    let unspecified: SocketAddr = if dst.is_ipv4() {
        "0.0.0.0:0".parse().unwrap()
    } else {
        "[::]:0".parse().unwrap()
    };
    let mut socks = Vec::with_capacity(flows as usize);
    for f in 0..flows {
        let mut local = unspecified;
        if let Some(b) = base {
            let port = u32::from(b) + f;
            if port > 65535 {
                return Err(format!(
                    "--src-port-base {b} + {flows} flows exceeds port 65535"
                ));
            }
            local.set_port(port as u16);
        }
        let s = UdpSocket::bind(local).map_err(|e| format!("bind {local}: {e}"))?;
        s.connect(dst).map_err(|e| format!("connect {dst}: {e}"))?;
        socks.push(s);
    }
    if warmup_ms > 0 {
        send_one(&socks[0], &payload(KIND_WARMUP, 0, 0, size))
            .map_err(|e| format!("warm-up send to {dst}: {e}"))?;
        std::thread::sleep(Duration::from_millis(warmup_ms));
    }
    let start = Instant::now();
    let mut sent = 0u64;
    let mut errors = 0u64;
    let mut first_error = None;
    for i in 0..count {
        if pps > 0 {
            let due = Duration::from_secs_f64(i as f64 / pps as f64);
            let now = start.elapsed();
            if due > now + Duration::from_micros(500) {
                std::thread::sleep(due - now);
            }
        }
        let flow = (i % u64::from(flows)) as u32;
        let seq = i / u64::from(flows);
        match send_one(&socks[flow as usize], &payload(KIND_DATA, flow, seq, size)) {
            Ok(()) => sent += 1,
            Err(e) => {
                errors += 1;
                first_error.get_or_insert_with(|| e.to_string());
            }
        }
    }
    let ports: Vec<u16> = socks
        .iter()
        .filter_map(|s| s.local_addr().ok().map(|a| a.port()))
        .collect();
    let out = serde_json::json!({
        "sent": sent, "flows": flows, "count": count, "send_errors": errors, "first_error": first_error,
        "warmup": warmup_ms > 0, "elapsed_s": start.elapsed().as_secs_f64(),
        "src_ports": [ports.first(), ports.last()], "dst": dst.to_string(),
    });
    println!("{out}");
    Ok(errors == 0 && sent == count)
}

#[derive(Default)]
struct FlowState {
    seen: std::collections::HashSet<u64>,
    max_seq: Option<u64>,
}

fn recv(bind: SocketAddr, expect: u64, timeout: f64, linger_ms: u64) -> Result<bool, String> {
    let s = UdpSocket::bind(bind).map_err(|e| format!("bind {bind}: {e}"))?;
    s.set_read_timeout(Some(Duration::from_millis(20)))
        .map_err(|e| e.to_string())?;
    eprintln!("tqfwd-udp-peer: listening on {bind}");
    let start = Instant::now();
    let deadline = start + Duration::from_secs_f64(timeout.max(0.0));
    let mut flows: BTreeMap<u32, FlowState> = BTreeMap::new();
    let (mut received, mut unique, mut dups, mut violations, mut warmup, mut foreign) =
        (0u64, 0u64, 0u64, 0u64, 0u64, 0u64);
    let mut first_violation: Option<String> = None;
    let mut complete_at: Option<Instant> = None;
    let mut buf = vec![0u8; 65536];
    let mut timed_out = false;
    loop {
        let now = Instant::now();
        if let Some(t) = complete_at {
            if now >= t + Duration::from_millis(linger_ms) {
                break;
            }
        } else if now >= deadline {
            timed_out = true;
            break;
        }
        let n = match s.recv(&mut buf) {
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                ) =>
            {
                continue
            }
            Err(e) => return Err(format!("recv: {e}")),
        };
        match parse(&buf[..n]) {
            Some((KIND_DATA, flow, seq)) => {
                received += 1;
                let st = flows.entry(flow).or_default();
                if !st.seen.insert(seq) {
                    dups += 1;
                    continue;
                }
                unique += 1;
                if let Some(m) = st.max_seq {
                    if seq < m {
                        violations += 1;
                        first_violation
                            .get_or_insert_with(|| format!("flow {flow}: seq {seq} after {m}"));
                    }
                }
                st.max_seq = Some(st.max_seq.map_or(seq, |m| m.max(seq)));
                if unique >= expect && complete_at.is_none() {
                    complete_at = Some(Instant::now());
                }
            }
            Some((KIND_WARMUP, _, _)) => warmup += 1,
            _ => foreign += 1,
        }
    }
    let missing = expect.saturating_sub(unique);
    // The lowest per-flow highest sequence seen: how far every flow got.
    let last_seq_min = flows.values().filter_map(|f| f.max_seq).min();
    let ok = unique == expect && dups == 0 && violations == 0 && foreign == 0;
    let out = serde_json::json!({
        "received": received, "unique": unique, "expected": expect, "duplicates": dups,
        "order_violations": violations, "first_violation": first_violation, "missing": missing,
        "flows": flows.len(), "warmup": warmup, "foreign": foreign, "timed_out": timed_out, "last_seq_min": last_seq_min,
        "elapsed_s": start.elapsed().as_secs_f64(), "ok": ok,
    });
    println!("{out}");
    Ok(ok)
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    let r = match cli.cmd {
        Cmd::Send {
            dst,
            flows,
            count,
            src_port_base,
            pps,
            size,
            warmup_ms,
        } => send(
            dst,
            flows,
            count,
            src_port_base,
            pps,
            usize::from(size),
            warmup_ms,
        ),
        Cmd::Recv {
            bind,
            expect,
            timeout,
            linger_ms,
        } => recv(bind, expect, timeout, linger_ms),
    };
    match r {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("tqfwd-udp-peer: error: {e}");
            ExitCode::from(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payload_roundtrip() {
        let p = payload(KIND_DATA, 7, 123_456_789_012, 64);
        assert_eq!(p.len(), 64);
        assert_eq!(parse(&p), Some((KIND_DATA, 7, 123_456_789_012)));
        assert_eq!(parse(&p[..10]), None);
        let mut bad = p.clone();
        bad[0] = b'X';
        assert_eq!(parse(&bad), None);
        assert_eq!(
            parse(&payload(KIND_WARMUP, 0, 0, HEADER)),
            Some((KIND_WARMUP, 0, 0))
        );
    }
}
