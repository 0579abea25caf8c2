//! The datagram socket dispatch: `WskControlSocket`, `WskBind`,
//! `WskSendTo`, `WskReceiveFrom`, `WskRelease`, `WskGetLocalAddress`,
//! `WskCloseSocket`. All run at `IRQL <= DISPATCH_LEVEL`.

use std::net::{Ipv4Addr, SocketAddrV4};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use ndis::{
    DISPATCH_LEVEL, IRP, NPI_WSK_INTERFACE_ID, SO_WSK_EVENT_CALLBACK, SOL_SOCKET, WSK_BUF,
    WSK_CONTROL_SOCKET_TYPE, WSK_DATAGRAM_INDICATION, WSK_EVENT_CALLBACK_CONTROL,
    WSK_EVENT_DISABLE, WSK_EVENT_RECEIVE_FROM, WSK_PROVIDER_BASIC_DISPATCH,
    WSK_PROVIDER_DATAGRAM_DISPATCH, WSK_SOCKET, WskSetOption,
};
use ndkpi::{
    AF_INET, NTSTATUS, PVOID, SOCKADDR, SOCKADDR_IN, STATUS_INSUFFICIENT_RESOURCES,
    STATUS_INVALID_DEVICE_STATE, STATUS_INVALID_PARAMETER, STATUS_NOT_SUPPORTED, STATUS_PENDING,
    STATUS_SUCCESS,
};

use super::buffer;
use super::capture;
use super::checks::{bad_object, irql_at_most};
use super::provider::Table;
use super::receive::{self, complete, complete_request, mark_pending, sockaddr_in};
use super::socket::{self, CloseRequest, PendingReceive, SENT};
use super::udp::Udp;
use crate::verifier::firewall;

/// `STATUS_ADDRESS_ALREADY_ASSOCIATED`: the socket is already bound.
pub const STATUS_ADDRESS_ALREADY_ASSOCIATED: NTSTATUS = 0xC000_0328_u32 as i32;

/// What every datagram socket's `Dispatch` points to. `WskSendMessages`
/// is not provided (null).
pub static DATAGRAM_DISPATCH: Table<WSK_PROVIDER_DATAGRAM_DISPATCH> =
    Table(WSK_PROVIDER_DATAGRAM_DISPATCH {
        Basic: WSK_PROVIDER_BASIC_DISPATCH {
            WskControlSocket: Some(WskControlSocket),
            WskCloseSocket: Some(WskCloseSocket),
        },
        WskBind: Some(WskBind),
        WskSendTo: Some(WskSendTo),
        WskReceiveFrom: Some(WskReceiveFrom),
        WskRelease: Some(WskRelease),
        WskGetLocalAddress: Some(WskGetLocalAddress),
        WskSendMessages: std::ptr::null_mut(),
    });

/// An IPv4 socket address the driver passed, if it is one.
fn ipv4_of(address: *const SOCKADDR) -> Option<SocketAddrV4> {
    if address.is_null() {
        return None;
    }
    // SAFETY: a non-null SOCKADDR the driver passed for this call; every
    // SOCKADDR starts with its family.
    let family = unsafe { address.cast::<u16>().read_unaligned() };
    if family != AF_INET {
        return None;
    }
    // SAFETY: an AF_INET address is a SOCKADDR_IN.
    let v4 = unsafe { address.cast::<SOCKADDR_IN>().read_unaligned() };
    Some(SocketAddrV4::new(
        Ipv4Addr::from(v4.sin_addr.S_un),
        u16::from_be(v4.sin_port),
    ))
}

/// Reports a missing IRP (WSK would complete through it).
fn require_irp(api: &str, routine: usize, irp: *mut IRP) {
    if irp.is_null() {
        bad_object(api, routine, 0, "null IRP");
    }
}

