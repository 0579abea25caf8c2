//! OID requests a protocol sends down a binding: `NdisOidRequest` and
//! `NdisCancelOidRequest` (`<= DISPATCH_LEVEL`), answered by the NIC the
//! bottle plays, and their completion through
//! `ProtocolOidRequestComplete`.
//!
//! The NIC answers: sets of `OID_GEN_CURRENT_PACKET_FILTER` (bits it does
//! not support: `NDIS_STATUS_NOT_SUPPORTED`), `OID_802_3_MULTICAST_LIST`
//! (a multiple of 6 bytes, at most [`MAX_MULTICAST`] group addresses;
//! more: `NDIS_STATUS_MULTICAST_FULL`, a unicast one:
//! `NDIS_STATUS_INVALID_DATA`) and `OID_GEN_CURRENT_LOOKAHEAD`, which
//! change its receive filter; queries of the link state, addresses, MTU,
//! speeds, filter, multicast list and its size, MAC options and the media
//! state. Anything else is `NDIS_STATUS_NOT_SUPPORTED`. A short buffer
//! gets `NDIS_STATUS_BUFFER_TOO_SHORT` (query) or
//! `NDIS_STATUS_INVALID_LENGTH` (set) with `BytesNeeded`.
//!
//! Every other request pends (`NDIS_STATUS_PENDING`, completed from the
//! NIC's thread at DISPATCH_LEVEL); the rest complete synchronously. A
//! request already pending on the binding sent again is 0x7C / 0x26.
//!
//! A test can have a NIC hold the requests for an OID pending
//! ([`hold_oid`]), as a NIC waiting on its hardware does: they complete
//! only when the protocol cancels them (`NdisCancelOidRequest` with their
//! `RequestId`: `NDIS_STATUS_REQUEST_ABORTED`, from the NIC's thread) or
//! the test lets them go ([`release_held`]: their answer).

// Each import's safety contract is its WDK documentation, and the caller is
// the driver; the per-function docs say what the bottle checks instead.
#![expect(
    clippy::missing_safety_doc,
    reason = "imports follow the WDK contract of the same name"
)]

use ndis::{
    MediaConnectStateConnected, MediaConnectStateDisconnected, MediaDuplexStateFull, NDIS_HANDLE,
    NDIS_LINK_STATE, NDIS_MAC_OPTION_NO_LOOPBACK, NDIS_OBJECT_HEADER, NDIS_OBJECT_TYPE_OID_REQUEST,
    NDIS_OID, NDIS_OID_REQUEST, NDIS_PACKET_TYPE_ALL_MULTICAST, NDIS_PACKET_TYPE_BROADCAST,
    NDIS_PACKET_TYPE_DIRECTED, NDIS_PACKET_TYPE_MULTICAST, NDIS_PACKET_TYPE_PROMISCUOUS,
    NDIS_SIZEOF_OID_REQUEST_REVISION_1, NDIS_SIZEOF_OID_REQUEST_REVISION_2,
    NDIS_STATUS_BUFFER_TOO_SHORT, NDIS_STATUS_CLOSING, NDIS_STATUS_INVALID_DATA,
    NDIS_STATUS_INVALID_LENGTH, NDIS_STATUS_MULTICAST_FULL, NDIS_STATUS_NOT_SUPPORTED,
    NDIS_STATUS_PENDING, NDIS_STATUS_REQUEST_ABORTED, NDIS_STATUS_SUCCESS,
    NdisRequestQueryInformation, NdisRequestSetInformation, OID_802_3_CURRENT_ADDRESS,
    OID_802_3_MAXIMUM_LIST_SIZE, OID_802_3_MULTICAST_LIST, OID_802_3_PERMANENT_ADDRESS,
    OID_GEN_CURRENT_LOOKAHEAD, OID_GEN_CURRENT_PACKET_FILTER, OID_GEN_LINK_SPEED,
    OID_GEN_LINK_STATE, OID_GEN_MAC_OPTIONS, OID_GEN_MAXIMUM_FRAME_SIZE,
    OID_GEN_MAXIMUM_TOTAL_SIZE, OID_GEN_MEDIA_CONNECT_STATUS, OID_GEN_RCV_LINK_SPEED,
    OID_GEN_XMIT_LINK_SPEED,
};
use std::sync::{Mutex, PoisonError};

