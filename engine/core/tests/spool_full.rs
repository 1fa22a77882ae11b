//! A spool whose disk fills: alone in its test binary, since the file size limit that
//! stands in for a full disk holds for the whole process.

use rocflow_core::record::{Batch, KernelDispatch};
use rocflow_core::spool::{Ending, SpoolReader, SpoolWriter};
use rocflow_core::wire;

/// A write that fails leaves a gap the spool cannot show: every later write fails too, and
/// closing the spool does not record its end over the gap. The frames before the gap read.
#[test]
fn after_a_failed_write_the_end_is_not_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let batch = Batch::KernelDispatch(vec![KernelDispatch::default(); 1000]);
    let mut frame = Vec::new();
    wire::encode_records(0, &batch, &mut frame);
    let path = dir.path().join("run.rfraw");
    let mut writer = SpoolWriter::create(&path).unwrap();
    writer.write(&frame).unwrap();
    // Writes past the limit fail, as on a full disk; a frame past the writer's buffer
    // reaches the file at once.
    let limit = 4 << 20;
    let big = [frame.repeat((2 * limit) / frame.len())].concat();
    let (failed, then) = with_file_size_limit(limit as u64, || {
        (writer.write(&big).is_err(), writer.write(&frame).is_err())
    });
    assert!(failed, "a write past the limit succeeded");
    assert!(then, "a write after a failed one succeeded");
    let closed = writer.finish().unwrap_err().to_string();
    assert!(closed.contains("end is not recorded"), "{closed}");

    let mut reader = SpoolReader::open(&path).unwrap();
    let read: Vec<_> = reader.by_ref().collect::<Result<_, _>>().unwrap();
    assert!(!read.is_empty());
    assert!(
        !matches!(reader.ending(), Some(Ending::Complete)),
        "{:?}",
        reader.ending()
    );
}

/// Runs `f` with writes past `limit` bytes of a file failing (with EFBIG: the signal they
/// raise is ignored), then restores the limit.
fn with_file_size_limit<T>(limit: u64, f: impl FnOnce() -> T) -> T {
    // SAFETY: plain calls on the process's own limit and signal disposition.
    unsafe {
        let mut old = std::mem::zeroed::<libc::rlimit>();
        assert_eq!(libc::getrlimit(libc::RLIMIT_FSIZE, &mut old), 0);
        let signal = libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
        let new = libc::rlimit {
            rlim_cur: limit,
            rlim_max: old.rlim_max,
        };
        assert_eq!(libc::setrlimit(libc::RLIMIT_FSIZE, &new), 0);
        let out = f();
        libc::setrlimit(libc::RLIMIT_FSIZE, &old);
        libc::signal(libc::SIGXFSZ, signal);
        out
    }
}
