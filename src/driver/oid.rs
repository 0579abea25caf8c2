//! `MiniportOidRequest`: the general and 802.3 OIDs of a virtual Ethernet
//! adapter, and the NDK OIDs (`OID_NDK_SET_STATE`, `OID_NDK_STATISTICS`,
//! `OID_NDK_CONNECTIONS`, `OID_NDK_LOCAL_ENDPOINTS`). Nothing pends.

// The C enum constants keep their C names (NdisRequestQueryInformation).
#![allow(non_upper_case_globals)]

use core::sync::atomic::Ordering;

use ndis::{
    NDIS_NDK_STATISTICS_INFO, NDIS_OID, NDIS_OID_REQUEST, NDIS_OID_REQUEST_QUERY_INFORMATION,
    NDIS_OID_REQUEST_SET_INFORMATION, NDIS_STATUS_BUFFER_TOO_SHORT, NDIS_STATUS_INVALID_DATA,
    NDIS_STATUS_INVALID_LENGTH, NDIS_STATUS_MULTICAST_FULL, NdisHardwareStatusReady,
    NdisMedium802_3, NdisPhysicalMedium802_3, NdisRequestQueryInformation,
    NdisRequestQueryStatistics, NdisRequestSetInformation, OID_802_3_CURRENT_ADDRESS,
    OID_802_3_MAXIMUM_LIST_SIZE, OID_802_3_MULTICAST_LIST, OID_802_3_PERMANENT_ADDRESS,
    OID_802_3_RCV_ERROR_ALIGNMENT, OID_802_3_XMIT_MORE_COLLISIONS, OID_802_3_XMIT_ONE_COLLISION,
    OID_GEN_CURRENT_LOOKAHEAD, OID_GEN_CURRENT_PACKET_FILTER, OID_GEN_HARDWARE_STATUS,
    OID_GEN_MAC_OPTIONS, OID_GEN_MAXIMUM_FRAME_SIZE, OID_GEN_MAXIMUM_LOOKAHEAD,
    OID_GEN_MAXIMUM_SEND_PACKETS, OID_GEN_MAXIMUM_TOTAL_SIZE, OID_GEN_MEDIA_CONNECT_STATUS,
    OID_GEN_MEDIA_IN_USE, OID_GEN_MEDIA_SUPPORTED, OID_GEN_NETWORK_LAYER_ADDRESSES,
    OID_GEN_PHYSICAL_MEDIUM, OID_GEN_RCV_ERROR, OID_GEN_RCV_NO_BUFFER, OID_GEN_RCV_OK,
    OID_GEN_RECEIVE_BLOCK_SIZE, OID_GEN_RECEIVE_BUFFER_SPACE, OID_GEN_SUPPORTED_LIST,
    OID_GEN_TRANSMIT_BLOCK_SIZE, OID_GEN_TRANSMIT_BUFFER_SPACE, OID_GEN_TRANSPORT_HEADER_OFFSET,
    OID_GEN_VENDOR_DESCRIPTION, OID_GEN_VENDOR_DRIVER_VERSION, OID_GEN_VENDOR_ID,
    OID_GEN_XMIT_ERROR, OID_GEN_XMIT_OK, OID_NDK_CONNECTIONS, OID_NDK_LOCAL_ENDPOINTS,
    OID_NDK_SET_STATE, OID_NDK_STATISTICS,
};
use ndis::{NDIS_STATISTICS_INFO, OID_GEN_STATISTICS};
use ndkpi::{NDIS_STATUS, NDIS_STATUS_NOT_SUPPORTED, NDIS_STATUS_SUCCESS};

use super::adapter::{Adapter, MAC_OPTIONS, MTU, MULTICAST_LIST_SIZE, PACKET_FILTERS};
use super::{ndk, ndk_tables};

