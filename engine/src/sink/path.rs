//! Output path placeholders: `{hostname}`, `{pid}`, `{ppid}`, `{rank}`, `{timestamp}`.
//! (Pipeline parameters were substituted when the pipeline was compiled.)

use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::catalog::Catalog;
use crate::record::Process;

/// The values placeholders take for one run.
#[derive(Debug, Clone, PartialEq)]
pub struct Placeholders {
    pub hostname: Component,
    pub pid: u32,
    pub ppid: u32,
    pub rank: u32,
    /// Seconds since the Unix epoch, shown as `YYYYMMDD-HHMMSS` (UTC).
    pub timestamp: u64,
}

impl Placeholders {
    /// The values of the first process in the catalog; what it does not say comes from
    /// this machine and this process.
    pub fn for_run(catalog: &Catalog) -> Placeholders {
        let here = Placeholders {
            hostname: Component::new(&local_hostname()),
            pid: std::process::id(),
            ppid: 0,
            rank: rocflow_core::mpi::world(|v| std::env::var(v).ok()).map_or(0, |w| w.rank),
            timestamp: started(),
        };
        match catalog.streams().find_map(|(_, s)| s.process.as_ref()) {
            Some(process) => here.for_process(process),
            None => here,
        }
    }

    /// The values of `process`; what its metadata does not say is kept from `self`.
    pub fn for_process(&self, process: &Process) -> Placeholders {
        Placeholders {
            hostname: Component::new(&process.hostname),
            pid: process.pid,
            ppid: process.ppid,
            rank: process.rank.unwrap_or(self.rank),
            timestamp: process
                .start_unix_ns
                .map_or(self.timestamp, |ns| ns / 1_000_000_000),
        }
    }

    /// The path with every placeholder filled in.
    pub fn expand(&self, template: &str) -> PathBuf {
        PathBuf::from(self.fill(template))
    }

    /// The text with every placeholder filled in.
    pub fn fill(&self, template: &str) -> String {
        let timestamp = utc(self.timestamp);
        let mut out = template.to_owned();
        for (name, value) in [
            ("{hostname}", self.hostname.as_str().to_owned()),
            ("{pid}", self.pid.to_string()),
            ("{ppid}", self.ppid.to_string()),
            ("{rank}", self.rank.to_string()),
            ("{timestamp}", timestamp),
        ] {
            out = out.replace(name, &value);
        }
        out
    }
}

/// When this rocflow started, in seconds since the Unix epoch: the `{timestamp}` of a run
/// that does not say when it started (a spool written before rocflow kept it), the same
/// for every output of the run.
fn started() -> u64 {
    static STARTED: OnceLock<u64> = OnceLock::new();
    *STARTED.get_or_init(|| {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())
    })
}

/// A placeholder's text as it goes into a path: one plain component, whatever a spool (or
/// this machine) says. ASCII letters, digits, `.`, `-` and `_` are kept, every other
/// character becomes `_`, and so does a leading `.` or `-` (so the value is never `..`, a
/// hidden name or an option of a post-step's command); an empty value is `_`, and at most
/// 64 characters are kept (a hostname's limit).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Component(String);

impl Component {
    const MAX_LEN: usize = 64;

    pub fn new(value: &str) -> Component {
        let text: String = (value.chars().take(Self::MAX_LEN).enumerate())
            .map(|(i, c)| match c {
                'a'..='z' | 'A'..='Z' | '0'..='9' | '_' => c,
                '.' | '-' if i > 0 => c,
                _ => '_',
            })
            .collect();
        Component(if text.is_empty() { "_".into() } else { text })
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

fn local_hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_else(|_| "localhost".to_owned())
}

/// `YYYYMMDD-HHMMSS` of a Unix time, in UTC (days to civil date as in Howard Hinnant's
/// well-known algorithm).
fn utc(seconds: u64) -> String {
    let days = (seconds / 86_400) as i64;
    let secs = seconds % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}{month:02}{day:02}-{:02}{:02}{:02}",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expands_every_placeholder() {
        let p = Placeholders {
            hostname: Component::new("node7"),
            pid: 42,
            ppid: 1,
            rank: 3,
            timestamp: 1_763_812_800,
        };
        assert_eq!(
            p.expand("out/{hostname}/{rank}-{pid}-{ppid}-{timestamp}.db"),
            PathBuf::from("out/node7/3-42-1-20251122-120000.db")
        );
        assert_eq!(utc(0), "19700101-000000");
        assert_eq!(utc(951_782_400), "20000229-000000");
    }

    #[test]
    fn any_text_becomes_one_plain_path_component() {
        for (text, component) in [
            ("node-7.cluster_a", "node-7.cluster_a"),
            ("../../x", "_._.._x"),
            ("..", "_."),
            ("/etc/passwd", "_etc_passwd"),
            ("-rf", "_rf"),
            (".hidden", "_hidden"),
            ("a\0b c\nd", "a_b_c_d"),
            ("", "_"),
            ("nœud", "n_ud"),
        ] {
            assert_eq!(Component::new(text).as_str(), component, "{text:?}");
        }
        let long = Component::new(&"h".repeat(1000));
        assert_eq!(long.as_str().len(), Component::MAX_LEN);
    }
}
