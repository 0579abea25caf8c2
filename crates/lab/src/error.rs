//! The lab's error: what failed and, for a missing prerequisite, how to get it.

use std::fmt;
use std::io;
use std::time::Duration;

/// Everything the lab can fail with. Each message names what is missing or
/// what failed, so a test that gets one can print it and fail.
#[derive(Debug)]
pub enum Error {
    /// A prerequisite is missing on the host: a tool, a privilege, a kernel
    /// feature. The text says what and how to get it.
    Missing(String),
    /// An I/O operation failed; `context` says on what.
    Io {
        /// What the lab was doing.
        context: String,
        /// The operating system's error.
        source: io::Error,
    },
    /// An external command (apt-get, ip, tc, tcpdump, tshark, qemu) failed.
    Command {
        /// The command line.
        command: String,
        /// Its exit status (None: killed by a signal).
        status: Option<i32>,
        /// What it printed on stderr (and stdout where useful).
        output: String,
    },
    /// Building the guest image failed (e.g. a guest binary needs a library
    /// no downloaded package provides).
    Image(String),
    /// The guest failed: it did not boot, its agent died, a command could not
    /// be delivered.
    Guest(String),
    /// Something did not happen in time.
    Timeout {
        /// What was waited for.
        what: String,
        /// How long.
        after: Duration,
    },
}

/// The lab's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An [`Error::Io`] with its context.
    pub fn io(context: impl Into<String>, source: io::Error) -> Self {
        Self::Io {
            context: context.into(),
            source,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Missing(text) => write!(f, "lab prerequisite missing: {text}"),
            Self::Io { context, source } => write!(f, "{context}: {source}"),
            Self::Command {
                command,
                status,
                output,
            } => {
                match status {
                    Some(code) => write!(f, "`{command}` exited with status {code}")?,
                    None => write!(f, "`{command}` was killed by a signal")?,
                }
                if output.trim().is_empty() {
                    Ok(())
                } else {
                    write!(f, ": {}", output.trim())
                }
            }
            Self::Image(text) => write!(f, "guest image: {text}"),
            Self::Guest(text) => write!(f, "guest: {text}"),
            Self::Timeout { what, after } => {
                write!(f, "timed out after {:.1} s: {what}", after.as_secs_f64())
            }
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}
