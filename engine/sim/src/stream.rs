//! The simulated application's HIP streams: each thread creates the streams its
//! scenario's work names before its first iteration and destroys them after its last; a
//! created stream runs its work in order. The SDK reports them through the `HIP_STREAM`
//! callbacks: `CREATE` and `DESTROY` after those calls, and `SET` around each call that
//! enqueues work on a stream, the null stream included.

use std::collections::BTreeMap;
use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, Ordering};

use rocflow_core::abi::Handle;
use rocflow_core::abi::hip_stream::{CREATE, DESTROY, HipStreamData, PHASE_NONE, SET};
use rocflow_core::scenario::Scenario;

/// Where a thread's `HIP_STREAM` callbacks go (its emitter, which calls the contexts).
pub trait Callbacks {
    /// One `HIP_STREAM` callback, operation `operation` in phase `phase`, with `payload`.
    fn stream_callback(&self, operation: i32, phase: i32, payload: *mut c_void);
}

/// The SDK numbers a process's streams as they are created, from 1: 0 is the null stream.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// Where the simulated HIP runtime's stream objects (`hipStream_t`) are.
const STREAM_OBJECTS: u64 = 0x7a00_0000_0000;

/// One thread's streams.
pub struct Streams {
    created: BTreeMap<u32, Created>,
}

struct Created {
    id: u64,
    value: u64,
    /// When the work enqueued on it so far ends.
    free_at: u64,
}

/// A stream as the SDK's callbacks name it.
#[derive(Clone, Copy)]
pub struct Named {
    pub id: u64,
    /// The `hipStream_t`; 0 for the null stream.
    pub value: u64,
}

impl Streams {
    /// Creates the streams the scenario names, reporting each.
    pub fn create(scenario: &Scenario, emitter: &impl Callbacks) -> Streams {
        let created = (scenario.created_streams().into_iter())
            .map(|stream| {
                let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
                let value = STREAM_OBJECTS + id * 0x100;
                report(emitter, CREATE, PHASE_NONE, Named { id, value });
                (
                    stream,
                    Created {
                        id,
                        value,
                        free_at: 0,
                    },
                )
            })
            .collect();
        Streams { created }
    }

    /// Scenario stream `stream` as the SDK names it.
    pub fn named(&self, stream: u32) -> Named {
        match self.created.get(&stream) {
            Some(c) => Named {
                id: c.id,
                value: c.value,
            },
            None => Named { id: 0, value: 0 },
        }
    }

    /// When work on `stream` ready at `ready` can start: on a created stream, once the
    /// work before it has ended.
    pub fn ready(&self, stream: u32, ready: u64) -> u64 {
        self.created
            .get(&stream)
            .map_or(ready, |c| ready.max(c.free_at))
    }

    /// Work on `stream` ends at `end`.
    pub fn ran(&mut self, stream: u32, end: u64) {
        if let Some(c) = self.created.get_mut(&stream) {
            c.free_at = c.free_at.max(end);
        }
    }

    /// When the work on every created stream has ended.
    pub fn drained(&self) -> u64 {
        self.created.values().map(|c| c.free_at).max().unwrap_or(0)
    }

    /// Destroys the streams, reporting each.
    pub fn destroy(self, emitter: &impl Callbacks) {
        for c in self.created.into_values() {
            let named = Named {
                id: c.id,
                value: c.value,
            };
            report(emitter, DESTROY, PHASE_NONE, named);
        }
    }
}

/// Reports `stream` as the stream of the call under way: `phase` enter before the call
/// enqueues its work, exit after.
pub fn set(emitter: &impl Callbacks, stream: Named, phase: i32) {
    report(emitter, SET, phase, stream);
}

fn report(emitter: &impl Callbacks, operation: i32, phase: i32, stream: Named) {
    let mut data = HipStreamData {
        size: size_of::<HipStreamData>() as u64,
        stream_id: Handle { handle: stream.id },
        stream_value: stream.value,
    };
    let payload = (&raw mut data).cast::<c_void>();
    emitter.stream_callback(operation, phase, payload);
}
