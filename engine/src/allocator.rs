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
/// grew with the threads a run kept busy and with its length. On 16 cores, six rounds over
/// two leases, 20 M-record replays peaked at these multiples of 2 M-record ones with 64
/// arenas and with four: CSV 1.21-1.36 and 1.09-1.18 (256-277 MiB and 195-212), rocpd
/// 1.04-1.25 and 1.01-1.27 (267-285 and 219-227; its 2 M peak moves between 175 and 218
/// MiB); in three rounds Parquet 1.11-1.22 and 1.11-1.14, OTF2 1.15-1.20 and 1.05-1.07,
/// Perfetto 1.00-1.05 and 0.95-1.02, all five sinks 1.12-1.13 and 1.09-1.12 (624-633 and
/// 544-573 MiB), at the same speed in turns. Eight arenas peaked higher (CSV 1.14-1.19).
#[unsafe(export_name = "_rjem_malloc_conf")]
pub static MALLOC_CONF: &[u8; 46] = b"narenas:4,dirty_decay_ms:200,muzzy_decay_ms:0\0";
