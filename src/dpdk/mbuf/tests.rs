//! `MbufPtr`, `Packet` and `Burst` on mbufs built by hand (no EAL).

use super::*;
use crate::dpdk::sys;
use std::ptr::NonNull;

/// A zeroed, 64-byte-aligned rte_mbuf followed by a data room, built
/// by hand: `Packet` only reads plain header fields, so no EAL needed.
#[repr(C, align(64))]
struct FakeMbuf {
    hdr: sys::rte_mbuf,
    room: [u8; 512],
}

fn fake(data_off: u16, len: u16, port: u16) -> Box<FakeMbuf> {
    // SAFETY: rte_mbuf is plain C data; all-zero is a valid value.
    let mut f: Box<FakeMbuf> = Box::new(unsafe { std::mem::zeroed() });
    f.hdr.buf_addr = f.room.as_mut_ptr() as *mut std::ffi::c_void;
    f.hdr.data_off = data_off;
    f.hdr.data_len = len;
    f.hdr.port = port;
    for (i, b) in f.room.iter_mut().enumerate() {
        *b = i as u8;
    }
    f
}

fn mb(hdr: &mut sys::rte_mbuf) -> MbufPtr {
    MbufPtr(RawMbuf(NonNull::from(hdr)))
}

fn handle(f: &mut FakeMbuf) -> MbufPtr {
    mb(&mut f.hdr)
}

#[test]
fn rss_hash_flag_is_dpdks() {
    // SAFETY: reads a const defined in shim.c (DPDK's value).
    assert_eq!(MBUF_F_RX_RSS_HASH, unsafe { sys::tqfwd_mbuf_f_rx_rss_hash });
}

#[test]
fn bursts_move_handles_in_order() {
    let mut fakes: Vec<Box<FakeMbuf>> = (0..4).map(|i| fake(0, 10 + i, i)).collect();
    let mut b: Burst<Packet> = Burst::new();
    let mut out: Burst<Packet> = Burst::new();
    for f in fakes.iter_mut() {
        assert!(b.push_or_free(Packet::from_rx(handle(f), f.hdr.port)));
    }
    assert_eq!(b.len(), 4);
    b.consume_front(1);
    let ports: Vec<u16> = b.as_slice().iter().map(|p| p.port()).collect();
    assert_eq!(ports, [1, 2, 3]);
    let mut lens = Vec::new();
    b.move_each(|p| {
        lens.push(p.len());
        assert!(out.push_or_free(p));
    });
    assert_eq!(lens, [11, 12, 13]);
    assert!(b.is_empty());
    assert_eq!(out.len(), 3);
    out.consume_front(3); // fakes: nothing to free
}

#[test]
fn packet_reads_frame_without_header_when_offset_fits() {
    let headroom = STD_FRAME_OFFSET - std::mem::size_of::<sys::rte_mbuf>();
    let mut f = fake(headroom as u16, 60, 3);
    let mut p = Packet::from_rx(handle(&mut f), f.hdr.port);
    assert!(!p.is_far() && !p.is_multi_seg());
    assert_eq!((p.port(), p.len(), p.pkt_len()), (3, 60, 60));
    assert_eq!(p.data(), &f.room[headroom..headroom + 60]);
    // The header no longer matters: the packet kept what it needs.
    f.hdr.data_off = 0;
    f.hdr.data_len = 7;
    f.hdr.port = 9;
    assert_eq!(p.data()[0], headroom as u8);
    assert_eq!((p.port(), p.len()), (3, 60));
    p.data_mut()[0] = 0xee;
    assert_eq!(f.room[headroom], 0xee);
    assert!(!p.is_sampled());
    p.set_sampled();
    assert!(p.is_sampled());
    assert_eq!((p.port(), p.len()), (3, 60), "the flag leaves the facts");
    assert_eq!(p.into_mbuf(), handle(&mut f));
}