use ndkpi::{NDIS_STATUS, PVOID};

use super::checks::{
    NDIS_BUGCHECK_INVALID_OID_COMPLETION, bad_header, check_header, guarded, invalid_handle,
    ndis_bugcheck, require_dispatch_or_below,
};
use super::nic::{self, LINK_SPEED};
use super::state::{self, BindingState};
use crate::world::segment::{ETH_HEADER, is_group};

/// Multicast addresses the NIC filters on at most.
pub const MAX_MULTICAST: usize = 32;
/// `NDIS_PACKET_TYPE_*` bits the NIC supports.
pub const SUPPORTED_FILTERS: u32 = NDIS_PACKET_TYPE_DIRECTED
    | NDIS_PACKET_TYPE_MULTICAST
    | NDIS_PACKET_TYPE_ALL_MULTICAST
    | NDIS_PACKET_TYPE_BROADCAST
    | NDIS_PACKET_TYPE_PROMISCUOUS;

/// What a request came to: status, bytes written or read, bytes needed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Answer {
    /// Completion status.
    pub status: NDIS_STATUS,
    /// `BytesWritten` (query) or `BytesRead` (set).
    pub done: u32,
    /// `BytesNeeded`.
    pub needed: u32,
}

impl Answer {
    fn ok(done: usize) -> Self {
        Self {
            status: NDIS_STATUS_SUCCESS,
            done: done as u32,
            needed: 0,
        }
    }

    fn fail(status: NDIS_STATUS) -> Self {
        Self {
            status,
            done: 0,
            needed: 0,
        }
    }

    fn short(status: NDIS_STATUS, needed: usize) -> Self {
        Self {
            status,
            done: 0,
            needed: needed as u32,
        }
    }
}

/// What a NIC answers from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NicView {
    /// Its MAC.
    pub mac: [u8; 6],
    /// Its MTU.
    pub mtu: u32,
    /// Its link.
    pub link_up: bool,
    /// Its packet filter.
    pub filter: u32,
    /// Its multicast list.
    pub multicast: Vec<[u8; 6]>,
}

/// A change a set request makes to the NIC.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    /// A new packet filter.
    Filter(u32),
    /// A new multicast list.
    Multicast(Vec<[u8; 6]>),
}

/// The answer to a query of `oid` into `buf`.
pub fn query(nic: &NicView, oid: NDIS_OID, buf: &mut [u8]) -> Answer {
    let speed = if nic.link_up { LINK_SPEED } else { 0 };
    let value: Vec<u8> = match oid {
        OID_GEN_LINK_STATE => {
            let link = NDIS_LINK_STATE::new(
                if nic.link_up {
                    MediaConnectStateConnected
                } else {
                    MediaConnectStateDisconnected
                },
                MediaDuplexStateFull,
                speed,
                speed,
            );
            let p = std::ptr::from_ref(&link).cast::<u8>();
            // SAFETY: a plain-data structure read as its own bytes.
            unsafe { std::slice::from_raw_parts(p, size_of::<NDIS_LINK_STATE>()) }.to_vec()
        }
        OID_802_3_CURRENT_ADDRESS | OID_802_3_PERMANENT_ADDRESS => nic.mac.to_vec(),
        OID_GEN_MAXIMUM_FRAME_SIZE => nic.mtu.to_ne_bytes().to_vec(),
        OID_GEN_MAXIMUM_TOTAL_SIZE => (nic.mtu + ETH_HEADER as u32).to_ne_bytes().to_vec(),
        // In units of 100 b/s.
        OID_GEN_LINK_SPEED => ((speed / 100) as u32).to_ne_bytes().to_vec(),
        OID_GEN_XMIT_LINK_SPEED | OID_GEN_RCV_LINK_SPEED => speed.to_ne_bytes().to_vec(),
        OID_GEN_CURRENT_PACKET_FILTER => nic.filter.to_ne_bytes().to_vec(),
        OID_802_3_MULTICAST_LIST => nic.multicast.concat(),
        OID_802_3_MAXIMUM_LIST_SIZE => (MAX_MULTICAST as u32).to_ne_bytes().to_vec(),
        OID_GEN_MAC_OPTIONS => NDIS_MAC_OPTION_NO_LOOPBACK.to_ne_bytes().to_vec(),
        // NdisMediaStateConnected 0, Disconnected 1.
        OID_GEN_MEDIA_CONNECT_STATUS => u32::from(!nic.link_up).to_ne_bytes().to_vec(),
        _ => return Answer::fail(NDIS_STATUS_NOT_SUPPORTED),
    };
    let Some(out) = buf.get_mut(..value.len()) else {
        return Answer::short(NDIS_STATUS_BUFFER_TOO_SHORT, value.len());
    };
    out.copy_from_slice(&value);
    Answer::ok(value.len())
}

