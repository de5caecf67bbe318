//! Hostile frames: a few thousand deterministic mutants of valid and odd
//! frames (bit flips, truncations at every header boundary, lying IPv4 / UDP
//! / IPv6 length fields, bogus IHL and TCP data offsets, 0–4 VLAN tags,
//! runts of 0–13 bytes, 1514-byte frames) plus the regression frames in
//! `tests/data/`.
//!
//! * `mutants_parse_invariants`: every mutant, in process: `wire::parse`
//!   keeps its offset promises, `flow_hash` agrees with it, `rewrite_macs`
//!   on a copy touches the first 12 bytes only, and every mutant whose class
//!   follows from the spec (module docs of `wire`) independently of the
//!   parser gets that class.
//! * `mutants_through_pipeline_{tq,ring}`: all mutants in one pcap through
//!   `net_pcap` → tqfwd → `net_pcap`: clean end, rx = frames, runts dropped
//!   and counted, everything else out once, in order, bytes after the MACs
//!   untouched, class counts equal to what `parse` says for each input.
//! * `regression_frames_replay`: `tests/data/*.bin` (named
//!   `<what>.<class>.bin`; fuzz crashes go there once fixed, see
//!   scripts/fuzz.sh) parse without panicking, to the recorded class.

use crate::common::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use tqfwd::testkit::gen::{self, Flow};
use tqfwd::testkit::pcap;
use tqfwd::wire::{self, FrameClass};

const SEED: u64 = 0x7166_7764_686f_7374;
const ETH: usize = 14;
const TPIDS: [u16; 3] = [0x8100, 0x88a8, 0x9100];

/// One hostile frame, what produced it, and the class the spec demands when
/// that follows from the mutation alone (None: whatever `parse` says).
struct Mutant {
    label: String,
    frame: Vec<u8>,
    expect: Option<FrameClass>,
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn set16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_be_bytes());
}

/// Valid and odd frames every mutation starts from.
fn bases() -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = gen::odd_frames()
        .into_iter()
        .map(|(l, f, _)| (l.to_string(), f))
        .collect();
    for (i, len) in [64usize, 65, 128, 777, 1518].into_iter().enumerate() {
        let f = gen::udp_frame(
            &Flow::nth(i),
            i as u32,
            0,
            len,
            gen::DEFAULT_SRC_MAC,
            gen::DEFAULT_DST_MAC,
        );
        v.push((format!("udp_{len}"), f));
    }
    v
}

fn find<'a>(bases: &'a [(String, Vec<u8>)], label: &str) -> &'a [u8] {
    &bases
        .iter()
        .find(|(l, _)| l == label)
        .unwrap_or_else(|| panic!("base {label} missing from gen::odd_frames()"))
        .1
}

/// Fuzz regression frames: `tests/data/<what>.<class>.bin`.
fn regression_frames() -> Vec<(PathBuf, Vec<u8>, FrameClass)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let mut v = Vec::new();
    let Ok(rd) = std::fs::read_dir(&dir) else {
        return v;
    };
    let mut paths: Vec<PathBuf> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "bin"))
        .collect();
    paths.sort();
    for p in paths {
        let stem = p.file_stem().unwrap().to_string_lossy().into_owned();
        let class_name = stem.rsplit('.').next().unwrap();
        let class = FrameClass::ALL
            .into_iter()
            .find(|c| c.name() == class_name)
            .unwrap_or_else(|| {
                panic!(
                    "{}: name must end in .<class>.bin with a class of FrameClass::name()",
                    p.display()
                )
            });
        v.push((p.clone(), std::fs::read(&p).unwrap(), class));
    }
    v
}