/// `WskControlSocket`: `SO_WSK_EVENT_CALLBACK` (set, `SOL_SOCKET`, no
/// IRP) with `WSK_EVENT_RECEIVE_FROM` enables the receive event, with
/// `WSK_EVENT_DISABLE` as well disables it. Other requests:
/// `STATUS_NOT_SUPPORTED`.
///
/// # Safety
/// Called by the driver on one of its sockets.
pub unsafe extern "win64" fn WskControlSocket(
    Socket: *mut WSK_SOCKET,
    RequestType: WSK_CONTROL_SOCKET_TYPE,
    ControlCode: u32,
    Level: u32,
    InputSize: usize,
    InputBuffer: PVOID,
    _OutputSize: usize,
    _OutputBuffer: PVOID,
    _OutputSizeReturned: *mut usize,
    Irp: *mut IRP,
) -> NTSTATUS {
    let routine = WskControlSocket as *const () as usize;
    firewall("WskControlSocket", || {
        irql_at_most("WskControlSocket", DISPATCH_LEVEL);
        let call = socket::enter("WskControlSocket", routine, Socket);
        let finish = |status| {
            if Irp.is_null() {
                status
            } else {
                complete(Irp, status, 0)
            }
        };
        if RequestType != WskSetOption
            || ControlCode != SO_WSK_EVENT_CALLBACK
            || Level != SOL_SOCKET
        {
            return finish(STATUS_NOT_SUPPORTED);
        }
        // SO_WSK_EVENT_CALLBACK takes no IRP.
        if !Irp.is_null()
            || InputBuffer.is_null()
            || InputSize < size_of::<WSK_EVENT_CALLBACK_CONTROL>()
        {
            return finish(STATUS_INVALID_PARAMETER);
        }
        // SAFETY: the driver's input buffer of at least this size.
        let control = unsafe {
            InputBuffer
                .cast::<WSK_EVENT_CALLBACK_CONTROL>()
                .read_unaligned()
        };
        if control.NpiId.is_null() {
            return STATUS_INVALID_PARAMETER;
        }
        // SAFETY: the driver's NPI id, checked non-null.
        let npi = unsafe { control.NpiId.read_unaligned() };
        let disable = control.EventMask & WSK_EVENT_DISABLE != 0;
        if npi != NPI_WSK_INTERFACE_ID
            || control.EventMask & !WSK_EVENT_DISABLE != WSK_EVENT_RECEIVE_FROM
            || (!disable && call.socket.receive_event().is_none())
        {
            return STATUS_INVALID_PARAMETER;
        }
        call.socket.state().events = !disable;
        call.socket.changed.notify_all();
        STATUS_SUCCESS
    })
}

/// `WskBind`: binds a Linux UDP socket to the IPv4 address and starts the
/// socket's receive thread. A bound socket: `STATUS_ADDRESS_ALREADY_ASSOCIATED`;
/// an address in use: `STATUS_ADDRESS_ALREADY_EXISTS`; not a local
/// address: `STATUS_INVALID_ADDRESS_COMPONENT`.
///
/// # Safety
/// Called by the driver on one of its sockets.
pub unsafe extern "win64" fn WskBind(
    Socket: *mut WSK_SOCKET,
    LocalAddress: *mut SOCKADDR,
    Flags: u32,
    Irp: *mut IRP,
) -> NTSTATUS {
    let routine = WskBind as *const () as usize;
    firewall("WskBind", || {
        irql_at_most("WskBind", DISPATCH_LEVEL);
        let call = socket::enter("WskBind", routine, Socket);
        require_irp("WskBind", routine, Irp);
        let Some(local) = ipv4_of(LocalAddress).filter(|_| Flags == 0) else {
            return complete(Irp, STATUS_INVALID_PARAMETER, 0);
        };
        let s = &call.socket;
        if s.udp().is_some() {
            return complete(Irp, STATUS_ADDRESS_ALREADY_ASSOCIATED, 0);
        }
        let udp = match Udp::bind(local) {
            Ok(u) => Arc::new(u),
            Err(status) => return complete(Irp, status, 0),
        };
        *s.udp
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(udp.clone());
        s.state().receiving = true;
        if receive::start(s.clone(), udp).is_err() {
            s.state().receiving = false;
            *s.udp
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = None;
            return complete(Irp, STATUS_INSUFFICIENT_RESOURCES, 0);
        }
        complete(Irp, STATUS_SUCCESS, 0)
    })
}

