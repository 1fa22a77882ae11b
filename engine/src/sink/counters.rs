//! Counter samples summed per dispatch and counter over their dimension instances, as
//! rocprofv3 reports counter collection (a `reduce_dimensions` transform before a sink
//! chooses another reduction). The samples of one dispatch come together, so one running
//! sum per stream and agent is all that is kept.

use std::collections::BTreeMap;

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

    /// Adds `part` to the open sum of its stream and agent if it is of the same dispatch
    /// and counter; otherwise opens a sum with it and returns the one it closes.
    fn add_to(&mut self, part: Sum) -> Option<Sum> {
        let key = (part.stream, part.agent);
        if let Some(sum) = self.open.get_mut(&key)
            && sum.dispatch == part.dispatch
            && sum.counter == part.counter
        {
            sum.value += part.value;
            return None;
        }
        self.open.insert(key, part)
    }

    /// The sums still open, at the end of the run.
    pub fn finish(self) -> impl Iterator<Item = Sum> {
        self.open.into_values()
    }
}

/// SPM samples summed per counter over their instances at each sample time: what the
/// counter counted on the agent in each interval. A time's samples do not come together
/// (the SDK delivers a dispatch's samples an XCC at a time, and the samples of dispatches
/// on the agent's other queues come as their threads' buffers are flushed, up to a flush
/// interval apart), so each agent's counter keeps the sums of its latest [`SPM_WINDOW`]
/// times open, and gives the oldest once more come.
#[derive(Debug, Default)]
pub struct SpmSums {
    open: HashMap<(u16, u32, u32), BTreeMap<u64, f64>>,
}

/// How many sample times of an agent's counter are summed at once: about a second of
/// samples at the default interval, as long as the tool holds a buffer's records (a few
/// MiB per counter).
pub const SPM_WINDOW: usize = 1 << 18;

impl SpmSums {
    /// Adds a sample; returns the sum of the oldest time of its agent's counter once more
    /// than [`SPM_WINDOW`] are open.
    pub fn add(&mut self, stream: u16, r: &SpmSample) -> Option<Sum> {
        let times = self
            .open
            .entry((stream, r.agent, r.counter_id))
            .or_default();
        *times.entry(r.timestamp_ns).or_default() += r.value;
        if times.len() <= SPM_WINDOW {
            return None;
        }
        let (time, value) = times.pop_first().expect("more than the window");
        Some(spm_sum(stream, r.agent, r.counter_id, time, value))
    }

    /// The sums still open, at the end of the run, each counter's in time order.
    pub fn finish(self) -> impl Iterator<Item = Sum> {
        (self.open.into_iter()).flat_map(|((stream, agent, counter), times)| {
            (times.into_iter())
                .map(move |(time, value)| spm_sum(stream, agent, counter, time, value))
        })
    }
}

fn spm_sum(stream: u16, agent: u32, counter: u32, time: u64, value: f64) -> Sum {
    Sum {
        stream,
        agent,
        dispatch: time,
        counter,
        time,
        value,
    }
}