/// The answer to a set of `oid` with `buf`, and the change it makes.
pub fn set(oid: NDIS_OID, buf: &[u8]) -> (Answer, Option<Change>) {
    match oid {
        OID_GEN_CURRENT_PACKET_FILTER => {
            let Some(bytes) = buf.get(..4) else {
                return (Answer::short(NDIS_STATUS_INVALID_LENGTH, 4), None);
            };
            let filter = u32::from_ne_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
            if filter & !SUPPORTED_FILTERS != 0 {
                return (Answer::fail(NDIS_STATUS_NOT_SUPPORTED), None);
            }
            (Answer::ok(4), Some(Change::Filter(filter)))
        }
        OID_802_3_MULTICAST_LIST => {
            if buf.len() % 6 != 0 {
                return (
                    Answer::short(NDIS_STATUS_INVALID_LENGTH, buf.len().next_multiple_of(6)),
                    None,
                );
            }
            let list: Vec<[u8; 6]> = buf
                .chunks_exact(6)
                .map(|c| [c[0], c[1], c[2], c[3], c[4], c[5]])
                .collect();
            if list.len() > MAX_MULTICAST {
                return (Answer::fail(NDIS_STATUS_MULTICAST_FULL), None);
            }
            if list.iter().any(|m| !is_group(m)) {
                return (Answer::fail(NDIS_STATUS_INVALID_DATA), None);
            }
            (Answer::ok(buf.len()), Some(Change::Multicast(list)))
        }
        OID_GEN_CURRENT_LOOKAHEAD => {
            if buf.len() < 4 {
                return (Answer::short(NDIS_STATUS_INVALID_LENGTH, 4), None);
            }
            (Answer::ok(4), None)
        }
        _ => (Answer::fail(NDIS_STATUS_NOT_SUPPORTED), None),
    }
}

/// What a request asks, read from the driver's structure.
struct Asked {
    query: bool,
    oid: NDIS_OID,
    buffer: PVOID,
    length: u32,
}

