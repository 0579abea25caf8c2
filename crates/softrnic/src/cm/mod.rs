//! Connection management: the InfiniBand CM protocol over RoCEv2, as an
//! RNIC's firmware runs it for RDMA CM.
//!
//! CM messages are 256-byte MADs carried in UD SEND Only packets (DETH Q_Key
//! 0x80010000, source QP 1) to QP1 of the peer's IP address (IPv4 or IPv6,
//! the connection's family), UDP port 4791. A connection is identified on the
//! wire by the two sides' local communication IDs; its address (IP and "ND
//! port") rides in the RDMA CM IP header at the start of the REQ's private
//! data (IP version 4 or 6, the addresses in 16-byte fields), and the
//! destination port is the low half of the REQ's service ID
//! (`0x0106_PPPP`, RDMA_PS_TCP). The REQ's primary path carries both ends'
//! GIDs: an IPv6 address is its own GID, an IPv4 one is IPv4-mapped.
//!
//! # Addresses
//!
//! A device holds a set of IPv4 and IPv6 addresses
//! ([`crate::addresses`]; [`crate::device::DeviceConfig::addr`] is the
//! first, [`crate::device::SoftRnic::set_addresses`] replaces them live). Anything these
//! rules refuse is `DeviceError::InvalidAddress`.
//!
//! * Listen: on one of the addresses, or a wildcard: `0.0.0.0` (any IPv4
//!   address; needs one in the set) or `::` (any address; reported as
//!   `0.0.0.0` by a device with only IPv4 addresses, whose listener then
//!   takes IPv4 only). A REQ reaches the listener bound to the address it
//!   was sent to, or a wildcard covering it; listeners on different
//!   addresses may share a port (`listen.rs`).
//! * Peer (connect): a unicast address (not unspecified, multicast, IPv4
//!   broadcast, or IPv4-mapped IPv6) of a family the set has.
//! * Local address (connect): one of the addresses, of the peer's family;
//!   or unspecified (`::`, or `0.0.0.0` for an IPv4 peer), and the set's
//!   address of the peer's family sharing the longest prefix with it (else
//!   the first of that family) is taken.
//! * A connection keeps its own address for good: its CM messages, its
//!   QP's IP headers, ICRC and GIDs use it, and it takes packets only from
//!   its peer to that address.
//! * A packet (or train) whose destination is not in the set now is
//!   counted dropped. Removing an address leaves its connections alone:
//!   they receive nothing (the RC and CM timeouts end them) until it is
//!   added back, and then carry on.
//!
//! # Connection states
//!
//! ```text
//! active (cm_connect: REQ)                 passive (REQ for a listener)
//!
//! ReqSent --REP: Replied--> RepRcvd         ReqRcvd (ConnectRequest)
//!   | REJ: Rejected           |               | cm_accept: REP
//!   | retries out: Failed     | cm_establish: |
//!   v                         | connect_qp,   v
//! Closed                      | RTU         RepSent --RTU: connect_qp,--+
//!                             v               |         Established      |
//!                        Established <--------|--------------------------+
//!                        |        |           | REJ, retries out: Failed
//!   cm_disconnect: DREQ  |        | DREQ in:  v
//!                        v        | DREP,   Closed
//!                    DreqSent     | Disconnected
//!                        |        v
//!  DREP, crossed DREQ,   +----> Closed
//!  retries out: DisconnectDone
//!
//! cm_reject (ReqRcvd, RepRcvd): REJ, Closed. A REJ during the handshake
//! after the reply: Failed. cm_release (any state): REJ or one DREQ as
//! the state calls for, then TimeWait (answers duplicates) until freed.
//! ```
//!
//! * REQ, REP and DREQ are retransmitted every `response timeout + 2 ×
//!   packet lifetime` (the response timeout the peer announced, or ours
//!   for the REQ) up to `max CM retries` (ours for REQ and DREQ, the
//!   REQ's for the REP); then the attempt fails (`Failed { timed_out:
//!   true }`, with a REJ "timeout" to the peer) or the disconnect completes
//!   anyway (`DisconnectDone`).
//! * Duplicates are answered from the connection's last sent message: a
//!   repeated REQ re-sends the REP (or MRA while the consumer still decides),
//!   a repeated REP re-sends the RTU (or MRA), a repeated DREQ re-sends the
//!   DREP (also for connections already forgotten, as IB CM does).
//! * MRA extends the peer's timer to our service timeout; we send one when a
//!   duplicate shows the peer waits on our consumer.
//! * The initiator's QP is connected at `cm_establish` (before the RTU goes
//!   out: IB's RTR at REP plus RTS before RTU, collapsed into the one
//!   transition the engine has); the acceptor's at RTU. A disconnect never
//!   flushes the QP: the driver does (`flush_qp`). A request packet that
//!   reaches the acceptor's QP before the RTU stands in for it (IB's
//!   communication-established event): the QP connects and the packet is
//!   taken, so a lost RTU costs the initiator's first message nothing.
//! * Starting PSN: a REQ's or REP's is the PSN its *sender's receive
//!   queue* expects (random per connection); the receiver of the message
//!   sends from it. So the acceptor's send queue starts at the REQ's, the
//!   initiator's at the REP's, as Linux's IB CM has it (`ib_send_cm_req`
//!   and `ib_send_cm_rep` set the sender's rq_psn from their own message,
//!   `cm_req_handler` and `cm_rep_handler` the receiver's sq_psn).
//! * Retransmit timeout, retry counts ([`ack_timeout`],
//!   [`crate::qp::Negotiated`]): the REQ offers a Local ACK Timeout from
//!   our CA ACK delay and the packet lifetime, which becomes the
//!   acceptor's QP timeout; the REP's Target ACK Delay gives the
//!   initiator's. Both QPs retry the REQ's Retry Count times; each side's
//!   RNR retries are the count the *other* side's message carries (REQ
//!   for the acceptor, REP for the initiator; librdmacm's rping client
//!   sends 0 in its REQ, so its acceptor gives up at the first RNR NAK
//!   from it, as a Linux one would; its server accepts with librdmacm's
//!   default, 7). No CM message carries an
//!   RNR timer: each responder NAKs with its own (Linux's CM sets 0,
//!   655 ms, at RTR; ours is [`crate::qp::RcConfig::min_rnr_timer`]) and
//!   each requester waits what the NAK says.
//! * IRD/ORD: the REQ carries the initiator's (capped) IRD as responder
//!   resources and ORD as initiator depth; the acceptor's effective IRD is
//!   `min(its IRD, cap, initiator ORD)`, its ORD `min(its ORD, cap, initiator
//!   IRD)`, sent in the REP, and the initiator takes the min with those.
//! * Path MTU: each side's is its configured one capped by its link's to
//!   the peer (`device_pmtu`). The REQ proposes the initiator's; an acceptor with a
//!   smaller one refuses it (REJ "invalid MTU", as an IB port would) with
//!   its own MTU code in the additional rejection information, and the
//!   initiator sends the REQ again with that MTU. Both QPs thus use
//!   min(path MTUs); an acceptor with a larger MTU takes the REQ's.
//! * Loopback needs nothing special: a device connecting to its own address
//!   sends the REQ through its link and receives it back; the two ends are
//!   two connections in the same table, told apart by their comm IDs.
//!
//! # Concurrency
//!
//! All CM state sits behind one spin lock (connection management is the
//! slow path). Commands and received MADs update it, transmit (the MAD is
//! recorded in the device's CM outbox, for its runtime to take) and queue
//! events;
//! `deliver` hands the events to the driver one at a time with the lock
//! released, from the device's poll, never from inside a command. Lock
//! order: CM, then a QP table slot (the CM reads and connects QPs).
//!
//! Nothing here allocates after [`CmState::new`] (connecting a QP does:
//! the engine's `connect_qp` allocates its transport state).

