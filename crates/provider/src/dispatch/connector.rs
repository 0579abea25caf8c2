//! The connector's edge: the connector dispatch tables of both NDKPI
//! majors (see [`crate::connector`] for the
//! versions). Its disconnect event and request completions are called
//! through [`crate::callout`].

use core::ffi::c_void;
use core::net::SocketAddr;

use ndkpi::{
    NDK_CONNECTOR, NDK_CONNECTOR_DISPATCH, NDK_FN_CLOSE_COMPLETION,
    NDK_FN_DISCONNECT_EVENT_CALLBACK, NDK_FN_DISCONNECT_EVENT_CALLBACK_EX,
    NDK_FN_REQUEST_COMPLETION, NDK_OBJECT_HEADER, NDK_QP, NDK_SHARED_ENDPOINT, NDK_VERSION,
    NTSTATUS, NdkObjectTypeConnector, PSOCKADDR, SOCKADDR, STATUS_BUFFER_TOO_SMALL,
    STATUS_INVALID_DEVICE_STATE, STATUS_INVALID_HANDLE, STATUS_INVALID_PARAMETER, STATUS_SUCCESS,
};

use super::adapter::{close, query_extension};
use super::endpoint::endpoint_arg;
use super::qp::qp_arg;
use crate::abi::{self, NdkObject};
use crate::callout::DisconnectEvent;
use crate::connector::Connector;

// SAFETY: `Connector` is `#[repr(C)]` with `ndk: NdkCell<NDK_CONNECTOR>`
// first (connector.rs), and `Connector::new` builds it only inside a
// `TryArc`.
unsafe impl NdkObject for Connector {
    type Ndk = NDK_CONNECTOR;
    const TYPE: i32 = NdkObjectTypeConnector;
    fn dispatch_table() -> *const c_void {
        (&raw const DISPATCH).cast()
    }

    /// A 1.x adapter's connectors carry the 1.x table.
    fn ndk(version: NDK_VERSION) -> NDK_CONNECTOR {
        NDK_CONNECTOR {
            Header: abi::header(version, Self::TYPE),
            Dispatch: if version.Major >= 2 {
                &raw const DISPATCH
            } else {
                &raw const DISPATCH_1
            },
        }
    }

    fn is_dispatch_table(dispatch: *const c_void) -> bool {
        dispatch == Self::dispatch_table() || dispatch == (&raw const DISPATCH_1).cast()
    }
}

/// Resolves a connector argument.
///
/// # Safety
/// As [`abi::object`]: a non-null pointer must be readable for an NDK
/// object header and dispatch pointer.
unsafe fn connector_arg<'a>(c: *mut NDK_CONNECTOR) -> Option<&'a Connector> {
    // SAFETY: this function's contract is `abi::object`'s.
    unsafe { abi::object::<Connector>(c) }
}

/// Borrows the consumer's private data.
///
/// # Safety
/// A non-null `data` must be readable for `len` bytes for `'a`.
unsafe fn private_data<'a>(data: *mut c_void, len: u32) -> Result<&'a [u8], NTSTATUS> {
    // SAFETY: a non-null `data` is readable for `len` bytes for `'a` (this
    // function's contract).
    unsafe { abi::slice(data.cast_const().cast::<u8>(), len as usize) }
        .ok_or(STATUS_INVALID_PARAMETER)
}

unsafe extern "win64" fn close_connector(
    c: *mut NDK_OBJECT_HEADER,
    completion: NDK_FN_CLOSE_COMPLETION,
    context: *mut c_void,
) -> NTSTATUS {
    // SAFETY: the consumer closes an object it owns, once, with no
    // other call on it running (NDK contract).
    unsafe { close::<Connector>(c, completion, context) }
}

unsafe extern "win64" fn connect(
    c: *mut NDK_CONNECTOR,
    qp: *mut NDK_QP,
    src: PSOCKADDR,
    src_len: u32,
    dst: PSOCKADDR,
    dst_len: u32,
    inbound_reads: u32,
    outbound_reads: u32,
    data: *mut c_void,
    data_len: u32,
    completion: NDK_FN_REQUEST_COMPLETION,
    context: *mut c_void,
) -> NTSTATUS {
    // SAFETY: the consumer passes its open connector (NDK contract).
    let Some(c) = (unsafe { connector_arg(c) }) else {
        return STATUS_INVALID_HANDLE;
    };
    // SAFETY: the consumer passes its open QP (NDK contract).
    let Some(qp) = (unsafe { qp_arg(qp) }) else {
        return STATUS_INVALID_PARAMETER;
    };
    // SAFETY: a non-null `src` is the consumer's address of `src_len`
    // readable bytes (NDK contract).
    let local = unsafe { abi::read_sockaddr(src, src_len) };
    // SAFETY: a non-null `dst` is the consumer's address of `dst_len`
    // readable bytes (NDK contract).
    let remote = unsafe { abi::read_sockaddr(dst, dst_len) };
    // SAFETY: a non-null `data` is the consumer's private data of
    // `data_len` bytes, readable during the call (NDK contract).
    let data = unsafe { private_data(data, data_len) };
    match (local, remote, data) {
        (Ok(local), Ok(remote), Ok(data)) => c.connect(
            qp,
            None,
            local,
            remote,
            inbound_reads,
            outbound_reads,
            data,
            completion,
            context,
        ),
        (Err(s), _, _) | (_, Err(s), _) | (_, _, Err(s)) => s,
    }
}