/// Every OID answered, for `OID_GEN_SUPPORTED_LIST` and the general
/// attributes.
pub static SUPPORTED_OIDS: &[NDIS_OID] = &[
    OID_GEN_SUPPORTED_LIST,
    OID_GEN_HARDWARE_STATUS,
    OID_GEN_MEDIA_SUPPORTED,
    OID_GEN_MEDIA_IN_USE,
    OID_GEN_PHYSICAL_MEDIUM,
    OID_GEN_MAXIMUM_LOOKAHEAD,
    OID_GEN_CURRENT_LOOKAHEAD,
    OID_GEN_MAXIMUM_FRAME_SIZE,
    OID_GEN_MAXIMUM_TOTAL_SIZE,
    OID_GEN_TRANSMIT_BLOCK_SIZE,
    OID_GEN_RECEIVE_BLOCK_SIZE,
    OID_GEN_TRANSMIT_BUFFER_SPACE,
    OID_GEN_RECEIVE_BUFFER_SPACE,
    OID_GEN_VENDOR_ID,
    OID_GEN_VENDOR_DESCRIPTION,
    OID_GEN_VENDOR_DRIVER_VERSION,
    OID_GEN_CURRENT_PACKET_FILTER,
    OID_GEN_MAC_OPTIONS,
    OID_GEN_MEDIA_CONNECT_STATUS,
    OID_GEN_MAXIMUM_SEND_PACKETS,
    OID_GEN_NETWORK_LAYER_ADDRESSES,
    OID_GEN_TRANSPORT_HEADER_OFFSET,
    OID_GEN_XMIT_OK,
    OID_GEN_RCV_OK,
    OID_GEN_XMIT_ERROR,
    OID_GEN_RCV_ERROR,
    OID_GEN_RCV_NO_BUFFER,
    OID_GEN_STATISTICS,
    OID_802_3_PERMANENT_ADDRESS,
    OID_802_3_CURRENT_ADDRESS,
    OID_802_3_MULTICAST_LIST,
    OID_802_3_MAXIMUM_LIST_SIZE,
    OID_802_3_RCV_ERROR_ALIGNMENT,
    OID_802_3_XMIT_ONE_COLLISION,
    OID_802_3_XMIT_MORE_COLLISIONS,
    OID_NDK_SET_STATE,
    OID_NDK_STATISTICS,
    OID_NDK_CONNECTIONS,
    OID_NDK_LOCAL_ENDPOINTS,
];

/// `OID_GEN_VENDOR_DESCRIPTION`, NUL-terminated.
const VENDOR_DESCRIPTION: &[u8] = b"rsndk software RoCEv2 RNIC\0";
/// `OID_GEN_VENDOR_ID`: 0xFFFFFF (no IEEE OUI) in the low 24 bits.
const VENDOR_ID: u32 = 0x00FF_FFFF;
/// `OID_GEN_VENDOR_DRIVER_VERSION`: major in the high word.
const DRIVER_VERSION: u32 = 0x0001_0000;
/// `NdisMediaStateConnected` of the legacy `NDIS_MEDIA_STATE` enum.
const NDIS_MEDIA_STATE_CONNECTED: u32 = 0;
/// Ethernet header length.
const ETH_HEADER: u32 = 14;

/// The bytes of a plain-data value.
fn bytes_of<T: Copy>(value: &T) -> &[u8] {
    // SAFETY: `T: Copy` values here are integers and `#[repr(C)]` NDIS
    // structures without padding-sensitive invariants; reading their bytes
    // is what NDIS does with them.
    unsafe { core::slice::from_raw_parts(core::ptr::from_ref(value).cast::<u8>(), size_of::<T>()) }
}

/// Copies `answer` into a query's buffer.
fn answer(query: &mut NDIS_OID_REQUEST_QUERY_INFORMATION, answer: &[u8]) -> NDIS_STATUS {
    let room = query.InformationBufferLength as usize;
    if answer.len() > room || query.InformationBuffer.is_null() {
        query.BytesWritten = 0;
        query.BytesNeeded = answer.len() as u32;
        return NDIS_STATUS_BUFFER_TOO_SHORT;
    }
    // SAFETY: NDIS's buffer of `room >= answer.len()` bytes, ours for the
    // request.
    unsafe {
        core::ptr::copy_nonoverlapping(
            answer.as_ptr(),
            query.InformationBuffer.cast(),
            answer.len(),
        );
    };
    query.BytesWritten = answer.len() as u32;
    query.BytesNeeded = 0;
    NDIS_STATUS_SUCCESS
}

