//! Building CM MADs and sending them to a peer's QP1.

use core::net::IpAddr;

use zerocopy::{FromBytes, FromZeros, IntoBytes};

use super::conn::Conn;
use super::{CM_RESPONSE_TIMEOUT, Host, Io, MAX_CM_RETRIES, ack_timeout};
use crate::wire::cm::{PERMISSIVE_LID, TRANSPORT_RC};
use crate::wire::cma::PORT_SPACE_TCP;
use crate::wire::{
    CmaHeader, DrepMsg, DreqMsg, IpUdpFields, Mad, MessageRef, MraMsg, Pmtu, ROCEV2_PORT, RejMsg,
    RejReason, RepMsg, ReqMsg, RtuMsg, build, gid_from_ip, gsi_headers, ip_service_id, psn_add,
};

/// Bytes of a MAD datagram at most: IPv6 40 (IPv4 20) + UDP 8 + BTH 12 +
/// DETH 8 + MAD 256 + ICRC 4.
const MAD_DATAGRAM_LEN: usize = crate::wire::ip_udp::MAX_IP_UDP_HEADER_LEN + 12 + 8 + 256 + 4;

/// Hop limit (IPv4 TTL) announced in the REQ's path.
const HOP_LIMIT: u8 = 64;
/// Transport retry count the REQ sets for both QPs (7 retries: the IBA's
/// largest, not "forever", which only the RNR count has).
pub(crate) const RETRY_COUNT: u8 = 7;
/// RNR retry count we ask the peer's requester for (7: forever), in the
/// REQ and the REP.
const RNR_RETRY_COUNT: u8 = 7;

/// The CA GUID of the device at `addr` (made up: RoCE has no real one):
/// "RS" and 48 bits of the address (an IPv4 address whole, an IPv6 one
/// folded).
pub(crate) fn ca_guid(addr: IpAddr) -> u64 {
    (0x5253_u64 << 48) | (crate::addresses::addr_bits(addr) & 0xFFFF_FFFF_FFFF)
}

impl Io {
    /// Sends `mad` from our address `src` to QP1 at `dst` (a UD SEND Only
    /// with the GSI DETH) from source port 4791, its IPv4 identification
    /// that of its PSN, as every packet the engine builds
    /// ([`crate::wire::ipv4_ident`]). Addresses of different families are
    /// not sent between (connection management never pairs them).
    pub(crate) fn send(&mut self, device: &dyn Host, src: IpAddr, dst: IpAddr, mad: &Mad) {
        let Some(ip) = IpUdpFields::new(src, dst, ROCEV2_PORT) else {
            return;
        };
        let headers = gsi_headers(ip.for_packet(self.mad_psn), self.mad_psn);
        self.mad_psn = psn_add(self.mad_psn, 1);
        let mut buf = [0u8; MAD_DATAGRAM_LEN];
        if let Ok(n) = build(&headers, &[mad.as_bytes()], &mut buf) {
            if let Some(datagram) = buf.get(..n) {
                device.transmit(datagram);
                self.stats.sent += 1;
                self.sent = true;
            }
        }
    }

    /// Sends `mad` for `conn`, keeping it as the message to retransmit or
    /// to answer duplicates with.
    pub(crate) fn send_conn(&mut self, device: &dyn Host, conn: &mut Conn, mad: &Mad) {
        conn.out = *mad;
        self.send(device, conn.local.ip(), conn.remote.ip(), mad);
    }

    /// Re-sends the connection's last message.
    pub(crate) fn resend(&mut self, device: &dyn Host, conn: &Conn) {
        if conn.out.header.attribute_id.get() != 0 {
            let out = conn.out;
            self.send(device, conn.local.ip(), conn.remote.ip(), &out);
        }
    }
}

/// What a REQ needs besides the connection.
pub(crate) struct ReqExtras<'a> {
    pub local_comm_id: u32,
    pub srq: bool,
    pub private_data: &'a [u8],
}

/// The REQ for active connection `conn`; `None` if the private data is too
/// long.
pub(crate) fn req(conn: &Conn, x: &ReqExtras<'_>) -> Option<Mad> {
    let header = CmaHeader::ip(conn.local.ip(), conn.local.port(), conn.remote.ip())?;
    let mut r = ReqMsg::new_zeroed();
    r.set_local_comm_id(x.local_comm_id);
    r.set_service_id(ip_service_id(PORT_SPACE_TCP, conn.remote.port()));
    r.set_local_ca_guid(ca_guid(conn.local.ip()));
    r.set_local_qpn(conn.qpn);
    r.set_responder_resources(conn.ird);
    r.set_initiator_depth(conn.ord);
    r.set_remote_cm_response_timeout(CM_RESPONSE_TIMEOUT);
    r.set_transport_service_type(TRANSPORT_RC);
    // The PSN our receive queue expects: the peer sends from it (as
    // Linux's IB CM reads a REQ).
    r.set_starting_psn(conn.recv_psn);
    r.set_local_cm_response_timeout(CM_RESPONSE_TIMEOUT);
    r.set_retry_count(RETRY_COUNT);
    r.set_partition_key(crate::wire::DEFAULT_PKEY);
    r.set_path_mtu(conn.pmtu.code());
    r.set_rnr_retry_count(RNR_RETRY_COUNT);
    r.set_max_cm_retries(MAX_CM_RETRIES);
    r.set_srq(x.srq);
    let p = r.primary_path_mut();
    p.set_local_lid(PERMISSIVE_LID);
    p.set_remote_lid(PERMISSIVE_LID);
    p.set_local_gid(gid_from_ip(conn.local.ip()));
    p.set_remote_gid(gid_from_ip(conn.remote.ip()));
    p.set_hop_limit(HOP_LIMIT);
    p.set_local_ack_timeout(ack_timeout::offered());
    *r.private_data_mut() = header.write_req_private(x.private_data)?;
    Some(Mad::cm(conn.tid, &r))
}

