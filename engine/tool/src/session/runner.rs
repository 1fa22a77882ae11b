//! A session's runner: `rocflow run` with the session's pipeline, started by the session
//! (one per phase) and serving a process it did not start. Its "application" is a relay
//! shell that hands the session the runner's socket and Plan, then waits for the session
//! to close its standard input; the runner then completes its outputs as at the end of a
//! run.

use std::ffi::OsString;
use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::late_start::Link;

/// What the relay runs: it writes the runner's socket and Plan path to the link file
/// (whole, by a rename) and then waits until the session closes its standard input.
const RELAY: &str = r#"printf '%s\n%s\n' "$ROCFLOW_SOCKET" "$ROCFLOW_PLAN" > "$ROCFLOW_SESSION_LINK.part" && mv -f "$ROCFLOW_SESSION_LINK.part" "$ROCFLOW_SESSION_LINK" && exec cat > /dev/null"#;

/// How long a runner may take to compile the pipeline and listen.
const READY_TIMEOUT: Duration = Duration::from_secs(120);

/// What every runner of a session runs with.
#[derive(Debug, Clone)]
pub struct Spec {
    /// The `rocflow` binary.
    pub rocflow: PathBuf,
    /// A pipeline file or template name.
    pub pipeline: OsString,
    /// `NAME=VALUE` parameters, as `--set` takes them.
    pub sets: Vec<OsString>,
    /// Where the phases' outputs go, one directory each.
    pub output: PathBuf,
    /// `--device`: `sim` (or `sim:SCENARIO`) when the process's SDK is the simulated one.
    pub device: OsString,
}

/// Why a runner did not start or did not complete.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(
        "cannot find the `rocflow` binary: set ROCFLOW_BIN to it, or put it beside {library} or on PATH"
    )]
    NoBinary { library: String },
    #[error("cannot create the session's output directory {}: {source}", .path.display())]
    Output {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot start {}: {source}", .rocflow.display())]
    Spawn {
        rocflow: PathBuf,
        source: std::io::Error,
    },
    #[error("the runner {} (its messages are above, on stderr)", Ended(*.0))]
    Exited(ExitStatus),
    #[error("the runner did not get ready within {} s", READY_TIMEOUT.as_secs())]
    NotReady,
    #[error(
        "the runner (process {pid}) did not complete the phase within {} s: its records are lost unless it completes, left running, into {}",
        .waited.as_secs(),
        .dir.display()
    )]
    Hung {
        pid: u32,
        waited: Duration,
        dir: PathBuf,
    },
    #[error("cannot move the phase's outputs to {}: {source}", .path.display())]
    Rename {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// An exit status, worded.
struct Ended(ExitStatus);

impl std::fmt::Display for Ended {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.0.code(), self.0.signal()) {
            (Some(code), _) => write!(f, "exited with {code}"),
            (_, Some(signal)) => write!(f, "was killed by signal {signal}"),
            _ => f.write_str("ended"),
        }
    }
}

/// A runner serving one phase.
pub struct Runner {
    child: Child,
    /// Closing it ends the phase: the relay exits, the runner completes its outputs.
    stdin: Option<ChildStdin>,
    pub link: Link,
    /// Where this phase's outputs are written, until the phase is named.
    pub dir: PathBuf,
}

