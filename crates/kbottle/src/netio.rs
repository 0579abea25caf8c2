//! NETIO.SYS for the bottled driver: the IP Helper routines for unicast
//! addresses ([`iphelper`]: `NotifyUnicastIpAddressChange`,
//! `CancelMibChangeNotify2`, `GetUnicastIpAddressTable`,
//! `GetUnicastIpAddressEntry`, `FreeMibTable`, over the bottle's TCP/IP),
//! and Winsock Kernel: client registration
//! (`WskRegister`, `WskDeregister`, `WskCaptureProviderNPI`,
//! `WskReleaseProviderNPI`), the provider dispatch (`WskSocket`) and the
//! datagram socket dispatch (`WskControlSocket`, `WskBind`, `WskSendTo`,
//! `WskReceiveFrom`, `WskRelease`, `WskGetLocalAddress`,
//! `WskCloseSocket`), carried by real Linux UDP sockets so bottled drivers
//! talk RoCEv2 to each other and to `librsndk.so`.
//!
//! - Every IRP the driver passes is completed exactly once, through
//!   [`crate::io::complete_as_lower_driver`] (the driver's completion
//!   routine runs, and keeps its IRP by returning
//!   `STATUS_MORE_PROCESSING_REQUIRED`). Calls that finish at once complete
//!   the IRP before returning their status; `WskCloseSocket` of a bound
//!   socket and a `WskReceiveFrom` with nothing to receive return
//!   `STATUS_PENDING` and are completed later by the socket's receive
//!   thread, at `DISPATCH_LEVEL`.
//! - Each bound socket has a receive thread, a processor of its own
//!   (`cpu::enter("rx <address>")`), which hands datagrams to the client's
//!   `WskReceiveFromEvent` at `DISPATCH_LEVEL` (so DPCs the driver queues
//!   there run when it lowers) or to pending `WskReceiveFrom` requests.
//! - The checks: IRQL rules of each call, objects (registrations, sockets,
//!   indication lists) that WSK does not know or no longer knows, and
//!   calls on a socket racing its close, are bugchecks ([`checks`]).
//! - [`set_capture`] writes every datagram the bottle's sockets send and
//!   receive to a pcap file that Wireshark decodes as RoCEv2.
//!
//! Not modelled: IPv6 and non-datagram sockets (`WskSocket` fails them
//! with `STATUS_NOT_SUPPORTED`), socket options other than
//! `SO_WSK_EVENT_CALLBACK` (`STATUS_NOT_SUPPORTED`), control information
//! on sends, the client-level calls the provider dispatch declares as
//! opaque (`WskSocketConnect`, `WskControlClient`, name resolution: null in
//! the table), `WskSendMessages` (null), and cancelling a pending
//! `WskReceiveFrom` other than by closing the socket.

use std::path::PathBuf;

use crate::export;
use crate::pe::Export;

mod buffer;
mod capture;
mod checks;
mod datagram;
pub mod iphelper;
mod iphelper_notify;
mod iphelper_rows;
mod provider;
mod receive;
mod registration;
mod socket;
mod udp;

#[cfg(test)]
mod iphelper_tests;
#[cfg(test)]
mod tests;

pub use iphelper::{
    CancelMibChangeNotify2, FreeMibTable, GetUnicastIpAddressEntry, GetUnicastIpAddressTable,
    NotifyUnicastIpAddressChange,
};
pub use receive::set_split_indications;
pub use registration::{
    WskCaptureProviderNPI, WskDeregister, WskRegister, WskReleaseProviderNPI, open_registrations,
    set_provider_available,
};
pub use socket::{Counters, counters, open_sockets};

/// Starts (`Some(path)`, truncating the file) or stops (`None`, flushing
/// it) the capture of every datagram the bottle's sockets send and
/// receive, as Ethernet + IPv4 + UDP frames around the payload (pcap,
/// link type Ethernet). Decode it with
/// `tshark -r FILE --disable-heuristic rpcrdma_infiniband`.
pub fn set_capture(path: Option<PathBuf>) -> std::io::Result<()> {
    capture::set(path)
}

/// `MIB_UNICASTIPADDRESS_TABLE`s `GetUnicastIpAddressTable` returned and
/// `FreeMibTable` never freed (a leak at unload).
pub fn iphelper_tables_outstanding() -> usize {
    iphelper::tables_outstanding()
}

/// `NotifyUnicastIpAddressChange` handles never cancelled with
/// `CancelMibChangeNotify2` (at unload: a leak, and a callback into an
/// unloaded driver waiting to happen).
pub fn iphelper_notifications_open() -> usize {
    iphelper::notifications_open()
}

/// NETIO.SYS's exports the bottle binds.
pub fn exports() -> Vec<Export> {
    vec![
        export!("NETIO.SYS", NotifyUnicastIpAddressChange),
        export!("NETIO.SYS", CancelMibChangeNotify2),
        export!("NETIO.SYS", GetUnicastIpAddressTable),
        export!("NETIO.SYS", GetUnicastIpAddressEntry),
        export!("NETIO.SYS", FreeMibTable),
        export!("NETIO.SYS", WskRegister),
        export!("NETIO.SYS", WskDeregister),
        export!("NETIO.SYS", WskCaptureProviderNPI),
        export!("NETIO.SYS", WskReleaseProviderNPI),
    ]
}
