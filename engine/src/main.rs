fn main() -> std::process::ExitCode {
    rocflow::cli::main()
}

/// rocflow's allocator (the tool library, in applications, keeps theirs). Its windows and
/// queues are bounded in bytes, yet glibc's malloc, an arena per thread, kept what each
/// thread had once freed: a 20 M-record Parquet
/// replay on 16 threads grew to 1.9 times the peak of a 2 M-record one.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's options, read at its first allocation: pages that fell free go back to the
/// system within a second (its default keeps them ten), so memory follows what is in flight.
#[unsafe(export_name = "_rjem_malloc_conf")]
static MALLOC_CONF: Options = Options(c"dirty_decay_ms:1000,muzzy_decay_ms:0".as_ptr());

/// A C string for jemalloc to read.
#[repr(transparent)]
struct Options(*const std::ffi::c_char);

// SAFETY: the pointer is to a constant string, never written.
unsafe impl Sync for Options {}
