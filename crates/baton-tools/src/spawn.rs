//! Commands started by a long-lived spawner instead of a launcher prefix.
//!
//! A [`crate::Launcher`] may keep one process that starts commands for it (the
//! sandbox's spawner, already inside the run's namespace and confined): then the
//! `Bash` tool hands it a [`SpawnRequest`] ([`crate::Launcher::spawn`]) instead of
//! starting `PREFIX… bash -c COMMAND` itself, and learns what became of the
//! command from a channel of its own: first [`Event::Started`] (or
//! [`Event::Failed`]), then, once the command ended, [`Event::Exited`] or
//! [`Event::Signaled`]. The channel is also the command's leash: a foreground
//! command whose channel closes before it ended (the call was dropped) has its
//! whole process group killed by the spawner.

use std::ffi::OsString;
use std::os::fd::OwnedFd;
use std::path::PathBuf;

/// A command for a spawner: `program args…` in `cwd` with exactly `env`, standard
/// input from `/dev/null`, output to `stdout` and `stderr`, in a process group of
/// its own.
#[derive(Debug)]
pub struct SpawnRequest {
    /// The program (looked up in `env`'s `PATH`).
    pub program: OsString,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// Its working directory.
    pub cwd: PathBuf,
    /// Its whole environment (the launcher may add its own, e.g. `HOME`).
    pub env: Vec<(OsString, OsString)>,
    /// Where its standard output goes.
    pub stdout: OwnedFd,
    /// Where its standard error goes.
    pub stderr: OwnedFd,
    /// A foreground command: its process group is killed if the channel closes
    /// before it ended. A background one runs on whatever becomes of the channel.
    pub foreground: bool,
}

/// What a spawner says about one command, in order: `Started` or `Failed`, then
/// `Exited` or `Signaled`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// It runs, as this pid (baton's view; also its process group).
    Started(u32),
    /// It could not be started (an `errno`).
    Failed(i32),
    /// It exited with this code.
    Exited(i32),
    /// It was killed by this signal.
    Signaled(i32),
}

/// The size of one [`Event`] on the channel.
pub const EVENT_LEN: usize = 8;

impl Event {
    /// The event as it goes on the channel.
    pub fn encode(self) -> [u8; EVENT_LEN] {
        let (tag, value): (u32, i32) = match self {
            Event::Started(pid) => (1, pid as i32),
            Event::Failed(e) => (2, e),
            Event::Exited(c) => (3, c),
            Event::Signaled(s) => (4, s),
        };
        let mut b = [0u8; EVENT_LEN];
        b[..4].copy_from_slice(&tag.to_le_bytes());
        b[4..].copy_from_slice(&value.to_le_bytes());
        b
    }

    /// The event `b` holds; `None` for anything else.
    pub fn decode(b: [u8; EVENT_LEN]) -> Option<Event> {
        let tag = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        let value = i32::from_le_bytes([b[4], b[5], b[6], b[7]]);
        Some(match tag {
            1 => Event::Started(u32::try_from(value).ok()?),
            2 => Event::Failed(value),
            3 => Event::Exited(value),
            4 => Event::Signaled(value),
            _ => return None,
        })
    }
}

/// Baton's end of one command's channel.
#[derive(Debug)]
pub struct Channel {
    stream: tokio::net::UnixStream,
    buf: [u8; EVENT_LEN],
    have: usize,
}

impl Channel {
    /// The channel over `stream` (made non-blocking here).
    pub fn new(stream: std::os::unix::net::UnixStream) -> std::io::Result<Channel> {
        stream.set_nonblocking(true)?;
        Ok(Channel {
            stream: tokio::net::UnixStream::from_std(stream)?,
            buf: [0; EVENT_LEN],
            have: 0,
        })
    }

    /// The next event; an `UnexpectedEof` error when the spawner went away first.
    /// Cancel-safe: a partly read event is kept for the next call.
    pub async fn next(&mut self) -> std::io::Result<Event> {
        use tokio::io::AsyncReadExt as _;
        while self.have < EVENT_LEN {
            let n = self.stream.read(&mut self.buf[self.have..]).await?;
            if n == 0 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            self.have += n;
        }
        self.have = 0;
        Event::decode(self.buf)
            .ok_or_else(|| std::io::Error::other("the spawner sent an unknown event"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_round_trip() {
        for e in [
            Event::Started(4242),
            Event::Failed(2),
            Event::Exited(0),
            Event::Exited(255),
            Event::Signaled(9),
        ] {
            assert_eq!(Event::decode(e.encode()), Some(e));
        }
        assert_eq!(Event::decode([9, 0, 0, 0, 0, 0, 0, 0]), None);
    }
}
