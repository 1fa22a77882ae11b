//! How many counters of one hardware block a GPU counts at once. rocprofiler-sdk refuses a
//! counter configuration that needs more (`ROCPROFILER_STATUS_ERROR_EXCEEDS_HW_LIMIT`):
//! it counts, per block, the distinct hardware counters the configuration needs (a derived
//! counter's inputs included) and asks aqlprofile for the block's limit.

/// Counters per block, as aqlprofile's block tables give them (`*CounterBlockNumCounters`
/// in `gfxip/gfx9/gfx9_block_info.h`, the same in gfx11's for the blocks both have; the
/// MI300 factory changes only UMC, which rocprofiler-sdk's definitions do not use).
const BLOCK_COUNTERS: &[(&str, u32)] = &[
    ("ATC", 4),
    ("ATCL2", 2),
    ("CPC", 2),
    ("CPF", 2),
    ("GCEA", 2),
    ("GCR", 2),
    ("GDS", 4),
    ("GL1A", 4),
    ("GL1C", 4),
    ("GL2A", 4),
    ("GL2C", 4),
    ("GRBM", 2),
    ("GRBM_SE", 4),
    ("GUS", 2),
    ("RPB", 4),
    ("SPI", 6),
    ("SQ", 8),
    ("SX", 4),
    ("TA", 2),
    ("TCA", 4),
    ("TCC", 4),
    ("TCP", 4),
    ("TD", 2),
];

/// How many counters of `block` one configuration may hold; `None` for a block rocflow
/// knows no limit of.
pub fn block_counters(block: &str) -> Option<u32> {
    BLOCK_COUNTERS
        .iter()
        .find(|(name, _)| *name == block)
        .map(|&(_, n)| n)
}

/// The first block that `blocks` (one entry per distinct hardware counter) holds more
/// counters of than the hardware counts at once: its name, the count and the limit.
pub fn exceeded<'a>(blocks: impl IntoIterator<Item = &'a str>) -> Option<(&'a str, u32, u32)> {
    let mut counts: Vec<(&str, u32)> = Vec::new();
    for block in blocks {
        match counts.iter_mut().find(|(b, _)| *b == block) {
            Some((_, n)) => *n += 1,
            None => counts.push((block, 1)),
        }
    }
    counts
        .into_iter()
        .find_map(|(block, n)| Some((block, n, block_counters(block).filter(|&max| n > max)?)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_over_its_limit_is_named_with_its_count() {
        assert_eq!(exceeded(["GRBM", "SQ", "GRBM"]), None);
        assert_eq!(
            exceeded(["GRBM", "SQ", "GRBM", "GRBM"]),
            Some(("GRBM", 3, 2))
        );
        assert_eq!(exceeded(["SQ"; 8]), None);
        assert_eq!(exceeded(["SQ"; 9]), Some(("SQ", 9, 8)));
        // A block without a known limit is never refused.
        assert_eq!(exceeded(["XYZ"; 100]), None);
    }
}
