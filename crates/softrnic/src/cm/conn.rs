//! The connection table: one preallocated slot per connection, numbered by
//! slot and generation so a stale id never reaches a reused slot.

use alloc::vec::Vec;
use core::net::{IpAddr, Ipv4Addr, SocketAddr, SocketAddrV4};

use zerocopy::FromZeros;

use super::{slot_id, slot_index};
use crate::wire::cm::REP_PRIVATE_LEN;
use crate::wire::{Mad, Pmtu};

/// Where a connection is in its life (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum State {
    /// Unused slot.
    Free,
    /// Active: REQ sent, waiting for REP or REJ.
    ReqSent,
    /// Passive: REQ received, the consumer decides.
    ReqRcvd,
    /// Passive: REP sent, waiting for RTU.
    RepSent,
    /// Active: REP received, the consumer decides.
    RepRcvd,
    /// Connected.
    Established,
    /// Our DREQ sent, waiting for DREP.
    DreqSent,
    /// Over (rejected, failed, disconnected); waits for release.
    Closed,
    /// Released: answers duplicates until its timer frees it.
    TimeWait,
}

/// One connection.
#[derive(Debug)]
pub(crate) struct Conn {
    /// Bumped each time the slot is freed.
    pub generation: u16,
    pub state: State,
    /// We sent the REQ (and hold a reference on the local port).
    pub active: bool,
    /// The bound QP (0: none yet).
    pub qpn: u32,
    /// Passive: the listener the request came for.
    pub listen_id: u32,
    pub local: SocketAddr,
    /// The peer's address and ND port.
    pub remote: SocketAddr,
    /// The peer's communication ID (0: not known yet).
    pub remote_comm_id: u32,
    pub remote_qpn: u32,
    /// Transaction ID of the handshake (the REQ's).
    pub tid: u64,
    /// First PSN we send (the Starting PSN of the peer's REQ or REP), and
    /// the first we expect (the one our own REQ or REP announced).
    pub send_psn: u32,
    pub recv_psn: u32,
    pub pmtu: Pmtu,
    /// Our read limits: requested (active, before REP) or effective.
    pub ird: u8,
    pub ord: u8,
    /// The peer's read limits as it sent them (REQ or REP).
    pub peer_ird: u8,
    pub peer_ord: u8,
    /// The QP's retransmit timeout exponent, transport retry count and
    /// RNR retry count, as negotiated (`super::negotiated`).
    pub ack_timeout: u8,
    pub retry_count: u8,
    pub rnr_retry: u8,
    /// The peer's CM response timeout (how long it takes to answer us).
    pub peer_timeout: u8,
    /// Retransmissions allowed and done for the message in `out`.
    pub max_retries: u8,
    pub retries: u8,
    /// Retransmission period and next deadline (`u64::MAX`: none).
    pub period_us: u64,
    pub deadline_us: u64,
    /// A timer a command started, to run this long (µs) from the next
    /// pass, which stamps it into `deadline_us` (`deadline_us` is 0 until
    /// then, so the pass looks at it).
    pub unstamped_us: Option<u64>,
    /// The last message sent (retransmitted, or re-sent to a duplicate).
    pub out: Mad,
    /// Private data of the event that carries the peer's.
    pub peer_data: [u8; REP_PRIVATE_LEN],
    pub peer_data_len: u8,
    /// The peer's end (Disconnected or Failed) was reported: at most once.
    pub peer_end_reported: bool,
    /// The consumer asked to disconnect (DisconnectDone follows once).
    pub disconnecting: bool,
}

const UNSPECIFIED: SocketAddr = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0));

impl Conn {
    fn empty(generation: u16) -> Self {
        Self {
            generation,
            state: State::Free,
            active: false,
            qpn: 0,
            listen_id: 0,
            local: UNSPECIFIED,
            remote: UNSPECIFIED,
            remote_comm_id: 0,
            remote_qpn: 0,
            tid: 0,
            send_psn: 0,
            recv_psn: 0,
            pmtu: Pmtu::Mtu1024,
            ird: 0,
            ord: 0,
            peer_ird: 0,
            peer_ord: 0,
            ack_timeout: 0,
            retry_count: 0,
            rnr_retry: 0,
            peer_timeout: 0,
            max_retries: 0,
            retries: 0,
            period_us: 0,
            deadline_us: u64::MAX,
            unstamped_us: None,
            out: Mad::new_zeroed(),
            peer_data: [0; REP_PRIVATE_LEN],
            peer_data_len: 0,
            peer_end_reported: false,
            disconnecting: false,
        }
    }

    /// Records the peer's private data for the event that reports it.
    pub fn set_peer_data(&mut self, data: &[u8]) {
        let n = data.len().min(REP_PRIVATE_LEN);
        if let (Some(dst), Some(src)) = (self.peer_data.get_mut(..n), data.get(..n)) {
            dst.copy_from_slice(src);
        }
        self.peer_data_len = n as u8;
    }

    /// The peer's private data.
    pub fn peer_data(&self) -> &[u8] {
        self.peer_data
            .get(..usize::from(self.peer_data_len))
            .unwrap_or_default()
    }