fn query(adapter: &Adapter, query: &mut NDIS_OID_REQUEST_QUERY_INFORMATION) -> NDIS_STATUS {
    let u32_answer =
        |q: &mut NDIS_OID_REQUEST_QUERY_INFORMATION, v: u32| answer(q, &v.to_ne_bytes());
    match query.Oid {
        OID_GEN_SUPPORTED_LIST => {
            // SAFETY: the OID list is plain u32s.
            let bytes = unsafe {
                core::slice::from_raw_parts(
                    SUPPORTED_OIDS.as_ptr().cast::<u8>(),
                    size_of_val(SUPPORTED_OIDS),
                )
            };
            answer(query, bytes)
        }
        OID_GEN_HARDWARE_STATUS => u32_answer(query, NdisHardwareStatusReady as u32),
        OID_GEN_MEDIA_SUPPORTED | OID_GEN_MEDIA_IN_USE => u32_answer(query, NdisMedium802_3 as u32),
        OID_GEN_PHYSICAL_MEDIUM => u32_answer(query, NdisPhysicalMedium802_3 as u32),
        OID_GEN_MAXIMUM_LOOKAHEAD | OID_GEN_MAXIMUM_FRAME_SIZE => u32_answer(query, MTU),
        OID_GEN_CURRENT_LOOKAHEAD => u32_answer(query, adapter.lookahead.load(Ordering::Relaxed)),
        OID_GEN_MAXIMUM_TOTAL_SIZE | OID_GEN_TRANSMIT_BLOCK_SIZE | OID_GEN_RECEIVE_BLOCK_SIZE => {
            u32_answer(query, MTU + ETH_HEADER)
        }
        OID_GEN_TRANSMIT_BUFFER_SPACE | OID_GEN_RECEIVE_BUFFER_SPACE => {
            u32_answer(query, (MTU + ETH_HEADER) * 64)
        }
        OID_GEN_VENDOR_ID => u32_answer(query, VENDOR_ID),
        OID_GEN_VENDOR_DESCRIPTION => answer(query, VENDOR_DESCRIPTION),
        OID_GEN_VENDOR_DRIVER_VERSION => u32_answer(query, DRIVER_VERSION),
        OID_GEN_CURRENT_PACKET_FILTER => {
            u32_answer(query, adapter.packet_filter.load(Ordering::Relaxed))
        }
        OID_GEN_MAC_OPTIONS => u32_answer(query, MAC_OPTIONS),
        // The legacy NDIS_MEDIA_STATE: NdisMediaStateConnected is 0.
        OID_GEN_MEDIA_CONNECT_STATUS => u32_answer(query, NDIS_MEDIA_STATE_CONNECTED),
        OID_GEN_MAXIMUM_SEND_PACKETS => u32_answer(query, 1),
        OID_GEN_XMIT_OK
        | OID_GEN_RCV_OK
        | OID_GEN_XMIT_ERROR
        | OID_GEN_RCV_ERROR
        | OID_GEN_RCV_NO_BUFFER
        | OID_802_3_RCV_ERROR_ALIGNMENT
        | OID_802_3_XMIT_ONE_COLLISION
        | OID_802_3_XMIT_MORE_COLLISIONS => answer(query, &0u64.to_ne_bytes()),
        OID_GEN_STATISTICS => {
            // Nothing is received or transmitted on the Ethernet path; every
            // send is a discard.
            let mut stats = NDIS_STATISTICS_INFO::new();
            stats.ifOutDiscards = adapter.send_discards.load(Ordering::Relaxed);
            answer(query, bytes_of(&stats))
        }
        OID_802_3_PERMANENT_ADDRESS | OID_802_3_CURRENT_ADDRESS => answer(query, &adapter.mac),
        OID_802_3_MAXIMUM_LIST_SIZE => u32_answer(query, MULTICAST_LIST_SIZE),
        OID_NDK_STATISTICS => {
            let info = NDIS_NDK_STATISTICS_INFO::new(ndk::counters(adapter));
            answer(query, bytes_of(&info))
        }
        OID_NDK_CONNECTIONS => ndk_tables::connections(adapter, query),
        OID_NDK_LOCAL_ENDPOINTS => ndk_tables::local_endpoints(adapter, query),
        _ => NDIS_STATUS_NOT_SUPPORTED,
    }
}

