//! The truth of device counting: a read counts the dispatches that ended on its GPU since
//! the context started, each with the values dispatch counting gives it. The kernel trace
//! of the same run says when each dispatch ended; a read's time is taken as it returns, so
//! its values are those of the dispatches that ended by some moment of the read: the sum
//! over the first `k` dispatches in order of their ends, for a `k` no larger than the
//! number that ended by the read's time, and no smaller than the number that ended by its
//! start.

use std::collections::BTreeMap;

use super::{Rows, Scenario};

/// A sample's place: agent, time, counter and coordinates (as the CSV writes them).
pub type Key = (u32, u64, String, [u16; 7]);

/// How long a read may take, at most, on a loaded machine.
const READ_NS: u64 = 2_000_000_000;

/// The samples of rocflow's `device_counter_sample` table, by place; two values for one
/// place fail the test.
pub fn samples(rows: &Rows) -> BTreeMap<Key, f64> {
    let mut samples = BTreeMap::new();
    for row in rows {
        let coordinates = crate::COORDINATES.map(|c| row[c].parse().unwrap());
        let key = (
            row["agent"].parse().unwrap(),
            row["timestamp_ns"].parse().unwrap(),
            row["counter"].clone(),
            coordinates,
        );
        let previous = samples.insert(key.clone(), row["value"].parse().unwrap());
        assert!(previous.is_none(), "two values for {key:?}");
    }
    samples
}

/// Per agent, the dispatches of a `kernel_dispatch` table in the order they ended: end
/// and id.
pub fn dispatch_ends(rows: &Rows) -> BTreeMap<u32, Vec<(u64, u64)>> {
    let mut ends: BTreeMap<u32, Vec<(u64, u64)>> = BTreeMap::new();
    for row in rows {
        let agent = row["agent"].parse().unwrap();
        let end = row["end_ns"].parse().unwrap();
        ends.entry(agent)
            .or_default()
            .push((end, row["dispatch_id"].parse().unwrap()));
    }
    ends.values_mut().for_each(|e| e.sort_unstable());
    ends
}

impl Scenario {
    /// Holds every sample against the truth, given the run's dispatch `ends`: the number of
    /// reads per agent, or what is wrong (a value that is no such sum, or every value 0).
    pub fn device_reads(
        &self,
        samples: &BTreeMap<Key, f64>,
        ends: &BTreeMap<u32, Vec<(u64, u64)>>,
    ) -> Result<BTreeMap<u32, usize>, String> {
        let mut reads: BTreeMap<u32, std::collections::BTreeSet<u64>> = BTreeMap::new();
        let mut counted = 0;
        for ((agent, time, counter, coordinates), &value) in samples {
            reads.entry(*agent).or_default().insert(*time);
            // Agent 0 is the CPU; GPU `g` is agent `g + 1`.
            let gpu = *agent as usize - 1;
            let ended = ends.get(agent).map_or(&[][..], Vec::as_slice);
            let by_end = ended.partition_point(|&(end, _)| end <= *time);
            let by_start = ended.partition_point(|&(end, _)| end <= time.saturating_sub(READ_NS));
            let mut sum = 0.0;
            let mut sums = vec![sum];
            for &(_, id) in &ended[..by_end] {
                sum += self.counter_value(gpu, counter, id, *coordinates).unwrap();
                sums.push(sum);
            }
            let k = sums.iter().position(|s| *s == value);
            if k.is_none_or(|k| k < by_start) {
                return Err(format!(
                    "{counter} {coordinates:?} of agent {agent} at {time}: {value} is no sum of the first dispatches that ended by then ({by_end} of them)"
                ));
            }
            counted += usize::from(value > 0.0);
        }
        if counted == 0 {
            return Err("every device sample is 0".into());
        }
        Ok(reads.into_iter().map(|(a, t)| (a, t.len())).collect())
    }
}
