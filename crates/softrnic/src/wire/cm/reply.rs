//! The messages after a REQ: REP, REJ, MRA, RTU, DREQ, DREP.

use zerocopy::network_endian::{U16, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use super::{
    DREP_PRIVATE_LEN, DREQ_PRIVATE_LEN, MRA_PRIVATE_LEN, MessageRef, REJ_ARI_LEN, REJ_PRIVATE_LEN,
    REP_PRIVATE_LEN, RTU_PRIVATE_LEN, RejReason,
};
use crate::wire::fields::{
    U24, bit_fields, byte_fields, flag_fields, get_bits, int_fields, set_bits,
};

/// REP: the passive side accepts.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned,
)]
#[repr(C)]
pub struct RepMsg {
    local_comm_id: U32,
    remote_comm_id: U32,
    local_qkey: U32,
    local_qpn: U24,
    reserved15: u8,
    local_eecn: U24,
    reserved19: u8,
    starting_psn: U24,
    reserved23: u8,
    responder_resources: u8,
    initiator_depth: u8,
    /// Target ACK delay (7..3), failover accepted (2..1), end-to-end flow
    /// control (0).
    b26: u8,
    /// RNR retry count (7..5), SRQ (4).
    b27: u8,
    local_ca_guid: U64,
    private_data: [u8; REP_PRIVATE_LEN],
}

impl RepMsg {
    int_fields! {
        /// Local communication ID (the replier's).
        local_comm_id, set_local_comm_id: local_comm_id -> u32;
        /// Remote communication ID (the REQ's local one).
        remote_comm_id, set_remote_comm_id: remote_comm_id -> u32;
        /// Local Q_Key.
        local_qkey, set_local_qkey: local_qkey -> u32;
        /// Local QPN (24 bits).
        local_qpn, set_local_qpn: local_qpn -> u32;
        /// Local EECN (RD only, 24 bits).
        local_eecn, set_local_eecn: local_eecn -> u32;
        /// Starting PSN (24 bits): the first PSN the replier's *receive*
        /// queue expects, so the initiator's send queue starts from it
        /// (Linux's IB CM: `ib_send_cm_rep` sets the acceptor's rq_psn
        /// from it, `cm_rep_handler` the initiator's sq_psn).
        starting_psn, set_starting_psn: starting_psn -> u32;
        /// Local CA GUID.
        local_ca_guid, set_local_ca_guid: local_ca_guid -> u64;
    }
    byte_fields! {
        /// RDMA READ / atomic requests the replier accepts at once.
        responder_resources, set_responder_resources: responder_resources;
        /// RDMA READ / atomic requests the replier issues at once.
        initiator_depth, set_initiator_depth: initiator_depth;
    }
    bit_fields! {
        /// Target ACK delay exponent (5 bits).
        target_ack_delay, set_target_ack_delay: b26[3; 5];
        /// Failover accepted (2 bits).
        failover_accepted, set_failover_accepted: b26[1; 2];
        /// RNR retry count (3 bits).
        rnr_retry_count, set_rnr_retry_count: b27[5; 3];
    }
    flag_fields! {
        /// End-to-end flow control.
        end_to_end_flow_control, set_end_to_end_flow_control: b26[0];
        /// The replier's QP uses a shared receive queue.
        srq, set_srq: b27[4];
    }

    /// Private data.
    pub const fn private_data(&self) -> &[u8; REP_PRIVATE_LEN] {
        &self.private_data
    }

    /// Private data, mutable.
    pub fn private_data_mut(&mut self) -> &mut [u8; REP_PRIVATE_LEN] {
        &mut self.private_data
    }
}

/// REJ: either side refuses.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned,
)]
#[repr(C)]
pub struct RejMsg {
    local_comm_id: U32,
    remote_comm_id: U32,
    /// Message rejected (7..6).
    b8: u8,
    /// Rejection info length (7..1).
    b9: u8,
    reason: U16,
    ari: [u8; REJ_ARI_LEN],
    private_data: [u8; REJ_PRIVATE_LEN],
}

impl RejMsg {
    int_fields! {
        /// Local communication ID (the rejecter's; 0 if it has none).
        local_comm_id, set_local_comm_id: local_comm_id -> u32;
        /// Remote communication ID (the rejected side's).
        remote_comm_id, set_remote_comm_id: remote_comm_id -> u32;
    }
    bit_fields! {
        /// Additional rejection information length in bytes (7 bits).
        rejected_info_length, set_rejected_info_length: b9[1; 7];
    }

    /// Which message is rejected.
    pub const fn message_rejected(&self) -> MessageRef {
        MessageRef(get_bits(self.b8, 6, 2))
    }

