//! InfiniBand Communication Management messages (IBA Vol. 1 ch. 12), as
//! the 232-byte data of a CM MAD.
//!
//! Each message is a byte-exact layout with accessors; packed fields (a
//! 24-bit QPN followed by an 8-bit count, 5-bit timeouts sharing a byte
//! with flags, …) are read and written through them. Offsets below are from
//! the start of the message data, i.e. 24 bytes into the MAD.
//!
//! RoCEv2 addresses ports by GID: an IPv6 endpoint's GID is its IPv6
//! address itself, an IPv4 endpoint's its IPv4-mapped IPv6 address
//! `::ffff:a.b.c.d` ([`gid_from_ip`], [`ip_from_gid`]).
//!
//! Files: `req.rs` holds the REQ and its path records, `reply.rs` the
//! messages that answer or follow it.

use core::fmt;
use core::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use super::mad::{
    CM_CLASS_VERSION, MAD_BASE_VERSION, MAD_DATA_LEN, METHOD_SEND, MGMT_CLASS_CM, Mad, MadHeader,
};

mod reply;
mod req;

pub use reply::{DrepMsg, DreqMsg, MraMsg, RejMsg, RepMsg, RtuMsg};
pub use req::{CmPath, ReqMsg};

/// CM attribute ID of REQ.
pub const ATTR_REQ: u16 = 0x0010;
/// CM attribute ID of MRA.
pub const ATTR_MRA: u16 = 0x0011;
/// CM attribute ID of REJ.
pub const ATTR_REJ: u16 = 0x0012;
/// CM attribute ID of REP.
pub const ATTR_REP: u16 = 0x0013;
/// CM attribute ID of RTU.
pub const ATTR_RTU: u16 = 0x0014;
/// CM attribute ID of DREQ.
pub const ATTR_DREQ: u16 = 0x0015;
/// CM attribute ID of DREP.
pub const ATTR_DREP: u16 = 0x0016;

/// Private data bytes in a REQ.
pub const REQ_PRIVATE_LEN: usize = 92;
/// Private data bytes in a REP.
pub const REP_PRIVATE_LEN: usize = 196;
/// Private data bytes in a REJ.
pub const REJ_PRIVATE_LEN: usize = 148;
/// Additional rejection information bytes in a REJ.
pub const REJ_ARI_LEN: usize = 72;
/// Private data bytes in an RTU.
pub const RTU_PRIVATE_LEN: usize = 224;
/// Private data bytes in a DREQ.
pub const DREQ_PRIVATE_LEN: usize = 220;
/// Private data bytes in a DREP.
pub const DREP_PRIVATE_LEN: usize = 224;
/// Private data bytes in an MRA.
pub const MRA_PRIVATE_LEN: usize = 222;

/// Transport service type: reliable connection.
pub const TRANSPORT_RC: u8 = 0;
/// Transport service type: unreliable connection.
pub const TRANSPORT_UC: u8 = 1;
/// The permissive LID (LIDs carry no meaning on RoCE).
pub const PERMISSIVE_LID: u16 = 0xFFFF;

/// The GID of an IPv4 endpoint: `::ffff:a.b.c.d`.
pub const fn gid_from_ipv4(addr: Ipv4Addr) -> [u8; 16] {
    addr.to_ipv6_mapped().octets()
}

/// The IPv4 address of an IPv4-mapped GID, if it is one.
pub fn ipv4_from_gid(gid: [u8; 16]) -> Option<Ipv4Addr> {
    Ipv6Addr::from(gid).to_ipv4_mapped()
}

/// The GID of an endpoint at `addr`: an IPv6 address is its own GID, an
/// IPv4 address is mapped (`::ffff:a.b.c.d`).
pub const fn gid_from_ip(addr: IpAddr) -> [u8; 16] {
    match addr {
        IpAddr::V4(v4) => gid_from_ipv4(v4),
        IpAddr::V6(v6) => v6.octets(),
    }
}

/// The address a GID names: IPv4 for an IPv4-mapped GID, else the GID as
/// an IPv6 address.
pub fn ip_from_gid(gid: [u8; 16]) -> IpAddr {
    match ipv4_from_gid(gid) {
        Some(v4) => IpAddr::V4(v4),
        None => IpAddr::V6(Ipv6Addr::from(gid)),
    }
}

