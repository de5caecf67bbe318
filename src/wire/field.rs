//! Big-endian field reads shared by the header views and the classifier.

/// Big-endian u16 at `at`. Callers have validated `at + 2 <= b.len()`.
#[inline]
pub(crate) fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

/// Big-endian u32 at `at`. Callers have validated `at + 4 <= b.len()`.
#[inline]
pub(crate) fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}
