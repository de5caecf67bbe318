//! The command line: `tqfwd [EAL options] -- [options]`.
//!
//! EAL options (everything before the first `--`) go to `rte_eal_init`
//! untouched; the options after it are parsed here with clap, before EAL
//! starts, so `--help` and most usage errors need no DPDK at all. Usage
//! errors become one line on stderr and exit code 2. The `--config` file
//! is read and merged in by [`super::invocation`], which uses this module
//! and [`super::file`]; this one uses neither.
//!
//! The value parsers below return `String` errors: clap would take any
//! error type, but it only renders them into its own "invalid value" line
//! (the `clap::Error` that [`super::invocation::InvocationError::Args`]
//! wraps), so a type of their own would have no reader. `--class` and the
//! corelists have typed errors ([`ClassError`](super::class::ClassError),
//! [`CorelistError`](super::corelist::CorelistError)): they are read
//! beyond clap too (the plan's class checks, a class's LCORES).

use crate::config::class::{parse_class, ClassSpec};
use crate::config::corelist::{parse_corelist, CorelistError};
use crate::queue::MAX_BURST;
use crate::wire::MacAddr;
use clap::{ArgMatches, CommandFactory, FromArgMatches, Parser, ValueEnum};
use std::net::SocketAddr;
use std::path::PathBuf;

/// Hand-off queue implementation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Backend {
    /// TransferQueue: burst units published with one CAS, detached with one swap
    Tq,
    /// DPDK rte_ring (SP/SC when sharded, MP/SC when shared)
    Ring,
}

/// How producers are wired to consumers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Topology {
    /// One single-producer queue per producer→consumer pair, polled round-robin
    Sharded,
    /// One multi-producer queue per consumer
    Shared,
}

/// How packets move through the hand-off queues.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Handoff {
    /// As zero-copy, and where every RX lcore is also a TX lcore, one worker
    /// serves them, there is no --class and the backend is tq: the worker
    /// processes each transfer unit where it lies and hands it back to the
    /// RX lcore that filled it, which transmits from it (one queue per
    /// RX lcore, no worker→TX queue)
    RoundTrip,
    /// In place where the layout allows: RX writes packets straight into the queue's
    /// slots (a single worker, no --class), workers move packets
    /// slot to slot (one TX lcore), TX transmits from the slots; rte_ring
    /// uses DPDK's zero-copy ring API (SP/SC, HTS producers when shared)
    ZeroCopy,
    /// Through per-stage bursts: copied into the queue and out of it (the
    /// classic rte_ring_enqueue_burst/dequeue_burst way)
    Copy,
}

impl Handoff {
    pub fn name(self) -> &'static str {
        match self {
            Handoff::RoundTrip => "round-trip",
            Handoff::ZeroCopy => "zero-copy",
            Handoff::Copy => "copy",
        }
    }
}

/// What a producer does when its hand-off queue is full.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OnFull {
    /// Free the packets and count them under `*_handoff_full`
    Drop,
    /// Keep them and stop taking input until the queue has room (back-pressure)
    Wait,
}

impl Backend {
    pub fn name(self) -> &'static str {
        match self {
            Backend::Tq => "tq",
            Backend::Ring => "ring",
        }
    }
}

impl Topology {
    pub fn name(self) -> &'static str {
        match self {
            Topology::Sharded => "sharded",
            Topology::Shared => "shared",
        }
    }
}

impl OnFull {
    pub fn name(self) -> &'static str {
        match self {
            OnFull::Drop => "drop",
            OnFull::Wait => "wait",
        }
    }
}

pub const MAX_DEPTH: u32 = 1 << 20;

const AFTER_HELP: &str = "\
Usage: tqfwd [EAL options] -- [options]

EAL options come first and go to rte_eal_init unchanged, e.g.
  -l 0-1 --no-pci --vdev=net_null0 --vdev=net_null1          (virtual ports)
  -l 2-5 -a 0000:3b:00.0 -a 0000:3b:00.1 --file-prefix tq    (bound NICs)
