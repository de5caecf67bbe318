//! DPDK corelists (`1,3-4,7`), as `-l`, the role options and `--class`
//! write them.

/// Why a corelist was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CorelistError {
    #[error("empty lcore list (expected e.g. 1,3-4)")]
    Empty,
    /// An element that is not `N` or `N-M` with N <= M < 1024.
    #[error("bad lcore list element '{0}' (expected N or N-M, e.g. 1,3-4)")]
    BadElement(String),
}

/// Parses a DPDK corelist: `1,3-4,7`. Sorted, no duplicates.
pub fn parse_corelist(s: &str) -> Result<Vec<u32>, CorelistError> {
    let mut out = Vec::new();
    if s.trim().is_empty() {
        return Err(CorelistError::Empty);
    }
    for part in s.split(',') {
        let part = part.trim();
        let bad = || CorelistError::BadElement(part.to_string());
        if let Some((a, b)) = part.split_once('-') {
            let a: u32 = a.trim().parse().map_err(|_| bad())?;
            let b: u32 = b.trim().parse().map_err(|_| bad())?;
            if a > b || b >= 1024 {
                return Err(bad());
            }
            out.extend(a..=b);
        } else {
            let a: u32 = part.parse().map_err(|_| bad())?;
            if a >= 1024 {
                return Err(bad());
            }
            out.push(a);
        }
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn corelist() {
        assert_eq!(parse_corelist("1,3-4").unwrap(), vec![1, 3, 4]);
        assert_eq!(parse_corelist("4-4,0").unwrap(), vec![0, 4]);
        assert!(parse_corelist("3-1").is_err());
        assert!(parse_corelist("x").is_err());
        assert_eq!(parse_corelist(" "), Err(CorelistError::Empty));
        assert_eq!(
            parse_corelist("1, 2-x").unwrap_err().to_string(),
            "bad lcore list element '2-x' (expected N or N-M, e.g. 1,3-4)"
        );
        assert!(parse_corelist("1,,2").is_err());
    }
}