    /// Whether the slot belongs to the consumer (not free, not released).
    pub fn owned(&self) -> bool {
        !matches!(self.state, State::Free | State::TimeWait)
    }

    /// Whether this connection still holds QP `qpn`, so the QP may not be
    /// given to another connect or accept. A connection that is over
    /// (rejected, refused, failed) no longer does, even while the consumer
    /// keeps its connector open: the QP may try again through a new one.
    /// (A QP that was connected has left `Init` and cannot connect again
    /// anyway.)
    pub fn binds(&self, qpn: u32) -> bool {
        self.qpn == qpn && self.owned() && self.state != State::Closed
    }

    /// Stops the timer.
    pub fn disarm(&mut self) {
        self.set_deadline(u64::MAX);
    }

    /// Sets the timer to expire at `deadline_us`, in place of any other.
    pub fn set_deadline(&mut self, deadline_us: u64) {
        self.deadline_us = deadline_us;
        self.unstamped_us = None;
    }

    /// Starts the timer for `wait_us` from the device's next pass: a
    /// command has no time of its own. The time of the latest pass will
    /// not do: an idle device's engine may not have run for seconds, and
    /// a deadline counted from then would expire at the next pass, a
    /// retransmission (or the end of time-wait) early; counted from the
    /// next pass, which the command wakes, it starts a moment late.
    pub fn start_from_next_pass(&mut self, wait_us: u64) {
        self.deadline_us = 0;
        self.unstamped_us = Some(wait_us);
    }
}

/// The table.
#[derive(Debug)]
pub(crate) struct ConnTable {
    slots: Vec<Conn>,
    free: Vec<u16>,
}

impl ConnTable {
    /// A table of `capacity` (< 65535) connections, allocated here.
    pub fn new(capacity: u32) -> Option<Self> {
        let mut slots = Vec::new();
        slots.try_reserve_exact(capacity as usize).ok()?;
        slots.extend((0..capacity).map(|_| Conn::empty(0)));
        let mut free = Vec::new();
        free.try_reserve_exact(capacity as usize).ok()?;
        free.extend((0..capacity as u16).rev());
        Some(Self { slots, free })
    }

    /// Takes a free slot; returns its id and the slot (in state `Free`, to
    /// be set by the caller).
    pub fn alloc(&mut self) -> Option<(u32, &mut Conn)> {
        let index = usize::from(self.free.pop()?);
        let conn = self.slots.get_mut(index)?;
        let id = slot_id(index, conn.generation);
        Some((id, conn))
    }

    /// Frees a slot; its id (and generation) become stale. The caller has
    /// dropped any port reference.
    pub fn free(&mut self, index: usize) {
        if let Some(conn) = self.slots.get_mut(index) {
            if conn.state == State::Free {
                return;
            }
            *conn = Conn::empty(conn.generation.wrapping_add(1));
            // Room for every slot was reserved in `new`.
            self.free.push(index as u16);
        }
    }

    /// The live (not free) connection `id`, with its slot index.
    pub fn get(&mut self, id: u32) -> Option<(usize, &mut Conn)> {
        let index = slot_index(id)?;
        let conn = self.slots.get_mut(index)?;
        (conn.state != State::Free && slot_id(index, conn.generation) == id)
            .then_some((index, conn))
    }

    /// The consumer's connection `id` (not free, not released).
    pub fn owned(&mut self, id: u32) -> Option<(usize, &mut Conn)> {
        self.get(id).filter(|(_, c)| c.owned())
    }

    /// The id of the connection in slot `index`.
    pub fn id_of(&self, index: usize) -> u32 {
        self.slots
            .get(index)
            .map_or(0, |c| slot_id(index, c.generation))
    }

    /// The id of the passive connection whose initiator at `ip` has
    /// communication ID `comm_id` (how a REQ, or a REJ before our REP, is
    /// matched: the initiator does not know our ID yet).
    pub fn passive_by_peer(&self, ip: IpAddr, comm_id: u32) -> Option<u32> {
        self.slots.iter().enumerate().find_map(|(index, c)| {
            let hit = c.state != State::Free
                && !c.active
                && c.remote_comm_id == comm_id
                && c.remote.ip() == ip;
            hit.then(|| slot_id(index, c.generation))
        })
    }

    /// The id of the passive connection that replied for QP `qpn` to the
    /// peer at `ip` and still waits for its RTU.
    pub fn awaiting_rtu(&self, qpn: u32, ip: IpAddr) -> Option<u32> {
        self.slots.iter().enumerate().find_map(|(index, c)| {
            let hit = c.state == State::RepSent && !c.active && c.qpn == qpn && c.remote.ip() == ip;
            hit.then(|| slot_id(index, c.generation))
        })
    }

    /// Every slot, for timers and address checks.
    pub fn iter(&self) -> impl Iterator<Item = &Conn> {
        self.slots.iter()
    }

    /// The slot at `index`.
    pub fn at(&mut self, index: usize) -> Option<&mut Conn> {
        self.slots.get_mut(index)
    }
}