#[test]
fn packet_word_holds_the_largest_length_and_port() {
    let headroom = STD_FRAME_OFFSET - std::mem::size_of::<sys::rte_mbuf>();
    #[repr(C, align(64))]
    struct Big {
        hdr: sys::rte_mbuf,
        room: [u8; 8192],
    }
    // SAFETY: plain data; all-zero is valid.
    let mut b: Box<Big> = Box::new(unsafe { std::mem::zeroed() });
    b.hdr.buf_addr = b.room.as_mut_ptr() as *mut std::ffi::c_void;
    b.hdr.data_off = headroom as u16;
    for (len, port, far) in [
        (4095u16, 31u16, false),
        (0, 0, false),
        (4096, 0, true),
        (60, 32, true),
        (6000, 40, true),
    ] {
        b.hdr.data_len = len;
        b.hdr.port = port;
        b.hdr.nb_segs = 1;
        let mut p = Packet::from_rx(mb(&mut b.hdr), port);
        p.set_sampled();
        assert_eq!(p.is_far(), far, "len {len} port {port}");
        assert_eq!((p.len(), p.port()), (len as usize, port), "far {far}");
        assert_eq!(p.data().as_ptr(), b.room[headroom..].as_ptr());
        assert!(p.is_sampled() && !p.is_multi_seg());
        let raw = p.into_raw();
        assert_eq!(Packet::raw_mbuf(&raw), &mut b.hdr as *mut sys::rte_mbuf);
    }
}

#[test]
fn packet_falls_back_to_header_for_far_or_preceding_buffers() {
    // One allocation: the mbuf header in the middle, "external" data
    // buffers 64 KiB before it and 80 KiB after it: the frame is not
    // where the pools put it, so the header is read.
    #[repr(C, align(64))]
    struct Arena {
        before: [u8; 65_536],
        hdr: sys::rte_mbuf,
        after: [u8; 81_920],
    }
    // SAFETY: plain data; all-zero is valid.
    let mut a: Box<Arena> = Box::new(unsafe { std::mem::zeroed() });
    for (i, b) in a.before.iter_mut().enumerate() {
        *b = (i % 251) as u8;
    }
    for (i, b) in a.after.iter_mut().enumerate() {
        *b = (i % 241) as u8;
    }
    a.hdr.data_off = 10;
    a.hdr.data_len = 20;
    a.hdr.port = 5;
    for (buf, expect) in [
        (a.before.as_mut_ptr(), 0usize),
        (a.after[80_000..].as_mut_ptr(), 1),
    ] {
        a.hdr.buf_addr = buf as *mut std::ffi::c_void;
        let p = Packet::from_rx(mb(&mut a.hdr), 5);
        assert!(p.is_far());
        let want: Vec<u8> = if expect == 0 {
            a.before[10..30].to_vec()
        } else {
            a.after[80_010..80_030].to_vec()
        };
        assert_eq!(p.data(), &want[..]);
        assert_eq!((p.len(), p.port()), (20, 5));
    }
}

/// Three fake segments holding `frame` split at `cuts` (first segment
/// `cuts.0` bytes, second `cuts.1`, third the rest), chained.
/// Boxed: each header's buf_addr points into its own box.
#[allow(clippy::vec_box)]
fn chain(frame: &[u8], cuts: (usize, usize)) -> Vec<Box<FakeMbuf>> {
    let parts = [
        &frame[..cuts.0],
        &frame[cuts.0..cuts.0 + cuts.1],
        &frame[cuts.0 + cuts.1..],
    ];
    let mut segs: Vec<Box<FakeMbuf>> = parts
        .iter()
        .map(|part| {
            let mut f = fake(64, part.len() as u16, 1);
            f.room[64..64 + part.len()].copy_from_slice(part);
            f
        })
        .collect();
    segs[0].hdr.nb_segs = 3;
    segs[0].hdr.pkt_len = frame.len() as u32;
    for i in (0..2).rev() {
        let next: *mut sys::rte_mbuf = &mut segs[i + 1].hdr;
        segs[i].hdr.next = next;
    }
    segs
}