/// A REJ reason code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RejReason(pub u16);

impl RejReason {
    /// No QP available.
    pub const NO_QP: Self = Self(1);
    /// No EE context available.
    pub const NO_EEC: Self = Self(2);
    /// No resources.
    pub const NO_RESOURCES: Self = Self(3);
    /// Timeout.
    pub const TIMEOUT: Self = Self(4);
    /// Unsupported request.
    pub const UNSUPPORTED: Self = Self(5);
    /// Invalid communication ID.
    pub const INVALID_COMM_ID: Self = Self(6);
    /// Invalid communication instance.
    pub const INVALID_COMM_INSTANCE: Self = Self(7);
    /// Invalid service ID (nobody listens).
    pub const INVALID_SERVICE_ID: Self = Self(8);
    /// Invalid transport service type.
    pub const INVALID_TRANSPORT_TYPE: Self = Self(9);
    /// Stale connection.
    pub const STALE_CONNECTION: Self = Self(10);
    /// RDC does not exist.
    pub const RDC_NOT_EXIST: Self = Self(11);
    /// Primary remote port GID rejected.
    pub const INVALID_GID: Self = Self(12);
    /// Primary remote port LID rejected.
    pub const INVALID_LID: Self = Self(13);
    /// Primary SL rejected.
    pub const INVALID_SL: Self = Self(14);
    /// Primary traffic class rejected.
    pub const INVALID_TRAFFIC_CLASS: Self = Self(15);
    /// Primary hop limit rejected.
    pub const INVALID_HOP_LIMIT: Self = Self(16);
    /// Primary packet rate rejected.
    pub const INVALID_PACKET_RATE: Self = Self(17);
    /// Alternate remote port GID rejected.
    pub const INVALID_ALT_GID: Self = Self(18);
    /// Alternate remote port LID rejected.
    pub const INVALID_ALT_LID: Self = Self(19);
    /// Alternate SL rejected.
    pub const INVALID_ALT_SL: Self = Self(20);
    /// Alternate traffic class rejected.
    pub const INVALID_ALT_TRAFFIC_CLASS: Self = Self(21);
    /// Alternate hop limit rejected.
    pub const INVALID_ALT_HOP_LIMIT: Self = Self(22);
    /// Alternate packet rate rejected.
    pub const INVALID_ALT_PACKET_RATE: Self = Self(23);
    /// Port CM redirect.
    pub const PORT_CM_REDIRECT: Self = Self(24);
    /// Port redirect.
    pub const PORT_REDIRECT: Self = Self(25);
    /// Path MTU not supported.
    pub const INVALID_MTU: Self = Self(26);
    /// Insufficient responder resources.
    pub const INSUFFICIENT_RESP_RESOURCES: Self = Self(27);
    /// Rejected by the consumer (the application said no).
    pub const CONSUMER_REJECT: Self = Self(28);
    /// RNR retry count not supported.
    pub const INVALID_RNR_RETRY: Self = Self(29);
    /// Duplicate local communication ID.
    pub const DUPLICATE_LOCAL_COMM_ID: Self = Self(30);
    /// Unsupported class version.
    pub const INVALID_CLASS_VERSION: Self = Self(31);
    /// Primary flow label rejected.
    pub const INVALID_FLOW_LABEL: Self = Self(32);
    /// Alternate flow label rejected.
    pub const INVALID_ALT_FLOW_LABEL: Self = Self(33);
}

/// Which message a REJ or MRA refers to (its 2-bit "message" field).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MessageRef(pub u8);

impl MessageRef {
    /// The REQ.
    pub const REQ: Self = Self(0);
    /// The REP.
    pub const REP: Self = Self(1);
    /// Another message (REJ: none in particular; MRA: the LAP).
    pub const OTHER: Self = Self(2);
}

/// A CM message body: 232 bytes with a known attribute ID.
pub trait CmBody: FromBytes + IntoBytes + KnownLayout + Immutable + Unaligned {
    /// The attribute ID naming this message in the MAD header.
    const ATTRIBUTE_ID: u16;

    /// The body as MAD data.
    fn as_mad_data(&self) -> &[u8; MAD_DATA_LEN];
}

