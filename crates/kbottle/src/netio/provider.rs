//! The provider dispatch a captured NPI points to, and `WskSocket`.

use ndis::{
    DISPATCH_LEVEL, IPPROTO_UDP, IRP, SOCK_DGRAM, WSK_CLIENT_DATAGRAM_DISPATCH,
    WSK_FLAG_DATAGRAM_SOCKET, WSK_PROVIDER_DISPATCH, WSK_VERSION_1_0,
};
use ndkpi::{
    ADDRESS_FAMILY, AF_INET, NTSTATUS, PVOID, STATUS_INSUFFICIENT_RESOURCES, STATUS_NOT_SUPPORTED,
    STATUS_SUCCESS,
};

use super::checks::{bad_object, irql_at_most};
use super::receive::complete;
use super::{registration, socket};
use crate::verifier;
use crate::verifier::firewall;

/// A dispatch table NETIO hands out: read-only data the driver calls
/// through. `#[repr(transparent)]`, so its address is the table's.
#[repr(transparent)]
#[derive(Debug)]
pub struct Table<T>(pub T);

// SAFETY: a table is immutable after its static initialisation; its raw
// pointer members are null (entries the bottle does not provide).
unsafe impl<T> Sync for Table<T> {}

/// The provider-level calls. The entries `crates/ndis` declares as opaque
/// (`WskSocketConnect`, `WskControlClient`, name resolution) are not
/// provided: null.
pub static PROVIDER_DISPATCH: Table<WSK_PROVIDER_DISPATCH> = Table(WSK_PROVIDER_DISPATCH {
    Version: WSK_VERSION_1_0,
    Reserved: 0,
    WskSocket: Some(WskSocket),
    WskSocketConnect: std::ptr::null_mut(),
    WskControlClient: std::ptr::null_mut(),
    WskGetAddressInfo: std::ptr::null_mut(),
    WskFreeAddressInfo: std::ptr::null_mut(),
    WskGetNameInfo: std::ptr::null_mut(),
});

/// `WskSocket` (`<= DISPATCH_LEVEL`): creates an IPv4 UDP datagram socket
/// (`WSK_FLAG_DATAGRAM_SOCKET`; other categories and families fail with
/// `STATUS_NOT_SUPPORTED`) and completes the IRP with the `WSK_SOCKET*` in
/// `IoStatus.Information`. A low-resources fault point
/// (`fault_point("WskSocket")`) fails it with
/// `STATUS_INSUFFICIENT_RESOURCES`.
///
/// # Safety
/// Called by the driver through a captured provider NPI.
pub unsafe extern "win64" fn WskSocket(
    Client: PVOID,
    AddressFamily: ADDRESS_FAMILY,
    SocketType: u16,
    Protocol: u32,
    Flags: u32,
    SocketContext: PVOID,
    Dispatch: *const core::ffi::c_void,
    _OwningProcess: PVOID,
    _OwningThread: PVOID,
    _SecurityDescriptor: PVOID,
    Irp: *mut IRP,
) -> NTSTATUS {
    let routine = WskSocket as *const () as usize;
    firewall("WskSocket", || {
        irql_at_most("WskSocket", DISPATCH_LEVEL);
        let Some(key) = registration::begin_call(Client) else {
            bad_object(
                "WskSocket",
                routine,
                Client as usize,
                "not the client handle of a captured provider NPI",
            );
        };
        if Irp.is_null() {
            registration::end_call(key);
            bad_object("WskSocket", routine, 0, "null IRP");
        }
        let supported = Flags == WSK_FLAG_DATAGRAM_SOCKET
            && AddressFamily == AF_INET
            && SocketType == SOCK_DGRAM
            && (Protocol == IPPROTO_UDP || Protocol == 0);
        let status = if !supported {
            complete(Irp, STATUS_NOT_SUPPORTED, 0)
        } else if verifier::fault_point("WskSocket") {
            complete(Irp, STATUS_INSUFFICIENT_RESOURCES, 0)
        } else {
            let created = socket::create(
                key,
                SocketContext,
                Dispatch.cast::<WSK_CLIENT_DATAGRAM_DISPATCH>(),
            );
            complete(Irp, STATUS_SUCCESS, created as usize)
        };
        registration::end_call(key);
        status
    })
}
