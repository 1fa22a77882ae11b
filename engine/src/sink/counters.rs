//! Counter samples summed per dispatch and counter over their dimension instances, as
//! rocprofv3 reports counter collection (a `reduce_dimensions` transform before a sink
//! chooses another reduction). The samples of one dispatch come together, so one running
//! sum per stream and agent is all that is kept.

use rustc_hash::FxHashMap as HashMap;

use crate::record::CounterSample;

/// One counter's value for one dispatch.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sum {
    pub stream: u16,
    pub agent: u32,
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
        let key = (stream, r.agent);
        if let Some(sum) = self.open.get_mut(&key)
            && sum.dispatch == r.dispatch_id
            && sum.counter == r.counter_id
        {
            sum.value += r.value;
            return None;
        }
        let next = Sum {
            stream,
            agent: r.agent,
            dispatch: r.dispatch_id,
            counter: r.counter_id,
            time: r.timestamp_ns,
            value: r.value,
        };
        self.open.insert(key, next)
    }

    /// The sums still open, at the end of the run.
    pub fn finish(self) -> impl Iterator<Item = Sum> {
        self.open.into_values()
    }
}