macro_rules! cm_body {
    ($ty:ty, $attr:ident) => {
        const _: () = assert!(size_of::<$ty>() == MAD_DATA_LEN);

        impl CmBody for $ty {
            const ATTRIBUTE_ID: u16 = $attr;

            fn as_mad_data(&self) -> &[u8; MAD_DATA_LEN] {
                zerocopy::transmute_ref!(self)
            }
        }
    };
}

cm_body!(ReqMsg, ATTR_REQ);
cm_body!(MraMsg, ATTR_MRA);
cm_body!(RejMsg, ATTR_REJ);
cm_body!(RepMsg, ATTR_REP);
cm_body!(RtuMsg, ATTR_RTU);
cm_body!(DreqMsg, ATTR_DREQ);
cm_body!(DrepMsg, ATTR_DREP);

impl Mad {
    /// A CM Send MAD carrying `body` under `transaction_id`.
    pub fn cm<M: CmBody>(transaction_id: u64, body: &M) -> Self {
        Self {
            header: MadHeader::cm_send(M::ATTRIBUTE_ID, transaction_id),
            data: *body.as_mad_data(),
        }
    }
}

/// Why a MAD is not an acceptable CM message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CmError {
    /// The payload is not exactly 256 bytes.
    Length,
    /// Base version is not 1.
    BadBaseVersion,
    /// Management class is not CM.
    NotCm,
    /// CM class version is not 2.
    BadClassVersion,
    /// Method is not Send.
    BadMethod,
    /// An attribute this layer does not model (LAP, APR, SIDR, ClassPortInfo…).
    UnknownAttribute(u16),
    /// CMA private-data header with an unknown version or IP version.
    BadCmaHeader,
}

impl fmt::Display for CmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Length => f.write_str("MAD is not 256 bytes"),
            Self::BadBaseVersion => f.write_str("bad MAD base version"),
            Self::NotCm => f.write_str("not a CM MAD"),
            Self::BadClassVersion => f.write_str("bad CM class version"),
            Self::BadMethod => f.write_str("CM method is not Send"),
            Self::UnknownAttribute(a) => write!(f, "unsupported CM attribute {a:#06x}"),
            Self::BadCmaHeader => f.write_str("bad CMA private-data header"),
        }
    }
}

impl core::error::Error for CmError {}

/// A CM message borrowed from a received MAD.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmMessage<'a> {
    /// Connect request.
    Req(&'a ReqMsg),
    /// Message received acknowledgement.
    Mra(&'a MraMsg),
    /// Reject.
    Rej(&'a RejMsg),
    /// Connect reply.
    Rep(&'a RepMsg),
    /// Ready to use.
    Rtu(&'a RtuMsg),
    /// Disconnect request.
    Dreq(&'a DreqMsg),
    /// Disconnect reply.
    Drep(&'a DrepMsg),
}

/// Checks that `mad` (a UD payload) is a CM Send MAD and borrows its
/// header and message.
pub fn parse_cm(mad: &[u8]) -> Result<(&MadHeader, CmMessage<'_>), CmError> {
    let mad = Mad::ref_from_bytes(mad).map_err(|_| CmError::Length)?;
    let h = &mad.header;
    if h.base_version != MAD_BASE_VERSION {
        return Err(CmError::BadBaseVersion);
    }
    if h.mgmt_class != MGMT_CLASS_CM {
        return Err(CmError::NotCm);
    }
    if h.class_version != CM_CLASS_VERSION {
        return Err(CmError::BadClassVersion);
    }
    if h.method != METHOD_SEND {
        return Err(CmError::BadMethod);
    }
    let data: &[u8] = &mad.data;
    let msg = match h.attribute_id.get() {
        ATTR_REQ => CmMessage::Req(body(data)?),
        ATTR_MRA => CmMessage::Mra(body(data)?),
        ATTR_REJ => CmMessage::Rej(body(data)?),
        ATTR_REP => CmMessage::Rep(body(data)?),
        ATTR_RTU => CmMessage::Rtu(body(data)?),
        ATTR_DREQ => CmMessage::Dreq(body(data)?),
        ATTR_DREP => CmMessage::Drep(body(data)?),
        other => return Err(CmError::UnknownAttribute(other)),
    };
    Ok((h, msg))
}

fn body<M: CmBody>(data: &[u8]) -> Result<&M, CmError> {
    M::ref_from_bytes(data).map_err(|_| CmError::Length)
}