    /// Sets which message is rejected.
    pub fn set_message_rejected(&mut self, m: MessageRef) {
        set_bits(&mut self.b8, 6, 2, m.0);
    }

    /// Rejection reason.
    pub fn reason(&self) -> RejReason {
        RejReason(self.reason.get())
    }

    /// Sets the rejection reason.
    pub fn set_reason(&mut self, r: RejReason) {
        self.reason.set(r.0);
    }

    /// Additional rejection information.
    pub const fn ari(&self) -> &[u8; REJ_ARI_LEN] {
        &self.ari
    }

    /// Additional rejection information, mutable.
    pub fn ari_mut(&mut self) -> &mut [u8; REJ_ARI_LEN] {
        &mut self.ari
    }

    /// Private data.
    pub const fn private_data(&self) -> &[u8; REJ_PRIVATE_LEN] {
        &self.private_data
    }

    /// Private data, mutable.
    pub fn private_data_mut(&mut self) -> &mut [u8; REJ_PRIVATE_LEN] {
        &mut self.private_data
    }
}

/// MRA: "message received, answer later" — extends the peer's timeout.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned,
)]
#[repr(C)]
pub struct MraMsg {
    local_comm_id: U32,
    remote_comm_id: U32,
    /// Message MRAed (7..6).
    b8: u8,
    /// Service timeout (7..3).
    b9: u8,
    private_data: [u8; MRA_PRIVATE_LEN],
}

impl MraMsg {
    int_fields! {
        /// Local communication ID.
        local_comm_id, set_local_comm_id: local_comm_id -> u32;
        /// Remote communication ID.
        remote_comm_id, set_remote_comm_id: remote_comm_id -> u32;
    }
    bit_fields! {
        /// Service timeout exponent (5 bits).
        service_timeout, set_service_timeout: b9[3; 5];
    }

    /// Which message is acknowledged.
    pub const fn message_mraed(&self) -> MessageRef {
        MessageRef(get_bits(self.b8, 6, 2))
    }

    /// Sets which message is acknowledged.
    pub fn set_message_mraed(&mut self, m: MessageRef) {
        set_bits(&mut self.b8, 6, 2, m.0);
    }

    /// Private data.
    pub const fn private_data(&self) -> &[u8; MRA_PRIVATE_LEN] {
        &self.private_data
    }

    /// Private data, mutable.
    pub fn private_data_mut(&mut self) -> &mut [u8; MRA_PRIVATE_LEN] {
        &mut self.private_data
    }
}

/// RTU: the active side confirms; the connection is established.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned,
)]
#[repr(C)]
pub struct RtuMsg {
    local_comm_id: U32,
    remote_comm_id: U32,
    private_data: [u8; RTU_PRIVATE_LEN],
}

/// DREP: disconnect reply.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned,
)]
#[repr(C)]
pub struct DrepMsg {
    local_comm_id: U32,
    remote_comm_id: U32,
    private_data: [u8; DREP_PRIVATE_LEN],
}

/// DREQ: disconnect request.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned,
)]
#[repr(C)]
pub struct DreqMsg {
    local_comm_id: U32,
    remote_comm_id: U32,
    remote_qpn: U24,
    reserved11: u8,
    private_data: [u8; DREQ_PRIVATE_LEN],
}

impl DreqMsg {
    int_fields! {
        /// Local communication ID.
        local_comm_id, set_local_comm_id: local_comm_id -> u32;
        /// Remote communication ID.
        remote_comm_id, set_remote_comm_id: remote_comm_id -> u32;
        /// The receiver's QPN (24 bits).
        remote_qpn, set_remote_qpn: remote_qpn -> u32;
    }

    /// Private data.
    pub const fn private_data(&self) -> &[u8; DREQ_PRIVATE_LEN] {
        &self.private_data
    }

    /// Private data, mutable.
    pub fn private_data_mut(&mut self) -> &mut [u8; DREQ_PRIVATE_LEN] {
        &mut self.private_data
    }
}

/// Accessors shared by RTU and DREP, which have the same shape.
macro_rules! ids_and_private {
    ($ty:ty, $len:ident) => {
        impl $ty {
            int_fields! {
                /// Local communication ID.
                local_comm_id, set_local_comm_id: local_comm_id -> u32;
                /// Remote communication ID.
                remote_comm_id, set_remote_comm_id: remote_comm_id -> u32;
            }

            /// Private data.
            pub const fn private_data(&self) -> &[u8; $len] {
                &self.private_data
            }

            /// Private data, mutable.
            pub fn private_data_mut(&mut self) -> &mut [u8; $len] {
                &mut self.private_data
            }
        }
    };
}

ids_and_private!(RtuMsg, RTU_PRIVATE_LEN);
ids_and_private!(DrepMsg, DREP_PRIVATE_LEN);
