//! `wire::parse` + `wire::flow_hash` + `wire::rewrite_macs` on arbitrary
//! bytes: never panics, and keeps the promises of the `wire` module docs.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tqfwd::wire::{self, FrameClass, FrameInfo, ETH_HDR_LEN};

fuzz_target!(|frame: &[u8]| {
    let i = wire::parse(frame);
    assert_eq!(i, wire::parse(frame), "parse not deterministic");
    assert_eq!(wire::flow_hash(frame), i.flow_hash, "flow_hash != parse().flow_hash");

    let (l3, l4) = (usize::from(i.l3_offset), usize::from(i.l4_offset));
    assert!(l3 <= frame.len() && l4 <= frame.len(), "offsets past the frame: {i:?}");
    assert!(i.vlan_tags <= 2, "{i:?}");
    assert_eq!(i.class == FrameClass::Runt, frame.len() < ETH_HDR_LEN, "{i:?}");
    if i.class == FrameClass::Runt {
        assert_eq!(i, FrameInfo::RUNT);
    } else if l3 == 0 {
        // Only a VLAN tag cut short leaves the L3 offset at 0.
        assert_eq!(i.class, FrameClass::Malformed, "{i:?}");
    } else {
        assert_eq!(l3, ETH_HDR_LEN + 4 * usize::from(i.vlan_tags), "{i:?}");
    }
    match i.class {
        FrameClass::Udp | FrameClass::Tcp => {
            let need = if i.class == FrameClass::Udp { 8 } else { 20 };
            assert!(l4 >= l3 + 20 && l4 + need <= frame.len(), "L4 header outside the frame: {i:?}");
        }
        _ => assert_eq!(l4, 0, "l4_offset set for {i:?}"),
    }

    let (dst, src) = ([0xd0u8, 1, 2, 3, 4, 5], [0x5au8, 6, 7, 8, 9, 10]);
    let mut copy = frame.to_vec();
    let rewritten = wire::rewrite_macs(&mut copy, &wire::mac_header(&dst, &src));
    assert_eq!(rewritten, frame.len() >= ETH_HDR_LEN);
    if rewritten {
        assert_eq!(&copy[..6], &dst);
        assert_eq!(&copy[6..12], &src);
        assert_eq!(&copy[12..], &frame[12..], "rewrite touched bytes after the MACs");
        // The class never depends on the MACs.
        assert_eq!(wire::parse(&copy).class, i.class);
    } else {
        assert_eq!(&copy[..], frame, "a runt was written to");
    }
});
