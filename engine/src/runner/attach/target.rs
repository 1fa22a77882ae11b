//! The process `rocflow attach` is to attach to, looked at from outside before anything
//! is asked of it: whether it exists, whether this user may trace it (the kernel's ptrace
//! rules, Yama's scope among them), and whether it was started attachable.

use std::path::PathBuf;

use rocflow_core::attach::{ENABLE_VAR, THREAD};

/// Where Yama keeps its ptrace scope.
const SCOPE: &str = "/proc/sys/kernel/yama/ptrace_scope";
/// The simulated SDK's library, as it appears among a process's mappings.
const SIM: &str = super::super::libraries::SIM;
use super::register::{self, LIBRARY as REGISTER};

/// An attachable process, and the SDK it runs.
#[derive(Debug)]
pub struct Target {
    pub pid: u32,
    pub sdk: TargetSdk,
}

/// The rocprofiler-sdk a target process runs.
#[derive(Debug, Clone, PartialEq)]
pub enum TargetSdk {
    /// rocflow's simulated SDK, with the scenario it was started with, if not the built-in.
    Sim(Option<PathBuf>),
    /// AMD's.
    Rocm,
}

/// Why a process cannot be attached to.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum Refusal {
    #[error("no process has pid {0}")]
    NoProcess(u32),
    #[error("process {pid} cannot be traced: {why}")]
    Permission { pid: u32, why: Denied },
    #[error("process {pid} was not started attachable: {why}")]
    NotAttachable { pid: u32, why: NotAttachable },
}

/// Why ptrace refused.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum Denied {
    #[error("it is being traced by process {0} (a debugger or another profiler)")]
    Traced(u32),
    #[error("Yama's ptrace scope is 3: no process can be attached to until the machine restarts")]
    ScopeNoAttach,
    #[error("Yama's ptrace scope is 2: only a process with CAP_SYS_PTRACE (root) may attach")]
    ScopeAdmin,
    #[error(
        "Yama's ptrace scope is 1: only a process's ancestors, or one with CAP_SYS_PTRACE (root), may attach"
    )]
    ScopeRestricted,
    #[error("it belongs to user {owner}, not to you (user {you})")]
    OtherUser { owner: u32, you: u32 },
    #[error("permission denied ({0})")]
    Other(String),
}

impl Denied {
    /// What the user can do about it.
    pub fn hint(&self) -> &'static str {
        match self {
            Denied::Traced(_) => "detach the other tracer first",
            Denied::ScopeNoAttach => {
                "set kernel.yama.ptrace_scope = 0 (or 1) in /etc/sysctl.d and restart the machine"
            }
            Denied::ScopeAdmin | Denied::ScopeRestricted => {
                "run rocflow attach as root (or give rocflow CAP_SYS_PTRACE), or allow it until reboot: `echo 0 | sudo tee /proc/sys/kernel/yama/ptrace_scope`"
            }
            Denied::OtherUser { .. } => "run rocflow attach as that user, or as root",
            Denied::Other(_) => {
                "run rocflow attach as the process's user or as root; a container needs CAP_SYS_PTRACE (`docker run --cap-add=SYS_PTRACE`)"
            }
        }
    }
}

/// Why a process that can be traced cannot be attached to.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum NotAttachable {
    #[error(
        "it loads no rocprofiler-sdk ({REGISTER} or rocflow's simulated SDK); is it a ROCm application?"
    )]
    NoSdk,
    #[error(
        "it was started without {ENABLE_VAR}=1, which the SDK reads only as the process starts"
    )]
    NotEnabled,
    #[error(
        "it was started with {ENABLE_VAR}=1 but runs no `{THREAD}` thread: rocprofiler-register was loaded too late to start it (or the SDK is older than 1.1)"
    )]
    NoThread,
    #[error(
        "its rocprofiler-register{} ({}) has no attach entry point: it exports no {}, which AMD's process attachment calls in the target and which came with rocprofiler-sdk 1.1 (ROCm 7.1)",
        .version.as_ref().map_or_else(String::new, |v| format!(" {v}")),
        .library.display(),
        .missing.iter().map(|s| format!("`{s}`")).collect::<Vec<_>>().join(" or ")
    )]
    NoEntryPoint {
        library: PathBuf,
        version: Option<String>,
        missing: Vec<&'static str>,
    },
}

