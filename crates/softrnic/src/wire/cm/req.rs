//! The REQ message and the path records it carries.

use zerocopy::network_endian::{U16, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use super::REQ_PRIVATE_LEN;
use crate::wire::fields::{U24, bit_fields, byte_fields, flag_fields, int_fields};

/// One path of a REQ (44 bytes; the primary at 52, the alternate at 96).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned,
)]
#[repr(C)]
pub struct CmPath {
    local_lid: U16,
    remote_lid: U16,
    local_gid: [u8; 16],
    remote_gid: [u8; 16],
    /// Flow label (bits 31..12), reserved, packet rate (bits 5..0).
    flow_label_rate: U32,
    traffic_class: u8,
    hop_limit: u8,
    sl_subnet: u8,
    ack_timeout: u8,
}

const FLOW_LABEL_SHIFT: u32 = 12;
const PACKET_RATE_MASK: u32 = 0x3F;

impl CmPath {
    int_fields! {
        /// Local port LID.
        local_lid, set_local_lid: local_lid -> u16;
        /// Remote port LID.
        remote_lid, set_remote_lid: remote_lid -> u16;
    }
    byte_fields! {
        /// Traffic class (IPv4 TOS / IPv6 traffic class on RoCEv2).
        traffic_class, set_traffic_class: traffic_class;
        /// Hop limit (TTL on RoCEv2).
        hop_limit, set_hop_limit: hop_limit;
    }
    bit_fields! {
        /// Service level (4 bits).
        sl, set_sl: sl_subnet[4; 4];
        /// Local ACK timeout exponent (5 bits): 4.096 µs × 2^n.
        local_ack_timeout, set_local_ack_timeout: ack_timeout[3; 5];
    }
    flag_fields! {
        /// Subnet local: no GRH needed (0 on RoCEv2, which routes by IP).
        subnet_local, set_subnet_local: sl_subnet[3];
    }

    /// Local port GID.
    pub const fn local_gid(&self) -> [u8; 16] {
        self.local_gid
    }

    /// Sets the local port GID.
    pub fn set_local_gid(&mut self, gid: [u8; 16]) {
        self.local_gid = gid;
    }

    /// Remote port GID.
    pub const fn remote_gid(&self) -> [u8; 16] {
        self.remote_gid
    }

    /// Sets the remote port GID.
    pub fn set_remote_gid(&mut self, gid: [u8; 16]) {
        self.remote_gid = gid;
    }

    /// Flow label (20 bits).
    pub fn flow_label(&self) -> u32 {
        self.flow_label_rate.get() >> FLOW_LABEL_SHIFT
    }

    /// Sets the flow label (low 20 bits of `v`).
    pub fn set_flow_label(&mut self, v: u32) {
        let keep = self.flow_label_rate.get() & ((1 << FLOW_LABEL_SHIFT) - 1);
        self.flow_label_rate.set((v << FLOW_LABEL_SHIFT) | keep);
    }

    /// Packet rate code (6 bits).
    pub fn packet_rate(&self) -> u8 {
        (self.flow_label_rate.get() & PACKET_RATE_MASK) as u8
    }

    /// Sets the packet rate code (low 6 bits of `v`).
    pub fn set_packet_rate(&mut self, v: u8) {
        let keep = self.flow_label_rate.get() & !PACKET_RATE_MASK;
        self.flow_label_rate
            .set(keep | (u32::from(v) & PACKET_RATE_MASK));
    }
}

/// REQ: the active side asks to connect.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned,
)]
#[repr(C)]
pub struct ReqMsg {
    local_comm_id: U32,
    reserved4: [u8; 4],
    service_id: U64,
    local_ca_guid: U64,
    reserved24: [u8; 4],
    local_qkey: U32,
    local_qpn: U24,
    responder_resources: u8,
    local_eecn: U24,
    initiator_depth: u8,
    remote_eecn: U24,
    /// Remote CM response timeout (7..3), transport service type (2..1),
    /// end-to-end flow control (0).
    b43: u8,
    starting_psn: U24,
    /// Local CM response timeout (7..3), retry count (2..0).
    b47: u8,
    partition_key: U16,
    /// Path MTU (7..4), RDC exists (3), RNR retry count (2..0).
    b50: u8,
    /// Max CM retries (7..4), SRQ (3), extended transport type (2..0).
    b51: u8,
    primary_path: CmPath,
    alternate_path: CmPath,
    private_data: [u8; REQ_PRIVATE_LEN],
}