/// Reads a set request's value of exactly `N` bytes.
fn value<const N: usize>(
    set: &mut NDIS_OID_REQUEST_SET_INFORMATION,
) -> Result<[u8; N], NDIS_STATUS> {
    if (set.InformationBufferLength as usize) < N || set.InformationBuffer.is_null() {
        set.BytesNeeded = N as u32;
        return Err(NDIS_STATUS_INVALID_LENGTH);
    }
    let mut out = [0u8; N];
    // SAFETY: NDIS's buffer holds at least N bytes (checked).
    unsafe {
        core::ptr::copy_nonoverlapping(set.InformationBuffer.cast::<u8>(), out.as_mut_ptr(), N);
    };
    set.BytesRead = N as u32;
    Ok(out)
}

fn set(adapter: &Adapter, set: &mut NDIS_OID_REQUEST_SET_INFORMATION) -> NDIS_STATUS {
    let result = match set.Oid {
        OID_GEN_CURRENT_PACKET_FILTER => value::<4>(set).and_then(|v| {
            let filter = u32::from_ne_bytes(v);
            if filter & !PACKET_FILTERS != 0 {
                return Err(NDIS_STATUS_NOT_SUPPORTED);
            }
            adapter.packet_filter.store(filter, Ordering::Relaxed);
            Ok(())
        }),
        OID_GEN_CURRENT_LOOKAHEAD => value::<4>(set).and_then(|v| {
            let lookahead = u32::from_ne_bytes(v);
            if lookahead > MTU {
                return Err(NDIS_STATUS_INVALID_DATA);
            }
            adapter.lookahead.store(lookahead, Ordering::Relaxed);
            Ok(())
        }),
        OID_802_3_MULTICAST_LIST => {
            // Accepted and ignored: nothing is received on this adapter.
            let len = set.InformationBufferLength;
            if len % 6 != 0 {
                Err(NDIS_STATUS_INVALID_LENGTH)
            } else if len / 6 > MULTICAST_LIST_SIZE {
                Err(NDIS_STATUS_MULTICAST_FULL)
            } else {
                set.BytesRead = len;
                Ok(())
            }
        }
        OID_GEN_NETWORK_LAYER_ADDRESSES | OID_GEN_TRANSPORT_HEADER_OFFSET => {
            set.BytesRead = set.InformationBufferLength;
            Ok(())
        }
        // One BOOLEAN; must not pend. The PnP event follows from a work item.
        OID_NDK_SET_STATE => value::<1>(set).map(|v| adapter.set_ndk_state(v[0] != 0)),
        _ => Err(NDIS_STATUS_NOT_SUPPORTED),
    };
    match result {
        Ok(()) => NDIS_STATUS_SUCCESS,
        Err(status) => status,
    }
}

/// Handles one OID request (`MiniportOidRequest`, `PASSIVE_LEVEL`).
pub fn handle(adapter: &Adapter, request: &mut NDIS_OID_REQUEST) -> NDIS_STATUS {
    match request.RequestType {
        NdisRequestQueryInformation | NdisRequestQueryStatistics => {
            // SAFETY: for query requests the live member is QUERY_INFORMATION.
            let q = unsafe { &mut request.DATA.QUERY_INFORMATION };
            query(adapter, q)
        }
        NdisRequestSetInformation => {
            // SAFETY: for set requests the live member is SET_INFORMATION.
            let s = unsafe { &mut request.DATA.SET_INFORMATION };
            set(adapter, s)
        }
        _ => NDIS_STATUS_NOT_SUPPORTED,
    }
}