pub mod ack_timeout;
pub(crate) mod conn;
pub(crate) mod events;
pub(crate) mod listen;
pub(crate) mod msg;
mod recv;
pub(crate) mod timer;

use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use hwq::lock::LockClass;
use rand_xoshiro::Xoshiro256PlusPlus;
use rand_xoshiro::rand_core::{Rng, SeedableRng};

use crate::sync::Mutex;

/// The connection manager's state lock.
static CM_LOCK: LockClass = LockClass::new("softrnic connection manager");

use core::net::{IpAddr, SocketAddr};

use hwq::device::DeviceError;

use crate::qp::{Negotiated, Path};
use crate::wire::{Pmtu, ROCEV2_PORT};

use conn::ConnTable;
use events::EventRing;
use listen::Listeners;

pub(crate) use recv::{establish_on_request, receive};
pub(crate) use timer::poll;

/// What connection management needs from its device, which implements
/// it: connection management never names the device, so it sits below it
/// (and below the engine that hands it QP1's packets).
pub(crate) trait Host {
    /// The device's connection manager.
    fn cm(&self) -> &CmState;
    /// Sends one built MAD datagram (counted and shown to the tap).
    fn transmit(&self, datagram: &[u8]);
    /// Asks the device's own context to take the MADs sent (its runtime's
    /// transmit turn runs there).
    fn flush(&self);
    /// Asks the device's own context for a poll (its events and the answer
    /// to a MAD are not left to a busy poller).
    fn wake(&self);
    /// The path MTU (bytes) to `remote`: the device's configured one,
    /// capped by what its runtime's route there carries
    /// ([`crate::env::Routes::path_mtu`]).
    fn pmtu(&self, remote: IpAddr) -> u32;
    /// Connects QP `qpn` from `local` (whether or not it is one of the
    /// device's addresses now) along `path`, with the reliability the
    /// handshake `negotiated`: the modify-to-RTS command.
    fn connect_qp(
        &self,
        qpn: u32,
        local: IpAddr,
        path: Path,
        negotiated: Negotiated,
    ) -> Result<(), DeviceError>;
}

