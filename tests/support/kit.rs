//! AMD's real rocprofiler-sdk, built without a GPU (`../shared/realsdk`, see its README):
//! where it is, the environment its `env.sh` sets, and `rocflow run` against it with its
//! call logger preloaded, on a node without a GPU or under the kit's fake gfx942.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// The kit, found once.
pub struct Kit {
    pub root: PathBuf,
    /// The kit's libraries under their soname and link names (see [`links`]).
    pub links: PathBuf,
    /// `LD_LIBRARY_PATH` as `env.sh` sets it, behind the kit's soname links (see [`links`]).
    library_path: OsString,
}

/// Where the kit runs the application.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Node {
    /// No KFD topology: the SDK reports no agent.
    NoGpu,
    /// The kit's `fake-gpu.sh`: a CPU and one gfx942 (MI300X-like) in a private mount
    /// namespace (needs root, as CI has).
    FakeGfx942,
}

impl Kit {
    /// The kit; a missing kit fails the test with what to do: the conformance suite never
    /// passes by skipping.
    pub fn get() -> &'static Kit {
        static KIT: OnceLock<Kit> = OnceLock::new();
        KIT.get_or_init(|| {
            let root = std::env::var_os("REALSDK").map_or_else(
                || super::shared().join("realsdk"),
                PathBuf::from,
            );
            let sdk = root.join("lib/librocprofiler-sdk.so.1.0.0");
            assert!(
                sdk.is_file(),
                "AMD's real rocprofiler-sdk kit is missing: no {} (the conformance suite needs ../shared/realsdk beside the repository, or REALSDK naming it; see its README)",
                sdk.display()
            );
            let root = root.canonicalize().unwrap();
            let lib = root.join("lib");
            let links = links(&lib);
            let mut library_path = links.clone().into_os_string();
            for dir in [Some(lib.into_os_string()), std::env::var_os("LD_LIBRARY_PATH")] {
                library_path.push(":");
                library_path.push(dir.unwrap_or_default());
            }
            Kit {
                root,
                links,
                library_path,
            }
        })
    }

    /// `LD_LIBRARY_PATH` as `env.sh` sets it.
    pub fn library_path(&self) -> &OsStr {
        &self.library_path
    }

    pub fn bin(&self, name: &str) -> PathBuf {
        self.root.join("bin").join(name)
    }

    /// `share/rocprofiler-sdk`: the SDK's counter definitions.
    pub fn metrics(&self) -> PathBuf {
        self.root.join("share/rocprofiler-sdk")
    }

    /// `rocflow run PIPELINE --device rocm -- APP…` in a fresh directory, its outputs and
    /// spool there, with the call logger preloaded, the SDK's log at `info` and `env` set.
    pub fn run(&self, node: Node, pipeline: &str, app: &[&OsStr], env: &[(&str, &str)]) -> Run {
        self.run_with(node, pipeline, &[], app, env)
    }

    /// [`Kit::run`] with more of `rocflow run`'s arguments (`--set name=value`, …).
    pub fn run_with(
        &self,
        node: Node,
        pipeline: &str,
        args: &[&str],
        app: &[&OsStr],
        env: &[(&str, &str)],
    ) -> Run {
        let dir = tempfile::tempdir().unwrap();
        let output_dir = format!("output_dir={}", dir.path().display());
        let mut command = self.rocflow(node, dir.path());
        command
            .args(["run", pipeline, "--device", "rocm", "--spool", "run.rfraw"])
            .args(["--set", &output_dir])
            .args(args)
            .arg("--")
            .args(app);
        command.envs(env.iter().copied());
        let output = command.output().expect("rocflow runs");
        Run { dir, output }
    }

    /// `rocflow` (arguments to add) in `dir` on `node`, with the kit's environment: its
    /// libraries first on the loader path, its counter definitions, its call logger
    /// preloaded and the SDK's log at `info`.
    pub fn rocflow(&self, node: Node, dir: &Path) -> Command {
        let rocflow = super::rocflow_exe();
        let mut command = match node {
            Node::NoGpu => Command::new(rocflow),
            Node::FakeGfx942 => {
                let mut c = Command::new(self.root.join("fake-gpu.sh"));
                c.arg(&rocflow);
                c
            }
        };
        command
            .current_dir(dir)
            .env_remove("ROCFLOW_PIPELINE_PATH")
            .env_remove("ROCP_TOOL_LIBRARIES")
            .env_remove("ROCPROFILER_PC_SAMPLING_BETA_ENABLED")
            .env("REALSDK", &self.root)
            .env("LD_LIBRARY_PATH", &self.library_path)
            .env("ROCPROFILER_METRICS_PATH", self.metrics())
            .env("LD_PRELOAD", self.root.join("lib/libcallshim.so"))
            .env("ROCPROFILER_LOG_LEVEL", "info");
        command
    }
}