/// Answers request `request` of `binding` against NIC `nic`: writes the
/// byte counts (and, for a query, the value) into the driver's request.
///
/// # Safety
/// `request` is the driver's live request, of a query or set type.
unsafe fn answer(nic: u32, request: *mut NDIS_OID_REQUEST, asked: &Asked) -> NDIS_STATUS {
    let Some(view) = state::with(|n| {
        n.nics.get(&nic).map(|x| NicView {
            mac: x.mac,
            mtu: x.mtu,
            link_up: x.link_up,
            filter: x.packet_filter,
            multicast: x.multicast.clone(),
        })
    }) else {
        return NDIS_STATUS_CLOSING;
    };
    let length = asked.length as usize;
    let result = if asked.query {
        let mut value = vec![0u8; length];
        let a = query(&view, asked.oid, &mut value);
        if a.status == NDIS_STATUS_SUCCESS && !asked.buffer.is_null() {
            // SAFETY: the driver's buffer holds InformationBufferLength
            // bytes (its contract); `a.done` is at most that.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    value.as_ptr(),
                    asked.buffer.cast::<u8>(),
                    a.done as usize,
                );
            };
        }
        // SAFETY: the driver's live request (caller).
        let mut data = unsafe { (*request).DATA };
        // SAFETY: a query request: QUERY_INFORMATION is its live member
        // (caller).
        let mut q = unsafe { data.QUERY_INFORMATION };
        q.BytesWritten = a.done;
        q.BytesNeeded = a.needed;
        data.QUERY_INFORMATION = q;
        // SAFETY: the driver's live request (caller).
        unsafe { (*request).DATA = data };
        a
    } else {
        let value = if asked.buffer.is_null() || length == 0 {
            Vec::new()
        } else {
            // SAFETY: the driver's buffer holds InformationBufferLength
            // readable bytes (its contract).
            unsafe { std::slice::from_raw_parts(asked.buffer.cast::<u8>(), length) }.to_vec()
        };
        let (a, change) = set(asked.oid, &value);
        if let Some(change) = change {
            state::with(|n| {
                if let Some(x) = n.nics.get_mut(&nic) {
                    match change {
                        Change::Filter(f) => x.packet_filter = f,
                        Change::Multicast(m) => x.multicast = m,
                    }
                }
            });
        }
        // SAFETY: the driver's live request (caller).
        let mut data = unsafe { (*request).DATA };
        // SAFETY: a set request: SET_INFORMATION is its live member
        // (caller).
        let mut q = unsafe { data.SET_INFORMATION };
        q.BytesRead = a.done;
        q.BytesNeeded = a.needed;
        data.SET_INFORMATION = q;
        // SAFETY: the driver's live request (caller).
        unsafe { (*request).DATA = data };
        a
    };
    result.status
}

/// `NdisOidRequest`.
pub unsafe extern "win64" fn NdisOidRequest(
    NdisBindingHandle: NDIS_HANDLE,
    OidRequest: *mut NDIS_OID_REQUEST,
) -> NDIS_STATUS {
    const API: &str = "NdisOidRequest";
    guarded(API, || {
        require_dispatch_or_below(API, NdisOidRequest as *const ());
        let binding = NdisBindingHandle as usize;
        let request = OidRequest as usize;
        let Some((nic, closing, pending_already, call)) = state::with(|n| {
            let b = n.live_binding(binding)?;
            b.oid_calls += 1;
            Some((
                b.nic,
                matches!(b.state, BindingState::Closing | BindingState::Opening),
                b.oids_pending.contains(&request),
                b.oid_calls,
            ))
        }) else {
            invalid_handle(API, binding, "binding");
        };
        if OidRequest.is_null() {
            ndis_bugcheck(
                NDIS_BUGCHECK_INVALID_OID_COMPLETION,
                binding,
                0,
                format!("{API}: a null NDIS_OID_REQUEST"),
            );
        }
        if pending_already {
            ndis_bugcheck(
                NDIS_BUGCHECK_INVALID_OID_COMPLETION,
                binding,
                request,
                format!("{API}: request {request:#x} sent again while it is pending"),
            );
        }
        // SAFETY: non-null; a request starts with its header.
        let header = unsafe { OidRequest.cast::<NDIS_OBJECT_HEADER>().read_unaligned() };
        if let Err(fault) = check_header(
            header,
            NDIS_OBJECT_TYPE_OID_REQUEST,
            &[
                NDIS_SIZEOF_OID_REQUEST_REVISION_1,
                NDIS_SIZEOF_OID_REQUEST_REVISION_2,
            ],
        ) {
            bad_header(API, binding, request, "NDIS_OID_REQUEST", header, fault);
        }
        if closing {
            return NDIS_STATUS_CLOSING;
        }
        // SAFETY: a request of at least its revision-1 size (checked).
        let req = unsafe { OidRequest.read_unaligned() };
        let (kind, data) = (req.RequestType, req.DATA);
        let asked = if kind == NdisRequestQueryInformation {
            // SAFETY: a query: QUERY_INFORMATION is the live member.
            let q = unsafe { data.QUERY_INFORMATION };
            Asked {
                query: true,
                oid: q.Oid,
                buffer: q.InformationBuffer,
                length: q.InformationBufferLength,
            }
        } else if kind == NdisRequestSetInformation {
            // SAFETY: a set: SET_INFORMATION is the live member.
            let s = unsafe { data.SET_INFORMATION };
            Asked {
                query: false,
                oid: s.Oid,
                buffer: s.InformationBuffer,
                length: s.InformationBufferLength,
            }
        } else {
            return NDIS_STATUS_NOT_SUPPORTED;
        };
        // SAFETY: the driver's live request, of a query or set type.
        let status = unsafe { answer(nic, OidRequest, &asked) };
        if holds(nic, asked.oid) {
            state::with(|n| {
                if let Some(b) = n.live_binding(binding) {
                    b.oids_pending.push(request);
                }
            });
            HOLDING
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .1
                .push(Held {
                    nic,
                    binding,
                    request,
                    request_id: req.RequestId as usize,
                    status,
                });
            return NDIS_STATUS_PENDING;
        }
        if call % 2 == 0 {
            state::with(|n| {
                if let Some(b) = n.live_binding(binding) {
                    b.oids_pending.push(request);
                }
            });
            nic::defer(nic, 0, move || complete(binding, request, status));
            return NDIS_STATUS_PENDING;
        }
        status
    })
}