/// The QP addressing a connection fixes.
fn path(conn: &conn::Conn) -> Path {
    Path {
        remote: SocketAddr::new(conn.remote.ip(), ROCEV2_PORT),
        remote_qpn: conn.remote_qpn,
        pmtu: conn.pmtu.bytes(),
        send_psn: conn.send_psn,
        recv_psn: conn.recv_psn,
        outbound_reads: u32::from(conn.ord),
        inbound_reads: u32::from(conn.ird),
    }
}

/// The QP reliability a connection negotiated.
fn negotiated(conn: &conn::Conn) -> Negotiated {
    Negotiated {
        timeout: conn.ack_timeout,
        retry_count: conn.retry_count,
        rnr_retry: conn.rnr_retry,
    }
}

/// Connects the connection's QP to its peer, from the connection's own
/// address.
pub(crate) fn connect_qp(host: &dyn Host, conn: &conn::Conn) -> Result<(), DeviceError> {
    host.connect_qp(conn.qpn, conn.local.ip(), path(conn), negotiated(conn))
}

/// CM response timeout we announce (exponent: 4.096 µs × 2^16 ≈ 268 ms).
pub const CM_RESPONSE_TIMEOUT: u8 = 16;
/// Retransmissions of a REQ, REP or DREQ before giving up.
pub const MAX_CM_RETRIES: u8 = 5;
/// Packet lifetime allowance (exponent: 4.096 µs × 2^14 ≈ 67 ms), counted
/// twice (there and back) on top of a response timeout.
pub const PACKET_LIFETIME: u8 = 14;
/// Service timeout we ask for in an MRA (4.096 µs × 2^20 ≈ 4.3 s): how long
/// our consumer may take to accept or to complete a connection.
pub const MRA_SERVICE_TIMEOUT: u8 = 20;
/// How long a released connection keeps answering duplicates.
pub const TIME_WAIT_US: u64 = 2 * timeout_us(CM_RESPONSE_TIMEOUT);
/// Listeners a device holds.
pub const MAX_LISTENERS: u32 = 256;
/// First and last ephemeral port (IANA dynamic range, as NDK requires).
pub const EPHEMERAL_PORTS: core::ops::RangeInclusive<u16> = 49152..=65535;

