//! AMD's own rocpd tools (`../shared/rocpd-peer`, see its README): `rocpd convert`,
//! `summary` and `query` run on rocflow's databases, and what they wrote read back. The
//! kit needs Debian's Python 3.11 with pandas (`$ROCPD_PYTHON`, else `python3`); without
//! either the suite fails, saying what to install: it never passes by skipping.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use super::{csv, text};

/// The kit and the Python that runs it, found once.
pub struct Peer {
    /// `bin/rocpd`: `python -m rocpd` with the kit's package and libraries.
    bin: PathBuf,
    python: OsString,
}

/// Calls and total nanoseconds per name, per summary table.
pub type Stats = BTreeMap<String, BTreeMap<String, (u64, u64)>>;

impl Peer {
    pub fn get() -> &'static Peer {
        static PEER: OnceLock<Peer> = OnceLock::new();
        PEER.get_or_init(|| {
            let root = std::env::var_os("ROCPD_PEER")
                .map_or_else(|| super::shared().join("rocpd-peer"), PathBuf::from);
            let bin = root.join("bin/rocpd");
            assert!(
                bin.is_file(),
                "AMD's rocpd kit is missing at {} (set ROCPD_PEER to where it is): this \
                 suite runs AMD's converter on rocflow's databases",
                root.display()
            );
            let python = std::env::var_os("ROCPD_PYTHON").unwrap_or_else(|| "python3".into());
            let site = root.join("lib/python3.11/site-packages");
            let probe = Command::new(&python)
                .args(["-c", "import pandas, rocpd.libpyrocpd"])
                .env("PYTHONPATH", &site)
                .env("LD_LIBRARY_PATH", root.join("lib"))
                .output();
            let problem = match &probe {
                Ok(out) if out.status.success() => None,
                Ok(out) => Some(text(&out.stderr)),
                Err(e) => Some(e.to_string()),
            };
            if let Some(problem) = problem {
                panic!(
                    "{} cannot run AMD's rocpd kit: {problem}\nInstall its runtime packages \
                     (apt-packages.txt) and Python requirements (requirements.txt) into a \
                     Python 3.11, and point ROCPD_PYTHON at it (see {}/README.md)",
                    python.to_string_lossy(),
                    root.display()
                );
            }
            Peer { bin, python }
        })
    }

    /// `rocpd ARGS… -i DBS…` in `dir`. Under load AMD's converter now and then dies of a
    /// signal (an abort in glibc's thread priority code, `__pthread_tpp_change_priority`)
    /// or stalls, whatever it reads: its Perfetto writer, done converting, took from 15 s
    /// to over 100 s to close a trace of 600 dispatches on a loaded 2-core machine. So one
    /// converter runs at a time in the suite, and a death by signal or a run past four
    /// minutes (then killed) is retried, while a database it rejects (a Python error, exit
    /// status 1) fails the test at once.
    pub fn run(&self, args: &[&str], dbs: &[PathBuf], dir: &Path) -> Output {
        use std::os::unix::process::ExitStatusExt;
        static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
        const LIMIT: std::time::Duration = std::time::Duration::from_secs(240);
        let _turn = ONE_AT_A_TIME
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for tries in 1..=3 {
            let mut child = Command::new(&self.bin)
                .args(args)
                .arg("-i")
                .args(dbs)
                .current_dir(dir)
                .env("ROCPD_PYTHON", &self.python)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("rocpd runs");
            // The pipes are drained by threads so that a chatty run cannot block on them.
            let drain = |pipe: Option<Box<dyn std::io::Read + Send>>| {
                std::thread::spawn(move || {
                    let mut bytes = Vec::new();
                    if let Some(mut pipe) = pipe {
                        let _ = pipe.read_to_end(&mut bytes);
                    }
                    bytes
                })
            };
            let stdout = drain(child.stdout.take().map(|p| Box::new(p) as _));
            let stderr = drain(child.stderr.take().map(|p| Box::new(p) as _));
            let started = std::time::Instant::now();
            let status = loop {
                if let Some(status) = child.try_wait().unwrap() {
                    break Some(status);
                }
                if started.elapsed() > LIMIT {
                    let _ = child.kill();
                    let _ = child.wait();
                    break None;
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            };
            let (stdout, stderr) = (stdout.join().unwrap(), stderr.join().unwrap());
            let status = match status {
                Some(status) if status.signal().is_none() || tries == 3 => status,
                _ if tries < 3 => continue,
                None => panic!("rocpd {args:?} on {dbs:?} ran past {LIMIT:?} three times"),
                Some(status) => status,
            };
            let stderr_text = text(&stderr);
            let start = stderr_text.len().saturating_sub(3000);
            let start = (start..)
                .find(|&i| stderr_text.is_char_boundary(i))
                .unwrap();
            assert!(
                status.success(),
                "rocpd {args:?} on {dbs:?}: {status} (try {tries})\n{}",
                &stderr_text[start..]
            );
            return Output {
                status,
                stdout,
                stderr,
            };
        }
        unreachable!("the third try returns or fails")
    }

    /// `rocpd convert -f csv pftrace otf2` into `dir/name`: the CSV rows per file (its
    /// name without `out_` and `.csv`, e.g. `kernel_trace`). Fails unless the Perfetto
    /// trace and the OTF2 archive were written too.
    pub fn convert(&self, dbs: &[PathBuf], dir: &Path, name: &str) -> BTreeMap<String, usize> {
        let out_dir = dir.join(name);
        let out_arg = out_dir.to_str().unwrap();
        let args = ["convert", "-f", "csv", "pftrace", "otf2", "-d", out_arg];
        self.run(&args, dbs, dir);
        for trace in ["out_results.pftrace", "out_results.otf2"] {
            let path = out_dir.join(trace);
            let len = std::fs::metadata(&path).map_or(0, |m| m.len());
            assert!(len > 0, "rocpd convert wrote no {}", path.display());
        }
        let mut rows = BTreeMap::new();
        for entry in std::fs::read_dir(&out_dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if let Some(kind) = name
                .strip_prefix("out_")
                .and_then(|n| n.strip_suffix(".csv"))
            {
                rows.insert(kind.to_owned(), csv(&path).len());
            }
        }
        rows
    }

    /// `rocpd summary -f csv`: every table but the domain summary, by the table's name
    /// (`kernels`, `hip`, `memory_copies`, …); none when the databases hold no activity.
    pub fn summary(&self, dbs: &[PathBuf], dir: &Path) -> Stats {
        let out_dir = dir.join("amd-summary");
        let args = ["summary", "-f", "csv", "-d", out_dir.to_str().unwrap()];
        self.run(&args, dbs, dir);
        let mut stats = Stats::new();
        let Ok(entries) = std::fs::read_dir(&out_dir) else {
            return stats;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let Some(table) = name.strip_suffix("_summary.csv") else {
                continue;
            };
            let rows = csv(&path).into_iter().map(|row| {
                let number = |column: &str| row[column].parse::<f64>().unwrap().round() as u64;
                let value = (number("Calls"), number("DURATION (nsec)"));
                (row["Name"].clone(), value)
            });
            stats.insert(table.to_owned(), rows.collect());
        }
        stats
    }

    /// `rocpd query --query SQL -f csv`: the rows, by column.
    pub fn query(&self, dbs: &[PathBuf], dir: &Path, sql: &str) -> Vec<BTreeMap<String, String>> {
        let out_dir = dir.join("amd-query");
        let args = ["query", "--query", sql, "--format", "csv"];
        let args = [&args[..], &["-d", out_dir.to_str().unwrap(), "-o", "q"]].concat();
        self.run(&args, dbs, dir);
        csv(&out_dir.join("q.csv"))
    }
}