/// The deterministic mutant set (a few thousand frames).
fn mutants() -> Vec<Mutant> {
    use FrameClass::*;
    let mut rng = XorShift::new(SEED);
    let bases = bases();
    let mut out: Vec<Mutant> = Vec::new();
    let mut push = |label: String, frame: Vec<u8>, expect: Option<FrameClass>| {
        out.push(Mutant {
            label,
            frame,
            expect,
        })
    };

    for (label, f) in &bases {
        push(format!("base {label}"), f.clone(), None);
    }

    // Truncations: every length below the full frame up to 96 bytes (past
    // every header the bases carry: QinQ + IPv4 options + UDP, IPv6 +
    // hop-by-hop + UDP, IPv6 + TCP), then half and len-1 of longer frames.
    for (label, f) in &bases {
        if f.len() < ETH {
            continue;
        }
        let info = wire::parse(f);
        let l3 = usize::from(info.l3_offset);
        let et = if l3 >= ETH { be16(f, l3 - 2) } else { 0 };
        let mut cuts: Vec<usize> = (1..f.len().min(97)).collect();
        cuts.extend(
            [f.len() / 2, f.len() - 1]
                .into_iter()
                .filter(|&c| c >= 97 && c < f.len()),
        );
        for cut in cuts {
            let expect = if cut < ETH {
                Some(Runt)
            } else if l3 > ETH && cut < l3 {
                Some(Malformed) // a VLAN tag cut short
            } else if l3 >= ETH && cut >= l3 && info.class == NonIp {
                Some(NonIp) // non-IP is not looked into
            } else if l3 >= ETH
                && ((et == 0x0800 && cut < l3 + 20) || (et == 0x86dd && cut < l3 + 40))
            {
                Some(Malformed) // IPv4 / IPv6 header cut short
            } else {
                None
            };
            push(format!("{label} cut at {cut}"), f[..cut].to_vec(), expect);
        }
    }

    // IPv4 header fields of every IPv4 base.
    for (label, f) in &bases {
        let info = wire::parse(f);
        let l3 = usize::from(info.l3_offset);
        if !matches!(info.class, Udp | Tcp | OtherIp) || be16(f, l3 - 2) != 0x0800 {
            continue;
        }
        let avail = f.len() - l3;
        let hl = usize::from(f[l3] & 15) * 4;
        let total = usize::from(be16(f, l3 + 2));
        for ihl in 0..16u8 {
            let mut m = f.clone();
            m[l3] = 0x40 | ihl;
            let hl = usize::from(ihl) * 4;
            let bad = hl < 20 || hl > avail || hl > total;
            push(format!("{label} ihl {ihl}"), m, bad.then_some(Malformed));
        }
        for tl in [
            0,
            1,
            19,
            hl - 1,
            hl,
            total - 1,
            total + 1,
            avail,
            avail + 1,
            0xffff,
        ] {
            let mut m = f.clone();
            set16(&mut m, l3 + 2, tl as u16);
            let bad = tl < hl || tl > avail;
            push(
                format!("{label} total_length {tl}"),
                m,
                bad.then_some(Malformed),
            );
        }
        // Flags / fragment offset: DF, MF, offset 1, offset max.
        for frag in [0x4000u16, 0x2000, 0x0001, 0x1fff, 0xffff] {
            let mut m = f.clone();
            set16(&mut m, l3 + 6, frag);
            let expect = (frag & 0x1fff != 0).then_some(OtherIp); // non-first fragment
            push(format!("{label} frag {frag:#06x}"), m, expect);
        }
        // Every protocol number of note.
        for proto in [0u8, 1, 6, 17, 41, 44, 58, 255] {
            let mut m = f.clone();
            m[l3 + 9] = proto;
            push(format!("{label} proto {proto}"), m, None);
        }
    }

    // UDP length field of every unfragmented IPv4/IPv6 UDP base.
    for (label, f) in &bases {
        let info = wire::parse(f);
        if info.class != Udp {
            continue;
        }
        let (l3, l4) = (usize::from(info.l3_offset), usize::from(info.l4_offset));
        let ip_end = if be16(f, l3 - 2) == 0x0800 {
            if be16(f, l3 + 6) & 0x3fff != 0 {
                continue; // a fragment: the length field covers the datagram
            }
            l3 + usize::from(be16(f, l3 + 2))
        } else {
            if f[l3 + 6] != 17 {
                continue; // extension headers: keep to the plain case
            }
            l3 + 40 + usize::from(be16(f, l3 + 4))
        };
        let payload = ip_end - l4;
        let orig = usize::from(be16(f, l4 + 4));
        let mut lens: Vec<usize> = (0..8).collect();
        lens.extend([8, orig - 1, orig + 1, payload, payload + 1, 0xffff]);
        for ul in lens {
            let mut m = f.clone();
            set16(&mut m, l4 + 4, ul as u16);
            let bad = ul < 8 || ul > payload;
            push(
                format!("{label} udp_length {ul}"),
                m,
                bad.then_some(Malformed),
            );
        }
    }

    // IPv6 payload length of every IPv6 base, TCP data offset of every TCP base.
    for (label, f) in &bases {
        let info = wire::parse(f);
        let l3 = usize::from(info.l3_offset);
        if matches!(info.class, Udp | Tcp | OtherIp) && be16(f, l3 - 2) == 0x86dd {
            let avail = f.len() - l3 - 40;
            let orig = usize::from(be16(f, l3 + 4));
            for pl in [
                0,
                1,
                7,
                8,
                orig.saturating_sub(1),
                orig + 1,
                avail,
                avail + 1,
                0xffff,
            ] {
                let mut m = f.clone();
                set16(&mut m, l3 + 4, pl as u16);
                push(
                    format!("{label} payload_length {pl}"),
                    m,
                    (pl > avail).then_some(Malformed),
                );
            }
        }
        if info.class == Tcp {
            let l4 = usize::from(info.l4_offset);
            for doff in 0..16u8 {
                let mut m = f.clone();
                m[l4 + 12] = (doff << 4) | (m[l4 + 12] & 15);
                let expect = (doff < 5).then_some(Malformed);
                push(format!("{label} tcp data offset {doff}"), m, expect);
            }
        }
    }

    // VLAN stacks: 0..=4 tags, every TPID sequence, on four untagged bases.
    // Two tags are walked; a third is not looked into (NonIp).
    for base in ["ipv4_udp_60", "ipv6_udp", "ipv4_tcp", "arp_request"] {
        let f = find(&bases, base);
        let class = wire::parse(f).class;
        for n in 0..=4u32 {
            for combo in 0..3usize.pow(n) {
                let mut m = f[..12].to_vec();
                let mut c = combo;
                let mut name = String::new();
                for t in 0..n {
                    let tpid = TPIDS[c % 3];
                    c /= 3;
                    m.extend_from_slice(&tpid.to_be_bytes());
                    m.extend_from_slice(&(100 + t as u16).to_be_bytes());
                    name.push_str(&format!(" {tpid:#06x}"));
                }
                m.extend_from_slice(&f[12..]);
                let expect = if n <= 2 { class } else { NonIp };
                push(format!("{base} vlan{name}"), m, Some(expect));
            }
        }
    }

    // Runts of every length (empty records included), random bytes.
    for len in 0..ETH {
        for k in 0..5 {
            let m: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
            push(format!("runt {len} #{k}"), m, Some(Runt));
        }
    }

    // 1514-byte frames: random bodies behind IPv4 / IPv6 / VLAN / ARP
    // EtherTypes, and bit-flipped valid ones.
    let big = find(&bases, "udp_1518").to_vec();
    assert_eq!(big.len(), 1514);
    for et in [0x0800u16, 0x86dd, 0x8100, 0x88a8, 0x0806, 0xffff] {
        for k in 0..3 {
            let mut m: Vec<u8> = (0..1514).map(|_| rng.next_u64() as u8).collect();
            set16(&mut m, 12, et);
            if k == 0 && et == 0x0800 {
                m[14] = 0x45;
            }
            if k == 0 && et == 0x86dd {
                m[14] = 0x60;
            }
            push(format!("1514 random et {et:#06x} #{k}"), m, None);
        }
    }
    for k in 0..20 {
        let mut m = big.clone();
        for _ in 0..1 + rng.below(4) {
            let at = if k % 2 == 0 {
                rng.below(80)
            } else {
                rng.below(m.len())
            };
            m[at] ^= 1 << rng.below(8);
        }
        push(format!("1514 bit flips #{k}"), m, None);
    }

    // Random short frames behind an IP EtherType.
    for k in 0..100 {
        let len = ETH + rng.below(120);
        let mut m: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
        set16(&mut m, 12, if k % 2 == 0 { 0x0800 } else { 0x86dd });
        if len > ETH {
            m[ETH] = if k % 2 == 0 {
                0x40 | (m[ETH] & 15)
            } else {
                0x60 | (m[ETH] & 15)
            };
        }
        push(format!("random ip #{k}"), m, None);
    }

    // Bit flips: 1..=4 bits, mostly in the headers.
    let flippable: Vec<&(String, Vec<u8>)> = bases.iter().filter(|(_, f)| f.len() >= ETH).collect();
    for k in 0..1500 {
        let (label, f) = flippable[rng.below(flippable.len())];
        let mut m = f.clone();
        for _ in 0..1 + rng.below(4) {
            let at = if rng.below(4) != 0 {
                rng.below(m.len().min(80))
            } else {
                rng.below(m.len())
            };
            m[at] ^= 1 << rng.below(8);
        }
        push(format!("{label} bit flips #{k}"), m, None);
    }

    for (path, f, class) in regression_frames() {
        push(format!("regression {}", path.display()), f, Some(class));
    }
    out
}