/// The path MTU a connection to `remote` may use: the device's (validated
/// by the configuration's users; 1024 if it is not a valid one), capped by
/// the runtime's route to `remote` (a route's or NIC's MTU: a 4096 offered over a
/// 1500-byte path would never leave the host), never below 256.
pub(crate) fn device_pmtu(device: &dyn Host, remote: IpAddr) -> Pmtu {
    Pmtu::from_bytes(device.pmtu(remote)).unwrap_or(Pmtu::Mtu1024)
}

/// The id of table slot `index` in its `generation`: never 0, and stale
/// once the slot is reused.
fn slot_id(index: usize, generation: u16) -> u32 {
    (u32::from(generation) << 16) | (index as u32 + 1)
}

/// The table slot of an id.
fn slot_index(id: u32) -> Option<usize> {
    ((id & 0xFFFF) as usize).checked_sub(1)
}

/// Microseconds of an IB timeout exponent: 4.096 µs × 2^`exp` (capped at 31).
pub const fn timeout_us(exp: u8) -> u64 {
    crate::qp::ib_timeout_us(exp)
}

/// How long to wait for an answer from a peer whose response timeout
/// exponent is `exp`.
pub const fn answer_wait_us(exp: u8) -> u64 {
    timeout_us(exp) + 2 * timeout_us(PACKET_LIFETIME)
}

/// CM counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CmStats {
    /// MADs sent (all of them).
    pub sent: u64,
    /// Of those, sent again by a timer.
    pub retransmitted: u64,
    /// CM MADs received and parsed.
    pub received: u64,
    /// Packets to QP1 that were not acceptable CM MADs.
    pub malformed: u64,
    /// Messages for no connection, or not expected in its state.
    pub unmatched: u64,
    /// Duplicate messages answered from the last sent one.
    pub duplicates: u64,
    /// REQs refused because no listener (or a paused one) has the port.
    pub no_listener: u64,
    /// Events dropped because the event queue was full (never expected).
    pub events_lost: u64,
    /// Passive connections established by the first request packet
    /// because the RTU had not arrived.
    pub implicit_establish: u64,
    /// REQs sent again with the smaller path MTU a REJ "invalid MTU"
    /// offered.
    pub mtu_retries: u64,
}

/// Mutable CM state besides the tables: what sending and reporting need.
#[derive(Debug)]
pub(crate) struct Io {
    pub(crate) events: EventRing,
    pub(crate) rng: Xoshiro256PlusPlus,
    /// XORed into connection ids to make local communication IDs.
    pub(crate) comm_id_mask: u32,
    /// PSN of the next MAD packet.
    pub(crate) mad_psn: u32,
    pub(crate) stats: CmStats,
    /// Earliest armed deadline (`u64::MAX`: none).
    pub(crate) earliest: u64,
    /// Something was queued or armed that the poller must look at.
    pub(crate) wake: bool,
    /// A MAD was recorded, for the runtime to take.
    pub(crate) sent: bool,
}

impl Io {
    pub(crate) fn random_psn(&mut self) -> u32 {
        self.rng.next_u32() & crate::wire::PSN_MASK
    }

    pub(crate) fn new_tid(&mut self) -> u64 {
        self.rng.next_u64()
    }

    /// Local communication ID of connection `id`.
    pub(crate) fn comm_id(&self, id: u32) -> u32 {
        id ^ self.comm_id_mask
    }

    /// Connection id of local communication ID `comm_id`.
    pub(crate) fn conn_id(&self, comm_id: u32) -> u32 {
        comm_id ^ self.comm_id_mask
    }

    pub(crate) fn arm(&mut self, deadline: u64) {
        if deadline < self.earliest {
            self.earliest = deadline;
            self.wake = true;
        }
    }
}

#[derive(Debug)]
pub(crate) struct Inner {
    pub(crate) conns: ConnTable,
    pub(crate) listeners: Listeners,
    pub(crate) io: Io,
}

/// A device's connection manager.
#[derive(Debug)]
pub struct CmState {
    pub(crate) inner: Mutex<Inner>,
    /// Earliest timer, readable without the lock (`u64::MAX`: none).
    next_deadline: AtomicU64,
    /// Events are queued.
    events_pending: AtomicBool,
}