unsafe extern "win64" fn connect_with_shared_endpoint(
    c: *mut NDK_CONNECTOR,
    qp: *mut NDK_QP,
    endpoint: *mut NDK_SHARED_ENDPOINT,
    dst: PSOCKADDR,
    dst_len: u32,
    inbound_reads: u32,
    outbound_reads: u32,
    data: *mut c_void,
    data_len: u32,
    completion: NDK_FN_REQUEST_COMPLETION,
    context: *mut c_void,
) -> NTSTATUS {
    // SAFETY: the consumer passes its open connector (NDK contract).
    let Some(c) = (unsafe { connector_arg(c) }) else {
        return STATUS_INVALID_HANDLE;
    };
    // SAFETY: the consumer passes its open QP (NDK contract).
    let qp = unsafe { qp_arg(qp) };
    // SAFETY: the consumer passes its open shared endpoint (NDK contract).
    let endpoint = unsafe { endpoint_arg(endpoint) };
    let (Some(qp), Some(endpoint)) = (qp, endpoint) else {
        return STATUS_INVALID_PARAMETER;
    };
    if !endpoint.adapter().same_device(c.adapter()) {
        return STATUS_INVALID_PARAMETER;
    }
    // SAFETY: a non-null `dst` is the consumer's address of `dst_len`
    // readable bytes (NDK contract).
    let remote = unsafe { abi::read_sockaddr(dst, dst_len) };
    // SAFETY: a non-null `data` is the consumer's private data of
    // `data_len` bytes, readable during the call (NDK contract).
    let data = unsafe { private_data(data, data_len) };
    match (remote, data) {
        (Ok(remote), Ok(data)) => c.connect(
            qp,
            Some(endpoint),
            endpoint.addr(),
            remote,
            inbound_reads,
            outbound_reads,
            data,
            completion,
            context,
        ),
        (Err(s), _) | (_, Err(s)) => s,
    }
}

unsafe extern "win64" fn complete_connect(
    c: *mut NDK_CONNECTOR,
    disconnect_event: NDK_FN_DISCONNECT_EVENT_CALLBACK,
    disconnect_context: *mut c_void,
    _completion: NDK_FN_REQUEST_COMPLETION,
    _context: *mut c_void,
) -> NTSTATUS {
    // SAFETY: the consumer passes its open connector (NDK contract).
    let Some(c) = (unsafe { connector_arg(c) }) else {
        return STATUS_INVALID_HANDLE;
    };
    c.complete_connect(DisconnectEvent::Plain(disconnect_event), disconnect_context)
}

/// `NdkCompleteConnectEx` (NDKPI 2.1): as `NdkCompleteConnect`, with the
/// extended disconnect callback.
unsafe extern "win64" fn complete_connect_ex(
    c: *mut NDK_CONNECTOR,
    disconnect_event: NDK_FN_DISCONNECT_EVENT_CALLBACK_EX,
    disconnect_context: *mut c_void,
    _completion: NDK_FN_REQUEST_COMPLETION,
    _context: *mut c_void,
) -> NTSTATUS {
    // SAFETY: the consumer passes its open connector (NDK contract).
    let Some(c) = (unsafe { connector_arg(c) }) else {
        return STATUS_INVALID_HANDLE;
    };
    c.complete_connect(DisconnectEvent::Ex(disconnect_event), disconnect_context)
}

unsafe extern "win64" fn accept(
    c: *mut NDK_CONNECTOR,
    qp: *mut NDK_QP,
    inbound_reads: u32,
    outbound_reads: u32,
    data: *mut c_void,
    data_len: u32,
    disconnect_event: NDK_FN_DISCONNECT_EVENT_CALLBACK,
    disconnect_context: *mut c_void,
    completion: NDK_FN_REQUEST_COMPLETION,
    context: *mut c_void,
) -> NTSTATUS {
    // SAFETY: the consumer passes its open connector and QP and private
    // data of `data_len` readable bytes (NDK contract), as `accept_with`
    // requires.
    unsafe {
        accept_with(
            c,
            qp,
            inbound_reads,
            outbound_reads,
            data,
            data_len,
            DisconnectEvent::Plain(disconnect_event),
            disconnect_context,
            completion,
            context,
        )
    }
}