/// The kit's libraries under every name its `lib/` gives them (`librocprofiler-sdk.so.1`,
/// `librocprofiler-sdk.so`, …), each a symbolic link to the library file it names, in a
/// directory of this kit's own under `target/…/tmp`, to put first on the loader path and
/// the linker's. A copy of the kit may keep the soname links as symbolic links (`cp -r`),
/// as copies of the library (`cp -rL`), or as small files naming their target (as
/// `shared/` holds them), which neither the loader nor the linker can use: whichever it
/// is, this directory is complete.
fn links(lib: &Path) -> PathBuf {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    lib.hash(&mut hasher);
    let dir = (super::target_tmp().join("realsdk-links")).join(format!("{:016x}", hasher.finish()));
    link_libraries(lib, &dir);
    dir
}

/// Fills `dir` with a symbolic link per library name in `lib` to the library file it
/// resolves to (see [`links`]); links of an earlier run there are replaced.
fn link_libraries(lib: &Path, dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    for entry in std::fs::read_dir(lib).unwrap() {
        let path = entry.unwrap().path();
        let Some(target) = library_file(&path) else {
            continue;
        };
        let link = dir.join(path.file_name().unwrap());
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&target, &link).unwrap();
    }
}

/// The library file (ELF) that `path` is or names, through symbolic links and flattened
/// links (see [`flattened_link`]); none for anything else.
fn library_file(path: &Path) -> Option<PathBuf> {
    let mut path = path.canonicalize().ok()?;
    // A chain of names longer than a kit's (`.so` → `.so.1` → `.so.1.0.0`) is a loop.
    for _ in 0..8 {
        if is_elf(&path) {
            return Some(path);
        }
        path = path
            .with_file_name(flattened_link(&path)?)
            .canonicalize()
            .ok()?;
    }
    None
}

fn is_elf(path: &Path) -> bool {
    use std::io::Read;
    let mut magic = [0; 4];
    std::fs::File::open(path).is_ok_and(|mut f| f.read_exact(&mut magic).is_ok())
        && magic == *b"\x7fELF"
}

/// The file name a flattened link holds: a small regular file whose text is the name of
/// a file beside it.
fn flattened_link(path: &Path) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() || meta.len() > 255 {
        return None;
    }
    let text = std::fs::read_to_string(path).ok()?;
    let name = text.trim();
    let target = path.with_file_name(name);
    (!name.is_empty() && !name.contains('/') && target != path && target.is_file())
        .then(|| name.to_owned())
}

/// One `rocflow run` against the kit.
pub struct Run {
    pub dir: tempfile::TempDir,
    pub output: Output,
}

/// A `rocprofiler_*` call of the tool as the call logger saw it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Call {
    pub function: String,
    pub args: String,
    /// The SDK's name of the status it returned, e.g. `ROCPROFILER_STATUS_SUCCESS`.
    pub status: String,
}

impl Run {
    pub fn stderr(&self) -> String {
        super::text(&self.output.stderr)
    }

    /// Whether the run ended as runs of the kit's `force` end, where no kernel runs and no
    /// API is called (see [`super::collected_nothing`]).
    pub fn collected_nothing(&self) -> bool {
        super::collected_nothing(&self.output)
    }

    /// Every `rocprofiler_*` call the tool made, in order.
    pub fn calls(&self) -> Vec<Call> {
        self.stderr()
            .lines()
            .filter_map(|line| {
                let call = line.strip_prefix("[callshim] ")?;
                let (function, rest) = call.split_once('(')?;
                let (args, result) = rest.rsplit_once(") -> ")?;
                let (_, status) = result.split_once(' ')?;
                Some(Call {
                    function: function.to_owned(),
                    args: args.to_owned(),
                    status: status.to_owned(),
                })
            })
            .collect()
    }

