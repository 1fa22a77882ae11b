//! The stages' place behind the application. While it runs, every thread that decodes
//! records, feeds the sinks or writes outputs takes the lowest priority there is (nice 19),
//! so that where the application and the stages want more cores than the machine has (a
//! node's ranks on every core, two cores), the application's threads get them first and
//! the profile does not stretch its timeline; the stages' backlog waits (in a file once
//! past memory) until a core is free. The threads that take the application's frames
//! from its socket keep their priority: the application's SDK buffers wait on them.
//!
//! The priority is not raised again once the application exits: an unprivileged process
//! may not, and on a machine that runs nothing else it changes nothing.

/// The nice value the stages take: the lowest priority.
pub const STAGES: libc::c_int = 19;

/// Gives the calling thread, the threads it starts from now on (they inherit it) and the
/// pool's threads [`STAGES`]'s priority.
pub fn lower_stages() {
    lower_this_thread();
    rayon::broadcast(|_| lower_this_thread());
}

fn lower_this_thread() {
    // SAFETY: a system call on the calling thread's own id; raising one's own nice value
    // needs no privilege, and failing leaves the priority as it was.
    unsafe { libc::setpriority(libc::PRIO_PROCESS, this_thread(), STAGES) };
}

fn this_thread() -> libc::id_t {
    // SAFETY: no arguments; the calling thread's id.
    let tid = unsafe { libc::gettid() };
    tid as libc::id_t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nice() -> libc::c_int {
        // SAFETY: as above; -1 is a nice value too, but never one these threads have.
        unsafe { libc::getpriority(libc::PRIO_PROCESS, this_thread()) }
    }

    #[test]
    fn the_thread_its_later_threads_and_the_pool_take_the_stages_priority() {
        let before = std::thread::spawn(nice).join().unwrap();
        assert!(before < STAGES, "the test runs at nice {before} already");
        let (own, started) = std::thread::spawn(|| {
            lower_stages();
            (nice(), std::thread::spawn(nice).join().unwrap())
        })
        .join()
        .unwrap();
        assert_eq!((own, started), (STAGES, STAGES));
        assert!(rayon::broadcast(|_| nice()).iter().all(|&n| n == STAGES));
        // Threads started elsewhere keep theirs.
        assert_eq!(std::thread::spawn(nice).join().unwrap(), before);
    }
}
