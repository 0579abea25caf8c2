//! The tool's error: one human-readable line, plus the NTSTATUS when an NDK
//! call failed (so callers can tell a refused connection from a timeout).

use std::fmt;

use ndkpi::NTSTATUS;

/// An error that ends a run: printed as `ndkperf: <message>`, exit code 2.
#[derive(Debug, Clone)]
pub struct Error {
    message: String,
    status: Option<NTSTATUS>,
}

/// Result of the tool's fallible functions.
pub type Result<T> = std::result::Result<T, Error>;

/// The C name and hex value of a status, e.g.
/// `STATUS_CONNECTION_REFUSED (0xC0000236)`.
pub fn describe_status(status: NTSTATUS) -> String {
    let hex = status as u32;
    match ndkpi::status_name(status) {
        Some(name) => format!("{name} ({hex:#010X})"),
        None => format!("NTSTATUS {hex:#010X}"),
    }
}

impl Error {
    /// An error with a message.
    pub fn msg(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            status: None,
        }
    }

    /// An NDK (or host entry point) call `function` failed with `status`.
    pub fn ndk(function: &str, status: NTSTATUS) -> Self {
        Self {
            message: format!("{function} failed: {}", describe_status(status)),
            status: Some(status),
        }
    }

    /// Records the NTSTATUS behind this error.
    #[must_use]
    pub fn with_status(mut self, status: NTSTATUS) -> Self {
        self.status = Some(status);
        self
    }

    /// The status of the failed NDK call, if this error came from one.
    pub fn status(&self) -> Option<NTSTATUS> {
        self.status
    }

    /// Prefixes the message with what was being done.
    #[must_use]
    pub fn context(mut self, what: impl fmt::Display) -> Self {
        self.message = format!("{what}: {}", self.message);
        self
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Self::msg(e.to_string())
    }
}

/// Adds context to the error of a result.
pub trait Context<T> {
    /// Prefixes an error with `what`.
    fn context(self, what: impl fmt::Display) -> Result<T>;
    /// Prefixes an error with a lazily built description.
    fn with_context<D: fmt::Display>(self, what: impl FnOnce() -> D) -> Result<T>;
}

impl<T, E: Into<Error>> Context<T> for std::result::Result<T, E> {
    fn context(self, what: impl fmt::Display) -> Result<T> {
        self.map_err(|e| e.into().context(what))
    }

    fn with_context<D: fmt::Display>(self, what: impl FnOnce() -> D) -> Result<T> {
        self.map_err(|e| e.into().context(what()))
    }
}

/// True when `NDKPERF_TRACE` is set: steps are logged to stderr.
pub fn tracing() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("NDKPERF_TRACE").is_some())
}

/// Logs a step to stderr when `NDKPERF_TRACE` is set.
macro_rules! trace {
    ($($arg:tt)*) => {
        if $crate::error::tracing() {
            eprintln!("ndkperf trace: {}", format_args!($($arg)*));
        }
    };
}
pub(crate) use trace;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ndk_errors_name_function_and_status() {
        let e = Error::ndk("NdkConnect", ndkpi::STATUS_CONNECTION_REFUSED);
        assert_eq!(
            e.to_string(),
            "NdkConnect failed: STATUS_CONNECTION_REFUSED (0xC0000236)"
        );
        assert_eq!(e.status(), Some(ndkpi::STATUS_CONNECTION_REFUSED));
        let e = e.context("connecting to 127.0.0.1:5445");
        assert!(
            e.to_string()
                .starts_with("connecting to 127.0.0.1:5445: NdkConnect")
        );
        assert_eq!(describe_status(0x1234), "NTSTATUS 0x00001234");
    }
}