/// The promises of `wire::parse` / `flow_hash` / `rewrite_macs` for one frame.
fn check_invariants(label: &str, f: &[u8]) -> FrameClass {
    use FrameClass::*;
    let i = wire::parse(f);
    assert_eq!(i, wire::parse(f), "{label}: parse not deterministic");
    assert_eq!(
        wire::flow_hash(f),
        i.flow_hash,
        "{label}: flow_hash != parse().flow_hash"
    );
    let (l3, l4) = (usize::from(i.l3_offset), usize::from(i.l4_offset));
    assert!(
        l3 <= f.len() && l4 <= f.len(),
        "{label}: offsets {i:?} past a {}-byte frame",
        f.len()
    );
    assert!(i.vlan_tags <= 2, "{label}: {i:?}");
    assert_eq!(
        i.class == Runt,
        f.len() < ETH,
        "{label}: {i:?} for {} bytes",
        f.len()
    );
    if i.class == Runt {
        assert_eq!(i, wire::FrameInfo::RUNT, "{label}");
    } else if l3 == 0 {
        assert_eq!(
            i.class, Malformed,
            "{label}: l3_offset 0 only for a cut VLAN tag: {i:?}"
        );
    } else {
        assert_eq!(l3, ETH + 4 * usize::from(i.vlan_tags), "{label}: {i:?}");
    }
    match i.class {
        Udp | Tcp => {
            let need = if i.class == Udp { 8 } else { 20 };
            assert!(
                l4 >= l3 + 20 && l4 + need <= f.len(),
                "{label}: L4 header out of the frame: {i:?}, {} bytes",
                f.len()
            );
        }
        _ => assert_eq!(l4, 0, "{label}: l4_offset for {:?}", i.class),
    }
    let (dst, src) = ([0xd0u8, 1, 2, 3, 4, 5], [0x5au8, 6, 7, 8, 9, 10]);
    let mut copy = f.to_vec();
    let rewritten = wire::rewrite_macs(&mut copy, &wire::mac_header(&dst, &src));
    assert_eq!(rewritten, f.len() >= ETH, "{label}");
    if rewritten {
        assert_eq!((&copy[..6], &copy[6..12]), (&dst[..], &src[..]), "{label}");
        assert_eq!(
            &copy[12..],
            &f[12..],
            "{label}: rewrite touched bytes after the MACs"
        );
        assert_eq!(
            wire::parse(&copy).class,
            i.class,
            "{label}: class depends on the MACs"
        );
    } else {
        assert_eq!(copy, f, "{label}: a runt was written to");
    }
    i.class
}

