//! Winsock Kernel (`wsk.h`, with the few `ws2def.h`/`mswsockdef.h` values
//! it uses): what the software RNIC's UDP transport needs to register as a
//! WSK client, open a datagram socket, bind it, enable the receive event,
//! send and release indications. Declared by hand for x64; the structures
//! and signatures follow the WDK's `wsk.h` (stored in the public index as
//! the Windows Kits km header). Requires `netio.lib`.
//!
//! Every socket call that takes an `IRP` completes asynchronously: the
//! caller allocates the IRP (`IoAllocateIrp`), sets a completion routine in
//! its next stack location and, when the call returns `STATUS_PENDING`,
//! learns the outcome in that routine (`Irp->IoStatus`).
#![allow(unsafe_code)]

use ndkpi::{ADDRESS_FAMILY, GUID, MDL, NTSTATUS, PVOID, SOCKADDR, ULONG, USHORT};

use crate::kernel::{IRP, KSPIN_LOCK};

/// `MAKE_WSK_VERSION(1, 0)`: the WSK version rsndk asks for.
pub const WSK_VERSION_1_0: USHORT = 0x0100;
/// `WskCaptureProviderNPI` timeout: fail at once if WSK is not up.
pub const WSK_NO_WAIT: ULONG = 0;
/// `WskCaptureProviderNPI` timeout: wait until WSK is up.
pub const WSK_INFINITE_WAIT: ULONG = 0xFFFF_FFFF;

/// Socket category: basic.
pub const WSK_FLAG_BASIC_SOCKET: ULONG = 0x0000_0000;
/// Socket category: listening.
pub const WSK_FLAG_LISTEN_SOCKET: ULONG = 0x0000_0001;
/// Socket category: connection-oriented.
pub const WSK_FLAG_CONNECTION_SOCKET: ULONG = 0x0000_0002;
/// Socket category: datagram (the one rsndk opens).
pub const WSK_FLAG_DATAGRAM_SOCKET: ULONG = 0x0000_0004;
/// Event flag: the callback runs at `DISPATCH_LEVEL`.
pub const WSK_FLAG_AT_DISPATCH_LEVEL: ULONG = 0x0000_0008;

/// Base of the WSK socket options (`WSK_SO_BASE`, `mswsockdef.h`).
pub const WSK_SO_BASE: ULONG = 0x4000;
/// Socket option enabling/disabling event callbacks (`SO_WSK_EVENT_CALLBACK`).
pub const SO_WSK_EVENT_CALLBACK: ULONG = WSK_SO_BASE + 2;
/// Event mask bit: `WskReceiveFromEvent` (datagram sockets).
pub const WSK_EVENT_RECEIVE_FROM: ULONG = 0x0000_0100;
/// Event mask bit: disable the events named with it.
pub const WSK_EVENT_DISABLE: ULONG = 0x8000_0000;
/// Socket-level option level (`SOL_SOCKET`, `ws2def.h`).
pub const SOL_SOCKET: ULONG = 0xFFFF;
/// Datagram socket type (`SOCK_DGRAM`).
pub const SOCK_DGRAM: USHORT = 2;
/// UDP (`IPPROTO_UDP`).
pub const IPPROTO_UDP: ULONG = 17;

/// `WSK_CONTROL_SOCKET_TYPE` (C enum).
pub type WSK_CONTROL_SOCKET_TYPE = i32;
/// Set a socket option.
pub const WskSetOption: WSK_CONTROL_SOCKET_TYPE = 0;
/// Get a socket option.
pub const WskGetOption: WSK_CONTROL_SOCKET_TYPE = 1;
/// Socket IOCTL.
pub const WskIoctl: WSK_CONTROL_SOCKET_TYPE = 2;

