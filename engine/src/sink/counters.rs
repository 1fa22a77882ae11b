//! Counter samples summed per dispatch and counter over their dimension instances, as
//! rocprofv3 reports counter collection (a `reduce_dimensions` transform before a sink
//! chooses another reduction). The samples of one dispatch come together, so one running
//! sum per stream and agent is all that is kept.

use rustc_hash::FxHashMap as HashMap;

use crate::record::{CounterSample, DeviceCounterSample, SpmSample};

/// One counter's value for one dispatch, or for one read of a device.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sum {
    pub stream: u16,
    pub agent: u32,
    /// The dispatch; for a device read, its time (a read's values come together too).
    pub dispatch: u64,
    pub counter: u32,
    /// The first sample's time.
    pub time: u64,
    pub value: f64,
}

/// The sums being added up, per (stream, agent).
#[derive(Debug, Default)]
pub struct CounterSums {
    open: HashMap<(u16, u32), Sum>,
}

impl CounterSums {
    /// Adds a sample; returns the sum it completes when it starts another dispatch or
    /// counter on its agent.
    pub fn add(&mut self, stream: u16, r: &CounterSample) -> Option<Sum> {
        self.add_to(Sum {
            stream,
            agent: r.agent,
            dispatch: r.dispatch_id,
            counter: r.counter_id,
            time: r.timestamp_ns,
            value: r.value,
        })
    }

    /// Adds a device counter sample; returns the sum it completes when it starts another
    /// read or counter on its agent. Device samples need sums of their own: they come
    /// between a dispatch's samples.
    pub fn add_device(&mut self, stream: u16, r: &DeviceCounterSample) -> Option<Sum> {
        self.add_to(Sum {
            stream,
            agent: r.agent,
            dispatch: r.timestamp_ns,
            counter: r.counter_id,
            time: r.timestamp_ns,
            value: r.value,
        })
    }

    /// Adds `part` to the open sum of its stream and agent.
    fn add_to(&mut self, part: Sum) -> Option<Sum> {
        merge(&mut self.open, (part.stream, part.agent), part)
    }

    /// The sums still open, at the end of the run.
    pub fn finish(self) -> impl Iterator<Item = Sum> {
        self.open.into_values()
    }
}

/// Adds `part` to the open sum under `key` if it is of the same dispatch (or time) and
/// counter; otherwise opens a sum with it and returns the one it closes.
fn merge<K: std::hash::Hash + Eq>(open: &mut HashMap<K, Sum>, key: K, part: Sum) -> Option<Sum> {
    if let Some(sum) = open.get_mut(&key)
        && sum.dispatch == part.dispatch
        && sum.counter == part.counter
    {
        sum.value += part.value;
        return None;
    }
    open.insert(key, part)
}

/// SPM samples summed per counter over their instances at each sample time: what the
/// counter counted on the agent in each interval. A time's samples come together, the
/// counters interleaved, so a sum is kept per counter.
#[derive(Debug, Default)]
pub struct SpmSums {
    open: HashMap<(u16, u32, u32), Sum>,
}

impl SpmSums {
    /// Adds a sample; returns the sum it completes when it starts another time of its
    /// agent's counter.
    pub fn add(&mut self, stream: u16, r: &SpmSample) -> Option<Sum> {
        let part = Sum {
            stream,
            agent: r.agent,
            dispatch: r.timestamp_ns,
            counter: r.counter_id,
            time: r.timestamp_ns,
            value: r.value,
        };
        merge(&mut self.open, (stream, r.agent, r.counter_id), part)
    }

    /// The sums still open, at the end of the run.
    pub fn finish(self) -> impl Iterator<Item = Sum> {
        self.open.into_values()
    }
}