--config FILE, --completions SHELL and --man may also stand before `--` (EAL has no
options of those names). With --config, the file's eal list goes before the EAL options
on the command line; every application option on the command line replaces the file's.
Ports are paired like l2fwd: 0<->1, 2<->3; an odd last port forwards to itself.
Default lcore split: 1 lcore = everything on main; 2 lcores = main RX+TX, the other worker;
3+ lcores = main RX, last TX, the rest workers.";

#[derive(Debug, Clone, Parser)]
#[command(name = "tqfwd", version, about = "DPDK packet forwarder: RX lcores -> TransferQueue -> workers -> TransferQueue -> TX lcores", after_help = AFTER_HELP)]
pub struct Options {
    /// Hand-off queue implementation
    #[arg(long, value_enum, default_value_t = Backend::Tq)]
    pub backend: Backend,

    /// Queue wiring between stages
    #[arg(long, value_enum, default_value_t = Topology::Sharded)]
    pub topology: Topology,

    /// How packets move through the hand-off queues
    #[arg(long, value_enum, default_value_t = Handoff::RoundTrip)]
    pub handoff: Handoff,

    /// RX lcores (DPDK corelist, e.g. 1,3-4)
    #[arg(long, value_name = "LIST", value_parser = parse_corelist_arg)]
    pub rx_lcores: Option<CoreList>,

    /// Worker lcores (DPDK corelist)
    #[arg(long, value_name = "LIST", value_parser = parse_corelist_arg)]
    pub worker_lcores: Option<CoreList>,

    /// TX lcores (DPDK corelist)
    #[arg(long, value_name = "LIST", value_parser = parse_corelist_arg)]
    pub tx_lcores: Option<CoreList>,

    /// RX / hand-off / TX burst size (1-256)
    #[arg(allow_negative_numbers = true, long, value_name = "N", default_value_t = 32, value_parser = clap::value_parser!(u16).range(1..=MAX_BURST as i64))]
    pub burst: u16,

    /// Packets per hand-off batch (a TransferQueue unit; what an in-place stage takes per queue operation), from --burst to 256: RX fills one with rx_burst calls of --burst while they come back full, TX sends it a burst at a time (default: twice --burst, at most 256; --burst with --handoff copy)
    #[arg(allow_negative_numbers = true, long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=MAX_BURST as i64))]
    pub handoff_batch: Option<u16>,

    /// Capacity of each hand-off queue in packets, a power of two (ring slots; tq holds the same N at any burst size, split over a shared queue's producers)
    #[arg(allow_negative_numbers = true, long, value_name = "N", default_value_t = 2048, value_parser = parse_depth)]
    pub depth: u32,

    /// What to do when a hand-off queue or a port's TX queue is full. Both modes first hold the packets and stop taking input, so the excess stays in the NIC; drop: a consumer that refuses for longer than --drop-after is stalled and its packets are freed and counted instead of holding up the others
    #[arg(long, value_enum, default_value_t = OnFull::Drop)]
    pub on_full: OnFull,

    /// With --on-full drop: microseconds refused packets are held before their consumer (worker, TX lcore, port) counts as stalled and its packets are dropped; 0 = drop at once (no holding)
    #[arg(allow_negative_numbers = true, long, value_name = "USEC", default_value_t = 1000, value_parser = clap::value_parser!(u32).range(0..=10_000_000))]
    pub drop_after: u32,

    /// Benchmark knob: take at most MPPS million packets per second from the ports (a token bucket on the RX stage, split evenly over the RX lcores; the excess stays in the NIC)
    #[arg(allow_negative_numbers = true, long, value_name = "MPPS", value_parser = parse_mpps)]
    pub rx_rate: Option<f64>,

    /// Test knob: worker IDX (0-based, in --worker-lcores order) sleeps MS milliseconds once, at its first packet
    #[arg(long, value_name = "IDX:MS", value_parser = parse_stall, hide = true)]
    pub debug_stall_worker: Option<(u32, u32)>,

