//! Debugger output: `DbgPrintEx` under the network component, formatted by
//! `core::fmt` into a stack buffer (no allocation, any IRQL up to
//! `DISPATCH_LEVEL`).
//!
//! Messages show with `ed nt!Kd_IHVNETWORK_Mask 0xF` in the kernel debugger
//! (or the `Debug Print Filter\IHVNETWORK` registry value); errors always do.

use core::fmt::{self, Write};

use ndkpi::ULONG;

use super::kit::kernel;

/// One line of output: at most `CAPACITY - 1` bytes plus the terminator
/// (DbgPrintEx itself stops at 512).
struct Line {
    buf: [u8; Self::CAPACITY],
    len: usize,
}

impl Line {
    const CAPACITY: usize = 256;

    const fn new() -> Self {
        Self {
            buf: [0; Self::CAPACITY],
            len: 0,
        }
    }
}

impl Write for Line {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        // Longer text is cut, never an error: a log line must not fail.
        for &b in s.as_bytes() {
            if self.len + 1 >= Self::CAPACITY {
                break;
            }
            // An interior NUL would end the C string early.
            self.buf[self.len] = if b == 0 { b'?' } else { b };
            self.len += 1;
        }
        Ok(())
    }
}

/// Prints `args` at `level` followed by a newline.
pub fn print(level: ULONG, args: fmt::Arguments<'_>) {
    let mut line = Line::new();
    let _ = line.write_fmt(args);
    let _ = line.write_str("\n");
    // `new` zeroed the buffer and `write_str` keeps the last byte free, so
    // the text is NUL-terminated.
    if let Ok(text) = core::ffi::CStr::from_bytes_until_nul(&line.buf) {
        kernel::debug_print(level, text);
    }
}

/// Information for a developer (shown when the filter mask allows).
macro_rules! log_info {
    ($($arg:tt)*) => {
        $crate::driver::log::print(::ndis::DPFLTR_INFO_LEVEL, format_args!($($arg)*))
    };
}

/// A failure an administrator should see (always shown).
macro_rules! log_error {
    ($($arg:tt)*) => {
        $crate::driver::log::print(::ndis::DPFLTR_ERROR_LEVEL, format_args!($($arg)*))
    };
}

pub(crate) use {log_error, log_info};
