//! Throwaway: wall time of named spans, printed at exit.
use std::sync::Mutex;
use std::time::Instant;
static SPANS: Mutex<Vec<(&'static str, u64, u64)>> = Mutex::new(Vec::new());
pub struct Span(&'static str, Instant);
pub fn span(name: &'static str) -> Span { Span(name, Instant::now()) }
impl Drop for Span {
    fn drop(&mut self) { add(self.0, self.1.elapsed().as_nanos() as u64); }
}
pub fn add(name: &'static str, ns: u64) {
    let mut s = SPANS.lock().unwrap();
    match s.iter_mut().find(|(n, _, _)| *n == name) {
        Some(e) => { e.1 += ns; e.2 += 1; }
        None => s.push((name, ns, 1)),
    }
}
pub fn dump() {
    let Some(path) = std::env::var_os("ROCFLOW_PROF") else { return; };
    let s = SPANS.lock().unwrap();
    let mut out = String::from("PROF ----\n");
    for (n, ns, c) in s.iter() { out += &format!("PROF {n:40} {:9.3} s  {c:8} x\n", *ns as f64 / 1e9); }
    use std::io::Write;
    let _ = std::fs::OpenOptions::new().append(true).create(true).open(path).and_then(|mut f| f.write_all(out.as_bytes()));
}

static WB: std::sync::LazyLock<bool> = std::sync::LazyLock::new(|| std::env::var_os("ROCFLOW_WB").is_some());
static WROTE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
pub fn wrote(file: &std::fs::File, bytes: u64) {
    if !*WB { return; }
    const STEP: u64 = 32 << 20;
    let before = WROTE.fetch_add(bytes, std::sync::atomic::Ordering::Relaxed);
    if before / STEP != (before + bytes) / STEP {
        let _s = span("writeback call");
        use std::os::fd::AsRawFd;
        unsafe { libc::sync_file_range(file.as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE); }
    }
}