    /// Test knob: quit once packets were received and none came for MS milliseconds (a finite pcap drained)
    #[arg(long, value_name = "MS", hide = true, value_parser = clap::value_parser!(u32).range(1..=60_000))]
    pub debug_exit_when_idle: Option<u32>,

    /// Test knob: the --capture writer waits MS milliseconds before it takes its first copy (so its ring overflows)
    #[arg(long, value_name = "MS", hide = true, value_parser = clap::value_parser!(u32).range(0..=60_000))]
    pub debug_capture_stall: Option<u32>,

    /// Write the first --capture-count frames received on port PORT to FILE as pcapng (repeatable, one per port; the port's name is the pcapng interface name, timestamps are the RX times). Copies are made on the RX lcore into a bounded ring and written by a separate thread: a full ring drops the copy (capture_dropped), never the packet
    #[arg(long = "capture", value_name = "PORT:FILE", value_parser = parse_capture)]
    pub capture: Vec<(u16, PathBuf)>,

    /// Do not call rte_pdump_init: dpdk-dumpcap / dpdk-pdump cannot attach. By default they can (a tqfwd started without --in-memory; give them its --file-prefix)
    #[arg(long)]
    pub no_pdump: bool,

    /// Frames --capture writes per port (the first N received)
    #[arg(allow_negative_numbers = true, long, value_name = "N", default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..=1_000_000_000))]
    pub capture_count: u64,

    /// Destination MAC for frames leaving PORT (repeatable); default 02:00:00:00:00:<tx port>
    #[arg(long = "peer-mac", value_name = "PORT=MAC", value_parser = parse_peer_mac)]
    pub peer_mac: Vec<(u16, MacAddr)>,

    /// Forward frames with their MAC addresses untouched
    #[arg(long)]
    pub no_mac_rewrite: bool,

    /// Route by destination (L3 mode): longest-prefix match of each frame's IPv4 or IPv6 destination in FILE (l3fwd's `R<prefix>/<len> <port>` lines, and `nexthop NAME port P mac MAC` / `route PREFIX via NAME`), TTL or hop limit decremented, the next hop's MACs written; SIGHUP reads FILE again (docs/forwarding.md)
    #[arg(long, value_name = "FILE", conflicts_with = "no_mac_rewrite")]
    pub routes: Option<PathBuf>,