#[test]
fn mutants_parse_invariants() {
    let m = mutants();
    assert!(m.len() >= 3000, "only {} mutants", m.len());
    let mut per_class: BTreeMap<&str, usize> = BTreeMap::new();
    let mut spec_checked = 0;
    for x in &m {
        let class = check_invariants(&x.label, &x.frame);
        *per_class.entry(class.name()).or_default() += 1;
        if let Some(e) = x.expect {
            assert_eq!(
                class, e,
                "{}: spec says {e:?}, parse says {class:?}\n{:02x?}",
                x.label, x.frame
            );
            spec_checked += 1;
        }
    }
    // The set must reach every class, or it proves little.
    for c in FrameClass::ALL {
        assert!(
            per_class.get(c.name()).copied().unwrap_or(0) >= 10,
            "class {c:?} barely reached: {per_class:?}"
        );
    }
    eprintln!(
        "{} mutants, {spec_checked} with a class from the spec, by class: {per_class:?}",
        m.len()
    );
}

#[test]
fn regression_frames_replay() {
    for (path, f, class) in regression_frames() {
        let label = path.display().to_string();
        assert_eq!(check_invariants(&label, &f), class, "{label}");
    }
}

/// All mutants on port 0 (port 1 replays an empty file): the default
/// 2-lcore layout (one RX queue, one worker) keeps global order, so the
/// output on port 1 is compared frame by frame.
fn through_pipeline(backend: &str) {
    let _g = serial();
    let dir = scratch(&format!("hostile-{backend}"));
    let m = mutants();
    let frames: Vec<&Vec<u8>> = m.iter().map(|x| &x.frame).collect();
    let in_path = dir.join("in0.pcap");
    pcap::write_all(&in_path, &frames).unwrap();
    let empty = dir.join("empty.pcap");
    pcap::write_all(&empty, Vec::<Vec<u8>>::new()).unwrap();
    let vdevs = vec![
        format!(
            "net_pcap0,rx_pcap={},tx_pcap={}",
            in_path.display(),
            dir.join("out0.pcap").display()
        ),
        format!(
            "net_pcap1,rx_pcap={},tx_pcap={}",
            empty.display(),
            dir.join("out1.pcap").display()
        ),
    ];
    let run = run_2s_clean(
        &dir,
        &eal_args("0-1", &vdevs),
        &["--backend", backend, "--on-full", "wait"],
    );
    let j = run.json();
    assert_eq!(j["backend"], backend);

    let mut expect: BTreeMap<&str, u64> = FrameClass::ALL.iter().map(|c| (c.name(), 0)).collect();
    for f in &frames {
        *expect.get_mut(wire::parse(f).class.name()).unwrap() += 1;
    }
    let runts = frames.iter().filter(|f| f.len() < ETH).count() as u64;
    let n = frames.len() as u64;
    assert_eq!(j["rx_packets"].as_u64().unwrap(), n, "{}", run.describe());
    assert_eq!(
        j["drops"]["runt"].as_u64().unwrap(),
        runts,
        "{}",
        run.describe()
    );
    assert_eq!(
        j["drops_total"].as_u64().unwrap(),
        runts,
        "only runts may be dropped\n{}",
        run.describe()
    );
    assert_eq!(
        j["tx_packets"].as_u64().unwrap(),
        n - runts,
        "{}",
        run.describe()
    );
    for (class, count) in &expect {
        assert_eq!(
            j["classes"][class].as_u64().unwrap(),
            *count,
            "class {class}\n{}",
            run.describe()
        );
    }

    let out0 = pcap::read_all(dir.join("out0.pcap")).unwrap();
    assert!(
        out0.is_empty(),
        "{} frames came back out of port 0",
        out0.len()
    );
    let out = pcap::read_all(dir.join("out1.pcap")).unwrap();
    let fwd: Vec<&Mutant> = m.iter().filter(|x| x.frame.len() >= ETH).collect();
    assert_eq!(out.len(), fwd.len(), "frames out of port 1");
    let mac1 = mac_bytes(j["ports"][1]["mac"].as_str().unwrap());
    for (k, (o, i)) in out.iter().zip(&fwd).enumerate() {
        assert_eq!(
            o.data.len(),
            i.frame.len(),
            "frame {k} ({}) changed length",
            i.label
        );
        assert_eq!(
            &o.data[12..],
            &i.frame[12..],
            "frame {k} ({}) changed after the MACs, or out of order",
            i.label
        );
        assert_eq!(
            &o.data[0..6],
            &[2, 0, 0, 0, 0, 1],
            "frame {k} ({}) dst MAC",
            i.label
        );
        assert_eq!(&o.data[6..12], &mac1, "frame {k} ({}) src MAC", i.label);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn mutants_through_pipeline_tq() {
    through_pipeline("tq");
}

#[test]
fn mutants_through_pipeline_ring() {
    through_pipeline("ring");
}

/// Writes the committed seed corpora of the fuzz targets
/// (`fuzz/corpus/parse`, `fuzz/corpus/pcap_reader`): the base frames, every
/// 50th mutant, and a few small pcap files in each byte order / resolution.
/// `cargo test --release --features testkit --test suite hostile::write_fuzz_seed_corpus -- --ignored`
#[test]
#[ignore = "writes fuzz/corpus; run by hand when the generators change"]
fn write_fuzz_seed_corpus() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus");
    let name = |s: &str| {
        s.chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect::<String>()
    };
    let parse_dir = root.join("parse");
    let _ = std::fs::remove_dir_all(&parse_dir);
    std::fs::create_dir_all(&parse_dir).unwrap();
    let m = mutants();
    let mut n = 0;
    for (k, x) in m.iter().enumerate() {
        if x.label.starts_with("base ") || k % 50 == 0 {
            std::fs::write(
                parse_dir.join(format!("{k:04}-{}", name(&x.label))),
                &x.frame,
            )
            .unwrap();
            n += 1;
        }
    }
    let pcap_dir = root.join("pcap_reader");
    let _ = std::fs::remove_dir_all(&pcap_dir);
    std::fs::create_dir_all(&pcap_dir).unwrap();
    let frames: Vec<Vec<u8>> = gen::odd_frames()
        .into_iter()
        .map(|(_, f, _)| f)
        .take(5)
        .chain([Vec::new()])
        .collect();
    let mut w = pcap::PcapWriter::new(Vec::new()).unwrap();
    for (i, f) in frames.iter().enumerate() {
        w.write_packet(1_700_000_000_000_000_000 + i as u64 * 1_000, f)
            .unwrap();
    }
    let le = w.into_inner();
    // The same file big-endian, and with the nanosecond magic.
    let swap = |b: &[u8], nanos: bool| {
        let mut out = Vec::new();
        let magic: u32 = if nanos {
            pcap::MAGIC_NSEC
        } else {
            pcap::MAGIC_USEC
        };
        out.extend_from_slice(&magic.to_be_bytes());
        out.extend_from_slice(&u16::from_le_bytes([b[4], b[5]]).to_be_bytes());
        out.extend_from_slice(&u16::from_le_bytes([b[6], b[7]]).to_be_bytes());
        let mut pos = 8;
        for _ in 0..4 {
            out.extend_from_slice(
                &u32::from_le_bytes(b[pos..pos + 4].try_into().unwrap()).to_be_bytes(),
            );
            pos += 4;
        }
        while pos < b.len() {
            let f = |at: usize| u32::from_le_bytes(b[pos + at..pos + at + 4].try_into().unwrap());
            let cap = f(8);
            for v in [f(0), f(4), cap, f(12)] {
                out.extend_from_slice(&v.to_be_bytes());
            }
            out.extend_from_slice(&b[pos + 16..pos + 16 + cap as usize]);
            pos += 16 + cap as usize;
        }
        out
    };
    let mut le_ns = le.clone();
    le_ns[..4].copy_from_slice(&pcap::MAGIC_NSEC.to_le_bytes());
    let files: Vec<(&str, Vec<u8>)> = vec![
        ("le_usec", le.clone()),
        ("le_nsec", le_ns),
        ("be_usec", swap(&le, false)),
        ("be_nsec", swap(&le, true)),
        ("header_only", le[..24].to_vec()),
        ("cut_in_record_header", le[..30].to_vec()),
        ("cut_in_record_data", le[..50].to_vec()),
    ];
    for (label, b) in &files {
        std::fs::write(pcap_dir.join(label), b).unwrap();
    }
    eprintln!(
        "wrote {n} parse seeds and {} pcap seeds under {}",
        files.len(),
        root.display()
    );
}