impl NotAttachable {
    /// What the user can do about it: whatever is missing, restarting the process so.
    pub fn hint(&self) -> String {
        match self {
            NotAttachable::NoEntryPoint { .. } => format!(
                "no restart makes it attachable on this ROCm: profile it from its start with `rocflow run`, or run it on ROCm 7.1 or later with {ENABLE_VAR}=1"
            ),
            _ => format!(
                "restart it with {ENABLE_VAR}=1 and LD_PRELOAD={REGISTER} (on the simulated device: {ENABLE_VAR}=1 and LD_PRELOAD={SIM})"
            ),
        }
    }
}

/// Looks at process `pid`: exists, may be traced, was started attachable.
pub fn probe(pid: u32) -> Result<Target, Refusal> {
    let proc = PathBuf::from(format!("/proc/{pid}"));
    // A pid that names a thread, not a process, is not one to attach to either.
    let status =
        std::fs::read_to_string(proc.join("status")).map_err(|_| Refusal::NoProcess(pid))?;
    if field(&status, "Tgid:").and_then(|t| t.parse::<u32>().ok()) != Some(pid) {
        return Err(Refusal::NoProcess(pid));
    }
    may_trace(pid).map_err(|why| Refusal::Permission { pid, why })?;
    let maps = std::fs::read_to_string(proc.join("maps")).unwrap_or_default();
    let env = environment(&proc);
    let sdk = if maps.contains(SIM) {
        let scenario = env.iter().find(|(n, _)| n == "ROCFLOW_SIM_SCENARIO");
        TargetSdk::Sim(scenario.map(|(_, v)| PathBuf::from(v)))
    } else if let Some(library) = register::mapped(&maps) {
        // Whatever the process was started with, a rocprofiler-register without the
        // entry points cannot be attached through.
        if let Some(missing) = register::missing_entry_points(&library)
            && !missing.is_empty()
        {
            let version = register::version(&library);
            let why = NotAttachable::NoEntryPoint {
                library,
                version,
                missing,
            };
            return Err(Refusal::NotAttachable { pid, why });
        }
        TargetSdk::Rocm
    } else {
        return Err(Refusal::NotAttachable {
            pid,
            why: NotAttachable::NoSdk,
        });
    };
    if !runs_thread(&proc, THREAD) {
        let enabled = env.iter().any(|(n, v)| n == ENABLE_VAR && v == "1");
        let why = match enabled {
            false => NotAttachable::NotEnabled,
            true => NotAttachable::NoThread,
        };
        return Err(Refusal::NotAttachable { pid, why });
    }
    Ok(Target { pid, sdk })
}

/// Whether this process may trace `pid`, by ptrace itself: seizes it, stops it for a moment
/// and lets it go, as attaching does.
fn may_trace(pid: u32) -> Result<(), Denied> {
    let id = pid as libc::pid_t;
    // SAFETY: PTRACE_SEIZE takes no pointers.
    if unsafe { libc::ptrace(libc::PTRACE_SEIZE, id, 0, 0) } != 0 {
        let error = std::io::Error::last_os_error();
        return Err(denied(pid, error, std::fs::read_to_string(SCOPE).ok()));
    }
    // A seized process is let go only stopped.
    // SAFETY: requests on a process this one now traces; `status` is writable.
    unsafe {
        let mut status = 0;
        if libc::ptrace(libc::PTRACE_INTERRUPT, id, 0, 0) == 0 {
            libc::waitpid(id, &mut status, libc::__WALL);
        }
        libc::ptrace(libc::PTRACE_DETACH, id, 0, 0);
    }
    Ok(())
}