fn udp_436() -> Vec<u8> {
    let f = crate::testkit::gen::udp_frame(
        &crate::testkit::gen::Flow::nth(5),
        5,
        1,
        440,
        crate::testkit::gen::DEFAULT_SRC_MAC,
        crate::testkit::gen::DEFAULT_DST_MAC,
    );
    assert_eq!(f.len(), 436);
    f
}

#[test]
fn chain_head_is_copied_only_when_the_first_segment_is_short() {
    use crate::wire::{self, FrameClass, PARSE_HEAD_LEN};
    let frame = udp_436();
    let whole = wire::parse(&frame);
    assert_eq!(whole.class, FrameClass::Udp);
    // First segment shorter than the Ethernet header, the IP header,
    // the UDP header, the parse head; and one long enough.
    for first in [1, 10, 13, 20, 40, 100, 127, 128, 300] {
        let mut segs = chain(&frame, (first, 100));
        let p = Packet::from_rx(mb(&mut segs[0].hdr), segs[0].hdr.port);
        assert!(p.is_multi_seg());
        assert_eq!((p.len(), p.pkt_len()), (first, frame.len()));
        let mut scratch = [0u8; PARSE_HEAD_LEN];
        let (head, len) = p.head(&mut scratch);
        assert_eq!(len, frame.len());
        if first >= PARSE_HEAD_LEN {
            assert_eq!(head.as_ptr(), p.data().as_ptr(), "no copy");
        }
        assert_eq!(head, &frame[..head.len()]);
        assert!(head.len() >= PARSE_HEAD_LEN);
        assert_eq!(wire::parse_head(head, len), whole, "first segment {first}");
    }
    // A chain shorter than the parse head is copied whole.
    let small = &frame[..90];
    let mut segs = chain(small, (5, 30));
    segs[0].hdr.pkt_len = 90;
    let p = Packet::from_rx(mb(&mut segs[0].hdr), segs[0].hdr.port);
    let mut scratch = [0u8; PARSE_HEAD_LEN];
    let (head, len) = p.head(&mut scratch);
    assert_eq!((head, len), (small, 90));
    // A single segment is never copied.
    let mut f = fake(0, 300, 0);
    let p = Packet::from_rx(handle(&mut f), f.hdr.port);
    assert!(!p.is_multi_seg());
    assert_eq!(p.pkt_len(), 300);
    let (head, len) = p.head(&mut scratch);
    assert_eq!((head.as_ptr(), len), (p.data().as_ptr(), 300));
}

#[test]
fn writes_across_segments() {
    let frame = udp_436();
    let mut segs = chain(&frame, (4, 5));
    let mut p = Packet::from_rx(mb(&mut segs[0].hdr), segs[0].hdr.port);
    let macs: Vec<u8> = (0xa0..0xac).collect();
    assert!(p.write_at(0, &macs[..6]));
    assert!(p.write_at(6, &macs[6..]));
    let mut out = vec![0u8; frame.len()];
    assert_eq!(p.with_mbuf(|m| m.read_into(&mut out)), frame.len());
    assert_eq!(&out[..12], &macs[..]);
    assert_eq!(&out[12..], &frame[12..]);
    assert_eq!(&segs[0].room[64..68], &macs[..4]);
    assert_eq!(&segs[1].room[64..69], &macs[4..9]);
    assert_eq!(&segs[2].room[64..67], &macs[9..12]);
    // Past the end: nothing written.
    let before = segs[2].room;
    assert!(!p.write_at(frame.len() - 2, &[0xff; 4]));
    assert_eq!(segs[2].room, before);
    assert!(p.write_at(frame.len() - 4, &[0xff; 4]));
    // A single segment never writes past its data.
    let mut f = fake(0, 20, 0);
    let mut p = Packet::from_rx(handle(&mut f), f.hdr.port);
    assert!(!p.write_at(18, &[1, 2, 3]));
    assert!(p.write_at(17, &[1, 2, 3]));
    assert_eq!(&f.room[17..21], &[1, 2, 3, 20]);
}