    /// Routes per address family a --routes file may hold
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_ROUTES, value_parser = parse_max_routes)]
    pub max_routes: usize,

    /// Stop after SECS seconds of forwarding; otherwise run until SIGINT/SIGTERM/SIGQUIT (SIGUSR1 logs the totals; SIGHUP reloads the --config file)
    #[arg(allow_negative_numbers = true, long, value_name = "SECS", value_parser = parse_seconds)]
    pub duration: Option<f64>,

    /// Print one stats line every SECS seconds (0 = off)
    #[arg(allow_negative_numbers = true, long, value_name = "SECS", default_value_t = 1.0, value_parser = parse_seconds_or_zero)]
    pub stats_interval: f64,

    /// tqfwd's own log level: off, error, warn, info, debug, trace (default: RUST_LOG's filter, else info); DPDK's log is EAL's --log-level
    #[arg(long, value_name = "LEVEL", value_parser = ["off", "error", "warn", "info", "debug", "trace"])]
    pub log_level: Option<String>,

    /// Write the final statistics as JSON to PATH
    #[arg(long, value_name = "PATH")]
    pub stats_json: Option<PathBuf>,

    /// Serve Prometheus metrics at http://ADDR:PORT/metrics while forwarding (e.g. 127.0.0.1:9470; bound before EAL starts)
    #[arg(long, value_name = "ADDR:PORT", value_parser = parse_metrics_addr)]
    pub metrics: Option<SocketAddr>,

    /// Busy-loop this many TSC cycles per packet in the worker (simulated per-packet work; skipped once a stop is requested)
    #[arg(
        allow_negative_numbers = true,
        long,
        value_name = "CYCLES",
        default_value_t = 0
    )]
    pub worker_cycles: u32,

    /// Application class NAME:MATCH:LCORES (repeatable), e.g. kv:udp,dst-port=8080:2-3. MATCH terms (all must hold): udp | tcp | proto=N | src=A.B.C.D/LEN | dst=A.B.C.D/LEN | src-port=N | dst-port=N. Matching traffic is handled only by the class's worker lcores (and, where the NIC accepts rte_flow rules, received on the class's own RX queue); the rest goes to the default workers
    #[arg(long = "class", value_name = "NAME:MATCH:LCORES", value_parser = parse_class)]
    pub class: Vec<ClassSpec>,

    /// Measure RX-to-TX latency: stamp the TSC at RX (mbuf dynfield), read it just before TX
    #[arg(long)]
    pub latency: bool,

    /// With --latency, stamp 1 packet in N (the others carry no stamp)
    #[arg(allow_negative_numbers = true, long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub latency_sample: u32,

    /// Mbufs per NUMA socket's pool, at least its ports' RX descriptors + one burst per lcore (default: sized for descriptors + queue capacity + caches)
    #[arg(allow_negative_numbers = true, long, value_name = "N", value_parser = clap::value_parser!(u32).range(64..=16_777_216))]
    pub mbufs: Option<u32>,

    /// Largest frame to receive, in bytes from the Ethernet header to the end of the payload (no FCS): sets each port's MTU to SIZE - 14 and turns on RX scatter where such frames need several mbufs (default: the port's default MTU + 14, usually 1514)
    #[arg(allow_negative_numbers = true, long, value_name = "SIZE", value_parser = clap::value_parser!(u32).range(64..=65535))]
    pub max_frame: Option<u32>,

    /// RX descriptors per queue (adjusted to the device's limits)
    #[arg(allow_negative_numbers = true, long, value_name = "N", default_value_t = 1024, value_parser = clap::value_parser!(u16).range(1..))]
    pub rx_desc: u16,

    /// TX descriptors per queue (adjusted to the device's limits)
    #[arg(allow_negative_numbers = true, long, value_name = "N", default_value_t = 1024, value_parser = clap::value_parser!(u16).range(1..))]
    pub tx_desc: u16,

    /// Seconds to wait for links to come up before forwarding anyway (and for a memif client's server before failing)
    #[arg(allow_negative_numbers = true, long, value_name = "SECS", default_value_t = 3.0, value_parser = parse_seconds_or_zero)]
    pub link_timeout: f64,

    /// Read options from a TOML file (keys = the long option names, e.g. burst = 64; EAL arguments in eal = [...], before any given on the command line); an option given on the command line replaces the file's value, a repeatable one the file's whole list. SIGHUP reads the file again and applies log-level, peer-mac, no-mac-rewrite, rx-rate, on-full, drop-after, stats-interval and routes (the route file read again) while forwarding; a change to any other key refuses the whole reload
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Print a completion script for SHELL (bash, zsh, fish, elvish, powershell) and exit
    #[arg(long, value_name = "SHELL")]
    pub completions: Option<clap_complete::Shell>,

    /// Print the manual page (roff) and exit
    #[arg(long)]
    pub man: bool,

    /// The devices the EAL arguments ask for (`-a`, `--allow`, `--vdev`);
    /// filled from the EAL half of the command line, see [`requested_devices`].
    #[arg(skip)]
    pub devices: Vec<RequestedDevice>,
}

/// A device named in the EAL arguments: it must become a port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestedDevice {
    /// The option as given: `--vdev`, `-a` or `--allow`.
    pub option: &'static str,
    /// The device name (text before the first comma; a PCI address in its
    /// full, lower-case form `0000:01:00.0`).
    pub name: String,
    /// The whole argument, name and devargs.
    pub args: String,
}