/// The WSK interface id (`NPI_WSK_INTERFACE_ID`,
/// {2227E803-8D8B-11D4-ABAD-009027719E09}). `netio.lib` exports it as
/// data; declaring the value avoids importing data across the link.
pub const NPI_WSK_INTERFACE_ID: GUID = GUID {
    Data1: 0x2227_E803,
    Data2: 0x8D8B,
    Data3: 0x11D4,
    Data4: [0xAB, 0xAD, 0x00, 0x90, 0x27, 0x71, 0x9E, 0x09],
};

/// A socket: its first member is the provider dispatch table of its
/// category (for a datagram socket, [`WSK_PROVIDER_DATAGRAM_DISPATCH`]).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct WSK_SOCKET {
    /// The provider's dispatch table.
    pub Dispatch: *const core::ffi::c_void,
}

/// The client handle inside the provider NPI (`PWSK_CLIENT`, opaque).
pub type PWSK_CLIENT = PVOID;

/// Data to send or receive: `Length` bytes from `Offset` into the first
/// MDL of the chain.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct WSK_BUF {
    /// Locked MDL chain.
    pub Mdl: *mut MDL,
    /// Offset into the first MDL.
    pub Offset: ULONG,
    /// Bytes described.
    pub Length: usize,
}

/// One received datagram of a `WskReceiveFromEvent` list.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct WSK_DATAGRAM_INDICATION {
    /// Next datagram, or null.
    pub Next: *mut WSK_DATAGRAM_INDICATION,
    /// The datagram's payload.
    pub Buffer: WSK_BUF,
    /// Control data (`PCMSGHDR`), if any.
    pub ControlInfo: PVOID,
    /// Bytes at `ControlInfo`.
    pub ControlInfoLength: ULONG,
    /// The sender (a `SOCKADDR_IN` for IPv4).
    pub RemoteAddress: *mut SOCKADDR,
}

/// Argument of `SO_WSK_EVENT_CALLBACK`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct WSK_EVENT_CALLBACK_CONTROL {
    /// Must point to [`NPI_WSK_INTERFACE_ID`].
    pub NpiId: *const GUID,
    /// `WSK_EVENT_*` bits.
    pub EventMask: ULONG,
}

/// `PFN_WSK_CLIENT_EVENT`: client-level events (none are defined).
pub type PFN_WSK_CLIENT_EVENT = unsafe extern "win64" fn(
    ClientContext: PVOID,
    EventType: ULONG,
    Information: PVOID,
    InformationLength: usize,
) -> NTSTATUS;

/// `PFN_WSK_RECEIVE_FROM_EVENT`: datagrams arrived (`<= DISPATCH_LEVEL`).
/// Returning `STATUS_SUCCESS` hands the list back at once; a null
/// `DataIndication` means the socket is going away.
pub type PFN_WSK_RECEIVE_FROM_EVENT = unsafe extern "win64" fn(
    SocketContext: PVOID,
    Flags: ULONG,
    DataIndication: *mut WSK_DATAGRAM_INDICATION,
) -> NTSTATUS;

/// `PFN_WSK_SOCKET`: create a socket; the new `PWSK_SOCKET` arrives in
/// `Irp->IoStatus.Information`.
pub type PFN_WSK_SOCKET = unsafe extern "win64" fn(
    Client: PWSK_CLIENT,
    AddressFamily: ADDRESS_FAMILY,
    SocketType: USHORT,
    Protocol: ULONG,
    Flags: ULONG,
    SocketContext: PVOID,
    Dispatch: *const core::ffi::c_void,
    OwningProcess: PVOID,
    OwningThread: PVOID,
    SecurityDescriptor: PVOID,
    Irp: *mut IRP,
) -> NTSTATUS;

/// `PFN_WSK_CONTROL_SOCKET`: options and IOCTLs.
pub type PFN_WSK_CONTROL_SOCKET = unsafe extern "win64" fn(
    Socket: *mut WSK_SOCKET,
    RequestType: WSK_CONTROL_SOCKET_TYPE,
    ControlCode: ULONG,
    Level: ULONG,
    InputSize: usize,
    InputBuffer: PVOID,
    OutputSize: usize,
    OutputBuffer: PVOID,
    OutputSizeReturned: *mut usize,
    Irp: *mut IRP,
) -> NTSTATUS;

