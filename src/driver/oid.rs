//! V's `MiniportOidRequest` (the MUX sample's `MPOidRequest`): the NDK
//! OIDs (`OID_NDK_SET_STATE`, `OID_NDK_STATISTICS`, `OID_NDK_CONNECTIONS`,
//! `OID_NDK_LOCAL_ENDPOINTS`) are V's own and never go down (P may be an
//! NDK provider itself); the packet filter, the multicast list and the
//! lookahead are P's business and are forwarded to it
//! ([`super::protocol::oid_forward`], which pends V's request); the general
//! and 802.3 queries are answered from V's state, which is P's as the bind
//! and the link indications gave it (MAC, MTU, speeds, media state).

// The C enum constants keep their C names (NdisRequestQueryInformation).
#![allow(non_upper_case_globals)]

use core::sync::atomic::Ordering;

use ndis::{
    NDIS_NDK_STATISTICS_INFO, NDIS_STATUS_INVALID_DATA, NDIS_STATUS_INVALID_LENGTH,
    NDIS_STATUS_MULTICAST_FULL, NdisHardwareStatusReady, NdisMedium802_3,
    OID_802_3_CURRENT_ADDRESS, OID_802_3_MAXIMUM_LIST_SIZE, OID_802_3_MULTICAST_LIST,
    OID_802_3_PERMANENT_ADDRESS, OID_802_3_RCV_ERROR_ALIGNMENT, OID_802_3_XMIT_MORE_COLLISIONS,
    OID_802_3_XMIT_ONE_COLLISION, OID_GEN_CURRENT_LOOKAHEAD, OID_GEN_CURRENT_PACKET_FILTER,
    OID_GEN_HARDWARE_STATUS, OID_GEN_MAC_OPTIONS, OID_GEN_MAXIMUM_FRAME_SIZE,
    OID_GEN_MAXIMUM_LOOKAHEAD, OID_GEN_MAXIMUM_SEND_PACKETS, OID_GEN_MAXIMUM_TOTAL_SIZE,
    OID_GEN_MEDIA_CONNECT_STATUS, OID_GEN_MEDIA_IN_USE, OID_GEN_MEDIA_SUPPORTED,
    OID_GEN_NETWORK_LAYER_ADDRESSES, OID_GEN_PHYSICAL_MEDIUM, OID_GEN_RCV_ERROR,
    OID_GEN_RCV_NO_BUFFER, OID_GEN_RCV_OK, OID_GEN_RECEIVE_BLOCK_SIZE,
    OID_GEN_RECEIVE_BUFFER_SPACE, OID_GEN_SUPPORTED_LIST, OID_GEN_TRANSMIT_BLOCK_SIZE,
    OID_GEN_TRANSMIT_BUFFER_SPACE, OID_GEN_TRANSPORT_HEADER_OFFSET, OID_GEN_VENDOR_DESCRIPTION,
    OID_GEN_VENDOR_DRIVER_VERSION, OID_GEN_VENDOR_ID, OID_GEN_XMIT_ERROR, OID_GEN_XMIT_OK,
    OID_NDK_CONNECTIONS, OID_NDK_LOCAL_ENDPOINTS, OID_NDK_SET_STATE, OID_NDK_STATISTICS,
};
use ndis::{OID_GEN_LINK_SPEED, OID_GEN_STATISTICS, OID_PNP_QUERY_POWER, OID_PNP_SET_POWER};
use ndkpi::{NDIS_STATUS, NDIS_STATUS_NOT_SUPPORTED, NDIS_STATUS_SUCCESS};

use super::adapter::{Adapter, MAC_OPTIONS};
use super::kit::oid::{OidRequest, Query, RequestKind, Set, bytes_of, slice_bytes};
use super::mux::DEVICE_STATE_D0;
use super::protocol::oid_forward;
use super::supported_oids::SUPPORTED_OIDS;
use super::{ndk, ndk_tables};

