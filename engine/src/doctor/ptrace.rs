//! The `ptrace` check: Yama's ptrace scope (`/proc/sys/kernel/yama/ptrace_scope`), which
//! decides whether a profiler may attach to an application already running.

use super::finding::{Check, Finding};
use super::machine::Machine;

const SCOPE: &str = "/proc/sys/kernel/yama/ptrace_scope";

pub(super) fn check(machine: &Machine) -> Finding {
    let Some(text) = machine.read(SCOPE) else {
        return Finding::ok(
            Check::Ptrace,
            "no Yama ptrace scope: a process of yours can be attached to",
        );
    };
    let root = machine.user().is_some_and(|u| u.uid == 0);
    let temporary = "`echo 0 | sudo tee /proc/sys/kernel/yama/ptrace_scope` (until reboot)";
    match text.trim() {
        "0" => Finding::ok(
            Check::Ptrace,
            "ptrace scope 0: a process of yours can be attached to",
        ),
        "1" | "2" if root => Finding::ok(
            Check::Ptrace,
            format!(
                "ptrace scope {}: you are root, so a running process can be attached to",
                text.trim()
            ),
        ),
        "1" => Finding::warn(
            Check::Ptrace,
            "ptrace scope 1 (restricted): only a process's ancestors may attach to it, so attaching to a running application needs root",
            format!("attach as root, or allow it: {temporary}"),
        ),
        "2" => Finding::warn(
            Check::Ptrace,
            "ptrace scope 2 (admin only): attaching to a running application needs root",
            format!("attach as root, or allow it: {temporary}"),
        ),
        "3" => Finding::warn(
            Check::Ptrace,
            "ptrace scope 3: no process can be attached to until the machine restarts",
            "set kernel.yama.ptrace_scope = 0 in /etc/sysctl.d and restart",
        ),
        other => Finding::warn(
            Check::Ptrace,
            format!("ptrace scope `{other}` is not one Yama defines (0 to 3)"),
            format!("reset it: {temporary}"),
        ),
    }
}