/// Why ptrace refused `pid` with `error`, given Yama's scope (`None` without Yama).
fn denied(pid: u32, error: std::io::Error, scope: Option<String>) -> Denied {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    if let Some(tracer) = field(&status, "TracerPid:").and_then(|t| t.parse().ok()) {
        if tracer != 0 {
            return Denied::Traced(tracer);
        }
    }
    // SAFETY: geteuid has no preconditions.
    let you = unsafe { libc::geteuid() };
    let owner =
        field(&status, "Uid:").and_then(|uids| uids.split_whitespace().nth(1)?.parse().ok());
    explain(scope.as_deref().map(str::trim), owner, you, error)
}

/// The reason among those ptrace refuses for: Yama's scope first, where it forbids this
/// user's attach whoever owns the process, then the owner.
fn explain(scope: Option<&str>, owner: Option<u32>, you: u32, error: std::io::Error) -> Denied {
    match scope {
        Some("3") => return Denied::ScopeNoAttach,
        Some("2") if you != 0 => return Denied::ScopeAdmin,
        Some("1") if you != 0 => return Denied::ScopeRestricted,
        _ => {}
    }
    match owner {
        Some(owner) if owner != you && you != 0 => Denied::OtherUser { owner, you },
        _ => Denied::Other(error.to_string()),
    }
}

/// The value of a `Name:` line of a `/proc/PID/status`.
fn field<'a>(status: &'a str, name: &str) -> Option<&'a str> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(name))
        .map(str::trim)
}

/// The environment the process was started with.
fn environment(proc: &std::path::Path) -> Vec<(String, String)> {
    let bytes = std::fs::read(proc.join("environ")).unwrap_or_default();
    (bytes.split(|&b| b == 0))
        .filter_map(|entry| {
            let entry = String::from_utf8_lossy(entry);
            let (name, value) = entry.split_once('=')?;
            Some((name.to_owned(), value.to_owned()))
        })
        .collect()
}

/// Whether one of the process's threads is named `name`.
fn runs_thread(proc: &std::path::Path, name: &str) -> bool {
    let tasks = std::fs::read_dir(proc.join("task"))
        .into_iter()
        .flatten()
        .flatten();
    tasks
        .filter_map(|task| std::fs::read_to_string(task.path().join("comm")).ok())
        .any(|comm| comm.trim_end() == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eperm() -> std::io::Error {
        std::io::Error::from_raw_os_error(libc::EPERM)
    }

    #[test]
    fn yama_scope_is_named_before_the_owner() {
        assert_eq!(
            explain(Some("3"), Some(0), 0, eperm()),
            Denied::ScopeNoAttach
        );
        assert_eq!(
            explain(Some("2"), Some(1000), 1000, eperm()),
            Denied::ScopeAdmin
        );
        assert_eq!(
            explain(Some("1"), Some(1000), 1000, eperm()),
            Denied::ScopeRestricted
        );
        // Root passes scopes 1 and 2: what refused it is something else.
        assert!(matches!(
            explain(Some("1"), Some(1000), 0, eperm()),
            Denied::Other(_)
        ));
    }

    #[test]
    fn another_users_process_is_named_so() {
        assert_eq!(
            explain(Some("0"), Some(0), 1000, eperm()),
            Denied::OtherUser {
                owner: 0,
                you: 1000
            }
        );
        assert_eq!(
            explain(None, Some(0), 1000, eperm()),
            Denied::OtherUser {
                owner: 0,
                you: 1000
            }
        );
    }

    #[test]
    fn a_missing_pid_is_no_process() {
        // Past the kernel's largest pid.
        assert_eq!(probe(u32::MAX).unwrap_err(), Refusal::NoProcess(u32::MAX));
    }

    #[test]
    fn a_process_without_an_sdk_is_not_attachable() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = child.id();
        let refusal = probe(pid).unwrap_err();
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(
            refusal,
            Refusal::NotAttachable {
                pid,
                why: NotAttachable::NoSdk
            }
        );
    }
}
