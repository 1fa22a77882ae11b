//! What the counter stages need of a counter value, whichever service read it: a dispatch's
//! (dispatch counting) or a device's at a moment (device counting). Both kinds of record
//! hold one value of one counter at one coordinate; they differ only in what groups the
//! values read together.

use crate::record::{Batch, CounterSample, DeviceCounterSample};

/// Values read together: the process, the agent and the dispatch id (dispatch counting)
/// or the time of the read (device counting).
pub(super) type Group = (u32, u32, u64);

/// One counter value at one dimension coordinate, in a group of values read together.
pub(super) trait Counted: Copy {
    /// What a group is, for messages: "dispatch" or "read at".
    const GROUP: &'static str;
    /// The values read together with this one.
    fn group(&self) -> Group;
    fn agent(&self) -> u32;
    fn counter_id(&self) -> u32;
    fn value(&self) -> f64;
    fn value_mut(&mut self) -> &mut f64;
    /// The coordinates, in `COUNTER_DIMENSIONS` order.
    fn coordinates(&self) -> [u16; 7];
    /// This value's group at another counter, coordinate and value.
    fn with(self, counter_id: u32, coordinates: [u16; 7], value: f64) -> Self;
    /// The batch of `values`.
    fn batch(values: Vec<Self>) -> Batch;
    /// The values of a batch of this kind.
    fn of(batch: &mut Batch) -> Option<&mut Vec<Self>>;
}

/// The two kinds differ only in their name, their group's last key and their batch.
macro_rules! counted {
    ($($kind:ident: $group:literal by $key:ident),*) => {$(
        impl Counted for $kind {
            const GROUP: &'static str = $group;
            fn group(&self) -> Group {
                (self.pid, self.agent, self.$key)
            }
            fn agent(&self) -> u32 {
                self.agent
            }
            fn counter_id(&self) -> u32 {
                self.counter_id
            }
            fn value(&self) -> f64 {
                self.value
            }
            fn value_mut(&mut self) -> &mut f64 {
                &mut self.value
            }
            fn coordinates(&self) -> [u16; 7] {
                $kind::coordinates(self)
            }
            fn with(self, counter_id: u32, coordinates: [u16; 7], value: f64) -> Self {
                $kind {
                    counter_id,
                    value,
                    ..self
                }
                .at(coordinates)
            }
            fn batch(values: Vec<Self>) -> Batch {
                Batch::$kind(values)
            }
            fn of(batch: &mut Batch) -> Option<&mut Vec<Self>> {
                match batch {
                    Batch::$kind(values) => Some(values),
                    _ => None,
                }
            }
        }
    )*};
}

counted!(
    CounterSample: "dispatch" by dispatch_id,
    DeviceCounterSample: "read at" by timestamp_ns
);
