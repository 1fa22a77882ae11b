//! The `kfd` check: `/dev/kfd`, the device every ROCm process opens, is there and open to
//! the user (its group, `render` or `video`, is how a user gets it).

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use super::finding::{Check, Finding};
use super::machine::Machine;

const KFD: &str = "/dev/kfd";

pub(super) fn check(machine: &Machine) -> Finding {
    let Ok(meta) = std::fs::metadata(machine.path(KFD)) else {
        return Finding::fail(
            Check::Kfd,
            "no /dev/kfd: the amdgpu driver is not loaded, or this container was started without the GPU",
            "load the driver (`sudo modprobe amdgpu`, or install it with `amdgpu-install --usecase=rocm`); in a container, pass the GPU: `--device /dev/kfd --device /dev/dri`",
        );
    };
    let Some(user) = machine.user() else {
        return Finding::warn(
            Check::Kfd,
            "/dev/kfd is there, but who runs rocflow does not read (no /proc/self/status)",
            "run rocflow doctor where /proc is mounted",
        );
    };
    let groups = machine.groups();
    let group = groups.iter().find(|g| g.gid == meta.gid());
    let owned_by = group.map_or_else(
        || format!("gid {}", meta.gid()),
        |g| format!("group {}", g.name),
    );
    let mode = format!("mode {:o}, {owned_by}", meta.mode() & 0o777);
    if machine.can_read_write(Path::new(KFD), &user) {
        return Finding::ok(
            Check::Kfd,
            format!("/dev/kfd ({mode}) is readable and writable by you"),
        );
    }
    let you = user
        .name
        .clone()
        .unwrap_or_else(|| format!("uid {}", user.uid));
    let found = format!("/dev/kfd ({mode}) is not readable and writable by {you}");
    let hint = if user.uid == 0 {
        // Root refused: a user namespace that does not map the device's owner.
        "a rootless container: pass the device and keep its group (`podman run --device /dev/kfd --device /dev/dri --group-add keep-groups …`)".to_string()
    } else if let Some(group) =
        group.filter(|g| user.name.as_ref().is_some_and(|n| g.members.contains(n)))
    {
        format!(
            "you are in `{0}`, but this session started before you were added: log out and in again, or run `newgrp {0}`",
            group.name
        )
    } else {
        let named = match group.map(|g| g.name.as_str()) {
            Some(name @ ("render" | "video")) => name.to_string(),
            Some(name) => format!("{name},render,video"),
            None => "render,video".to_string(),
        };
        format!(
            "add yourself to the GPU's groups: `sudo usermod -aG {named} $USER`, then log out and in again"
        )
    };
    Finding::fail(Check::Kfd, found, hint)
}