impl RequestedDevice {
    /// The value of devarg `key` (`socket` in `net_memif0,socket=/x.sock`).
    pub fn devarg(&self, key: &str) -> Option<&str> {
        self.args
            .split(',')
            .skip(1)
            .find_map(|kv| kv.split_once('=').filter(|(k, _)| k.trim() == key))
            .map(|(_, v)| v)
    }
}

/// A PCI address in the form DPDK names ports by: lower case, with the
/// domain (`01:00.0` → `0000:01:00.0`); other names unchanged.
pub fn canonical_device_name(name: &str) -> String {
    let lower = name.trim().to_ascii_lowercase();
    let lower = lower.strip_prefix("pci:").unwrap_or(&lower).to_string();
    let is_bdf = |s: &str| {
        let b = s.as_bytes();
        b.len() == 7
            && b[..2].iter().all(u8::is_ascii_hexdigit)
            && b[2] == b':'
            && b[3..5].iter().all(u8::is_ascii_hexdigit)
            && b[5] == b'.'
            && b[6].is_ascii_digit()
    };
    if is_bdf(&lower) {
        format!("0000:{lower}")
    } else {
        lower
    }
}

/// The devices that `-a`/`--allow`/`--vdev` in the EAL arguments ask for,
/// in order. vdev names keep their case (DPDK matches them as given); only
/// Ethernet vdevs (`net_*`, `eth_*`) count: `crypto_*`, `event_*` and the
/// like never become ports.
pub fn requested_devices(eal: &[String]) -> Vec<RequestedDevice> {
    let mut out = Vec::new();
    let mut it = eal.iter().skip(1);
    while let Some(a) = it.next() {
        let (option, value) = match a.as_str() {
            "--vdev" | "-a" | "--allow" => {
                let option = match a.as_str() {
                    "--vdev" => "--vdev",
                    "-a" => "-a",
                    _ => "--allow",
                };
                match it.next() {
                    Some(v) => (option, v.clone()),
                    None => break,
                }
            }
            s => {
                if let Some(v) = s.strip_prefix("--vdev=") {
                    ("--vdev", v.to_string())
                } else if let Some(v) = s.strip_prefix("--allow=") {
                    ("--allow", v.to_string())
                } else if let Some(v) = s.strip_prefix("-a").filter(|v| !v.is_empty()) {
                    ("-a", v.to_string())
                } else {
                    continue;
                }
            }
        };
        let raw = value.split(',').next().unwrap_or("").trim();
        let name = if option == "--vdev" {
            raw.to_string()
        } else {
            canonical_device_name(raw)
        };
        let ethernet = option != "--vdev" || name.starts_with("net_") || name.starts_with("eth_");
        if !name.is_empty() && ethernet {
            out.push(RequestedDevice {
                option,
                name,
                args: value,
            });
        }
    }
    out
}

/// Command-line split at the first `--`.
#[derive(Debug)]
pub struct SplitArgs {
    /// argv[0] followed by the EAL options.
    pub eal: Vec<String>,
    /// argv[0] followed by the application options.
    pub app: Vec<String>,
}

/// Splits argv at the first `--`. Without a `--`, everything is EAL's,
/// except a lone `--help`/`-h`/`--version`/`-V`, which is ours (so
/// `tqfwd --help` works without EAL). `--config FILE`, `--completions
/// SHELL` and `--man` are ours wherever they stand: EAL has no options of
/// those names.
pub fn split_args(argv: &[String]) -> SplitArgs {
    let mut split = split_at_dashes(argv);
    let mut eal = Vec::with_capacity(split.eal.len());
    let mut ours = Vec::new();
    let mut it = split.eal.drain(..);
    eal.extend(it.next());
    while let Some(a) = it.next() {
        match a.as_str() {
            "--config" | "--completions" => {
                ours.push(a);
                ours.extend(it.next());
            }
            "--man" => ours.push(a),
            s if s.starts_with("--config=") || s.starts_with("--completions=") => ours.push(a),
            _ => eal.push(a),
        }
    }
    drop(it);
    split.eal = eal;
    split.app.splice(1..1, ours);
    split
}

