//! Header fields as byte ranges (smoltcp's convention: each header's
//! `mod field { pub const SRC_PORT: Field = 0..2; }`), their big-endian
//! reads, and the parts every length-checked header view shares
//! ([`checked_view!`]).

use core::ops::Range;

/// A header field: the bytes it spans, from the start of its header.
pub(crate) type Field = Range<usize>;

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

/// The two-byte field `f` of `b`, big-endian. Callers have validated
/// `f.end <= b.len()`.
#[inline]
pub(crate) fn get16(b: &[u8], f: Field) -> u16 {
    debug_assert_eq!(f.len(), 2);
    be16(b, f.start)
}

/// The four-byte field `f` of `b`, big-endian. Callers have validated
/// `f.end <= b.len()`.
#[inline]
pub(crate) fn get32(b: &[u8], f: Field) -> u32 {
    debug_assert_eq!(f.len(), 4);
    be32(b, f.start)
}

/// The bytes of field `f` of `b` (an address), `N` = `f.len()`. Callers have
/// validated `f.end <= b.len()`.
#[inline]
pub(crate) fn bytes<const N: usize>(b: &[u8], f: Field) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(&b[f]);
    a
}

/// A zero-copy header view `$name<'a>` over `buf: &'a [u8]` and its
/// `check_len`, the header's own `check_len_in` (which the header writes:
/// its rules) with the whole buffer in view. With `trimmed`, also the two
/// constructors of a view that ends at the length `check_len_in` returns:
/// `new_checked` and `new_checked_in`. The view's accessors read only
/// what `check_len_in` validated, so they never read past the buffer.
macro_rules! checked_view {
    ($(#[$attr:meta])* $name:ident) => {
        $(#[$attr])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub struct $name<'a> {
            buf: &'a [u8],
        }

        impl<'a> $name<'a> {
            /// [`check_len_in`](Self::check_len_in) with the whole of `buf`
            /// in view (`avail` = `buf.len()`).
            #[inline]
            pub fn check_len(buf: &[u8]) -> Result<usize, $crate::wire::WireError> {
                Self::check_len_in(buf, buf.len())
            }
        }
    };
    ($(#[$attr:meta])* $name:ident, trimmed) => {
        $crate::wire::field::checked_view!($(#[$attr])* $name);

        impl<'a> $name<'a> {
            /// Wraps `buf` after [`check_len`](Self::check_len), trimmed to
            /// the length it returns (trailing bytes such as Ethernet
            /// padding are not in the view).
            #[inline]
            pub fn new_checked(buf: &'a [u8]) -> Result<Self, $crate::wire::WireError> {
                let len = Self::check_len(buf)?;
                Ok($name { buf: &buf[..len] })
            }

            /// Wraps the part of a packet in view, after
            /// [`check_len_in`](Self::check_len_in): the view ends at the
            /// length it returns or at the end of `head`, whichever comes
            /// first, so the payload may be shorter than the length fields
            /// say.
            #[inline]
            pub fn new_checked_in(
                head: &'a [u8],
                avail: usize,
            ) -> Result<Self, $crate::wire::WireError> {
                let len = Self::check_len_in(head, avail)?;
                Ok($name {
                    buf: &head[..len.min(head.len())],
                })
            }
        }
    };
}
pub(crate) use checked_view;