/// `PFN_WSK_CLOSE_SOCKET`: close; no call on the socket may be running.
pub type PFN_WSK_CLOSE_SOCKET =
    unsafe extern "win64" fn(Socket: *mut WSK_SOCKET, Irp: *mut IRP) -> NTSTATUS;

/// `PFN_WSK_BIND`: bind to a local transport address.
pub type PFN_WSK_BIND = unsafe extern "win64" fn(
    Socket: *mut WSK_SOCKET,
    LocalAddress: *mut SOCKADDR,
    Flags: ULONG,
    Irp: *mut IRP,
) -> NTSTATUS;

/// `PFN_WSK_SEND_TO`: send one datagram.
pub type PFN_WSK_SEND_TO = unsafe extern "win64" fn(
    Socket: *mut WSK_SOCKET,
    Buffer: *mut WSK_BUF,
    Flags: ULONG,
    RemoteAddress: *mut SOCKADDR,
    ControlInfoLength: ULONG,
    ControlInfo: PVOID,
    Irp: *mut IRP,
) -> NTSTATUS;

/// `PFN_WSK_RECEIVE_FROM`: pend a receive (rsndk uses the event instead).
pub type PFN_WSK_RECEIVE_FROM = unsafe extern "win64" fn(
    Socket: *mut WSK_SOCKET,
    Buffer: *mut WSK_BUF,
    Flags: ULONG,
    RemoteAddress: *mut SOCKADDR,
    ControlLength: *mut ULONG,
    ControlInfo: PVOID,
    ControlFlags: *mut ULONG,
    Irp: *mut IRP,
) -> NTSTATUS;

/// `PFN_WSK_RELEASE_DATAGRAM_INDICATION_LIST`: give back indications
/// kept by returning `STATUS_PENDING` from the receive event.
pub type PFN_WSK_RELEASE_DATAGRAM_INDICATION_LIST = unsafe extern "win64" fn(
    Socket: *mut WSK_SOCKET,
    DatagramIndication: *mut WSK_DATAGRAM_INDICATION,
) -> NTSTATUS;

/// `PFN_WSK_GET_LOCAL_ADDRESS`.
pub type PFN_WSK_GET_LOCAL_ADDRESS = unsafe extern "win64" fn(
    Socket: *mut WSK_SOCKET,
    LocalAddress: *mut SOCKADDR,
    Irp: *mut IRP,
) -> NTSTATUS;

/// Client-level callbacks handed to `WskRegister`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct WSK_CLIENT_DISPATCH {
    /// [`WSK_VERSION_1_0`].
    pub Version: USHORT,
    /// Reserved, 0.
    pub Reserved: USHORT,
    /// Client event callback; may be null.
    pub WskClientEvent: Option<PFN_WSK_CLIENT_EVENT>,
}

/// Socket-level callbacks of a datagram socket (`WskSocket`'s `Dispatch`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct WSK_CLIENT_DATAGRAM_DISPATCH {
    /// Datagrams arrived.
    pub WskReceiveFromEvent: Option<PFN_WSK_RECEIVE_FROM_EVENT>,
}

/// Provider-level calls (in the captured provider NPI). The last three
/// exist from Windows 7 and are opaque here.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct WSK_PROVIDER_DISPATCH {
    /// Version the provider runs.
    pub Version: USHORT,
    /// Reserved.
    pub Reserved: USHORT,
    /// Create a socket.
    pub WskSocket: Option<PFN_WSK_SOCKET>,
    /// Create, bind and connect a connection socket (unused).
    pub WskSocketConnect: PVOID,
    /// Client-level control (unused).
    pub WskControlClient: PVOID,
    /// Name resolution (unused).
    pub WskGetAddressInfo: PVOID,
    /// Name resolution (unused).
    pub WskFreeAddressInfo: PVOID,
    /// Name resolution (unused).
    pub WskGetNameInfo: PVOID,
}

