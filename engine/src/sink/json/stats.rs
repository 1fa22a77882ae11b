//! rocprofv3's `summary`: per domain, the durations of its records in all and per name
//! (kernel, function, copy direction, …), as its `statistics` class serializes them.

use std::collections::{BTreeMap, HashMap};

use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};

use super::section::Section;

/// Durations in nanoseconds: count, sum, sum of squares and extremes, in integers as
/// rocprofv3 keeps them (the squares in 128 bits, where rocprofv3's 64 wrap).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Stats {
    count: u64,
    sum: u64,
    sqr: u128,
    min: u64,
    max: u64,
}

impl Stats {
    pub fn add(&mut self, ns: u64) {
        self.merge(&Stats {
            count: 1,
            sum: ns,
            sqr: u128::from(ns) * u128::from(ns),
            min: ns,
            max: ns,
        });
    }

    fn merge(&mut self, other: &Stats) {
        if self.count == 0 {
            *self = *other;
            return;
        }
        self.count += other.count;
        self.sum = self.sum.saturating_add(other.sum);
        self.sqr = self.sqr.saturating_add(other.sqr);
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }

    fn mean(&self) -> f64 {
        self.sum as f64 / self.count as f64
    }

    /// The sample variance, from the sums (rocprofv3's formula).
    fn variance(&self) -> f64 {
        if self.count < 2 {
            return 0.0;
        }
        let n = self.count as f64;
        let sum = self.sum as f64;
        (self.sqr as f64 - sum * sum / n) / (n - 1.0)
    }

    fn fields<S: SerializeStruct>(&self, out: &mut S) -> Result<(), S::Error> {
        out.serialize_field("count", &self.count)?;
        out.serialize_field("sum", &self.sum)?;
        out.serialize_field("sqr", &self.sqr)?;
        out.serialize_field("min", &self.min)?;
        out.serialize_field("max", &self.max)?;
        out.serialize_field("mean", &self.mean())?;
        out.serialize_field("stddev", &self.variance().abs().sqrt())?;
        out.serialize_field("variance", &self.variance())
    }
}

impl Serialize for Stats {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut out = serializer.serialize_struct("statistics", 8)?;
        self.fields(&mut out)?;
        out.end()
    }
}

/// A process's durations, per array and name.
pub type Durations = BTreeMap<Section, HashMap<String, Stats>>;

/// Adds a record's duration to its name's statistics.
pub fn add(durations: &mut Durations, section: Section, name: &str, start: u64, end: u64) {
    let names = durations.entry(section).or_default();
    let ns = end.saturating_sub(start);
    match names.get_mut(name) {
        Some(stats) => stats.add(ns),
        None => names.entry(name.to_owned()).or_default().add(ns),
    }
}

/// A domain of `summary`: its total, and its names' as a C++ map (`{"key", "value"}`
/// pairs, by name).
struct Domain<'a> {
    total: Stats,
    operations: BTreeMap<String, &'a Stats>,
}

impl Serialize for Domain<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Entry<'a> {
            key: &'a str,
            value: &'a Stats,
        }
        let operations: Vec<Entry> = (self.operations.iter())
            .map(|(key, value)| Entry { key, value })
            .collect();
        let mut out = serializer.serialize_struct("stats_entry_t", 9)?;
        self.total.fields(&mut out)?;
        out.serialize_field("operations", &operations)?;
        out.end()
    }
}

#[derive(Serialize)]
struct Entry<'a> {
    domain: &'a str,
    stats: Domain<'a>,
}

/// `summary`: the domains that have records, in rocprofv3's order.
pub fn summary(durations: &Durations) -> impl Serialize + '_ {
    (Section::SUMMARY.iter())
        .filter_map(|section| {
            let names = durations.get(section).filter(|n| !n.is_empty())?;
            let mut total = Stats::default();
            names.values().for_each(|s| total.merge(s));
            let domain = section.domain()?;
            // The operations of an enumerated domain are named with the domain's name.
            let key = |name: &str| match section.enumerated() {
                true => format!("{domain}_{name}"),
                false => name.to_owned(),
            };
            Some(Entry {
                domain,
                stats: Domain {
                    total,
                    operations: names.iter().map(|(n, s)| (key(n), s)).collect(),
                },
            })
        })
        .collect::<Vec<_>>()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fields and values of rocprofv3's `statistics<uint64_t, double>`.
    #[test]
    fn statistics_serialize_as_rocprofv3s() {
        let mut durations = Durations::new();
        for (name, start, end) in [("b", 0, 10), ("a", 5, 25), ("b", 100, 130)] {
            add(&mut durations, Section::HipApi, name, start, end);
        }
        let json = serde_json::to_value(summary(&durations)).unwrap();
        let hip = &json[0];
        assert_eq!(hip["domain"], "HIP_API");
        let stats = &hip["stats"];
        assert_eq!(
            (&stats["count"], &stats["sum"], &stats["sqr"]),
            (&3.into(), &60.into(), &1400.into())
        );
        assert_eq!((&stats["min"], &stats["max"]), (&10.into(), &30.into()));
        assert_eq!(stats["mean"], 20.0);
        assert_eq!(stats["variance"], 100.0);
        assert_eq!(stats["stddev"], 10.0);
        assert_eq!(stats["operations"][0]["key"], "a");
        assert_eq!(stats["operations"][1]["key"], "b");
        assert_eq!(stats["operations"][1]["value"]["count"], 2);
    }

    /// A copy counts under its operation, named with its domain as the SDK names it.
    #[test]
    fn enumerated_operations_are_named_with_their_domain() {
        let mut durations = Durations::new();
        add(&mut durations, Section::MemoryCopy, "HOST_TO_DEVICE", 0, 10);
        let json = serde_json::to_value(summary(&durations)).unwrap();
        let operation = &json[0]["stats"]["operations"][0];
        assert_eq!(operation["key"], "MEMORY_COPY_HOST_TO_DEVICE");
        assert_eq!(operation["value"]["sum"], 10);
    }
}
