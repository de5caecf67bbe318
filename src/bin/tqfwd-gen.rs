//! `tqfwd-gen`: writes deterministic test traffic for tqfwd to a pcap file.
//!
//! ```text
//! tqfwd-gen --out FILE.pcap [--flows 64] [--packets 10000] [--size 64] [--odd]
//! ```
//! Packets are IPv4/UDP, round-robin over `--flows` flows, `--size` bytes on
//! the wire (FCS included, so `size - 4` bytes are captured), each carrying a
//! `TQFW` stamp (flow id, per-flow sequence). `--odd` appends the odd-frame
//! set (runts, VLAN/QinQ, IPv6, fragments, malformed headers). Timestamps are
//! 1 µs apart. Prints one summary line; bad arguments exit 2, I/O errors 1.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use tqfwd::testkit::gen::{self, UdpStream};
use tqfwd::testkit::pcap::PcapWriter;
use tqfwd::wire::MacAddr;

#[derive(Parser, Debug)]
#[command(
    name = "tqfwd-gen",
    version,
    about = "Write deterministic tqfwd test traffic (IPv4/UDP flows, optional odd frames) to a pcap file"
)]
struct Args {
    /// Output pcap file (overwritten).
    #[arg(long, value_name = "FILE.pcap")]
    out: PathBuf,

    /// Number of distinct UDP flows (round-robin).
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=16_777_216))]
    flows: u32,

    /// Number of UDP packets (0 allowed, e.g. with --odd).
    #[arg(long, default_value_t = 10_000)]
    packets: u64,

    /// On-wire frame size in bytes including the 4-byte FCS (64..=1518).
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u16).range(64..=1518))]
    size: u16,

    /// Append the odd-frame set (runts, VLAN, QinQ, IPv6, fragments, malformed).
    #[arg(long)]
    odd: bool,

    /// Source MAC of generated UDP frames.
    #[arg(long, default_value = "02:00:00:00:00:01")]
    src_mac: MacAddr,

    /// Destination MAC of generated UDP frames.
    #[arg(long, default_value = "02:00:00:00:00:02")]
    dst_mac: MacAddr,
}

fn run(args: &Args) -> std::io::Result<(u64, u64, usize)> {
    let file = File::create(&args.out)?;
    let mut w = PcapWriter::new(BufWriter::new(file))?;
    let (mut count, mut bytes) = (0u64, 0u64);
    let stream = UdpStream::new(args.flows as usize, usize::from(args.size))
        .macs(args.src_mac.0, args.dst_mac.0);
    for f in stream.take(args.packets as usize) {
        w.write_packet(count * 1_000, &f)?;
        count += 1;
        bytes += f.len() as u64;
    }
    let mut odd = 0;
    if args.odd {
        for (_, f, _) in gen::odd_frames() {
            w.write_packet(count * 1_000, &f)?;
            count += 1;
            bytes += f.len() as u64;
            odd += 1;
        }
    }
    let mut out = w.into_inner();
    out.flush()?;
    out.get_ref().sync_all()?;
    Ok((count, bytes, odd))
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok((count, bytes, odd)) => {
            println!(
                "tqfwd-gen: wrote {count} frames ({bytes} bytes captured) to {}: {} udp over {} flows at {} B on wire, {odd} odd",
                args.out.display(),
                args.packets,
                args.flows,
                args.size
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("tqfwd-gen: error: cannot write {}: {e}", args.out.display());
            ExitCode::from(1)
        }
    }
}
