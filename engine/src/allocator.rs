//! The allocator of the `rocflow` binary, and of the benchmarks that measure its work in
//! their own processes (their peaks and speeds are the binary's only under the same one).
//! Not the library's: Python sessions and the tool library keep the host's malloc.
//!
//! jemalloc gives freed memory back to the system by age, not by where it lies. glibc's
//! malloc kept what the stages' threads freed in per-thread arenas, so that a run's peak
//! grew with its length though its memory in use did not: on 16 cores, a 20 M record
//! replay into all five sinks peaked at 1.25-1.28 times a 2 M one (Parquet alone
//! 1.44-1.48) under glibc, at 1.16-1.17 (1.04-1.14) under jemalloc, and ran 10-17 % faster.

#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's settings, read at its first allocation: pages unused for 200 ms go back to
/// the system, at once rather than after a second, lazier, stage; and four arenas, not four
/// per core. An arena keeps what its threads freed for those 200 ms, and the sinks' threads
/// free large buffers window after window, so that with an arena for each thread the peak
/// grew with the threads a run kept busy and with its length (on 16 cores, a 20 M-record
/// CSV replay at 1.21-1.36 times a 2 M-record one with 64 arenas, 1.09-1.18 with four; the
/// README's "Memory stays bounded" has every sink's figures).
#[unsafe(export_name = "_rjem_malloc_conf")]
pub static MALLOC_CONF: &[u8; 46] = b"narenas:4,dirty_decay_ms:200,muzzy_decay_ms:0\0";
