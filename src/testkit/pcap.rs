//! Classic libpcap file format (not pcapng): a writer for Ethernet captures
//! and a reader that accepts either byte order and both the microsecond and
//! nanosecond magic.
//!
//! The reader never panics on bad input: a wrong magic, a cut-off header or
//! record, or a record claiming more than [`MAX_CAPLEN`] bytes is a
//! [`PcapError`], after which iteration stops. Memory use per record is
//! bounded by `MAX_CAPLEN`; [`read_all`] reads only a regular file of at
//! most [`MAX_FILE_BYTES`] (a FIFO or `/dev/zero` is refused unread).

use std::fmt;
use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::path::Path;

/// LINKTYPE_ETHERNET.
pub const LINKTYPE_ETHERNET: u32 = 1;
/// Snap length written into files we create.
pub const SNAPLEN: u32 = 65535;
/// Largest record the reader accepts (256 KiB).
pub const MAX_CAPLEN: u32 = 256 * 1024;
/// Largest file [`read_all`] reads (test captures are a few MiB).
pub const MAX_FILE_BYTES: u64 = 256 << 20;
/// Magic of microsecond-resolution files.
pub const MAGIC_USEC: u32 = 0xa1b2_c3d4;
/// Magic of nanosecond-resolution files.
pub const MAGIC_NSEC: u32 = 0xa1b2_3c4d;

const GLOBAL_HDR_LEN: usize = 24;
const RECORD_HDR_LEN: usize = 16;

/// One captured packet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PcapPacket {
    /// Timestamp in nanoseconds since the epoch (microsecond files: multiple
    /// of 1000).
    pub ts_ns: u64,
    /// Captured bytes (`caplen` of them).
    pub data: Vec<u8>,
    /// Length of the packet on the wire when captured.
    pub orig_len: u32,
}

/// Why a pcap file could not be read.
#[derive(Debug)]
pub enum PcapError {
    /// Underlying I/O failure (other than a clean or mid-record end of file).
    Io(io::Error),
    /// The first four bytes are not a classic pcap magic in either byte order.
    BadMagic(u32),
    /// The file ends inside the 24-byte global header.
    TruncatedHeader,
    /// The file ends inside record number `index` (0-based).
    TruncatedRecord {
        /// Record number.
        index: u64,
    },
    /// Record `index` claims `caplen` bytes, more than [`MAX_CAPLEN`].
    CaplenTooLarge {
        /// Record number.
        index: u64,
        /// Claimed captured length.
        caplen: u32,
    },
    /// [`read_all`] refused the path: not a regular file, or larger than
    /// [`MAX_FILE_BYTES`] (the reason as text).
    Refused(String),
}

impl fmt::Display for PcapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PcapError::Io(e) => write!(f, "pcap I/O error: {e}"),
            PcapError::BadMagic(m) => write!(
                f,
                "not a classic pcap file (magic {m:#010x}; pcapng is not supported)"
            ),
            PcapError::TruncatedHeader => {
                f.write_str("pcap file truncated inside the global header")
            }
            PcapError::TruncatedRecord { index } => {
                write!(f, "pcap file truncated inside record {index}")
            }
            PcapError::CaplenTooLarge { index, caplen } => write!(
                f,
                "pcap record {index} claims {caplen} captured bytes (limit {MAX_CAPLEN})"
            ),
            PcapError::Refused(why) => write!(f, "pcap file {why}"),
        }
    }
}

impl std::error::Error for PcapError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            PcapError::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl From<io::Error> for PcapError {
    fn from(e: io::Error) -> Self {
        PcapError::Io(e)
    }
}

/// Writes a classic pcap (LINKTYPE_ETHERNET, microsecond magic, native
/// little-endian, snaplen 65535).
#[derive(Debug)]
pub struct PcapWriter<W: Write> {
    out: W,
}

