//! What is below the process's stack: each bound V, reached as NDIS
//! reaches a miniport for the protocol above it. Frames go to V's
//! `MiniportSendNetBufferLists` ([`crate::ndis::datapath::send_frame`]);
//! the receive filter goes to V's `MiniportOidRequest` as the two set
//! requests TCP/IP makes on an Ethernet interface,
//! `OID_GEN_CURRENT_PACKET_FILTER` and `OID_802_3_MULTICAST_LIST`
//! (ntddndis.h), so that V (and the NIC under it) delivers the IPv6
//! groups the interface listens to.

use ndis::{OID_802_3_MULTICAST_LIST, OID_GEN_CURRENT_PACKET_FILTER};

use super::interface::ReceiveFilter;
use super::stack::Below;
use crate::ndis::miniport::{self, OidKind};

/// Every bound V.
#[derive(Clone, Copy, Debug, Default)]
pub struct V;

impl Below for V {
    fn send_frame(&self, adapter: u32, frame: &[u8]) {
        crate::ndis::datapath::send_frame(adapter, frame);
    }

    fn set_receive_filter(&self, adapter: u32, filter: &ReceiveFilter) {
        let mut list: Vec<u8> = filter.multicast.iter().flatten().copied().collect();
        if let Err(status) =
            miniport::oid_request(adapter, OidKind::Set, OID_802_3_MULTICAST_LIST, &mut list)
        {
            eprintln!(
                "[kbottle tcpip] adapter {adapter}: OID_802_3_MULTICAST_LIST failed with {:#010x}",
                status as u32
            );
        }
        let mut packet_filter = filter.packet_filter.to_ne_bytes();
        if let Err(status) = miniport::oid_request(
            adapter,
            OidKind::Set,
            OID_GEN_CURRENT_PACKET_FILTER,
            &mut packet_filter,
        ) {
            eprintln!(
                "[kbottle tcpip] adapter {adapter}: OID_GEN_CURRENT_PACKET_FILTER failed with {:#010x}",
                status as u32
            );
        }
    }
}
