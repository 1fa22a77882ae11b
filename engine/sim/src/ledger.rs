//! Per GPU whose counters a context samples, the dispatches that ran on it and its last
//! read: what a device read sums. A dispatch never ends before its GPU's last read (the
//! device cannot finish work in the past), so that each read is exactly the sum over the
//! dispatch records whose end lies in its window, whatever the threads' timing.

use std::sync::Mutex;

/// Per GPU, the dispatches of a sampled GPU and its last read.
pub struct Ledger(Vec<Option<Mutex<GpuLedger>>>);

#[derive(Default)]
struct GpuLedger {
    last_read: u64,
    /// End and dispatch id of each dispatch that ran.
    ended: Vec<(u64, u64)>,
}

impl Ledger {
    /// A ledger for the `gpus` GPUs, keeping the dispatches of those `sampled` says.
    pub fn new(gpus: usize, sampled: impl Fn(usize) -> bool) -> Ledger {
        Ledger(
            (0..gpus)
                .map(|gpu| sampled(gpu).then(Mutex::default))
                .collect(),
        )
    }

    /// Runs a dispatch of `duration_ns` ready at `ready` on `gpu`: `start` says when it
    /// starts if ready at a time; a sampled GPU's dispatch is ready no earlier than its
    /// last read, and is entered in the ledger before any read can come between.
    pub fn run(
        &self,
        gpu: usize,
        ready: u64,
        duration_ns: u64,
        dispatch_id: u64,
        start: impl FnOnce(u64) -> u64,
    ) -> u64 {
        let Some(Some(ledger)) = self.0.get(gpu) else {
            return start(ready);
        };
        let mut ledger = ledger.lock().unwrap();
        let start = start(ready.max(ledger.last_read + 1));
        ledger.ended.push((start + duration_ns, dispatch_id));
        start
    }

    /// Every GPU's ledger, locked: held across a fork, so that no read or dispatch is half
    /// entered in the child's copy.
    pub fn lock_all(&self) -> Vec<std::sync::MutexGuard<'_, impl Sized + 'static>> {
        self.0.iter().flatten().map(|l| l.lock().unwrap()).collect()
    }

    /// The dispatches of `gpu` that ended in `(from, to]`; `to` becomes its last read.
    pub fn read(&self, gpu: usize, from: u64, to: u64) -> Vec<u64> {
        let Some(Some(ledger)) = self.0.get(gpu) else {
            return Vec::new();
        };
        let mut ledger = ledger.lock().unwrap();
        ledger.last_read = ledger.last_read.max(to);
        (ledger.ended.iter())
            .filter(|&&(end, _)| end > from && end <= to)
            .map(|&(_, dispatch)| dispatch)
            .collect()
    }
}
