//! GPU busy time per agent over the run, for the report's chart: in at most [`BUCKETS`]
//! buckets of equal width, so memory stays flat however long the run. When a kernel ends
//! past the last bucket, neighbouring buckets merge and the width doubles: at most 54
//! times, however far apart a spool's times are, and a kernel spans at most every bucket.

use std::collections::BTreeMap;

/// Buckets per agent, at most.
pub const BUCKETS: usize = 512;

/// An agent: the stream (process) it belongs to, and its index there.
pub type AgentKey = (u16, u32);

#[derive(Debug, Default)]
pub struct Timeline {
    /// The first start seen; buckets count from it.
    origin: Option<u64>,
    /// Nanoseconds per bucket.
    width: u64,
    /// Busy time per bucket, per agent.
    busy: BTreeMap<AgentKey, Vec<u64>>,
    /// Per agent, the end of the time already counted busy: kernels on several queues
    /// overlap, and an agent is busy while any of them runs (records come in start order,
    /// so the union needs only this).
    covered: BTreeMap<AgentKey, u64>,
}

impl Timeline {
    pub fn add(&mut self, agent: AgentKey, start: u64, end: u64) {
        let covered = self.covered.entry(agent).or_default();
        let start = start.max(*covered);
        if end <= start {
            return;
        }
        *covered = end;
        let origin = *self.origin.get_or_insert(start);
        if self.width == 0 {
            self.width = 1_000; // 1 µs to begin with
        }
        let (start, end) = (
            start.max(origin) - origin,
            end.max(start.max(origin)) - origin,
        );
        while end / self.width >= BUCKETS as u64 {
            self.widen();
        }
        let buckets = self.busy.entry(agent).or_insert_with(|| vec![0; BUCKETS]);
        let mut at = start;
        while at < end {
            let bucket = at / self.width;
            let until = end.min((bucket + 1).saturating_mul(self.width));
            buckets[bucket as usize] += until - at;
            at = until;
        }
    }

    /// Halves the resolution: bucket pairs merge into the first half.
    fn widen(&mut self) {
        for buckets in self.busy.values_mut() {
            for i in 0..BUCKETS / 2 {
                buckets[i] = buckets[2 * i] + buckets[2 * i + 1];
            }
            buckets[BUCKETS / 2..].fill(0);
        }
        self.width *= 2;
    }

    /// Per agent, the busy fraction (0 to 1) of each bucket up to the last busy one, and
    /// the bucket width in nanoseconds.
    pub fn fractions(&self) -> (u64, Vec<(AgentKey, Vec<f64>)>) {
        let used = self
            .busy
            .values()
            .filter_map(|b| b.iter().rposition(|&v| v > 0))
            .max()
            .map_or(0, |last| last + 1);
        let agents = self
            .busy
            .iter()
            .map(|(&agent, buckets)| {
                let fractions = buckets[..used]
                    .iter()
                    .map(|&b| (b as f64 / self.width as f64).min(1.0))
                    .collect();
                (agent, fractions)
            })
            .collect();
        (self.width, agents)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_time_lands_in_its_buckets_and_survives_widening() {
        let mut timeline = Timeline::default();
        let agent = (0, 1);
        // Half of the first microsecond, then all of the third.
        timeline.add(agent, 1_000_000, 1_000_500);
        timeline.add(agent, 1_002_000, 1_003_000);
        let (width, agents) = timeline.fractions();
        assert_eq!(width, 1_000);
        assert_eq!(agents[0].1, [0.5, 0.0, 1.0]);
        // A kernel ending past 512 µs doubles the width until it fits: 2 µs buckets.
        timeline.add(agent, 1_600_000, 1_600_100);
        let (width, agents) = timeline.fractions();
        assert_eq!(width, 2_000);
        assert_eq!(agents[0].1[..2], [0.25, 0.5]);
        let busy: f64 = agents[0].1.iter().map(|f| f * width as f64).sum();
        assert_eq!(busy.round() as u64, 500 + 1_000 + 100, "no time is lost");
    }

    #[test]
    fn overlapping_kernels_count_once() {
        let mut timeline = Timeline::default();
        let agent = (0, 1);
        timeline.add(agent, 0, 600);
        timeline.add(agent, 200, 800); // overlaps the first on another queue
        timeline.add(agent, 300, 500); // inside both
        timeline.add((0, 2), 0, 100); // another agent
        let (_, agents) = timeline.fractions();
        assert_eq!(agents[0].1, [0.8]);
        assert_eq!(agents[1].1, [0.1]);
    }

    #[test]
    fn a_kernel_that_never_ends_keeps_the_buckets_bounded() {
        let mut timeline = Timeline::default();
        timeline.add((0, 1), 1_000, 2_000);
        timeline.add((0, 1), 3_000, u64::MAX);
        let (width, agents) = timeline.fractions();
        assert!(agents[0].1.len() <= BUCKETS);
        let busy: f64 = agents[0].1.iter().map(|f| f * width as f64).sum();
        let expected = 1_000.0 + (u64::MAX - 3_000) as f64;
        assert!(
            (busy - expected).abs() / expected < 1e-9,
            "{busy} of {expected}"
        );
    }
}