/// `OID_GEN_VENDOR_DESCRIPTION`, NUL-terminated.
const VENDOR_DESCRIPTION: &[u8] = b"rsndk software RoCEv2 RNIC\0";
/// `OID_GEN_VENDOR_ID`: 0xFFFFFF (no IEEE OUI) in the low 24 bits.
const VENDOR_ID: u32 = 0x00FF_FFFF;
/// `OID_GEN_VENDOR_DRIVER_VERSION`: major in the high word.
const DRIVER_VERSION: u32 = 0x0001_0000;
/// `NdisMediaStateConnected` of the legacy `NDIS_MEDIA_STATE` enum.
const NDIS_MEDIA_STATE_CONNECTED: u32 = 0;
/// `NdisMediaStateDisconnected`.
const NDIS_MEDIA_STATE_DISCONNECTED: u32 = 1;
/// Sends V takes at once (`OID_GEN_MAXIMUM_SEND_PACKETS`, the sample's
/// `VELAN_MAX_SEND_PKTS`; an NDIS 6 driver's answer is advisory).
const MAX_SEND_PACKETS: u32 = 5;
/// Frames of buffer space reported (`OID_GEN_*_BUFFER_SPACE`).
const BUFFER_FRAMES: u32 = 64;
/// Ethernet header length.
const ETH_HEADER: u32 = 14;

fn query(adapter: &Adapter, query: &mut Query<'_>) -> NDIS_STATUS {
    let u32_answer = |q: &mut Query<'_>, v: u32| q.answer(&v.to_ne_bytes());
    let binding = adapter.binding();
    let lower = &binding.lower;
    let virt = &adapter.mux().virt;
    let stats = &virt.stats;
    let frame = lower.mtu.saturating_add(ETH_HEADER);
    match query.oid() {
        OID_GEN_SUPPORTED_LIST => query.answer(slice_bytes(SUPPORTED_OIDS)),
        OID_GEN_HARDWARE_STATUS => u32_answer(query, NdisHardwareStatusReady as u32),
        OID_GEN_MEDIA_SUPPORTED | OID_GEN_MEDIA_IN_USE => u32_answer(query, NdisMedium802_3 as u32),
        OID_GEN_PHYSICAL_MEDIUM => u32_answer(query, lower.physical_medium as u32),
        OID_GEN_MAXIMUM_LOOKAHEAD => u32_answer(query, lower.lookahead),
        OID_GEN_CURRENT_LOOKAHEAD => u32_answer(query, virt.lookahead.load(Ordering::Relaxed)),
        OID_GEN_MAXIMUM_FRAME_SIZE => u32_answer(query, lower.mtu),
        // In units of 100 bit/s.
        OID_GEN_LINK_SPEED => u32_answer(
            query,
            u32::try_from(binding.link.xmit_speed() / 100).unwrap_or(u32::MAX),
        ),
        OID_GEN_MAXIMUM_TOTAL_SIZE | OID_GEN_TRANSMIT_BLOCK_SIZE | OID_GEN_RECEIVE_BLOCK_SIZE => {
            u32_answer(query, frame)
        }
        OID_GEN_TRANSMIT_BUFFER_SPACE | OID_GEN_RECEIVE_BUFFER_SPACE => {
            u32_answer(query, frame.saturating_mul(BUFFER_FRAMES))
        }
        OID_GEN_VENDOR_ID => u32_answer(query, VENDOR_ID),
        OID_GEN_VENDOR_DESCRIPTION => query.answer(VENDOR_DESCRIPTION),
        OID_GEN_VENDOR_DRIVER_VERSION => u32_answer(query, DRIVER_VERSION),
        OID_GEN_CURRENT_PACKET_FILTER => {
            u32_answer(query, virt.packet_filter.load(Ordering::Relaxed))
        }
        OID_GEN_MAC_OPTIONS => u32_answer(query, MAC_OPTIONS),
        OID_GEN_MEDIA_CONNECT_STATUS => u32_answer(
            query,
            if binding.link.is_up() {
                NDIS_MEDIA_STATE_CONNECTED
            } else {
                NDIS_MEDIA_STATE_DISCONNECTED
            },
        ),
        OID_GEN_MAXIMUM_SEND_PACKETS => u32_answer(query, MAX_SEND_PACKETS),
        OID_GEN_XMIT_OK => query.answer(&stats.frames_out().to_ne_bytes()),
        OID_GEN_RCV_OK => query.answer(&stats.frames_in().to_ne_bytes()),
        OID_GEN_XMIT_ERROR => query.answer(&stats.out_errors().to_ne_bytes()),
        OID_GEN_RCV_NO_BUFFER => query.answer(&stats.in_discards().to_ne_bytes()),
        // Frames are not checked for errors or collisions here (P does).
        OID_GEN_RCV_ERROR
        | OID_802_3_RCV_ERROR_ALIGNMENT
        | OID_802_3_XMIT_ONE_COLLISION
        | OID_802_3_XMIT_MORE_COLLISIONS => query.answer(&0u64.to_ne_bytes()),
        OID_GEN_STATISTICS => {
            let info = stats.statistics_info();
            query.answer(bytes_of(&info))
        }
        OID_802_3_PERMANENT_ADDRESS | OID_802_3_CURRENT_ADDRESS => query.answer(&lower.mac),
        OID_802_3_MAXIMUM_LIST_SIZE => u32_answer(query, lower.max_multicast),
        // Any state V may go to is fine (the sample succeeds it).
        OID_PNP_QUERY_POWER => {
            query.set_counts(0, 0);
            NDIS_STATUS_SUCCESS
        }
        OID_NDK_STATISTICS => {
            let info = NDIS_NDK_STATISTICS_INFO::new(ndk::counters(adapter));
            query.answer(bytes_of(&info))
        }
        OID_NDK_CONNECTIONS => ndk_tables::connections(adapter, query),
        OID_NDK_LOCAL_ENDPOINTS => ndk_tables::local_endpoints(adapter, query),
        _ => NDIS_STATUS_NOT_SUPPORTED,
    }
}