/// `WskSendTo`: sends the `WSK_BUF`'s bytes as one datagram from the bound
/// address and completes the IRP with the byte count. No remote address,
/// flags or control information: `STATUS_INVALID_PARAMETER` /
/// `STATUS_NOT_SUPPORTED`; an unbound socket: `STATUS_INVALID_DEVICE_STATE`.
///
/// # Safety
/// Called by the driver on one of its sockets with a valid buffer.
pub unsafe extern "win64" fn WskSendTo(
    Socket: *mut WSK_SOCKET,
    Buffer: *mut WSK_BUF,
    Flags: u32,
    RemoteAddress: *mut SOCKADDR,
    ControlInfoLength: u32,
    _ControlInfo: PVOID,
    Irp: *mut IRP,
) -> NTSTATUS {
    let routine = WskSendTo as *const () as usize;
    firewall("WskSendTo", || {
        irql_at_most("WskSendTo", DISPATCH_LEVEL);
        let call = socket::enter("WskSendTo", routine, Socket);
        require_irp("WskSendTo", routine, Irp);
        if Buffer.is_null() {
            bad_object("WskSendTo", routine, 0, "null WSK_BUF");
        }
        if ControlInfoLength != 0 {
            return complete(Irp, STATUS_NOT_SUPPORTED, 0);
        }
        let Some(to) = ipv4_of(RemoteAddress).filter(|_| Flags == 0) else {
            return complete(Irp, STATUS_INVALID_PARAMETER, 0);
        };
        let Some(udp) = call.socket.udp() else {
            return complete(Irp, STATUS_INVALID_DEVICE_STATE, 0);
        };
        // SAFETY: the driver's WSK_BUF, checked non-null, valid for the call.
        let buf = unsafe { Buffer.read_unaligned() };
        // SAFETY: a WSK_BUF over the driver's locked MDL chain.
        let bytes = match unsafe { buffer::gather(&buf) } {
            Ok(b) => b,
            Err(status) => return complete(Irp, status, 0),
        };
        capture::record(udp.local(), to, &bytes);
        match udp.send_to(&bytes, to) {
            Ok(n) => {
                SENT.fetch_add(1, Ordering::Relaxed);
                complete(Irp, STATUS_SUCCESS, n)
            }
            Err(status) => complete(Irp, status, 0),
        }
    })
}

/// `WskReceiveFrom`: completes at once with a datagram NETIO holds, else
/// pends until one arrives (or the socket closes: `STATUS_CANCELLED`). An
/// unbound socket: `STATUS_INVALID_DEVICE_STATE`.
///
/// # Safety
/// Called by the driver on one of its sockets with buffers valid until
/// the IRP completes.
pub unsafe extern "win64" fn WskReceiveFrom(
    Socket: *mut WSK_SOCKET,
    Buffer: *mut WSK_BUF,
    Flags: u32,
    RemoteAddress: *mut SOCKADDR,
    ControlLength: *mut u32,
    _ControlInfo: PVOID,
    ControlFlags: *mut u32,
    Irp: *mut IRP,
) -> NTSTATUS {
    let routine = WskReceiveFrom as *const () as usize;
    firewall("WskReceiveFrom", || {
        irql_at_most("WskReceiveFrom", DISPATCH_LEVEL);
        let call = socket::enter("WskReceiveFrom", routine, Socket);
        require_irp("WskReceiveFrom", routine, Irp);
        if Buffer.is_null() {
            bad_object("WskReceiveFrom", routine, 0, "null WSK_BUF");
        }
        if Flags != 0 {
            return complete(Irp, STATUS_INVALID_PARAMETER, 0);
        }
        let request = PendingReceive {
            irp: Irp,
            // SAFETY: the driver's WSK_BUF, checked non-null.
            buffer: unsafe { Buffer.read_unaligned() },
            remote: RemoteAddress,
            control_length: ControlLength,
            control_flags: ControlFlags,
        };
        let s = &call.socket;
        let mut st = s.state();
        if !st.receiving {
            drop(st);
            return complete(Irp, STATUS_INVALID_DEVICE_STATE, 0);
        }
        if let Some(d) = st.held.pop_front() {
            drop(st);
            return complete_request(&request, d.from, &d.bytes);
        }
        mark_pending(Irp);
        st.receives.push_back(request);
        drop(st);
        s.changed.notify_all();
        STATUS_PENDING
    })
}