/// `NdkAcceptEx` (NDKPI 2.1): as `NdkAccept`, with the extended disconnect
/// callback.
unsafe extern "win64" fn accept_ex(
    c: *mut NDK_CONNECTOR,
    qp: *mut NDK_QP,
    inbound_reads: u32,
    outbound_reads: u32,
    data: *mut c_void,
    data_len: u32,
    disconnect_event: NDK_FN_DISCONNECT_EVENT_CALLBACK_EX,
    disconnect_context: *mut c_void,
    completion: NDK_FN_REQUEST_COMPLETION,
    context: *mut c_void,
) -> NTSTATUS {
    // SAFETY: the consumer passes its open connector and QP and private
    // data of `data_len` readable bytes (NDK contract), as `accept_with`
    // requires.
    unsafe {
        accept_with(
            c,
            qp,
            inbound_reads,
            outbound_reads,
            data,
            data_len,
            DisconnectEvent::Ex(disconnect_event),
            disconnect_context,
            completion,
            context,
        )
    }
}

/// `NdkAccept` and `NdkAcceptEx`.
///
/// # Safety
/// The consumer's arguments of either entry: its open connector and QP,
/// private data readable for `data_len` bytes.
unsafe fn accept_with(
    c: *mut NDK_CONNECTOR,
    qp: *mut NDK_QP,
    inbound_reads: u32,
    outbound_reads: u32,
    data: *mut c_void,
    data_len: u32,
    disconnect_event: DisconnectEvent,
    disconnect_context: *mut c_void,
    completion: NDK_FN_REQUEST_COMPLETION,
    context: *mut c_void,
) -> NTSTATUS {
    // SAFETY: the consumer passes its open connector (NDK contract).
    let Some(c) = (unsafe { connector_arg(c) }) else {
        return STATUS_INVALID_HANDLE;
    };
    // SAFETY: the consumer passes its open QP (NDK contract).
    let Some(qp) = (unsafe { qp_arg(qp) }) else {
        return STATUS_INVALID_PARAMETER;
    };
    // SAFETY: a non-null `data` is the consumer's private data of
    // `data_len` bytes, readable during the call (NDK contract).
    let data = match unsafe { private_data(data, data_len) } {
        Ok(d) => d,
        Err(status) => return status,
    };
    c.accept(
        qp,
        inbound_reads,
        outbound_reads,
        data,
        disconnect_event,
        disconnect_context,
        completion,
        context,
    )
}

unsafe extern "win64" fn reject(
    c: *mut NDK_CONNECTOR,
    data: *mut c_void,
    data_len: u32,
) -> NTSTATUS {
    // SAFETY: the consumer passes its open connector (NDK contract).
    let Some(c) = (unsafe { connector_arg(c) }) else {
        return STATUS_INVALID_HANDLE;
    };
    // SAFETY: a non-null `data` is the consumer's private data of
    // `data_len` bytes, readable during the call (NDK contract).
    match unsafe { private_data(data, data_len) } {
        Ok(d) => c.reject(d),
        Err(status) => status,
    }
}

unsafe extern "win64" fn get_connection_data(
    c: *mut NDK_CONNECTOR,
    ird: *mut u32,
    ord: *mut u32,
    data: *mut c_void,
    data_len: *mut u32,
) -> NTSTATUS {
    // SAFETY: the consumer passes its open connector (NDK contract).
    let Some(c) = (unsafe { connector_arg(c) }) else {
        return STATUS_INVALID_HANDLE;
    };
    // SAFETY: `data_len` is the consumer's in/out length (NDK contract),
    // null checked by `read_in`.
    let Some(have) = (unsafe { abi::read_in(data_len) }) else {
        return STATUS_INVALID_PARAMETER;
    };
    if data.is_null() && have != 0 {
        return STATUS_INVALID_PARAMETER;
    }
    let need = c.connection_data(|data_of| {
        // SAFETY: non-null `ird`/`ord` are the consumer's writable
        // out-parameters (NDK contract); null ones are skipped.
        unsafe { abi::write_out(ird, data_of.inbound_reads) };
        // SAFETY: as for `ird`: `ord` is the consumer's out-parameter.
        unsafe { abi::write_out(ord, data_of.outbound_reads) };
        let n = data_of.private_data.len().min(have as usize);
        // SAFETY: `data` is non-null when `have > 0` (checked above) and
        // holds `have >= n` writable bytes (NDK contract).
        if let Some(out) = unsafe { abi::bytes_mut(data.cast::<u8>(), n) } {
            out.copy_from_slice(&data_of.private_data[..n]);
        }
        data_of.private_data.len() as u32
    });
    let need = match need {
        Ok(need) => need,
        Err(status) => return status,
    };
    // SAFETY: `data_len` is non-null (read above) and writable (NDK
    // contract).
    unsafe { abi::write_out(data_len, need) };
    if data.is_null() || have >= need {
        STATUS_SUCCESS
    } else {
        STATUS_BUFFER_TOO_SMALL
    }
}

