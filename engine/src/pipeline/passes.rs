//! Counters into passes: the GPU counts a limited number of events per hardware block at
//! once, so a context that asks for more is collected over several runs of the
//! application, each counting a pass's share. A counter the SDK derives keeps its inputs
//! in one pass (the SDK computes it from one configuration); counters the pipeline derives
//! are computed by the runner once the passes are merged.

use rocflow_core::sdk::limits;

/// What one collected counter needs the hardware to count on one architecture: its
/// distinct hardware counters, each with its block.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Need {
    pub counter: String,
    pub arch: String,
    pub hardware: Vec<(String, String)>,
}

/// A counter that does not fit in a pass even alone.
#[derive(Debug, PartialEq)]
pub(super) struct Oversized {
    pub counter: String,
    pub arch: String,
    pub block: String,
    pub count: u32,
    pub limit: u32,
}

/// Puts `counted` (in order) into passes, first fit: each pass holds at most `per_pass`
/// counters and, on every architecture, no more counters of a block than it counts at
/// once. A counter without needs (no definitions say what it counts) fits anywhere.
pub(super) fn plan(
    counted: &[String],
    needs: &[Need],
    per_pass: Option<usize>,
) -> Result<Vec<Vec<String>>, Oversized> {
    let mut passes: Vec<Vec<String>> = Vec::new();
    for counter in counted {
        if let Some(over) = of(needs, counter).find_map(|n| exceeded(n.arch.as_str(), [n])) {
            return Err(Oversized {
                counter: counter.clone(),
                ..over
            });
        }
        let fits = |pass: &Vec<String>| {
            per_pass.is_none_or(|max| pass.len() < max)
                && of(needs, counter).all(|need| {
                    let with = pass
                        .iter()
                        .flat_map(|c| of(needs, c))
                        .filter(|n| n.arch == need.arch);
                    exceeded(&need.arch, with.chain([need])).is_none()
                })
        };
        match passes.iter_mut().find(|pass| fits(pass)) {
            Some(pass) => pass.push(counter.clone()),
            None => passes.push(vec![counter.clone()]),
        }
    }
    Ok(passes)
}

/// What `counter` needs, on each architecture.
fn of<'a>(needs: &'a [Need], counter: &'a str) -> impl Iterator<Item = &'a Need> {
    needs.iter().filter(move |n| n.counter == counter)
}

/// The first block over its limit when `needs` (of one architecture) are counted together.
fn exceeded<'a>(arch: &str, needs: impl IntoIterator<Item = &'a Need>) -> Option<Oversized> {
    let mut hardware: Vec<&(String, String)> =
        needs.into_iter().flat_map(|n| &n.hardware).collect();
    hardware.sort_unstable();
    hardware.dedup();
    let (block, count, limit) = limits::exceeded(hardware.iter().map(|(_, b)| b.as_str()))?;
    Some(Oversized {
        counter: String::new(),
        arch: arch.to_owned(),
        block: block.to_owned(),
        count,
        limit,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn need(counter: &str, hardware: &[(&str, &str)]) -> Need {
        Need {
            counter: counter.into(),
            arch: "gfx942".into(),
            hardware: hardware
                .iter()
                .map(|(c, b)| (c.to_string(), b.to_string()))
                .collect(),
        }
    }

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_block_over_its_limit_opens_a_pass_and_derived_inputs_stay_together() {
        let needs = [
            need("GRBM_COUNT", &[("GRBM_COUNT", "GRBM")]),
            need("GRBM_GUI_ACTIVE", &[("GRBM_GUI_ACTIVE", "GRBM")]),
            // A derived counter needing both GRBM counters, one already in the first pass.
            need(
                "GPU_UTIL",
                &[("GRBM_GUI_ACTIVE", "GRBM"), ("GRBM_COUNT", "GRBM")],
            ),
            need("GRBM_CP_BUSY", &[("GRBM_CP_BUSY", "GRBM")]),
            need("SQ_WAVES", &[("SQ_WAVES", "SQ")]),
        ];
        let counted = names(&[
            "GRBM_COUNT",
            "GRBM_GUI_ACTIVE",
            "GPU_UTIL",
            "GRBM_CP_BUSY",
            "SQ_WAVES",
        ]);
        let passes = plan(&counted, &needs, None).unwrap();
        assert_eq!(
            passes,
            [
                names(&["GRBM_COUNT", "GRBM_GUI_ACTIVE", "GPU_UTIL", "SQ_WAVES"]),
                names(&["GRBM_CP_BUSY"]),
            ]
        );
        let capped = plan(&counted, &needs, Some(2)).unwrap();
        assert_eq!(capped.len(), 3, "{capped:?}");
    }

    #[test]
    fn a_counter_that_needs_more_than_a_block_counts_is_refused() {
        let needs = [need(
            "BUSY",
            &[
                ("GRBM_COUNT", "GRBM"),
                ("GRBM_CP_BUSY", "GRBM"),
                ("GRBM_GUI_ACTIVE", "GRBM"),
            ],
        )];
        let err = plan(&names(&["BUSY"]), &needs, None).unwrap_err();
        assert_eq!(
            (
                err.counter.as_str(),
                err.block.as_str(),
                err.count,
                err.limit
            ),
            ("BUSY", "GRBM", 3, 2)
        );
    }
}
