//! Which dispatches a per-dispatch service (counters, thread trace) takes: kernels whose
//! names pass the include and exclude patterns, in the iteration ranges, counted per
//! kernel as rocprofv3 counts them.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use regex::Regex;
use rocflow_core::contexts::IterationRanges;

use crate::guard::{entry, locked};
use crate::state::tool;

pub struct DispatchFilter {
    include: Option<Regex>,
    exclude: Option<Regex>,
    iterations: Option<IterationRanges>,
    kernels: Mutex<Kernels>,
}

/// Per kernel: whether its name passes the filters, and its dispatches seen.
type Kernels = HashMap<u64, (bool, u64)>;

/// Every filter, so that a fork can hold the locks the SDK's callbacks take: a child must
/// not inherit one locked by a thread it does not have.
static FILTERS: Mutex<Vec<&'static DispatchFilter>> = Mutex::new(Vec::new());

thread_local! {
    /// The filters' locks, held by the thread that forks while it forks.
    static HELD: std::cell::RefCell<Vec<MutexGuard<'static, Kernels>>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

impl DispatchFilter {
    /// A filter that lives for the process, as the SDK's callbacks that read it.
    pub fn leak(
        include: &Option<String>,
        exclude: &Option<String>,
        iterations: &Option<IterationRanges>,
    ) -> Result<&'static DispatchFilter, regex::Error> {
        let regex = |pattern: &Option<String>| pattern.as_deref().map(Regex::new).transpose();
        let filter: &'static DispatchFilter = Box::leak(Box::new(DispatchFilter {
            include: regex(include)?,
            exclude: regex(exclude)?,
            iterations: iterations.clone(),
            kernels: Mutex::default(),
        }));
        locked(FILTERS.lock()).push(filter);
        Ok(filter)
    }

    /// Counts a dispatch of `kernel_id`; whether the service takes it.
    pub fn select(&self, kernel_id: u64) -> bool {
        let mut kernels = locked(self.kernels.lock());
        let kernel = kernels.entry(kernel_id).or_insert_with(|| {
            let name = tool()
                .and_then(|t| t.kernel_name(kernel_id))
                .unwrap_or_default();
            // The filters select by the code object's name or the one outputs show.
            let shown = rocflow_core::demangle::formatted(&name);
            let matches = |r: &Regex| r.is_match(&name) || r.is_match(&shown);
            let pass = self.include.as_ref().is_none_or(matches)
                && !self.exclude.as_ref().is_some_and(matches);
            (pass, 0)
        });
        if !kernel.0 {
            return false;
        }
        kernel.1 += 1;
        self.iterations
            .as_ref()
            .is_none_or(|r| r.contains(kernel.1))
    }
}

/// `pthread_atfork` prepare handler, registered last so it runs first: the SDK's
/// callbacks take no other lock of the fork's before letting go of a filter's.
pub extern "C" fn before_fork() {
    entry("filter::before_fork", (), || {
        let all = locked(FILTERS.lock()).clone();
        HELD.with(|held| {
            let mut held = held.borrow_mut();
            held.extend(all.iter().map(|filter| locked(filter.kernels.lock())));
        });
    });
}

/// `pthread_atfork` parent and child handler. Not guarded: it cannot panic, and must let
/// go of the locks even if the tool was switched off since the prepare handler.
pub extern "C" fn after_fork() {
    HELD.with(|held| held.borrow_mut().clear());
}
