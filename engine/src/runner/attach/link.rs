//! The connection to a simulated target's attach thread: the request that attaches, the
//! line that detaches (see [`rocflow_core::attach`]).

use std::io::{BufReader, Write};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixStream};
use std::time::Duration;

use rocflow_core::attach::{self, DETACH, Reply, Request};

/// How long the target may take to load and start the tool, or to detach.
const PATIENCE: Duration = Duration::from_secs(30);

/// An attached target.
pub struct Link {
    to: UnixStream,
    from: BufReader<UnixStream>,
}

/// Why the attach request failed.
#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    #[error("cannot reach the process's attach thread: {0}")]
    Connect(#[source] std::io::Error),
    #[error("the process refused: {0}")]
    Refused(String),
    #[error("the process did not answer the attach request: {0}")]
    Silent(#[source] std::io::Error),
}

impl Link {
    /// Asks process `pid` to load the tool with `request`'s environment; returns once it
    /// has.
    pub fn attach(pid: u32, request: &Request) -> Result<Link, LinkError> {
        let name = attach::socket_name(pid);
        let to = SocketAddr::from_abstract_name(name.as_bytes())
            .and_then(|address| UnixStream::connect_addr(&address))
            .map_err(LinkError::Connect)?;
        to.set_read_timeout(Some(PATIENCE))
            .map_err(LinkError::Silent)?;
        let mut from = BufReader::new(to.try_clone().map_err(LinkError::Silent)?);
        let mut writer = &to;
        request.write_to(&mut writer).map_err(LinkError::Silent)?;
        match Reply::read_from(&mut from) {
            Ok(Some(Reply::Attached)) => {
                // From now on a read waits for the process's end, which may be far.
                to.set_read_timeout(None).map_err(LinkError::Silent)?;
                Ok(Link { to, from })
            }
            Ok(Some(Reply::Refused(why))) => Err(LinkError::Refused(why)),
            Ok(Some(other)) => Err(LinkError::Refused(format!("answered {other:?}"))),
            Ok(None) => Err(LinkError::Silent(std::io::ErrorKind::UnexpectedEof.into())),
            Err(e) => Err(LinkError::Silent(e)),
        }
    }

    /// Detaches; `false` when the process answered nothing (it exited meanwhile).
    pub fn detach(mut self) -> bool {
        let _ = self.to.set_read_timeout(Some(PATIENCE));
        let sent = writeln!(self.to, "{DETACH}").is_ok();
        sent && matches!(Reply::read_from(&mut self.from), Ok(Some(Reply::Detached)))
    }
}
