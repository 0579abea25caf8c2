//! Opcodes and the table of what each one carries.
//!
//! One table drives both the builder and the parser: which extension headers
//! follow the BTH (always in the fixed order DETH, RETH, AtomicETH, AETH,
//! AtomicAckETH, ImmDt, IETH), whether a payload may follow, and where the
//! packet sits in its message.

use core::fmt;

/// Length of the BTH, which precedes every opcode's extension headers
/// (defined here, beside the header sets it prefixes; [`super::bth`]
/// re-exports it).
pub const BTH_LEN: usize = 12;

/// A BTH opcode: transport in bits 7..5 (RC 000, UD 011), operation in 4..0.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Opcode(pub u8);

impl Opcode {
    /// RC SEND, first packet of a multi-packet message.
    pub const SEND_FIRST: Self = Self(0x00);
    /// RC SEND, middle packet.
    pub const SEND_MIDDLE: Self = Self(0x01);
    /// RC SEND, last packet.
    pub const SEND_LAST: Self = Self(0x02);
    /// RC SEND, last packet, with immediate data.
    pub const SEND_LAST_WITH_IMMEDIATE: Self = Self(0x03);
    /// RC SEND in one packet.
    pub const SEND_ONLY: Self = Self(0x04);
    /// RC SEND in one packet, with immediate data.
    pub const SEND_ONLY_WITH_IMMEDIATE: Self = Self(0x05);
    /// RC RDMA WRITE, first packet (carries the RETH).
    pub const RDMA_WRITE_FIRST: Self = Self(0x06);
    /// RC RDMA WRITE, middle packet.
    pub const RDMA_WRITE_MIDDLE: Self = Self(0x07);
    /// RC RDMA WRITE, last packet.
    pub const RDMA_WRITE_LAST: Self = Self(0x08);
    /// RC RDMA WRITE, last packet, with immediate data.
    pub const RDMA_WRITE_LAST_WITH_IMMEDIATE: Self = Self(0x09);
    /// RC RDMA WRITE in one packet.
    pub const RDMA_WRITE_ONLY: Self = Self(0x0A);
    /// RC RDMA WRITE in one packet, with immediate data.
    pub const RDMA_WRITE_ONLY_WITH_IMMEDIATE: Self = Self(0x0B);
    /// RC RDMA READ request.
    pub const RDMA_READ_REQUEST: Self = Self(0x0C);
    /// RC RDMA READ response, first packet.
    pub const RDMA_READ_RESPONSE_FIRST: Self = Self(0x0D);
    /// RC RDMA READ response, middle packet (no AETH).
    pub const RDMA_READ_RESPONSE_MIDDLE: Self = Self(0x0E);
    /// RC RDMA READ response, last packet.
    pub const RDMA_READ_RESPONSE_LAST: Self = Self(0x0F);
    /// RC RDMA READ response in one packet.
    pub const RDMA_READ_RESPONSE_ONLY: Self = Self(0x10);
    /// RC acknowledge (ACK, RNR NAK or NAK, by the AETH syndrome).
    pub const ACKNOWLEDGE: Self = Self(0x11);
    /// RC atomic acknowledge.
    pub const ATOMIC_ACKNOWLEDGE: Self = Self(0x12);
    /// RC atomic compare-and-swap request.
    pub const COMPARE_SWAP: Self = Self(0x13);
    /// RC atomic fetch-and-add request.
    pub const FETCH_ADD: Self = Self(0x14);
    /// RC SEND, last packet, invalidating a remote key.
    pub const SEND_LAST_WITH_INVALIDATE: Self = Self(0x16);
    /// RC SEND in one packet, invalidating a remote key.
    pub const SEND_ONLY_WITH_INVALIDATE: Self = Self(0x17);
    /// UD SEND in one packet: how MADs reach QP1.
    pub const UD_SEND_ONLY: Self = Self(0x64);
    /// UD SEND in one packet, with immediate data.
    pub const UD_SEND_ONLY_WITH_IMMEDIATE: Self = Self(0x65);

