//! A small, safe consumer layer over the NDK dispatch tables.
//!
//! Each wrapper owns one NDK object and closes it on drop (waiting for a
//! pending close); every failed call becomes an [`Error`] naming the NDK
//! function and the status. This module is the tool's `unsafe` code, with
//! the SIGINT handler of [`crate::interrupt`] and the thread CPU clock
//! of [`crate::cpu`]. Objects must be dropped children first (QP before CQ and PD,
//! everything before its adapter); the structs that hold them list their
//! fields in that order.
//!
//! Memory handed to the adapter ([`Buffer`]) is written by the device
//! while operations that target it are in flight. The tool reads or fills
//! a part of a buffer only when no posted operation targets that part (it
//! has completed, or was never posted), which is the usual RDMA rule.

mod adapter;
mod buffer;
mod cm;
mod cq;
mod pd;
mod qp;
pub mod signal;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

pub use adapter::{Adapter, CloseAdapter};
pub use buffer::{Buffer, Mdl};
pub use cm::{Connector, Listener};
pub use cq::Cq;
pub use pd::{Lam, Mr, Pd, Region};
pub use qp::{Qp, QpLimits};

use ndkpi::{
    AF_INET, AF_INET6, IN_ADDR, IN6_ADDR, NDK_FN_CLOSE_OBJECT, NDK_OBJECT_HEADER, NTSTATUS,
    PSOCKADDR, SOCKADDR_IN, SOCKADDR_IN6, STATUS_SUCCESS,
};

use crate::error::{Error, Result};
use signal::{Signal, close_done};

/// How long a create, register or close may stay pending.
pub const OBJECT_TIMEOUT: Duration = Duration::from_secs(10);

/// `500ms`, `2s`, `1.5s`.
pub fn show_duration(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        format!("{}ms", d.as_millis())
    } else if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{:.1}s", d.as_secs_f64())
    }
}

/// An IPv4 socket address with an ND port, as NDK takes it.
pub fn sockaddr(ip: Ipv4Addr, port: u16) -> SOCKADDR_IN {
    SOCKADDR_IN {
        sin_family: AF_INET,
        sin_port: port.to_be(),
        sin_addr: IN_ADDR::new(ip.octets()),
        sin_zero: [0; 8],
    }
}

/// A socket address of either family as the NDK entries take it.
#[derive(Debug, Clone, Copy)]
pub enum NdkAddr {
    /// `SOCKADDR_IN`.
    V4(SOCKADDR_IN),
    /// `SOCKADDR_IN6`.
    V6(SOCKADDR_IN6),
}

impl NdkAddr {
    /// The Windows form of `addr`.
    pub fn new(addr: SocketAddr) -> Self {
        match addr.ip() {
            IpAddr::V4(ip) => Self::V4(sockaddr(ip, addr.port())),
            IpAddr::V6(ip) => Self::V6(SOCKADDR_IN6 {
                sin6_family: AF_INET6,
                sin6_port: addr.port().to_be(),
                sin6_flowinfo: 0,
                sin6_addr: IN6_ADDR { u: ip.octets() },
                sin6_scope_id: 0,
            }),
        }
    }

    /// The address for an entry that reads it during the call.
    pub fn as_mut_ptr(&mut self) -> PSOCKADDR {
        match self {
            Self::V4(a) => std::ptr::from_mut(a).cast(),
            Self::V6(a) => std::ptr::from_mut(a).cast(),
        }
    }

    /// Its length in bytes.
    pub fn byte_len(&self) -> u32 {
        match self {
            Self::V4(_) => size_of::<SOCKADDR_IN>() as u32,
            Self::V6(_) => size_of::<SOCKADDR_IN6>() as u32,
        }
    }

    /// Decodes `len` bytes of a `SOCKADDR_IN` / `SOCKADDR_IN6` a provider
    /// wrote.
    pub fn decode(buf: &[u8], len: usize) -> Option<SocketAddr> {
        let family = u16::from_le_bytes(buf.get(0..2)?.try_into().ok()?);
        let port = u16::from_be_bytes(buf.get(2..4)?.try_into().ok()?);
        match family {
            AF_INET if len == size_of::<SOCKADDR_IN>() => {
                let o: [u8; 4] = buf.get(4..8)?.try_into().ok()?;
                Some(SocketAddr::new(IpAddr::from(o), port))
            }
            AF_INET6 if len == size_of::<SOCKADDR_IN6>() => {
                let o: [u8; 16] = buf.get(8..24)?.try_into().ok()?;
                Some(SocketAddr::new(IpAddr::from(o), port))
            }
            _ => None,
        }
    }
}

/// Turns a synchronous status into a result.
fn check(function: &str, status: NTSTATUS) -> Result<()> {
    if status == STATUS_SUCCESS {
        Ok(())
    } else {
        Err(Error::ndk(function, status))
    }
}

/// A dispatch entry, or an error if the provider left it null.
fn entry<F>(f: Option<F>, function: &str) -> Result<F> {
    f.ok_or_else(|| Error::msg(format!("the provider has no {function} entry")))
}

/// Closes an object through its table's close entry and waits for a
/// pending close. Returns false if the close did not finish in time (the
/// caller then leaks what the object still uses).
fn close_object(close: NDK_FN_CLOSE_OBJECT, object: *mut NDK_OBJECT_HEADER, name: &str) -> bool {
    let Some(f) = close else {
        return false;
    };
    let signal = Signal::new();
    let context = signal.context();
    // SAFETY: `object` is a live object of ours, closed once, with no
    // other call on it running; the context is a `Signal` reference.
    let status = unsafe { f(object, Some(close_done), context) };
    signal.settle(status, context, OBJECT_TIMEOUT, name).is_ok()
}

/// Generates `fn $name(raw) -> &'static $table` reading an object's
/// dispatch table.
macro_rules! dispatch_table {
    ($name:ident, $object:ty, $table:ty) => {
        fn $name(raw: *mut $object) -> &'static $table {
            // SAFETY: `raw` is a live object the provider handed out (the
            // wrappers only hold open objects); `Dispatch` follows its
            // header.
            let table = unsafe { (*raw).Dispatch };
            // SAFETY: dispatch tables are the provider's statics.
            unsafe { &*table }
        }
    };
}
pub(crate) use dispatch_table;