fn split_at_dashes(argv: &[String]) -> SplitArgs {
    let prog = argv.first().cloned().unwrap_or_else(|| "tqfwd".into());
    let rest = if argv.is_empty() { &[][..] } else { &argv[1..] };
    match rest.iter().position(|a| a == "--") {
        Some(i) => SplitArgs {
            eal: std::iter::once(prog.clone())
                .chain(rest[..i].iter().cloned())
                .collect(),
            app: std::iter::once(prog)
                .chain(rest[i + 1..].iter().cloned())
                .collect(),
        },
        None => {
            if rest
                .iter()
                .any(|a| a == "--help" || a == "-h" || a == "--version" || a == "-V")
            {
                let app = rest
                    .iter()
                    .filter(|a| matches!(a.as_str(), "--help" | "-h" | "--version" | "-V"))
                    .cloned();
                SplitArgs {
                    eal: vec![prog.clone()],
                    app: std::iter::once(prog).chain(app).collect(),
                }
            } else {
                SplitArgs {
                    eal: std::iter::once(prog.clone())
                        .chain(rest.iter().cloned())
                        .collect(),
                    app: vec![prog],
                }
            }
        }
    }
}

/// A parsed DPDK corelist (sorted, no duplicates).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CoreList(pub Vec<u32>);

fn parse_corelist_arg(s: &str) -> Result<CoreList, CorelistError> {
    parse_corelist(s).map(CoreList)
}

fn parse_depth(s: &str) -> Result<u32, String> {
    let v: u32 = s.parse().map_err(|_| format!("'{s}' is not a number"))?;
    if !(2..=MAX_DEPTH).contains(&v) || !v.is_power_of_two() {
        return Err(format!("{v} must be a power of two from 2 to {MAX_DEPTH}"));
    }
    Ok(v)
}

fn parse_mpps(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .parse()
        .map_err(|_| format!("'{s}' is not a number of Mpps"))?;
    if !(v > 0.0 && v.is_finite() && v <= 10_000.0) {
        return Err(format!(
            "{s} must be a rate in Mpps above 0 and at most 10000"
        ));
    }
    Ok(v)
}

fn parse_stall(s: &str) -> Result<(u32, u32), String> {
    let (i, ms) = s
        .split_once(':')
        .ok_or_else(|| format!("'{s}' is not IDX:MS (e.g. 1:2000)"))?;
    let i: u32 = i
        .trim()
        .parse()
        .map_err(|_| format!("'{i}' is not a worker index (in IDX:MS)"))?;
    let ms: u32 = ms
        .trim()
        .parse()
        .map_err(|_| format!("'{ms}' is not a number of milliseconds (in IDX:MS)"))?;
    Ok((i, ms))
}

fn parse_capture(s: &str) -> Result<(u16, PathBuf), String> {
    let (p, f) = s
        .split_once(':')
        .ok_or_else(|| format!("'{s}' is not PORT:FILE (e.g. 0:/tmp/port0.pcapng)"))?;
    let port: u16 = p
        .trim()
        .parse()
        .map_err(|_| format!("'{p}' is not a port number (in PORT:FILE)"))?;
    if f.is_empty() {
        return Err(format!("'{s}' has no FILE (in PORT:FILE)"));
    }
    Ok((port, PathBuf::from(f)))
}

/// `--max-routes` unless given: routes per address family a route file
/// may hold (`config::routes` counts against it).
pub const DEFAULT_MAX_ROUTES: usize = 2_000_000;

fn parse_max_routes(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if (1..=100_000_000).contains(&n) => Ok(n),
        _ => Err(format!("'{s}' is not a route count: give 1 to 100000000")),
    }
}

