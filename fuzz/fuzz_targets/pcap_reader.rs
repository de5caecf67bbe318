//! `pcap::PcapReader` on arbitrary bytes: never panics, terminates, never
//! yields more than `MAX_CAPLEN` bytes or more data than the input held,
//! yields nothing after an error, and what it read writes back identically.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tqfwd::testkit::pcap::{PcapReader, PcapWriter, MAX_CAPLEN, SNAPLEN};

const GLOBAL_HDR_LEN: usize = 24;
const RECORD_HDR_LEN: usize = 16;

fuzz_target!(|data: &[u8]| {
    let Ok(mut r) = PcapReader::new(data) else { return };
    assert!(data.len() >= GLOBAL_HDR_LEN);
    let mut packets = Vec::new();
    let mut consumed = GLOBAL_HDR_LEN;
    let mut failed = false;
    for item in r.by_ref() {
        match item {
            Ok(p) => {
                assert!(p.data.len() <= MAX_CAPLEN as usize);
                consumed += RECORD_HDR_LEN + p.data.len();
                assert!(consumed <= data.len(), "yielded more bytes than the input holds");
                packets.push(p);
            }
            Err(_) => {
                failed = true;
                break;
            }
        }
    }
    // Fused: nothing after the end or an error.
    assert!(r.next().is_none(), "items after the end (error: {failed})");
    if !failed {
        assert_eq!(consumed, data.len(), "a clean end must consume the whole input");
    }
    // Round trip of the data through the writer (snaplen applies there).
    let mut w = PcapWriter::new(Vec::new()).unwrap();
    for p in &packets {
        w.write_packet(p.ts_ns, &p.data).unwrap();
    }
    let bytes = w.into_inner();
    let again: Vec<_> = PcapReader::new(&bytes[..]).unwrap().collect::<Result<_, _>>().unwrap();
    assert_eq!(again.len(), packets.len());
    for (a, p) in again.iter().zip(&packets) {
        assert_eq!(a.data, p.data[..p.data.len().min(SNAPLEN as usize)]);
    }
});