    /// What this opcode carries, or `None` for an opcode this RNIC does not
    /// speak (UC, RD, CNP, reserved, vendor).
    pub const fn info(self) -> Option<OpcodeInfo> {
        use HeaderSet as H;
        use Operation as O;
        use Position as P;
        let (operation, position, headers, payload) = match self.0 {
            0x00 => (O::Send, P::First, H::NONE, true),
            0x01 => (O::Send, P::Middle, H::NONE, true),
            0x02 => (O::Send, P::Last, H::NONE, true),
            0x03 => (O::Send, P::Last, H::IMMDT, true),
            0x04 => (O::Send, P::Only, H::NONE, true),
            0x05 => (O::Send, P::Only, H::IMMDT, true),
            0x06 => (O::Write, P::First, H::RETH, true),
            0x07 => (O::Write, P::Middle, H::NONE, true),
            0x08 => (O::Write, P::Last, H::NONE, true),
            0x09 => (O::Write, P::Last, H::IMMDT, true),
            0x0A => (O::Write, P::Only, H::RETH, true),
            0x0B => (O::Write, P::Only, H::RETH.with(H::IMMDT), true),
            0x0C => (O::ReadRequest, P::Only, H::RETH, false),
            0x0D => (O::ReadResponse, P::First, H::AETH, true),
            0x0E => (O::ReadResponse, P::Middle, H::NONE, true),
            0x0F => (O::ReadResponse, P::Last, H::AETH, true),
            0x10 => (O::ReadResponse, P::Only, H::AETH, true),
            0x11 => (O::Acknowledge, P::Only, H::AETH, false),
            0x12 => (
                O::AtomicAcknowledge,
                P::Only,
                H::AETH.with(H::ATOMIC_ACK_ETH),
                false,
            ),
            0x13 => (O::CompareSwap, P::Only, H::ATOMIC_ETH, false),
            0x14 => (O::FetchAdd, P::Only, H::ATOMIC_ETH, false),
            0x16 => (O::Send, P::Last, H::IETH, true),
            0x17 => (O::Send, P::Only, H::IETH, true),
            0x64 => (O::UdSend, P::Only, H::DETH, true),
            0x65 => (O::UdSend, P::Only, H::DETH.with(H::IMMDT), true),
            _ => return None,
        };
        Some(OpcodeInfo {
            operation,
            position,
            headers,
            payload,
        })
    }
}

impl fmt::Debug for Opcode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Opcode({:#04x})", self.0)
    }
}

/// The message kind an opcode belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operation {
    /// RC SEND (plain, with immediate or with invalidate).
    Send,
    /// RC RDMA WRITE.
    Write,
    /// RC RDMA READ request.
    ReadRequest,
    /// RC RDMA READ response.
    ReadResponse,
    /// RC acknowledge.
    Acknowledge,
    /// RC atomic acknowledge.
    AtomicAcknowledge,
    /// RC compare-and-swap.
    CompareSwap,
    /// RC fetch-and-add.
    FetchAdd,
    /// UD SEND (QP1 MADs).
    UdSend,
}

impl Operation {
    /// Sent by a requester (as opposed to a responder's response).
    pub const fn is_request(self) -> bool {
        !matches!(
            self,
            Self::ReadResponse | Self::Acknowledge | Self::AtomicAcknowledge
        )
    }
}

/// Where a packet sits in its message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Position {
    /// First of several: payload is exactly one PMTU.
    First,
    /// Neither first nor last: payload is exactly one PMTU.
    Middle,
    /// Last of several: payload is 1..=PMTU bytes.
    Last,
    /// The whole message: payload is 0..=PMTU bytes.
    Only,
}

impl Position {
    /// Starts a message (First or Only).
    pub const fn starts_message(self) -> bool {
        matches!(self, Self::First | Self::Only)
    }

    /// Ends a message (Last or Only).
    pub const fn ends_message(self) -> bool {
        matches!(self, Self::Last | Self::Only)
    }
}

/// A set of extension headers following the BTH.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct HeaderSet(u8);

impl HeaderSet {
    /// No extension header.
    pub const NONE: Self = Self(0);
    /// Datagram ETH (8 bytes), UD only.
    pub const DETH: Self = Self(1 << 0);
    /// RDMA ETH (16 bytes).
    pub const RETH: Self = Self(1 << 1);
    /// Atomic ETH (28 bytes).
    pub const ATOMIC_ETH: Self = Self(1 << 2);
    /// ACK ETH (4 bytes).
    pub const AETH: Self = Self(1 << 3);
    /// Atomic ACK ETH (8 bytes).
    pub const ATOMIC_ACK_ETH: Self = Self(1 << 4);
    /// Immediate data (4 bytes).
    pub const IMMDT: Self = Self(1 << 5);
    /// Invalidate ETH (4 bytes).
    pub const IETH: Self = Self(1 << 6);