    /// The SDK's log of the client: contexts registered and started, once per time the
    /// SDK initialized rocflow's tool.
    pub fn registrations(&self) -> Vec<(usize, usize)> {
        const CLIENT: &str = "rocprofiler-sdk client 'rocflow' registered ";
        self.stderr()
            .lines()
            .filter_map(|line| {
                let rest = &line[line.find(CLIENT)? + CLIENT.len()..];
                let numbers: Vec<usize> = rest
                    .split(' ')
                    .filter_map(|word| word.parse().ok())
                    .collect();
                Some((numbers[0], numbers[1]))
            })
            .collect()
    }

    /// The tool's messages (`rocflow: …` on the application's stderr).
    pub fn tool_messages(&self) -> Vec<String> {
        self.stderr()
            .lines()
            .filter_map(|line| line.strip_prefix("rocflow: "))
            .map(str::to_owned)
            .collect()
    }

    /// `rocflow inspect --json` of the run's spool.
    pub fn inspect(&self) -> serde_json::Value {
        super::inspect(self.dir.path(), "run.rfraw")
    }

    /// Everything the run printed, for a failure's message.
    pub fn printed(&self) -> String {
        format!(
            "stdout:\n{}\nstderr:\n{}",
            super::text(&self.output.stdout),
            self.stderr()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A kit's `lib/` with `libx.so` → `libx.so.1` → `libx.so.1.0.0` kept as `keep` does.
    fn lib(keep: fn(&Path, &str, &str)) -> tempfile::TempDir {
        let lib = tempfile::tempdir().unwrap();
        std::fs::write(lib.path().join("libx.so.1.0.0"), b"\x7fELF x").unwrap();
        keep(lib.path(), "libx.so.1", "libx.so.1.0.0");
        keep(lib.path(), "libx.so", "libx.so.1");
        lib
    }

    #[test]
    fn every_library_name_links_to_its_file_however_the_copy_kept_links() {
        let symbolic: fn(&Path, &str, &str) = |dir, name, target| {
            std::os::unix::fs::symlink(target, dir.join(name)).unwrap();
        };
        let flattened: fn(&Path, &str, &str) = |dir, name, target| {
            std::fs::write(dir.join(name), target).unwrap();
        };
        let copied: fn(&Path, &str, &str) = |dir, name, target| {
            std::fs::copy(dir.join(target), dir.join(name)).unwrap();
        };
        for (form, keep) in [
            ("cp -r", symbolic),
            ("shared/", flattened),
            ("cp -rL", copied),
        ] {
            let lib = lib(keep);
            let links = tempfile::tempdir().unwrap();
            link_libraries(lib.path(), links.path());
            let mut linked: Vec<(String, Vec<u8>)> = std::fs::read_dir(links.path())
                .unwrap()
                .map(|e| e.unwrap().path())
                .map(|link| {
                    let target = std::fs::read_link(&link).unwrap();
                    assert!(target.starts_with(lib.path().canonicalize().unwrap()));
                    let name = link.file_name().unwrap().to_string_lossy().into_owned();
                    (name, std::fs::read(target).unwrap())
                })
                .collect();
            linked.sort();
            let library = b"\x7fELF x".to_vec();
            assert_eq!(
                linked,
                [
                    ("libx.so".to_owned(), library.clone()),
                    ("libx.so.1".to_owned(), library.clone()),
                    ("libx.so.1.0.0".to_owned(), library.clone()),
                ],
                "{form}"
            );
        }
    }

    #[test]
    fn a_name_that_resolves_to_no_library_is_left_out() {
        let lib = tempfile::tempdir().unwrap();
        std::fs::write(lib.path().join("libloop.so"), "libloop.so.1").unwrap();
        std::fs::write(lib.path().join("libloop.so.1"), "libloop.so").unwrap();
        std::fs::write(lib.path().join("notes.txt"), "not a library").unwrap();
        std::os::unix::fs::symlink("libgone.so.1", lib.path().join("libgone.so")).unwrap();
        let links = tempfile::tempdir().unwrap();
        link_libraries(lib.path(), links.path());
        assert_eq!(std::fs::read_dir(links.path()).unwrap().count(), 0);
    }
}