/// Calls every socket supports; the first members of each category's
/// table (C: an anonymous `WSK_PROVIDER_BASIC_DISPATCH` member).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct WSK_PROVIDER_BASIC_DISPATCH {
    /// Options and IOCTLs.
    pub WskControlSocket: Option<PFN_WSK_CONTROL_SOCKET>,
    /// Close.
    pub WskCloseSocket: Option<PFN_WSK_CLOSE_SOCKET>,
}

/// Calls of a datagram socket (`WskSendMessages` exists from Windows 8).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct WSK_PROVIDER_DATAGRAM_DISPATCH {
    /// The basic calls.
    pub Basic: WSK_PROVIDER_BASIC_DISPATCH,
    /// Bind.
    pub WskBind: Option<PFN_WSK_BIND>,
    /// Send one datagram.
    pub WskSendTo: Option<PFN_WSK_SEND_TO>,
    /// Pend a receive.
    pub WskReceiveFrom: Option<PFN_WSK_RECEIVE_FROM>,
    /// Release kept indications.
    pub WskRelease: Option<PFN_WSK_RELEASE_DATAGRAM_INDICATION_LIST>,
    /// Local address.
    pub WskGetLocalAddress: Option<PFN_WSK_GET_LOCAL_ADDRESS>,
    /// Send several datagrams (unused).
    pub WskSendMessages: PVOID,
}

/// The client NPI handed to `WskRegister`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct WSK_CLIENT_NPI {
    /// Passed to client-level callbacks.
    pub ClientContext: PVOID,
    /// The client callbacks.
    pub Dispatch: *const WSK_CLIENT_DISPATCH,
}

/// The provider NPI `WskCaptureProviderNPI` fills in.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct WSK_PROVIDER_NPI {
    /// Client handle for `WskSocket`.
    pub Client: PWSK_CLIENT,
    /// Provider-level calls.
    pub Dispatch: *const WSK_PROVIDER_DISPATCH,
}

/// Registration block; only WSK touches its fields. It must stay at one
/// address from `WskRegister` to `WskDeregister`.
#[repr(C)]
#[derive(Debug)]
pub struct WSK_REGISTRATION {
    /// Reserved.
    pub ReservedRegistrationState: u64,
    /// Reserved.
    pub ReservedRegistrationContext: PVOID,
    /// Reserved.
    pub ReservedRegistrationLock: KSPIN_LOCK,
}

impl WSK_REGISTRATION {
    /// A zeroed block for `WskRegister` to fill.
    pub const fn zeroed() -> Self {
        Self {
            ReservedRegistrationState: 0,
            ReservedRegistrationContext: core::ptr::null_mut(),
            ReservedRegistrationLock: 0,
        }
    }
}

#[cfg_attr(
    target_os = "windows",
    link(name = "NETIO.SYS", kind = "raw-dylib", modifiers = "+verbatim")
)]
unsafe extern "system" {
    /// Registers a WSK client (`PASSIVE_LEVEL`).
    pub fn WskRegister(
        WskClientNpi: *mut WSK_CLIENT_NPI,
        WskRegistration: *mut WSK_REGISTRATION,
    ) -> NTSTATUS;
    /// Waits for every captured NPI, call and socket, then deregisters
    /// (`PASSIVE_LEVEL`).
    pub fn WskDeregister(WskRegistration: *mut WSK_REGISTRATION);
    /// Captures the provider NPI (`PASSIVE_LEVEL` unless `WSK_NO_WAIT`).
    pub fn WskCaptureProviderNPI(
        WskRegistration: *mut WSK_REGISTRATION,
        WaitTimeout: ULONG,
        WskProviderNpi: *mut WSK_PROVIDER_NPI,
    ) -> NTSTATUS;
    /// Releases a captured NPI (`<= DISPATCH_LEVEL`).
    pub fn WskReleaseProviderNPI(WskRegistration: *mut WSK_REGISTRATION);
}