fn parse_peer_mac(s: &str) -> Result<(u16, MacAddr), String> {
    let (p, m) = s
        .split_once('=')
        .ok_or_else(|| format!("'{s}' is not PORT=MAC (e.g. 0=02:00:00:00:00:01)"))?;
    let port: u16 = p
        .trim()
        .parse()
        .map_err(|_| format!("'{p}' is not a port number (in PORT=MAC)"))?;
    let mac: MacAddr = m.trim().parse().map_err(|e| format!("{e}"))?;
    Ok((port, mac))
}

fn parse_seconds(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .parse()
        .map_err(|_| format!("'{s}' is not a number of seconds"))?;
    if !(v > 0.0 && v.is_finite() && v <= 1e7) {
        return Err(format!("{s} must be a positive number of seconds"));
    }
    Ok(v)
}

fn parse_metrics_addr(s: &str) -> Result<SocketAddr, String> {
    s.parse().map_err(|_| {
        format!("'{s}' is not ADDR:PORT: give an IP address and a port, e.g. 127.0.0.1:9470 or [::1]:9470")
    })
}

fn parse_seconds_or_zero(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .parse()
        .map_err(|_| format!("'{s}' is not a number of seconds"))?;
    if !(v >= 0.0 && v.is_finite() && v <= 1e7) {
        return Err(format!("{s} must be zero or a positive number of seconds"));
    }
    Ok(v)
}

/// Parses the application options (a `--config` file is not read: see
/// [`super::invocation::parse_invocation`]). `--help` and `--version` are
/// errors of kind `DisplayHelp` / `DisplayVersion` holding their text, as
/// clap has them.
pub fn parse_options(app_args: &[String]) -> Result<Options, clap::Error> {
    Options::from_arg_matches(&matches(app_args)?)
}

/// Tests' shorthand: the options of `tqfwd ARGS...`, which must parse.
#[cfg(test)]
pub(crate) fn test_options(args: &[&str]) -> Options {
    let argv: Vec<String> = std::iter::once("tqfwd")
        .chain(args.iter().copied())
        .map(String::from)
        .collect();
    parse_options(&argv).unwrap_or_else(|_| panic!("options {args:?} do not parse"))
}

/// clap's matches for `app_args` (argv[0] first).
pub(crate) fn matches(app_args: &[String]) -> Result<ArgMatches, clap::Error> {
    Options::command().try_get_matches_from(app_args)
}

