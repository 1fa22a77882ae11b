//! The truth of SPM: each dispatch streamed gives, per counter and SPM place (XCC, shader
//! engine, instance), samples inside its span that add up to what dispatch counting gives
//! the counter's instances at that place.

use std::collections::BTreeMap;

use super::{Rows, Scenario};

/// A streamed value's place: dispatch, counter, and XCC, shader engine and instance.
pub type Key = (u64, String, [u16; 3]);

/// What the samples of one place add up to, and the times they came at.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Streamed {
    pub sum: f64,
    pub times: Vec<u64>,
}

/// The samples of rocflow's `spm_sample` table, summed per place.
pub fn streamed(rows: &Rows) -> BTreeMap<Key, Streamed> {
    let mut streamed: BTreeMap<Key, Streamed> = BTreeMap::new();
    for row in rows {
        let place = ["xcc", "shader_engine", "instance"].map(|c| row[c].parse().unwrap());
        let key = (
            row["dispatch_id"].parse().unwrap(),
            row["counter"].clone(),
            place,
        );
        let at = streamed.entry(key).or_default();
        at.sum += row["value"].parse::<f64>().unwrap();
        at.times.push(row["timestamp_ns"].parse().unwrap());
    }
    streamed
}

/// The dispatches of a `kernel_dispatch` table: id → agent, start and end.
pub fn dispatches(rows: &Rows) -> BTreeMap<u64, (u32, u64, u64)> {
    (rows.iter())
        .map(|row| {
            let field = |name: &str| row[name].parse::<u64>().unwrap();
            let agent = field("agent") as u32;
            (
                field("dispatch_id"),
                (agent, field("start_ns"), field("end_ns")),
            )
        })
        .collect()
}

impl Scenario {
    /// Holds what was streamed against the truth of `dispatches` (each streamed) and
    /// `counters`: each place's samples add up to its value and come inside the dispatch,
    /// the last at its end. The number of samples, or what is wrong.
    pub fn spm_truth(
        &self,
        streamed: &BTreeMap<Key, Streamed>,
        dispatches: &BTreeMap<u64, (u32, u64, u64)>,
        counters: &[&str],
    ) -> Result<usize, String> {
        let mut expected: BTreeMap<Key, f64> = BTreeMap::new();
        for (&id, &(agent, _, _)) in dispatches {
            // Agent 0 is the CPU; GPU `g` is agent `g + 1`.
            let gpu = agent as usize - 1;
            for &name in counters {
                for c in self.instances(gpu, name) {
                    let value = self.counter_value(gpu, name, id, c).unwrap();
                    let key = (id, name.to_owned(), [c[0], c[2], c[6]]);
                    *expected.entry(key).or_default() += value;
                }
            }
        }
        let places: Vec<&Key> = streamed.keys().collect();
        if places != expected.keys().collect::<Vec<_>>() {
            return Err(format!(
                "{} places streamed, {} expected; first streamed {:?}, first expected {:?}",
                places.len(),
                expected.len(),
                places.first(),
                expected.keys().next()
            ));
        }
        let mut samples = 0;
        for (key, at) in streamed {
            if at.sum != expected[key] {
                return Err(format!(
                    "{key:?}: {} streamed, {} counted",
                    at.sum, expected[key]
                ));
            }
            let (_, start, end) = dispatches[&key.0];
            let inside = at.times.iter().all(|&t| t > start && t <= end);
            if !inside || at.times.iter().max() != Some(&end) {
                return Err(format!(
                    "{key:?}: samples at {:?}, outside ({start}, {end}] or none at its end",
                    at.times
                ));
            }
            samples += at.times.len();
        }
        Ok(samples)
    }
}