/// What a set does: answered here, or forwarded to P.
enum SetAction {
    Done(Result<(), NDIS_STATUS>),
    Forward,
}

fn set(adapter: &Adapter, set: &mut Set<'_>) -> SetAction {
    let lower = &adapter.binding().lower;
    let length = set.len();
    let checked = match set.oid() {
        // P's: checked here as the sample does, then forwarded.
        OID_GEN_CURRENT_PACKET_FILTER => set.value::<4>().and_then(|v| {
            if length != 4 {
                set.set_bytes_needed(4);
                return Err(NDIS_STATUS_INVALID_LENGTH);
            }
            if u32::from_ne_bytes(v) & !lower.supported_filters != 0 {
                return Err(NDIS_STATUS_NOT_SUPPORTED);
            }
            Ok(true)
        }),
        OID_GEN_CURRENT_LOOKAHEAD => set.value::<4>().and_then(|v| {
            if u32::from_ne_bytes(v) > lower.lookahead {
                return Err(NDIS_STATUS_INVALID_DATA);
            }
            Ok(true)
        }),
        OID_802_3_MULTICAST_LIST => {
            if length % 6 != 0 {
                set.set_bytes_needed(6);
                Err(NDIS_STATUS_INVALID_LENGTH)
            } else if length / 6 > lower.max_multicast {
                set.set_bytes_needed(lower.max_multicast.saturating_mul(6));
                Err(NDIS_STATUS_MULTICAST_FULL)
            } else {
                Ok(true)
            }
        }
        // V's own.
        OID_GEN_NETWORK_LAYER_ADDRESSES | OID_GEN_TRANSPORT_HEADER_OFFSET => {
            set.set_bytes_read(length);
            Ok(false)
        }
        OID_PNP_SET_POWER => set.value::<4>().map(|v| {
            let state = i32::from_ne_bytes(v);
            let virt = &adapter.mux().virt;
            let was = virt.power_state.swap(state, Ordering::SeqCst);
            if was != DEVICE_STATE_D0 && state == DEVICE_STATE_D0 {
                // Back in D0: pass up the link state indications V missed.
                adapter.mux().indicate_link_state();
            }
            false
        }),
        // One BOOLEAN; must not pend. The PnP event follows from a work item.
        OID_NDK_SET_STATE => set.value::<1>().map(|v| {
            adapter.set_ndk_state(v[0] != 0);
            false
        }),
        _ => Err(NDIS_STATUS_NOT_SUPPORTED),
    };
    match checked {
        Ok(true) => SetAction::Forward,
        Ok(false) => SetAction::Done(Ok(())),
        Err(status) => SetAction::Done(Err(status)),
    }
}

/// Handles one OID request of V's (`MiniportOidRequest`, `PASSIVE_LEVEL`):
/// `NDIS_STATUS_PENDING` when it went to P.
pub fn handle(adapter: &Adapter, mut request: OidRequest) -> NDIS_STATUS {
    let forward = match request.kind() {
        RequestKind::Query(mut q) => return query(adapter, &mut q),
        RequestKind::Set(mut s) => match set(adapter, &mut s) {
            SetAction::Done(Ok(())) => return NDIS_STATUS_SUCCESS,
            SetAction::Done(Err(status)) => return status,
            SetAction::Forward => true,
        },
        RequestKind::Other => false,
    };
    if forward {
        // NDIS's request, ours until the forwarding completes it; the slot
        // lives with V, which outlives its requests.
        oid_forward::forward(&adapter.forward, adapter.mux(), request)
    } else {
        NDIS_STATUS_NOT_SUPPORTED
    }
}