/// `WskRelease`: gives back an indication list the client kept by
/// returning `STATUS_PENDING` from its receive event.
///
/// # Safety
/// Called by the driver on one of its sockets.
pub unsafe extern "win64" fn WskRelease(
    Socket: *mut WSK_SOCKET,
    DatagramIndication: *mut WSK_DATAGRAM_INDICATION,
) -> NTSTATUS {
    let routine = WskRelease as *const () as usize;
    firewall("WskRelease", || {
        irql_at_most("WskRelease", DISPATCH_LEVEL);
        let call = socket::enter("WskRelease", routine, Socket);
        let released = {
            let mut st = call.socket.state();
            st.retained
                .iter()
                .position(|b| b.head() == DatagramIndication.cast_const())
                .map(|i| st.retained.swap_remove(i))
        };
        if released.is_none() {
            bad_object(
                "WskRelease",
                routine,
                DatagramIndication as usize,
                "not an indication list this socket's client retained",
            );
        }
        STATUS_SUCCESS
    })
}

/// `WskGetLocalAddress`: the bound IPv4 address (an unbound socket:
/// `STATUS_INVALID_DEVICE_STATE`).
///
/// # Safety
/// Called by the driver on one of its sockets.
pub unsafe extern "win64" fn WskGetLocalAddress(
    Socket: *mut WSK_SOCKET,
    LocalAddress: *mut SOCKADDR,
    Irp: *mut IRP,
) -> NTSTATUS {
    let routine = WskGetLocalAddress as *const () as usize;
    firewall("WskGetLocalAddress", || {
        irql_at_most("WskGetLocalAddress", DISPATCH_LEVEL);
        let call = socket::enter("WskGetLocalAddress", routine, Socket);
        require_irp("WskGetLocalAddress", routine, Irp);
        if LocalAddress.is_null() {
            return complete(Irp, STATUS_INVALID_PARAMETER, 0);
        }
        let Some(local) = call.socket.local() else {
            return complete(Irp, STATUS_INVALID_DEVICE_STATE, 0);
        };
        // SAFETY: the driver's address buffer, a SOCKADDR of the socket's
        // family (AF_INET), checked non-null.
        unsafe {
            LocalAddress
                .cast::<SOCKADDR_IN>()
                .write_unaligned(sockaddr_in(local));
        };
        complete(Irp, STATUS_SUCCESS, 0)
    })
}

/// `WskCloseSocket`: no call of the socket may be running. A bound
/// socket's close pends until its receive thread has stopped indicating,
/// cancelled pending receives and closed the Linux socket; after it, no
/// more indications.
///
/// # Safety
/// Called by the driver on one of its sockets.
pub unsafe extern "win64" fn WskCloseSocket(Socket: *mut WSK_SOCKET, Irp: *mut IRP) -> NTSTATUS {
    let routine = WskCloseSocket as *const () as usize;
    firewall("WskCloseSocket", || {
        irql_at_most("WskCloseSocket", DISPATCH_LEVEL);
        require_irp("WskCloseSocket", routine, Irp);
        let s = socket::enter_close("WskCloseSocket", routine, Socket);
        let mut st = s.state();
        st.closing = true;
        if st.receiving {
            mark_pending(Irp);
            st.close_irp = Some(CloseRequest(Irp));
            drop(st);
            s.changed.notify_all();
            return STATUS_PENDING;
        }
        drop(st);
        // Never bound: no receive thread, no request, nothing retained.
        let status = complete(Irp, STATUS_SUCCESS, 0);
        socket::closed(&s);
        status
    })
}
