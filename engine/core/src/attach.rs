//! How `rocflow attach` reaches a running process on the simulated SDK.
//!
//! AMD's design (rocprofiler-sdk 1.1 and later): a process started with
//! rocprofiler-register and `ROCP_TOOL_ATTACH=1` runs a thread named [`THREAD`] that
//! waits to be told to attach; the attaching profiler stops the process with ptrace, puts
//! an environment and a tool library's path into it, and has that thread call
//! rocprofiler-register's attach function, which loads the tool and configures it as
//! at start. Detaching calls the detach function, which stops the tool's contexts; the
//! process goes on.
//!
//! The simulated SDK keeps the rules (the same thread, only in a process started so, the
//! same environment and tool path, the ptrace permission the attaching side must have) and
//! takes the call through a socket of the thread's instead of a hijacked register set: a
//! [`Request`] names the tool and its environment, the thread answers with a [`Reply`]
//! line, and the profiler's `detach` line, or its end of the socket closing, detaches.

use std::io::{self, BufRead, Read, Write};

/// The name of the thread that takes attach requests (AMD's).
pub const THREAD: &str = "rocp-bg-attach";
/// The variable a process must have been started with to be attachable.
pub const ENABLE_VAR: &str = "ROCP_TOOL_ATTACH";
/// What the profiler writes to detach.
pub const DETACH: &str = "detach";
/// The most bytes a request may have: a tool path and a few variables.
const MOST_BYTES: u32 = 1 << 20;

/// The abstract socket name the attach thread of process `pid` listens on.
pub fn socket_name(pid: u32) -> String {
    format!("rocflow-sim-attach-{pid}")
}

/// An attach request: the tool library to load and the environment it reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub tool: String,
    pub env: Vec<(String, String)>,
}

impl Request {
    /// Writes the request: its length, then NUL-terminated strings, the tool's path first
    /// and each variable's name and value after.
    pub fn write_to(&self, to: &mut impl Write) -> io::Result<()> {
        let mut body = Vec::new();
        for text in std::iter::once(&self.tool).chain(self.env.iter().flat_map(|(n, v)| [n, v])) {
            body.extend_from_slice(text.as_bytes());
            body.push(0);
        }
        let len = u32::try_from(body.len())
            .ok()
            .filter(|&n| n <= MOST_BYTES)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "request too long"))?;
        to.write_all(&len.to_le_bytes())?;
        to.write_all(&body)
    }

    /// Reads a request [`write_to`](Self::write_to) wrote; a malformed one is an
    /// `InvalidData` error.
    pub fn read_from(from: &mut impl Read) -> io::Result<Request> {
        let invalid = |what: &str| io::Error::new(io::ErrorKind::InvalidData, what.to_owned());
        let mut len = [0u8; 4];
        from.read_exact(&mut len)?;
        let len = u32::from_le_bytes(len);
        if len > MOST_BYTES {
            return Err(invalid("request too long"));
        }
        let mut body = vec![0u8; len as usize];
        from.read_exact(&mut body)?;
        let body = body
            .strip_suffix(&[0])
            .ok_or_else(|| invalid("request not NUL-terminated"))?;
        let mut texts = body
            .split(|&b| b == 0)
            .map(|t| String::from_utf8(t.to_vec()).map_err(|_| invalid("request not UTF-8")));
        let tool = texts.next().ok_or_else(|| invalid("no tool"))??;
        let rest: Vec<String> = texts.collect::<io::Result<_>>()?;
        if rest.len() % 2 != 0
            || rest
                .chunks(2)
                .any(|p| p[0].is_empty() || p[0].contains('='))
        {
            return Err(invalid("malformed environment"));
        }
        let env = rest
            .chunks(2)
            .map(|p| (p[0].clone(), p[1].clone()))
            .collect();
        Ok(Request { tool, env })
    }
}

/// What the attach thread answers, one line each.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// The tool is loaded, configured and initialized.
    Attached,
    /// The tool's contexts are stopped and it is finalized.
    Detached,
    /// Why the attach did not happen.
    Refused(String),
}

impl Reply {
    pub fn write_to(&self, to: &mut impl Write) -> io::Result<()> {
        match self {
            Reply::Attached => writeln!(to, "attached"),
            Reply::Detached => writeln!(to, "detached"),
            Reply::Refused(why) => writeln!(to, "refused {}", why.replace('\n', " ")),
        }
    }

    /// The next reply; `None` at the end of the stream.
    pub fn read_from(from: &mut impl BufRead) -> io::Result<Option<Reply>> {
        let mut line = String::new();
        if from.read_line(&mut line)? == 0 {
            return Ok(None);
        }
        let line = line.trim_end();
        Ok(Some(match line {
            "attached" => Reply::Attached,
            "detached" => Reply::Detached,
            _ => match line.strip_prefix("refused ") {
                Some(why) => Reply::Refused(why.to_owned()),
                None => {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("unexpected reply `{line}`"),
                    ));
                }
            },
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_reads_back_as_written() {
        let request = Request {
            tool: "/opt/rocflow/lib/librocflow_tool.so".into(),
            env: vec![
                ("ROCFLOW_SOCKET".into(), "/tmp/x/rocflow-0.sock".into()),
                ("EMPTY".into(), String::new()),
            ],
        };
        let mut bytes = Vec::new();
        request.write_to(&mut bytes).unwrap();
        assert_eq!(Request::read_from(&mut &bytes[..]).unwrap(), request);
    }

    #[test]
    fn a_malformed_request_is_refused() {
        // A variable without its value.
        let body = b"tool\0NAME\0";
        let mut bytes = (body.len() as u32).to_le_bytes().to_vec();
        bytes.extend_from_slice(body);
        let e = Request::read_from(&mut &bytes[..]).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        // A length past the bound is refused before anything is allocated.
        let bytes = u32::MAX.to_le_bytes();
        assert!(Request::read_from(&mut &bytes[..]).is_err());
    }

    #[test]
    fn replies_read_back_as_written() {
        for reply in [
            Reply::Attached,
            Reply::Detached,
            Reply::Refused("already attached\nonce".into()),
        ] {
            let mut bytes = Vec::new();
            reply.write_to(&mut bytes).unwrap();
            let read = Reply::read_from(&mut &bytes[..]).unwrap().unwrap();
            match reply {
                Reply::Refused(_) => {
                    assert_eq!(read, Reply::Refused("already attached once".into()))
                }
                other => assert_eq!(read, other),
            }
        }
        assert_eq!(Reply::read_from(&mut &b""[..]).unwrap(), None);
    }
}