impl ReqMsg {
    int_fields! {
        /// Local communication ID (the sender's connection handle).
        local_comm_id, set_local_comm_id: local_comm_id -> u32;
        /// Service ID the passive side listens on.
        service_id, set_service_id: service_id -> u64;
        /// Local CA GUID.
        local_ca_guid, set_local_ca_guid: local_ca_guid -> u64;
        /// Local Q_Key (UD/RD only).
        local_qkey, set_local_qkey: local_qkey -> u32;
        /// Local QPN (24 bits).
        local_qpn, set_local_qpn: local_qpn -> u32;
        /// Local EECN (RD only, 24 bits).
        local_eecn, set_local_eecn: local_eecn -> u32;
        /// Remote EECN (RD only, 24 bits).
        remote_eecn, set_remote_eecn: remote_eecn -> u32;
        /// Starting PSN (24 bits): the first PSN the sender's *receive*
        /// queue expects, so the acceptor's send queue starts from it
        /// (Linux's IB CM: `ib_send_cm_req` sets the initiator's rq_psn
        /// from it, `cm_req_handler` the acceptor's sq_psn).
        starting_psn, set_starting_psn: starting_psn -> u32;
        /// Partition key.
        partition_key, set_partition_key: partition_key -> u16;
    }
    byte_fields! {
        /// RDMA READ / atomic requests the sender accepts at once.
        responder_resources, set_responder_resources: responder_resources;
        /// RDMA READ / atomic requests the sender issues at once.
        initiator_depth, set_initiator_depth: initiator_depth;
    }
    bit_fields! {
        /// Remote CM response timeout exponent (5 bits).
        remote_cm_response_timeout, set_remote_cm_response_timeout: b43[3; 5];
        /// Transport service type (2 bits): [`TRANSPORT_RC`](super::TRANSPORT_RC),
        /// [`TRANSPORT_UC`](super::TRANSPORT_UC).
        transport_service_type, set_transport_service_type: b43[1; 2];
        /// Local CM response timeout exponent (5 bits).
        local_cm_response_timeout, set_local_cm_response_timeout: b47[3; 5];
        /// Transport retry count (3 bits).
        retry_count, set_retry_count: b47[0; 3];
        /// Path MTU code (4 bits, 1 = 256 … 5 = 4096).
        path_mtu, set_path_mtu: b50[4; 4];
        /// RNR retry count (3 bits; 7 = infinite).
        rnr_retry_count, set_rnr_retry_count: b50[0; 3];
        /// Max CM retries (4 bits).
        max_cm_retries, set_max_cm_retries: b51[4; 4];
        /// Extended transport type (3 bits).
        extended_transport_type, set_extended_transport_type: b51[0; 3];
    }
    flag_fields! {
        /// End-to-end flow control.
        end_to_end_flow_control, set_end_to_end_flow_control: b43[0];
        /// RDC exists (RD only).
        rdc_exists, set_rdc_exists: b50[3];
        /// The sender's QP uses a shared receive queue.
        srq, set_srq: b51[3];
    }

    /// Primary path.
    pub const fn primary_path(&self) -> &CmPath {
        &self.primary_path
    }

    /// Primary path, mutable.
    pub fn primary_path_mut(&mut self) -> &mut CmPath {
        &mut self.primary_path
    }

    /// Alternate path (all zero when there is none).
    pub const fn alternate_path(&self) -> &CmPath {
        &self.alternate_path
    }

    /// Alternate path, mutable.
    pub fn alternate_path_mut(&mut self) -> &mut CmPath {
        &mut self.alternate_path
    }

    /// SAP supported (bit 2 of the alternate path's last byte).
    pub const fn sap_supported(&self) -> bool {
        self.alternate_path.ack_timeout & 0x04 != 0
    }

    /// Sets SAP supported.
    pub fn set_sap_supported(&mut self, v: bool) {
        crate::wire::fields::set_bits(&mut self.alternate_path.ack_timeout, 2, 1, u8::from(v));
    }

    /// Private data.
    pub const fn private_data(&self) -> &[u8; REQ_PRIVATE_LEN] {
        &self.private_data
    }

    /// Private data, mutable.
    pub fn private_data_mut(&mut self) -> &mut [u8; REQ_PRIVATE_LEN] {
        &mut self.private_data
    }
}

const _: () = assert!(size_of::<CmPath>() == 44);
