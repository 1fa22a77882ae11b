//! When each simulated GPU runs kernels: the dispatches the workload makes, by the SDK's
//! clock (their records' start and end), which the simulated AMD-SMI reads to say whether
//! a GPU is busy at the time it is asked.

use std::sync::Mutex;

/// Per GPU, the dispatches that have not ended yet: `(start, end)` in nanoseconds.
pub struct Activity {
    gpus: Vec<Mutex<Vec<(u64, u64)>>>,
}

impl Activity {
    pub fn new(gpus: usize) -> Activity {
        Activity {
            gpus: (0..gpus).map(|_| Mutex::new(Vec::new())).collect(),
        }
    }

    /// GPU `gpu` runs a kernel from `start` to `end`. Dispatches that ended before now are
    /// forgotten: no question asked from now on concerns them.
    pub fn dispatch(&self, gpu: usize, start: u64, end: u64) {
        let now = crate::sdk::now();
        let mut running = self.gpus[gpu].lock().unwrap();
        running.retain(|&(_, e)| e > now);
        running.push((start, end));
    }

    /// Whether a kernel runs on GPU `gpu` at `t` (no later than now).
    pub fn busy(&self, gpu: usize, t: u64) -> bool {
        let running = self.gpus[gpu].lock().unwrap();
        running
            .iter()
            .any(|&(start, end)| (start..end).contains(&t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gpu_is_busy_while_a_kernel_of_it_runs() {
        let activity = Activity::new(2);
        let now = crate::sdk::now();
        activity.dispatch(1, now - 1_000, now + 60_000_000_000);
        assert!(activity.busy(1, now));
        assert!(!activity.busy(0, now), "the other GPU is idle");
        assert!(!activity.busy(1, now - 2_000), "before the kernel");
        // A dispatch that ended is forgotten when the next one comes.
        activity.dispatch(0, now - 5_000, now - 4_000);
        activity.dispatch(0, now + 1_000, now + 2_000);
        assert_eq!(activity.gpus[0].lock().unwrap().len(), 1);
        assert!(!activity.busy(0, now));
        assert!(activity.busy(0, now + 1_500));
    }
}