unsafe extern "win64" fn get_local_address(
    c: *mut NDK_CONNECTOR,
    addr: *mut SOCKADDR,
    len: *mut u32,
) -> NTSTATUS {
    // SAFETY: the caller's arguments are `NdkGetLocalAddress`'s, which
    // carry the contract `write_address` states.
    unsafe { write_address(c, addr, len, |(local, _)| local) }
}

unsafe extern "win64" fn get_peer_address(
    c: *mut NDK_CONNECTOR,
    addr: *mut SOCKADDR,
    len: *mut u32,
) -> NTSTATUS {
    // SAFETY: the caller's arguments are `NdkGetPeerAddress`'s, which
    // carry the contract `write_address` states.
    unsafe { write_address(c, addr, len, |(_, remote)| remote) }
}

/// A connector's (local, remote) addresses, each known or not.
type AddressPair = (Option<SocketAddr>, Option<SocketAddr>);

/// `NdkGetLocalAddress` and `NdkGetPeerAddress`: the address `pick` takes
/// from the connector's (local, remote) pair into the consumer's buffer.
///
/// # Safety
/// `c` is the consumer's open connector; a non-null `len` is its in/out
/// length and a non-null `addr` its buffer of `*len` writable bytes.
unsafe fn write_address(
    c: *mut NDK_CONNECTOR,
    addr: *mut SOCKADDR,
    len: *mut u32,
    pick: fn(AddressPair) -> Option<SocketAddr>,
) -> NTSTATUS {
    // SAFETY: `c` is the consumer's open connector (this function's contract).
    let Some(c) = (unsafe { connector_arg(c) }) else {
        return STATUS_INVALID_HANDLE;
    };
    let Some(address) = pick(c.addresses()) else {
        return STATUS_INVALID_DEVICE_STATE;
    };
    // SAFETY: a non-null `len` is the consumer's in/out length and a
    // non-null `addr` its buffer of `*len` writable bytes (this function's
    // contract).
    unsafe { abi::write_sockaddr(address, addr, len) }
}

unsafe extern "win64" fn disconnect(
    c: *mut NDK_CONNECTOR,
    completion: NDK_FN_REQUEST_COMPLETION,
    context: *mut c_void,
) -> NTSTATUS {
    // SAFETY: the consumer passes its open connector (NDK contract).
    let Some(c) = (unsafe { connector_arg(c) }) else {
        return STATUS_INVALID_HANDLE;
    };
    c.disconnect(completion, context)
}

/// The connector dispatch table of NDKPI 2.x adapters (the 2.1 table).
pub static DISPATCH: NDK_CONNECTOR_DISPATCH = NDK_CONNECTOR_DISPATCH {
    NdkCloseConnector: Some(close_connector),
    NdkQueryExtension: Some(query_extension),
    NdkConnect: Some(connect),
    NdkConnectWithSharedEndpoint: Some(connect_with_shared_endpoint),
    NdkCompleteConnect: Some(complete_connect),
    NdkAccept: Some(accept),
    NdkReject: Some(reject),
    NdkGetConnectionData: Some(get_connection_data),
    NdkGetLocalAddress: Some(get_local_address),
    NdkGetPeerAddress: Some(get_peer_address),
    NdkDisconnect: Some(disconnect),
    NdkCompleteConnectEx: Some(complete_connect_ex),
    NdkAcceptEx: Some(accept_ex),
};

/// The connector dispatch table of NDKPI 1.x adapters: the 1.2 table (the
/// first [`ndkpi::NDK_CONNECTOR_DISPATCH_1_SIZE`] bytes, all a 1.x consumer
/// reads), followed by null where 2.1 put its two entries. Kept in the
/// 2.1 type so that every reference to a connector table, from either kind
/// of adapter, covers memory that exists.
pub static DISPATCH_1: NDK_CONNECTOR_DISPATCH = NDK_CONNECTOR_DISPATCH {
    NdkCompleteConnectEx: None,
    NdkAcceptEx: None,
    ..DISPATCH
};
