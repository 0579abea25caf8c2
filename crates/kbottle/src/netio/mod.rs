//! NETIO.SYS for the bottled driver: the IP Helper routines for unicast
//! addresses ([`iphelper`]: `NotifyUnicastIpAddressChange`,
//! `CancelMibChangeNotify2`, `GetUnicastIpAddressTable`,
//! `GetUnicastIpAddressEntry`, `FreeMibTable`) over the bottle's TCP/IP
//! ([`crate::tcpip`]), with the checks of `checks`: IRQL rules, handles
//! NETIO does not know or no longer knows, and a panic of the bottle's own
//! code reported instead of unwinding into driver frames.
//!
//! The driver reaches the network through its virtual miniport (V), not
//! through NETIO: Winsock Kernel is not offered.
//!
//! Rule: netio imports TCP/IP, NDIS's checks, the kernel and
//! [`crate::export`](mod@crate::export); only the machine is above it.

use crate::export;
use crate::export::Export;

mod checks;
pub mod iphelper;
mod iphelper_notify;
mod iphelper_rows;

#[cfg(test)]
mod iphelper_tests;

pub use iphelper::{
    CancelMibChangeNotify2, FreeMibTable, GetUnicastIpAddressEntry, GetUnicastIpAddressTable,
    NotifyUnicastIpAddressChange,
};
/// The IRQL unicast address change callbacks run at (PASSIVE_LEVEL unless
/// a test chooses another).
pub use iphelper_notify::deliver_at as deliver_address_changes_at;

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
    ]
}