impl CmState {
    /// Allocates the tables for a device with `config`; `seed` drives comm
    /// IDs, PSNs, transaction IDs and ephemeral ports. `None` if memory ran
    /// out.
    pub fn new(max_qps: u32, seed: u64) -> Option<Self> {
        // Inbound requests need a connection before a QP is bound, and
        // released connections linger in time-wait: twice the QPs.
        let capacity = max_qps.saturating_mul(2).clamp(16, u32::from(u16::MAX) - 1);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        // The low half of a comm ID stays the slot number + 1, never 0.
        let comm_id_mask = rng.next_u32() & 0xFFFF_0000;
        let mad_psn = rng.next_u32() & crate::wire::PSN_MASK;
        let cursor = rng.next_u32();
        Some(Self {
            inner: Mutex::new(
                &CM_LOCK,
                Inner {
                    conns: ConnTable::new(capacity)?,
                    listeners: Listeners::new(MAX_LISTENERS, cursor)?,
                    io: Io {
                        events: EventRing::new(capacity * 4)?,
                        rng,
                        comm_id_mask,
                        mad_psn,
                        stats: CmStats::default(),
                        earliest: u64::MAX,
                        wake: false,
                        sent: false,
                    },
                },
            ),
            next_deadline: AtomicU64::new(u64::MAX),
            events_pending: AtomicBool::new(false),
        })
    }

    /// Counters so far.
    pub fn stats(&self) -> CmStats {
        self.inner.lock().io.stats
    }

    /// Runs `f` on the locked state, then publishes what it armed or queued
    /// and wakes the poller if needed.
    ///
    /// A MAD `f` sent wakes the device's own context at once, to take it
    /// and the answer: a command's message (a DREQ, an RTU, a REJ) would
    /// otherwise wait until the engine next runs, and an engine standing
    /// aside for a consumer that busy polled would not look at its socket
    /// for the answer (or, connected to itself, the message) until its
    /// park ends. Either waits for
    /// whatever wakes the engine next (its idle park: tens of
    /// milliseconds; a retransmit timer: milliseconds; a busy poller's
    /// park: one), which delayed a disconnect's DREQ and its DREP by that
    /// much over UDP while the in-memory fabric, which wakes its receiver
    /// on every transmit, took microseconds.
    pub(crate) fn with<R>(&self, device: &dyn Host, f: impl FnOnce(&mut Inner) -> R) -> R {
        let mut inner = self.inner.lock();
        let r = f(&mut inner);
        let sent = core::mem::take(&mut inner.io.sent);
        let wake = core::mem::take(&mut inner.io.wake);
        self.next_deadline
            .store(inner.io.earliest, Ordering::Release);
        if !inner.io.events.is_empty() {
            self.events_pending.store(true, Ordering::Release);
        }
        drop(inner);
        if sent {
            device.flush();
        }
        if wake || sent {
            device.wake();
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_follow_the_ib_formula() {
        assert_eq!(timeout_us(0), 4);
        assert_eq!(timeout_us(CM_RESPONSE_TIMEOUT), 268_435);
        assert_eq!(timeout_us(MRA_SERVICE_TIMEOUT), 4_294_967);
        assert_eq!(timeout_us(40), timeout_us(31), "capped");
        assert_eq!(answer_wait_us(CM_RESPONSE_TIMEOUT), 268_435 + 2 * 67_108);
    }

    #[test]
    fn each_seed_numbers_its_connections_apart() {
        let first_comm_id = |seed| {
            let cm = CmState::new(16, seed).expect("tables");
            let inner = cm.inner.lock();
            inner.io.comm_id(slot_id(0, 0))
        };
        assert_eq!(first_comm_id(7), first_comm_id(7));
        let ids: alloc::collections::BTreeSet<u32> = (0..64u64).map(first_comm_id).collect();
        assert!(ids.len() > 60, "64 seeds gave {} first comm IDs", ids.len());
    }

    #[test]
    fn slot_ids_carry_the_generation() {
        assert_eq!(slot_id(0, 0), 1);
        assert_eq!(slot_index(slot_id(41, 7)), Some(41));
        assert_ne!(slot_id(41, 7), slot_id(41, 8));
        assert_eq!(slot_index(0x0005_0000), None);
    }
}