/// A request a NIC holds pending ([`hold_oid`]).
#[derive(Clone, Copy, Debug)]
struct Held {
    nic: u32,
    binding: usize,
    request: usize,
    request_id: usize,
    /// What the NIC answered (given back on release).
    status: NDIS_STATUS,
}

/// What NICs hold: (NIC id, OID) pairs whose requests are held, and the
/// requests held.
type Holding = (Vec<(u32, NDIS_OID)>, Vec<Held>);

/// What the NICs hold now.
static HOLDING: Mutex<Holding> = Mutex::new((Vec::new(), Vec::new()));

/// From now on NIC `nic` holds every request for `oid` pending until the
/// protocol cancels it or [`release_held`].
pub fn hold_oid(nic: u32, oid: NDIS_OID) {
    HOLDING
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .0
        .push((nic, oid));
}

/// Requests NIC `nic` holds now.
pub fn held_requests(nic: u32) -> usize {
    let holding = HOLDING.lock().unwrap_or_else(PoisonError::into_inner);
    holding.1.iter().filter(|h| h.nic == nic).count()
}

/// NIC `nic` holds nothing any more: the requests it held complete with
/// their answer, from its thread.
pub fn release_held(nic: u32) {
    let released: Vec<Held> = {
        let mut holding = HOLDING.lock().unwrap_or_else(PoisonError::into_inner);
        holding.0.retain(|(n, _)| *n != nic);
        let (mine, rest) = holding.1.iter().partition(|h| h.nic == nic);
        holding.1 = rest;
        mine
    };
    for h in released {
        let (binding, request, status) = (h.binding, h.request, h.status);
        nic::defer(h.nic, 0, move || complete(binding, request, status));
    }
}

/// Whether NIC `nic` holds requests for `oid`.
fn holds(nic: u32, oid: NDIS_OID) -> bool {
    let holding = HOLDING.lock().unwrap_or_else(PoisonError::into_inner);
    holding.0.contains(&(nic, oid))
}

/// Completes a pended request through `ProtocolOidRequestComplete`.
pub(crate) fn complete(binding: usize, request: usize, status: NDIS_STATUS) {
    let Some((handler, context)) = state::with(|n| {
        let handler = n
            .protocol
            .as_ref()?
            .characteristics
            .OidRequestCompleteHandler?;
        let b = n.bindings.get_mut(&binding)?;
        let before = b.oids_pending.len();
        b.oids_pending.retain(|r| *r != request);
        (b.oids_pending.len() != before).then_some((handler, b.context))
    }) else {
        return;
    };
    state::changed();
    // SAFETY: the protocol's ProtocolOidRequestComplete on its binding
    // context with the request it sent and that pended, completed once.
    unsafe {
        handler(
            context as NDIS_HANDLE,
            request as *mut NDIS_OID_REQUEST,
            status,
        );
    };
}

