//! The error of the views' `new_checked` constructors.

use core::fmt;

/// Why a view could not be built. Off the hot path (the classifier maps both
/// to [`FrameClass::Malformed`](super::FrameClass::Malformed)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WireError {
    /// The slice ends before the header (or a length field) says it should.
    Truncated,
    /// A field holds an impossible value (version, IHL, length < minimum…).
    Malformed,
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            WireError::Truncated => "truncated header",
            WireError::Malformed => "malformed header",
        })
    }
}

impl std::error::Error for WireError {}
