//! The machine the doctor examines: its files, its environment and who runs rocflow on it.
//! Every path is read below a root, `/` for this machine; tests lay a fake machine out
//! under a directory (`rocflow doctor --root DIR`) and examine it as a real one.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::runner::sdk::rooted;

pub struct Machine {
    root: PathBuf,
    /// `root`, links resolved, for paths that come back resolved.
    resolved_root: PathBuf,
    env: HashMap<String, String>,
}

/// Who the doctor judges for: the user running it.
#[derive(Debug, Clone)]
pub struct User {
    /// The effective user id.
    pub uid: u32,
    pub name: Option<String>,
    /// The effective group and the supplementary groups of this session.
    pub gids: Vec<u32>,
}

/// A line of `/etc/group`.
#[derive(Debug, Clone)]
pub struct Group {
    pub name: String,
    pub gid: u32,
    pub members: Vec<String>,
}

impl Machine {
    /// This machine, with this process's environment.
    pub fn this() -> Machine {
        Machine::under(PathBuf::from("/"), std::env::vars_os())
    }

    /// The machine whose files lie under `root`, with the environment `env`.
    pub fn under(
        root: PathBuf,
        env: impl IntoIterator<Item = (std::ffi::OsString, std::ffi::OsString)>,
    ) -> Machine {
        let env = env
            .into_iter()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
            .collect();
        let resolved_root = root.canonicalize().unwrap_or_else(|_| root.clone());
        Machine {
            root,
            resolved_root,
            env,
        }
    }

    /// Whether this is the machine rocflow runs on, not one laid out under a directory.
    pub fn is_this_one(&self) -> bool {
        self.root == Path::new("/")
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// An environment variable, as set (an empty value is set).
    pub fn var(&self, name: &str) -> Option<&str> {
        self.env.get(name).map(String::as_str)
    }

    /// Where the machine's `path` lies here.
    pub fn path(&self, path: impl AsRef<Path>) -> PathBuf {
        rooted(&self.root, path.as_ref())
    }

    /// A path here as the machine names it, for the user.
    pub fn shown(&self, path: &Path) -> String {
        if self.is_this_one() {
            return path.display().to_string();
        }
        [&self.root, &self.resolved_root]
            .iter()
            .find_map(|root| path.strip_prefix(root).ok())
            .map_or_else(
                || path.display().to_string(),
                |inside| Path::new("/").join(inside).display().to_string(),
            )
    }

    /// The text of the machine's file `path`, if it reads.
    pub fn read(&self, path: impl AsRef<Path>) -> Option<String> {
        std::fs::read_to_string(self.path(path)).ok()
    }

    /// The user running rocflow, from `/proc/self/status`; `None` where it does not read.
    pub fn user(&self) -> Option<User> {
        let status = self.read("/proc/self/status")?;
        let ids = |key: &str| -> Option<Vec<u32>> {
            let line = status.lines().find_map(|l| l.strip_prefix(key))?;
            line.split_whitespace().map(|n| n.parse().ok()).collect()
        };
        let uid = *ids("Uid:")?.get(1)?;
        let mut gids = vec![*ids("Gid:")?.get(1)?];
        gids.extend(ids("Groups:").unwrap_or_default());
        let name = self.read("/etc/passwd").and_then(|passwd| {
            passwd.lines().find_map(|line| {
                let fields: Vec<&str> = line.split(':').collect();
                (fields.get(2)?.parse::<u32>().ok()? == uid).then(|| fields[0].to_string())
            })
        });
        Some(User { uid, name, gids })
    }

    /// The machine's groups (`/etc/group`).
    pub fn groups(&self) -> Vec<Group> {
        let text = self.read("/etc/group").unwrap_or_default();
        text.lines()
            .filter_map(|line| {
                let fields: Vec<&str> = line.split(':').collect();
                Some(Group {
                    name: fields.first()?.to_string(),
                    gid: fields.get(2)?.parse().ok()?,
                    members: (fields.get(3)?.split(','))
                        .filter(|m| !m.is_empty())
                        .map(str::to_string)
                        .collect(),
                })
            })
            .collect()
    }

    /// Whether `user` may open the machine's `path` to read and write. On this machine the
    /// kernel says (ACLs and capabilities count); a machine laid out under a directory is
    /// judged by the file's mode bits, owner and group, as the kernel judges them without
    /// ACLs.
    pub fn can_read_write(&self, path: &Path, user: &User) -> bool {
        let here = self.path(path);
        if self.is_this_one() {
            use std::os::unix::ffi::OsStrExt;
            let Ok(name) = std::ffi::CString::new(here.as_os_str().as_bytes()) else {
                return false;
            };
            // SAFETY: `name` is a NUL-terminated path that outlives the call.
            return unsafe { libc::access(name.as_ptr(), libc::R_OK | libc::W_OK) } == 0;
        }
        use std::os::unix::fs::MetadataExt;
        let Ok(meta) = std::fs::metadata(&here) else {
            return false;
        };
        // The owner's bits, else the group's, else everyone's; root needs none.
        let shift = if meta.uid() == user.uid {
            6
        } else if user.gids.contains(&meta.gid()) {
            3
        } else {
            0
        };
        user.uid == 0 || (meta.mode() >> shift) & 0o6 == 0o6
    }
}