/// `NdisCancelOidRequest`: a request the NIC holds ([`hold_oid`]) with
/// that `RequestId` on that binding completes with
/// `NDIS_STATUS_REQUEST_ABORTED` from the NIC's thread; other pended
/// requests complete promptly anyway, so nothing else is cancelled. The
/// handle is checked.
pub unsafe extern "win64" fn NdisCancelOidRequest(
    NdisBindingHandle: NDIS_HANDLE,
    RequestId: PVOID,
) {
    const API: &str = "NdisCancelOidRequest";
    guarded(API, || {
        require_dispatch_or_below(API, NdisCancelOidRequest as *const ());
        let binding = NdisBindingHandle as usize;
        if state::with(|n| n.live_binding(binding).is_none()) {
            invalid_handle(API, binding, "binding");
        }
        let cancelled: Vec<Held> = {
            let mut holding = HOLDING.lock().unwrap_or_else(PoisonError::into_inner);
            let (hit, rest) = holding
                .1
                .iter()
                .partition(|h| h.binding == binding && h.request_id == RequestId as usize);
            holding.1 = rest;
            hit
        };
        for h in cancelled {
            let (binding, request) = (h.binding, h.request);
            nic::defer(h.nic, 0, move || {
                complete(binding, request, NDIS_STATUS_REQUEST_ABORTED);
            });
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nic() -> NicView {
        NicView {
            mac: [2, 0, 0, 0, 0, 1],
            mtu: 1500,
            link_up: true,
            filter: 0,
            multicast: Vec::new(),
        }
    }

    #[test]
    fn queries_answer_or_say_how_much_they_need() {
        let mut buf = [0u8; 64];
        assert_eq!(
            query(&nic(), OID_802_3_CURRENT_ADDRESS, &mut buf),
            Answer::ok(6)
        );
        assert_eq!(buf[..6], [2, 0, 0, 0, 0, 1]);
        let a = query(&nic(), OID_GEN_LINK_STATE, &mut buf);
        assert_eq!(a, Answer::ok(size_of::<NDIS_LINK_STATE>()));
        let mut short = [0u8; 3];
        assert_eq!(
            query(&nic(), OID_GEN_MAXIMUM_FRAME_SIZE, &mut short),
            Answer::short(NDIS_STATUS_BUFFER_TOO_SHORT, 4)
        );
        assert_eq!(
            query(&nic(), 0xFF00_0000, &mut buf).status,
            NDIS_STATUS_NOT_SUPPORTED
        );
    }

    #[test]
    fn sets_check_filters_and_multicast_lists() {
        let all = (NDIS_PACKET_TYPE_DIRECTED | NDIS_PACKET_TYPE_BROADCAST).to_ne_bytes();
        assert_eq!(
            set(OID_GEN_CURRENT_PACKET_FILTER, &all),
            (
                Answer::ok(4),
                Some(Change::Filter(
                    NDIS_PACKET_TYPE_DIRECTED | NDIS_PACKET_TYPE_BROADCAST
                ))
            )
        );
        assert_eq!(
            set(OID_GEN_CURRENT_PACKET_FILTER, &0x1000u32.to_ne_bytes())
                .0
                .status,
            NDIS_STATUS_NOT_SUPPORTED
        );
        let group = [0x33, 0x33, 0xFF, 0, 0, 1, 0x01, 0x00, 0x5E, 0, 0, 1];
        assert_eq!(
            set(OID_802_3_MULTICAST_LIST, &group),
            (
                Answer::ok(12),
                Some(Change::Multicast(vec![
                    [0x33, 0x33, 0xFF, 0, 0, 1],
                    [1, 0, 0x5E, 0, 0, 1]
                ]))
            )
        );
        assert_eq!(
            set(OID_802_3_MULTICAST_LIST, &[2, 0, 0, 0, 0, 1]).0.status,
            NDIS_STATUS_INVALID_DATA
        );
        assert_eq!(
            set(OID_802_3_MULTICAST_LIST, &[1; 7]).0.status,
            NDIS_STATUS_INVALID_LENGTH
        );
        assert_eq!(
            set(OID_802_3_MULTICAST_LIST, &[0x33; 6 * 33]).0.status,
            NDIS_STATUS_MULTICAST_FULL
        );
        assert_eq!(
            set(OID_802_3_MULTICAST_LIST, &[]),
            (Answer::ok(0), Some(Change::Multicast(Vec::new())))
        );
    }
}