impl<W: Write> PcapWriter<W> {
    /// Writes the global header to `out`.
    pub fn new(mut out: W) -> io::Result<Self> {
        let mut h = [0u8; GLOBAL_HDR_LEN];
        h[0..4].copy_from_slice(&MAGIC_USEC.to_le_bytes());
        h[4..6].copy_from_slice(&2u16.to_le_bytes());
        h[6..8].copy_from_slice(&4u16.to_le_bytes());
        // thiszone, sigfigs = 0
        h[16..20].copy_from_slice(&SNAPLEN.to_le_bytes());
        h[20..24].copy_from_slice(&LINKTYPE_ETHERNET.to_le_bytes());
        out.write_all(&h)?;
        Ok(PcapWriter { out })
    }

    /// Appends one record. `ts_ns` is rounded down to microseconds; data
    /// beyond the snaplen is cut (orig_len keeps the full length).
    pub fn write_packet(&mut self, ts_ns: u64, data: &[u8]) -> io::Result<()> {
        let orig_len = u32::try_from(data.len()).unwrap_or(u32::MAX);
        let caplen = orig_len.min(SNAPLEN);
        let secs = u32::try_from(ts_ns / 1_000_000_000).unwrap_or(u32::MAX);
        let usecs = ((ts_ns % 1_000_000_000) / 1_000) as u32;
        let mut h = [0u8; RECORD_HDR_LEN];
        h[0..4].copy_from_slice(&secs.to_le_bytes());
        h[4..8].copy_from_slice(&usecs.to_le_bytes());
        h[8..12].copy_from_slice(&caplen.to_le_bytes());
        h[12..16].copy_from_slice(&orig_len.to_le_bytes());
        self.out.write_all(&h)?;
        self.out.write_all(&data[..caplen as usize])
    }

    /// Flushes the underlying writer.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// Returns the underlying writer (not flushed).
    pub fn into_inner(self) -> W {
        self.out
    }
}

/// Reads a classic pcap; iterate it for packets.
#[derive(Debug)]
pub struct PcapReader<R: Read> {
    input: R,
    swapped: bool,
    nanos: bool,
    snaplen: u32,
    linktype: u32,
    index: u64,
    done: bool,
}

