//! The anchor: the output of DPDK's own `dpdk-test ring_perf_autotest`,
//! read from the `--anchor` file and reduced to its "two physical cores"
//! legacy-API lines (cycles per element, median over the runs in the log).
//!
//! Promises: an anchor that cannot be used (`--anchor-error`, no file, an
//! unreadable file, no such section, fewer "Test OK" than runs) becomes an
//! [`Anchor`] carrying the reason, printed in its place: never a figure, and
//! never a failure of the bench.

use crate::args::Args;
use crate::results::median;

/// Size of the rings `ring_perf_autotest` uses (DPDK 22.11
/// `app/test/test_ring_perf.c`, `RING_SIZE`): the depth row the anchor is
/// compared with.
pub(crate) const ANCHOR_RING_SIZE: usize = 4096;

/// The "two physical cores" figures of `ring_perf_autotest` (legacy API,
/// pointer-sized elements like our `u64`), cycles per element: the median
/// over the runs in the log, and each run's value.
#[derive(Debug, Default, Clone)]
pub(crate) struct Anchor {
    pub(crate) lines: Vec<AnchorLine>,
    pub(crate) error: Option<String>,
}

#[derive(Debug, Clone)]
pub(crate) struct AnchorLine {
    pub(crate) label: String,
    pub(crate) median: f64,
    pub(crate) runs: Vec<f64>,
}

impl Anchor {
    pub(crate) fn get(&self, what: &str) -> Option<f64> {
        self.lines
            .iter()
            .find(|l| l.label.contains(what))
            .map(|l| l.median)
    }
}

/// Parses one or more concatenated `dpdk-test ring_perf_autotest` outputs.
fn parse_anchor(text: &str) -> Result<Vec<AnchorLine>, String> {
    const SECTION: &str = "### Testing using two physical cores ###";
    let mut lines: Vec<AnchorLine> = Vec::new();
    for (start, _) in text.match_indices(SECTION) {
        for line in text[start + SECTION.len()..].lines() {
            let line = line.trim();
            if line.starts_with("###") {
                break;
            }
            // The elem-API section (16-byte elements) has the same title;
            // only the legacy lines (8-byte elements) are kept.
            if !line.starts_with("legacy APIs:") {
                continue;
            }
            let Some((label, value)) = line.rsplit_once(':') else {
                continue;
            };
            let Ok(v) = value.trim().parse::<f64>() else {
                continue;
            };
            let label = label.trim();
            match lines.iter_mut().find(|l| l.label == label) {
                Some(l) => l.runs.push(v),
                None => lines.push(AnchorLine {
                    label: label.to_string(),
                    median: 0.0,
                    runs: vec![v],
                }),
            }
        }
    }
    if lines.is_empty() {
        return Err("no \"two physical cores\" figures in the dpdk-test output (the two lcores may be hyperthreads of one core, or the test failed)".into());
    }
    let runs = lines.iter().map(|l| l.runs.len()).max().unwrap_or(0);
    let ok = text.matches("Test OK").count();
    if ok < runs {
        return Err(format!(
            "ring_perf_autotest reported \"Test OK\" {ok} times for {runs} runs"
        ));
    }
    for l in &mut lines {
        l.median = median(&l.runs);
    }
    Ok(lines)
}

pub(crate) fn load_anchor(args: &Args) -> Anchor {
    if let Some(e) = &args.anchor_error {
        return Anchor {
            lines: Vec::new(),
            error: Some(e.clone()),
        };
    }
    let Some(path) = &args.anchor else {
        return Anchor {
            lines: Vec::new(),
            error: Some("not run (no --anchor file given)".into()),
        };
    };
    match std::fs::read_to_string(path) {
        Ok(text) => match parse_anchor(&text) {
            Ok(lines) => Anchor { lines, error: None },
            Err(e) => Anchor {
                lines: Vec::new(),
                error: Some(e),
            },
        },
        Err(e) => Anchor {
            lines: Vec::new(),
            error: Some(format!("cannot read {}: {e}", path.display())),
        },
    }
}
