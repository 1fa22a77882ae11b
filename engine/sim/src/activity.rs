//! When each simulated GPU runs kernels: the dispatches the workload makes, by the SDK's
//! clock (their records' start and end), which the simulated AMD-SMI reads to say whether
//! a GPU is busy at the time it is asked. Dispatches are kept only while AMD-SMI is
//! initialized (a run that reads no device metrics pays nothing), and only until they end.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// Per GPU, the dispatches that have not ended yet.
pub struct Activity {
    watched: AtomicBool,
    gpus: Vec<Mutex<Running>>,
}

/// One GPU's dispatches that have not ended yet, by end: `(end, sequence) → start`, in
/// nanoseconds (the sequence tells apart dispatches that end together).
#[derive(Default)]
struct Running {
    by_end: BTreeMap<(u64, u64), u64>,
    sequence: u64,
}

impl Activity {
    pub fn new(gpus: usize) -> Activity {
        Activity {
            watched: AtomicBool::new(false),
            gpus: (0..gpus).map(|_| Mutex::default()).collect(),
        }
    }

    /// Whether dispatches are kept (while AMD-SMI is initialized).
    pub fn watch(&self, watched: bool) {
        self.watched.store(watched, Ordering::Release);
    }

    /// GPU `gpu` runs a kernel from `start` to `end`. Dispatches that ended before `now`
    /// are forgotten: no question asked from now on concerns them.
    pub fn dispatch(&self, gpu: usize, start: u64, end: u64, now: u64) {
        if !self.watched.load(Ordering::Acquire) {
            return;
        }
        let mut running = self.gpus[gpu].lock().unwrap();
        running.by_end = running.by_end.split_off(&(now, u64::MAX));
        running.sequence += 1;
        let key = (end, running.sequence);
        running.by_end.insert(key, start);
    }

    /// Whether a kernel runs on GPU `gpu` at `t` (no later than now).
    pub fn busy(&self, gpu: usize, t: u64) -> bool {
        let running = self.gpus[gpu].lock().unwrap();
        let mut ending_after = running.by_end.range((t, u64::MAX)..);
        ending_after.any(|(_, &start)| start <= t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gpu_is_busy_while_a_kernel_of_it_runs() {
        let activity = Activity::new(2);
        let now = 1_000_000_000;
        activity.dispatch(1, now - 1_000, now + 60_000_000_000, now);
        assert!(!activity.busy(1, now), "unwatched, nothing is kept");
        activity.watch(true);
        activity.dispatch(1, now - 1_000, now + 60_000_000_000, now);
        assert!(activity.busy(1, now));
        assert!(!activity.busy(0, now), "the other GPU is idle");
        assert!(!activity.busy(1, now - 2_000), "before the kernel");
        assert!(!activity.busy(1, now + 60_000_000_000), "when it ends");
        // A dispatch that ended is forgotten when the next one comes.
        activity.dispatch(0, now - 5_000, now - 4_000, now);
        activity.dispatch(0, now + 1_000, now + 2_000, now);
        activity.dispatch(0, now + 1_500, now + 2_000, now);
        assert_eq!(activity.gpus[0].lock().unwrap().by_end.len(), 2);
        assert!(!activity.busy(0, now));
        assert!(activity.busy(0, now + 1_200));
    }
}