/// Reads until `buf` is full or EOF; returns the number of bytes read.
fn read_full<R: Read>(r: &mut R, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

impl<R: Read> PcapReader<R> {
    /// Reads and checks the global header.
    pub fn new(mut input: R) -> Result<Self, PcapError> {
        let mut h = [0u8; GLOBAL_HDR_LEN];
        let got = read_full(&mut input, &mut h)?;
        if got < 4 {
            return Err(PcapError::TruncatedHeader);
        }
        let magic = u32::from_le_bytes([h[0], h[1], h[2], h[3]]);
        let (swapped, nanos) = match magic {
            MAGIC_USEC => (false, false),
            MAGIC_NSEC => (false, true),
            m if m == MAGIC_USEC.swap_bytes() => (true, false),
            m if m == MAGIC_NSEC.swap_bytes() => (true, true),
            m => return Err(PcapError::BadMagic(m)),
        };
        if got < GLOBAL_HDR_LEN {
            return Err(PcapError::TruncatedHeader);
        }
        let mut r = PcapReader {
            input,
            swapped,
            nanos,
            snaplen: 0,
            linktype: 0,
            index: 0,
            done: false,
        };
        r.snaplen = r.u32_at(&h, 16);
        r.linktype = r.u32_at(&h, 20);
        Ok(r)
    }

    fn u32_at(&self, b: &[u8], at: usize) -> u32 {
        let v = u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
        if self.swapped {
            v.swap_bytes()
        } else {
            v
        }
    }

    /// Link type from the header (1 = Ethernet).
    pub fn linktype(&self) -> u32 {
        self.linktype
    }

    /// Snap length from the header.
    pub fn snaplen(&self) -> u32 {
        self.snaplen
    }

    /// True for nanosecond-resolution files.
    pub fn is_nanosecond(&self) -> bool {
        self.nanos
    }

    /// True when the file was written in the other byte order.
    pub fn is_swapped(&self) -> bool {
        self.swapped
    }

    fn next_packet(&mut self) -> Result<Option<PcapPacket>, PcapError> {
        let index = self.index;
        let mut h = [0u8; RECORD_HDR_LEN];
        let got = read_full(&mut self.input, &mut h)?;
        if got == 0 {
            return Ok(None);
        }
        if got < RECORD_HDR_LEN {
            return Err(PcapError::TruncatedRecord { index });
        }
        let secs = u64::from(self.u32_at(&h, 0));
        let frac = u64::from(self.u32_at(&h, 4));
        let caplen = self.u32_at(&h, 8);
        let orig_len = self.u32_at(&h, 12);
        if caplen > MAX_CAPLEN {
            return Err(PcapError::CaplenTooLarge { index, caplen });
        }
        let mut data = vec![0u8; caplen as usize];
        if read_full(&mut self.input, &mut data)? < data.len() {
            return Err(PcapError::TruncatedRecord { index });
        }
        let frac_ns = if self.nanos { frac } else { frac * 1_000 };
        self.index += 1;
        Ok(Some(PcapPacket {
            ts_ns: secs * 1_000_000_000 + frac_ns,
            data,
            orig_len,
        }))
    }
}

impl<R: Read> Iterator for PcapReader<R> {
    type Item = Result<PcapPacket, PcapError>;

    /// Yields packets until EOF; after an error, yields nothing more.
    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.next_packet() {
            Ok(Some(p)) => Some(Ok(p)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

impl<R: Read> std::iter::FusedIterator for PcapReader<R> {}

/// Reads every packet of the pcap at `path`: a regular file of at most
/// [`MAX_FILE_BYTES`], refused unread otherwise (a FIFO, a device).
pub fn read_all<P: AsRef<Path>>(path: P) -> Result<Vec<PcapPacket>, PcapError> {
    use crate::config::file::{read_regular, ReadError};
    let bytes = read_regular(path.as_ref(), MAX_FILE_BYTES).map_err(|e| match e {
        ReadError::Io(e) => PcapError::Io(e),
        refused => PcapError::Refused(refused.to_string()),
    })?;
    PcapReader::new(&bytes[..])?.collect()
}

/// Writes `frames` to a new pcap at `path`, timestamps 1 µs apart from 0.
pub fn write_all<P, I, B>(path: P, frames: I) -> io::Result<()>
where
    P: AsRef<Path>,
    I: IntoIterator<Item = B>,
    B: AsRef<[u8]>,
{
    let mut w = PcapWriter::new(BufWriter::new(File::create(path)?))?;
    for (i, f) in frames.into_iter().enumerate() {
        w.write_packet(i as u64 * 1_000, f.as_ref())?;
    }
    w.into_inner()
        .into_inner()
        .map_err(|e| e.into_error())?
        .sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<(u64, Vec<u8>)> {
        vec![
            (1_700_000_000_123_456_000, vec![1u8; 60]),
            (1_700_000_000_123_457_000, (0..=255u8).collect()),
            (5_000, vec![]),
            (1_000_000_000, vec![0xee; 1514]),
        ]
    }

    fn write(pkts: &[(u64, Vec<u8>)]) -> Vec<u8> {
        let mut w = PcapWriter::new(Vec::new()).unwrap();
        for (ts, d) in pkts {
            w.write_packet(*ts, d).unwrap();
        }
        w.flush().unwrap();
        w.into_inner()
    }

    #[test]
    fn round_trip() {
        let pkts = sample();
        let bytes = write(&pkts);
        assert_eq!(&bytes[..4], &[0xd4, 0xc3, 0xb2, 0xa1]);
        let r = PcapReader::new(&bytes[..]).unwrap();
        assert_eq!(r.linktype(), LINKTYPE_ETHERNET);
        assert_eq!(r.snaplen(), SNAPLEN);
        assert!(!r.is_nanosecond() && !r.is_swapped());
        let got: Vec<_> = r.collect::<Result<_, _>>().unwrap();
        assert_eq!(got.len(), pkts.len());
        for (g, (ts, d)) in got.iter().zip(&pkts) {
            assert_eq!(g.ts_ns, *ts);
            assert_eq!(&g.data, d);
            assert_eq!(g.orig_len as usize, d.len());
        }
    }

    #[test]
    fn sub_microsecond_is_rounded_down_and_snaplen_applies() {
        let big = vec![7u8; 70_000];
        let bytes = write(&[(1_999, big.clone())]);
        let p = PcapReader::new(&bytes[..])
            .unwrap()
            .next()
            .unwrap()
            .unwrap();
        assert_eq!(p.ts_ns, 1_000);
        assert_eq!(p.data.len(), SNAPLEN as usize);
        assert_eq!(p.orig_len, 70_000);
    }

    /// Re-encodes a little-endian µs file as big-endian, optionally ns.
    fn to_big_endian(le: &[u8], nanos: bool) -> Vec<u8> {
        let mut out = Vec::new();
        let magic = if nanos { MAGIC_NSEC } else { MAGIC_USEC };
        out.extend_from_slice(&magic.to_be_bytes());
        out.extend_from_slice(&2u16.to_be_bytes());
        out.extend_from_slice(&4u16.to_be_bytes());
        for at in [8, 12, 16, 20] {
            let v = u32::from_le_bytes(le[at..at + 4].try_into().unwrap());
            out.extend_from_slice(&v.to_be_bytes());
        }
        let mut pos = GLOBAL_HDR_LEN;
        while pos < le.len() {
            let f = |at: usize| u32::from_le_bytes(le[pos + at..pos + at + 4].try_into().unwrap());
            let (sec, usec, cap, orig) = (f(0), f(4), f(8), f(12));
            let frac = if nanos { usec * 1000 + 7 } else { usec };
            for v in [sec, frac, cap, orig] {
                out.extend_from_slice(&v.to_be_bytes());
            }
            pos += RECORD_HDR_LEN;
            out.extend_from_slice(&le[pos..pos + cap as usize]);
            pos += cap as usize;
        }
        out
    }

    #[test]
    fn byte_swapped_and_nanosecond_files() {
        let pkts = sample();
        let le = write(&pkts);
        for nanos in [false, true] {
            let be = to_big_endian(&le, nanos);
            let r = PcapReader::new(&be[..]).unwrap();
            assert!(r.is_swapped());
            assert_eq!(r.is_nanosecond(), nanos);
            assert_eq!(r.linktype(), LINKTYPE_ETHERNET);
            let got: Vec<_> = r.collect::<Result<_, _>>().unwrap();
            for (g, (ts, d)) in got.iter().zip(&pkts) {
                assert_eq!(g.ts_ns, ts + if nanos { 7 } else { 0 });
                assert_eq!(&g.data, d);
            }
            assert_eq!(got.len(), pkts.len());
        }
        // Little-endian nanosecond magic.
        let mut ns = le.clone();
        ns[..4].copy_from_slice(&MAGIC_NSEC.to_le_bytes());
        let p = PcapReader::new(&ns[..]).unwrap().next().unwrap().unwrap();
        assert_eq!(p.ts_ns, 1_700_000_000_000_123_456);
    }

    #[test]
    fn read_all_refuses_devices_and_oversized_files() {
        for dev in ["/dev/zero", "/dev/urandom"] {
            let e = read_all(dev).unwrap_err();
            assert!(
                e.to_string()
                    .contains("is a character device, not a regular file"),
                "{e}"
            );
        }
        let dir = std::env::temp_dir().join(format!("tqfwd-pcap-bounds-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // Larger than the limit: a sparse file, refused by its size.
        let big = dir.join("big.pcap");
        let f = File::create(&big).unwrap();
        f.set_len(MAX_FILE_BYTES + 1).unwrap();
        let e = read_all(&big).unwrap_err();
        assert!(
            e.to_string().contains("larger than the limit of 256 MiB"),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn bad_magic() {
        let mut b = write(&sample());
        b[..4].copy_from_slice(&0x0a0d_0d0au32.to_le_bytes()); // pcapng
        let e = PcapReader::new(&b[..]).unwrap_err();
        assert!(matches!(e, PcapError::BadMagic(0x0a0d_0d0a)), "{e:?}");
        assert!(e.to_string().contains("not a classic pcap"));
        assert!(matches!(
            PcapReader::new(&b"GIF89a..........................."[..]),
            Err(PcapError::BadMagic(_))
        ));
    }

    #[test]
    fn truncated_file_errors_cleanly() {
        let pkts = sample();
        let bytes = write(&pkts);
        // Record boundaries: a cut exactly there is a clean, shorter file.
        let mut bounds = vec![GLOBAL_HDR_LEN];
        for (_, d) in &pkts {
            bounds.push(bounds.last().unwrap() + RECORD_HDR_LEN + d.len());
        }
        for cut in 0..bytes.len() {
            let r = PcapReader::new(&bytes[..cut]);
            if cut < GLOBAL_HDR_LEN {
                assert!(matches!(r, Err(PcapError::TruncatedHeader)), "cut {cut}");
                continue;
            }
            let items: Vec<_> = r.unwrap().collect();
            let whole = bounds.iter().filter(|&&b| b <= cut).count() - 1;
            if bounds.contains(&cut) {
                assert_eq!(items.len(), whole, "cut {cut}");
                assert!(items.iter().all(|i| i.is_ok()));
            } else {
                assert_eq!(items.len(), whole + 1, "cut {cut}");
                assert!(items[..whole].iter().all(|i| i.is_ok()));
                match &items[whole] {
                    Err(PcapError::TruncatedRecord { index }) => {
                        assert_eq!(*index as usize, whole)
                    }
                    other => panic!("cut {cut}: {other:?}"),
                }
            }
        }
    }

    #[test]
    fn oversized_caplen_is_an_error() {
        let mut b = write(&[(0, vec![1, 2, 3])]);
        let at = GLOBAL_HDR_LEN + 8;
        b[at..at + 4].copy_from_slice(&(MAX_CAPLEN + 1).to_le_bytes());
        let items: Vec<_> = PcapReader::new(&b[..]).unwrap().collect();
        assert_eq!(items.len(), 1);
        assert!(matches!(
            items[0],
            Err(PcapError::CaplenTooLarge { index: 0, caplen }) if caplen == MAX_CAPLEN + 1
        ));
        // Exactly MAX_CAPLEN is accepted (and then truncated here).
        b[at..at + 4].copy_from_slice(&MAX_CAPLEN.to_le_bytes());
        let items: Vec<_> = PcapReader::new(&b[..]).unwrap().collect();
        assert!(matches!(
            items[0],
            Err(PcapError::TruncatedRecord { index: 0 })
        ));
    }

    #[test]
    fn random_garbage_never_panics() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let good = write(&sample());
        for _ in 0..2000 {
            let mut b = good.clone();
            for _ in 0..(next() % 8 + 1) {
                let at = (next() % b.len() as u64) as usize;
                b[at] = next() as u8;
            }
            b.truncate((next() % (b.len() as u64 + 1)) as usize);
            if let Ok(r) = PcapReader::new(&b[..]) {
                // The reader is fused after an error, so flatten terminates.
                for p in r.flatten() {
                    assert!(p.data.len() <= MAX_CAPLEN as usize);
                }
            }
        }
    }

    #[test]
    fn file_helpers() {
        let dir = std::env::temp_dir().join(format!("tqfwd-pcap-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("x.pcap");
        let frames = vec![vec![1u8; 60], vec![2u8; 100]];
        write_all(&path, &frames).unwrap();
        let got = read_all(&path).unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].data, frames[0]);
        assert_eq!(got[1].data, frames[1]);
        assert_eq!((got[0].ts_ns, got[1].ts_ns), (0, 1_000));
        assert!(matches!(
            read_all(dir.join("missing.pcap")),
            Err(PcapError::Io(_))
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
