//! Sizes from a process's `/proc/PID/status`, which the support module and the run
//! benchmarks both read.

/// A size, in kB, that `/proc/{pid}/status` gives by its label (`VmHWM:`); `None` once the
/// process is gone.
pub fn kb(pid: &str, label: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    (status.lines())
        .find_map(|l| l.strip_prefix(label))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}