impl Runner {
    /// Starts the runner of phase `number` and waits until it listens.
    pub fn start(spec: &Spec, number: u32) -> Result<Runner, Error> {
        let output = |source| Error::Output {
            path: spec.output.clone(),
            source,
        };
        std::fs::create_dir_all(&spec.output).map_err(output)?;
        let dir = spec.output.join(format!(".phase-{number}"));
        // What an earlier process left of the same phase.
        let _ = std::fs::remove_dir_all(&dir);
        let link_file = std::env::temp_dir().join(format!(
            "rocflow-session-{}-{number}.link",
            std::process::id()
        ));
        let _ = std::fs::remove_file(&link_file);
        let mut command = Command::new(&spec.rocflow);
        command
            .arg("run")
            .arg(&spec.pipeline)
            .args(["--session-host", "--quiet", "--device"])
            .arg(&spec.device)
            .arg("--output-directory")
            .arg(&dir)
            .arg("--spool")
            .arg(dir.join("session.rfraw"));
        for set in &spec.sets {
            command.arg("--set").arg(set);
        }
        command
            .args(["--", "/bin/sh", "-c", RELAY])
            .env("ROCFLOW_SESSION_LINK", &link_file)
            // The relay must load no SDK and no tool: it is no application.
            .env_remove("LD_PRELOAD")
            .env_remove("ROCP_TOOL_LIBRARIES")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            // The terminal's Ctrl-C is the application's to take: its runner completes
            // the outputs once the application is gone.
            .process_group(0);
        let mut child = command.spawn().map_err(|source| Error::Spawn {
            rocflow: spec.rocflow.clone(),
            source,
        })?;
        let stdin = child.stdin.take();
        let started = Instant::now();
        let link = loop {
            if let Some(link) = read_link(&link_file) {
                let _ = std::fs::remove_file(&link_file);
                break link;
            }
            if let Ok(Some(status)) = child.try_wait() {
                return Err(Error::Exited(status));
            }
            if started.elapsed() > READY_TIMEOUT {
                let _ = child.kill();
                let _ = child.wait();
                return Err(Error::NotReady);
            }
            std::thread::sleep(Duration::from_millis(2));
        };
        Ok(Runner {
            child,
            stdin,
            link,
            dir,
        })
    }

    /// The descriptor a forked child must close, so that it does not keep the phase open.
    pub fn stdin_fd(&self) -> Option<i32> {
        use std::os::fd::AsRawFd;
        self.stdin.as_ref().map(AsRawFd::as_raw_fd)
    }

    /// Ends the phase (the tool's stream to this runner must be closed first) and waits
    /// for the runner to complete its outputs, up to `within` if given (a runner that hangs
    /// is then left running); then moves them to `name` in the output directory, replacing
    /// an earlier phase of that name.
    pub fn finish(
        mut self,
        output: &Path,
        name: &str,
        within: Option<Duration>,
    ) -> Result<PathBuf, Error> {
        drop(self.stdin.take());
        let status = match within {
            None => self.child.wait(),
            Some(waited) => self.wait_within(waited)?,
        };
        let status = status.map_err(|source| Error::Spawn {
            rocflow: PathBuf::from("rocflow"),
            source,
        })?;
        if !status.success() {
            return Err(Error::Exited(status));
        }
        let named = output.join(name);
        let _ = std::fs::remove_dir_all(&named);
        std::fs::rename(&self.dir, &named).map_err(|source| Error::Rename {
            path: named.clone(),
            source,
        })?;
        Ok(named)
    }

    fn wait_within(&mut self, waited: Duration) -> Result<std::io::Result<ExitStatus>, Error> {
        let started = Instant::now();
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => return Ok(Ok(status)),
                Err(e) => return Ok(Err(e)),
                Ok(None) if started.elapsed() >= waited => {
                    return Err(Error::Hung {
                        pid: self.child.id(),
                        waited,
                        dir: self.dir.clone(),
                    });
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            }
        }
    }

    /// Gives up on a runner whose phase never began (the SDK would not start): it ends
    /// with nothing to write.
    pub fn abandon(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The link file's two lines, once the relay has written it whole.
fn read_link(path: &Path) -> Option<Link> {
    let mut text = String::new();
    std::fs::File::open(path)
        .ok()?
        .read_to_string(&mut text)
        .ok()?;
    let mut lines = text.lines();
    let socket = PathBuf::from(lines.next().filter(|l| !l.is_empty())?);
    let plan = PathBuf::from(lines.next().filter(|l| !l.is_empty())?);
    Some(Link { socket, plan })
}

/// The `rocflow` binary: `ROCFLOW_BIN`, else the one beside `library` (this tool library,
/// as installed), else the first on PATH.
pub fn find_rocflow(library: Option<&Path>) -> Result<PathBuf, Error> {
    if let Some(bin) = std::env::var_os("ROCFLOW_BIN") {
        return Ok(PathBuf::from(bin));
    }
    let beside = library
        .and_then(Path::parent)
        .map(|dir| dir.join("rocflow"))
        .filter(|p| p.is_file());
    let on_path = || {
        let path = std::env::var_os("PATH")?;
        std::env::split_paths(&path)
            .map(|dir| dir.join("rocflow"))
            .find(|p| p.is_file())
    };
    beside.or_else(on_path).ok_or_else(|| Error::NoBinary {
        library: library.map_or("this library".into(), |l| l.display().to_string()),
    })
}