    /// The union of two sets.
    #[must_use]
    pub const fn with(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }

    /// Whether every header of `other` is in this set.
    pub const fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }

    /// Total bytes of the headers in this set.
    pub const fn len(self) -> usize {
        let mut n = 0;
        if self.contains(Self::DETH) {
            n += 8;
        }
        if self.contains(Self::RETH) {
            n += 16;
        }
        if self.contains(Self::ATOMIC_ETH) {
            n += 28;
        }
        if self.contains(Self::AETH) {
            n += 4;
        }
        if self.contains(Self::ATOMIC_ACK_ETH) {
            n += 8;
        }
        if self.contains(Self::IMMDT) {
            n += 4;
        }
        if self.contains(Self::IETH) {
            n += 4;
        }
        n
    }

    /// Whether the set is empty.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }
}

impl fmt::Debug for HeaderSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const NAMES: [(HeaderSet, &str); 7] = [
            (HeaderSet::DETH, "DETH"),
            (HeaderSet::RETH, "RETH"),
            (HeaderSet::ATOMIC_ETH, "AtomicETH"),
            (HeaderSet::AETH, "AETH"),
            (HeaderSet::ATOMIC_ACK_ETH, "AtomicAckETH"),
            (HeaderSet::IMMDT, "ImmDt"),
            (HeaderSet::IETH, "IETH"),
        ];
        let mut set = f.debug_set();
        for (h, name) in NAMES {
            if self.contains(h) {
                set.entry(&name);
            }
        }
        set.finish()
    }
}

/// What one opcode carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct OpcodeInfo {
    /// The message kind.
    pub operation: Operation,
    /// Where the packet sits in its message.
    pub position: Position,
    /// Extension headers after the BTH.
    pub headers: HeaderSet,
    /// Whether a payload may follow the headers.
    pub payload: bool,
}

impl OpcodeInfo {
    /// Bytes from the start of the BTH to the start of the payload.
    pub const fn header_len(self) -> usize {
        BTH_LEN + self.headers.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_lengths_match_spec_table() {
        // (opcode, bytes from BTH to payload) as the IBA tabulates them.
        let table = [
            (0x00, 12),
            (0x01, 12),
            (0x02, 12),
            (0x03, 16),
            (0x04, 12),
            (0x05, 16),
            (0x06, 28),
            (0x07, 12),
            (0x08, 12),
            (0x09, 16),
            (0x0A, 28),
            (0x0B, 32),
            (0x0C, 28),
            (0x0D, 16),
            (0x0E, 12),
            (0x0F, 16),
            (0x10, 16),
            (0x11, 16),
            (0x12, 24),
            (0x13, 40),
            (0x14, 40),
            (0x16, 16),
            (0x17, 16),
            (0x64, 20),
            (0x65, 24),
        ];
        for (op, len) in table {
            let info = Opcode(op).info().unwrap();
            assert_eq!(info.header_len(), len, "opcode {op:#x}");
        }
        let known = table.map(|(op, _)| op);
        for op in 0..=255u8 {
            assert_eq!(
                Opcode(op).info().is_some(),
                known.contains(&op),
                "opcode {op:#x}"
            );
        }
    }

    #[test]
    fn payload_and_position() {
        let none = [0x0C, 0x11, 0x12, 0x13, 0x14];
        for op in none {
            assert!(!Opcode(op).info().unwrap().payload);
        }
        assert_eq!(Opcode::SEND_FIRST.info().unwrap().position, Position::First);
        assert_eq!(
            Opcode::RDMA_WRITE_MIDDLE.info().unwrap().position,
            Position::Middle
        );
        assert_eq!(
            Opcode::SEND_LAST_WITH_INVALIDATE.info().unwrap().position,
            Position::Last
        );
        assert!(Position::Only.starts_message() && Position::Only.ends_message());
        assert!(!Position::Middle.starts_message() && !Position::Middle.ends_message());
        assert!(Operation::Write.is_request());
        assert!(!Operation::ReadResponse.is_request());
    }
}