/// The first line of a clap error, without its `error: ` prefix.
pub fn clap_error_line(e: &clap::Error) -> String {
    let text = e.to_string();
    let line = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("bad arguments");
    line.trim_start_matches("error: ").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    fn is_help(e: &clap::Error) -> bool {
        e.kind() == clap::error::ErrorKind::DisplayHelp
    }

    #[test]
    fn requested() {
        let d = requested_devices(&s(&[
            "tqfwd",
            "-l",
            "0-1",
            "--vdev=net_pcap0,rx_pcap=a.pcap",
            "--vdev",
            "net_memif0,role=client,socket=/tmp/x.sock",
            "-a",
            "01:00.0",
            "-a0000:3B:00.1,foo=1",
            "--allow=pci:02:00.0",
            "--vdev=crypto_null0",
            "--file-prefix",
            "x",
        ]));
        let names: Vec<(&str, &str)> = d.iter().map(|d| (d.option, d.name.as_str())).collect();
        assert_eq!(
            names,
            vec![
                ("--vdev", "net_pcap0"),
                ("--vdev", "net_memif0"),
                ("-a", "0000:01:00.0"),
                ("-a", "0000:3b:00.1"),
                ("--allow", "0000:02:00.0"),
            ]
        );
        assert_eq!(d[1].devarg("socket"), Some("/tmp/x.sock"));
        assert_eq!(d[1].devarg("sock"), None);
        assert_eq!(canonical_device_name("net_null0"), "net_null0");
    }

    #[test]
    fn split() {
        let a = split_args(&s(&["tqfwd", "-l", "0-1", "--", "--burst", "8"]));
        assert_eq!(a.eal, s(&["tqfwd", "-l", "0-1"]));
        assert_eq!(a.app, s(&["tqfwd", "--burst", "8"]));
        let b = split_args(&s(&["tqfwd", "--help"]));
        assert_eq!(b.app, s(&["tqfwd", "--help"]));
        let c = split_args(&s(&["tqfwd", "-l", "0"]));
        assert_eq!(c.eal, s(&["tqfwd", "-l", "0"]));
        assert_eq!(c.app, s(&["tqfwd"]));
        // --config / --completions / --man are ours before `--` too.
        let d = split_args(&s(&[
            "tqfwd", "--config", "f.toml", "-l", "0", "--", "--burst", "8",
        ]));
        assert_eq!(d.eal, s(&["tqfwd", "-l", "0"]));
        assert_eq!(d.app, s(&["tqfwd", "--config", "f.toml", "--burst", "8"]));
        let e = split_args(&s(&["tqfwd", "--completions=bash", "--man", "--in-memory"]));
        assert_eq!(e.eal, s(&["tqfwd", "--in-memory"]));
        assert_eq!(e.app, s(&["tqfwd", "--completions=bash", "--man"]));
    }

    #[test]
    fn options_ranges() {
        let ok = parse_options(&s(&[
            "tqfwd",
            "--burst",
            "256",
            "--depth",
            "4096",
            "--peer-mac",
            "1=02:00:00:00:00:09",
        ]))
        .unwrap();
        assert_eq!(ok.burst, 256);
        assert_eq!(ok.peer_mac[0].0, 1);
        let roles = parse_options(&s(&[
            "tqfwd",
            "--rx-lcores",
            "0-1",
            "--worker-lcores",
            "1",
            "--tx-lcores",
            "0,1",
        ]))
        .unwrap();
        assert_eq!(roles.rx_lcores, Some(CoreList(vec![0, 1])));
        assert_eq!(roles.worker_lcores, Some(CoreList(vec![1])));
        assert_eq!(roles.tx_lcores, Some(CoreList(vec![0, 1])));
        for bad in [
            &["tqfwd", "--burst", "0"][..],
            &["tqfwd", "--burst", "257"],
            &["tqfwd", "--depth", "1000"],
            &["tqfwd", "--depth", "0"],
            &["tqfwd", "--peer-mac", "1=zz"],
            &["tqfwd", "--peer-mac", "02:00:00:00:00:01"],
            &["tqfwd", "--backend", "x"],
            &["tqfwd", "--duration", "-1"],
            &["tqfwd", "--rx-rate", "0"],
            &["tqfwd", "--rx-rate", "nan"],
            &["tqfwd", "--rx-rate", "x"],
            &["tqfwd", "--drop-after", "-5"],
            &["tqfwd", "--drop-after", "10000001"],
            &["tqfwd", "--debug-stall-worker", "1"],
        ] {
            match parse_options(&s(bad)) {
                Err(e) if !is_help(&e) => {
                    let line = clap_error_line(&e);
                    assert!(!line.contains('\n'), "{line}")
                }
                other => panic!("{bad:?} accepted: {other:?}"),
            }
        }
        assert!(parse_options(&s(&["tqfwd", "--help"])).is_err_and(|e| is_help(&e)));
        // A negative number is a bad value of the option, named as such (not
        // an unknown argument '-3').
        for (opt, v) in [
            ("--duration", "-3"),
            ("--stats-interval", "-1"),
            ("--rx-rate", "-2"),
            ("--drop-after", "-5"),
            ("--burst", "-1"),
        ] {
            match parse_options(&s(&["tqfwd", opt, v])) {
                Err(e) if !is_help(&e) => {
                    let line = clap_error_line(&e);
                    assert!(line.contains(opt) && line.contains(v), "{opt} {v}: {line}")
                }
                other => panic!("{opt} {v} accepted: {other:?}"),
            }
        }
    }
}
