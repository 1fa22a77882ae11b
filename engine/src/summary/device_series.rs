//! Device counter reads per GPU over the run, for the report's plots: per agent and
//! counter, the value of each read summed over the counter's instances. A read is what the
//! GPU counted since its context started, so a series thinned to every other read when it
//! grows past [`POINTS`] still climbs as the run did: memory stays flat however long the
//! run.

use std::collections::BTreeMap;

use super::timeline::AgentKey;

/// Reads kept per series, at most.
pub const POINTS: usize = 1024;

/// A series: an agent, and one of its counters' ids.
pub type SeriesKey = (AgentKey, u32);

#[derive(Debug, Default)]
pub struct DeviceSeries {
    /// Per series, each read's time and value, summed over instances.
    reads: BTreeMap<SeriesKey, BTreeMap<u64, f64>>,
}

impl DeviceSeries {
    /// Adds one instance of a counter read at `time`; a read's instances may come in
    /// several chunks.
    pub fn add(&mut self, key: SeriesKey, time: u64, value: f64) {
        let reads = self.reads.entry(key).or_default();
        *reads.entry(time).or_default() += value;
        if reads.len() > POINTS {
            // Every other read, the last kept.
            let last = reads.len() - 1;
            let mut i = 0;
            reads.retain(|_, _| {
                let keep = (last - i) % 2 == 0;
                i += 1;
                keep
            });
        }
    }

    /// Every series, by agent and counter id, its reads in time order.
    pub fn series(&self) -> impl Iterator<Item = (SeriesKey, &BTreeMap<u64, f64>)> {
        self.reads.iter().map(|(&key, reads)| (key, reads))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instances_sum_per_read_and_long_series_thin_keeping_the_last() {
        let mut series = DeviceSeries::default();
        let key = ((0, 1), 7);
        series.add(key, 10, 1.0);
        series.add(key, 10, 2.0);
        series.add(((0, 2), 7), 10, 5.0);
        let reads: Vec<_> = series.series().map(|(k, r)| (k, r.clone())).collect();
        assert_eq!(reads[0], (key, BTreeMap::from([(10, 3.0)])));
        assert_eq!(reads[1].1, BTreeMap::from([(10, 5.0)]));

        for t in 11..=(10 + POINTS as u64) {
            series.add(key, t, t as f64);
        }
        let (_, reads) = series.series().next().unwrap();
        assert_eq!(reads.len(), POINTS / 2 + 1);
        assert_eq!(
            reads.last_key_value(),
            Some((&(10 + POINTS as u64), &(10.0 + POINTS as f64)))
        );
        assert!(
            reads
                .keys()
                .zip(reads.keys().skip(1))
                .all(|(a, b)| b - a == 2)
        );
    }
}