/// The REP of passive connection `conn`; `None` if the private data is too
/// long.
pub(crate) fn rep(conn: &Conn, local_comm_id: u32, srq: bool, private_data: &[u8]) -> Option<Mad> {
    let mut r = RepMsg::new_zeroed();
    r.set_local_comm_id(local_comm_id);
    r.set_remote_comm_id(conn.remote_comm_id);
    r.set_local_qpn(conn.qpn);
    // The PSN our receive queue expects: the initiator sends from it.
    r.set_starting_psn(conn.recv_psn);
    r.set_responder_resources(conn.ird);
    r.set_initiator_depth(conn.ord);
    r.set_target_ack_delay(ack_timeout::LOCAL_CA_ACK_DELAY);
    r.set_rnr_retry_count(RNR_RETRY_COUNT);
    r.set_srq(srq);
    r.set_local_ca_guid(ca_guid(conn.local.ip()));
    r.private_data_mut()
        .get_mut(..private_data.len())?
        .copy_from_slice(private_data);
    Some(Mad::cm(conn.tid, &r))
}

/// A REJ; `None` if the private data is too long.
pub(crate) fn rej(
    tid: u64,
    local_comm_id: u32,
    remote_comm_id: u32,
    rejected: MessageRef,
    reason: RejReason,
    private_data: &[u8],
) -> Option<Mad> {
    let mut r = RejMsg::new_zeroed();
    r.set_local_comm_id(local_comm_id);
    r.set_remote_comm_id(remote_comm_id);
    r.set_message_rejected(rejected);
    r.set_reason(reason);
    r.private_data_mut()
        .get_mut(..private_data.len())?
        .copy_from_slice(private_data);
    Some(Mad::cm(tid, &r))
}

/// A REJ "invalid MTU" refusing a REQ whose path MTU exceeds ours, with
/// our path MTU code as its one byte of additional rejection information,
/// so the initiator can ask again with it.
pub(crate) fn rej_mtu(tid: u64, remote_comm_id: u32, ours: Pmtu) -> Mad {
    let mut r = RejMsg::new_zeroed();
    r.set_remote_comm_id(remote_comm_id);
    r.set_message_rejected(MessageRef::REQ);
    r.set_reason(RejReason::INVALID_MTU);
    r.set_rejected_info_length(1);
    if let Some(b) = r.ari_mut().first_mut() {
        *b = ours.code();
    }
    Mad::cm(tid, &r)
}

/// The path MTU a REJ "invalid MTU" offers, if it carries a valid one.
pub(crate) fn rej_offered_mtu(m: &RejMsg) -> Option<Pmtu> {
    if m.reason() != RejReason::INVALID_MTU || m.rejected_info_length() < 1 {
        return None;
    }
    m.ari().first().and_then(|&code| Pmtu::from_code(code))
}

/// Lowers the path MTU of a REQ already built (the connection's last
/// message) to `pmtu`.
pub(crate) fn lower_req_mtu(out: &mut Mad, pmtu: Pmtu) {
    if let Ok(r) = ReqMsg::mut_from_bytes(&mut out.data) {
        r.set_path_mtu(pmtu.code());
    }
}

/// An RTU.
pub(crate) fn rtu(tid: u64, local_comm_id: u32, remote_comm_id: u32) -> Mad {
    let mut r = RtuMsg::new_zeroed();
    r.set_local_comm_id(local_comm_id);
    r.set_remote_comm_id(remote_comm_id);
    Mad::cm(tid, &r)
}

/// A DREQ to the peer's QP `remote_qpn`.
pub(crate) fn dreq(tid: u64, local_comm_id: u32, remote_comm_id: u32, remote_qpn: u32) -> Mad {
    let mut r = DreqMsg::new_zeroed();
    r.set_local_comm_id(local_comm_id);
    r.set_remote_comm_id(remote_comm_id);
    r.set_remote_qpn(remote_qpn);
    Mad::cm(tid, &r)
}

/// A DREP.
pub(crate) fn drep(tid: u64, local_comm_id: u32, remote_comm_id: u32) -> Mad {
    let mut r = DrepMsg::new_zeroed();
    r.set_local_comm_id(local_comm_id);
    r.set_remote_comm_id(remote_comm_id);
    Mad::cm(tid, &r)
}

/// An MRA for message `mraed`, asking for `service_timeout`.
pub(crate) fn mra(
    tid: u64,
    local_comm_id: u32,
    remote_comm_id: u32,
    mraed: MessageRef,
    service_timeout: u8,
) -> Mad {
    let mut r = MraMsg::new_zeroed();
    r.set_local_comm_id(local_comm_id);
    r.set_remote_comm_id(remote_comm_id);
    r.set_message_mraed(mraed);
    r.set_service_timeout(service_timeout);
    Mad::cm(tid, &r)
}
