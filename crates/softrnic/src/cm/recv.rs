//! Received CM messages.

use core::net::{IpAddr, SocketAddr};

use super::conn::{Conn, State};
use super::events::Kind;
use super::{Host, Inner, Io, MRA_SERVICE_TIMEOUT, ack_timeout, answer_wait_us, msg};
use crate::wire::cm::{ATTR_REJ, ATTR_REP, REJ_PRIVATE_LEN, TRANSPORT_RC};
use crate::wire::cma::PORT_SPACE_TCP;
use crate::wire::{
    CmMessage, CmaHeader, DrepMsg, DreqMsg, GSI_QKEY, MessageRef, MraMsg, Opcode, Packet, Pmtu,
    RejMsg, RejReason, RepMsg, ReqMsg, RtuMsg, ip_service_port, parse_cm,
};

/// Handles a packet addressed to QP1.
pub(crate) fn receive(device: &dyn Host, packet: &Packet<'_>, now: u64) {
    let gsi = packet.bth.opcode == Opcode::UD_SEND_ONLY
        && packet.ext.deth.is_some_and(|d| d.qkey == GSI_QKEY);
    let parsed = if gsi {
        parse_cm(packet.payload).ok()
    } else {
        None
    };
    device.cm().with(device, |inner| {
        let Some((header, message)) = parsed else {
            inner.io.stats.malformed += 1;
            return;
        };
        inner.io.stats.received += 1;
        let mut rx = Rx {
            device,
            inner,
            src: packet.ip.src(),
            dst: packet.ip.dst(),
            tid: header.transaction_id.get(),
            now,
        };
        match message {
            CmMessage::Req(m) => rx.req(m),
            CmMessage::Rep(m) => rx.rep(m),
            CmMessage::Rtu(m) => rx.rtu(m),
            CmMessage::Rej(m) => rx.rej(m),
            CmMessage::Mra(m) => rx.mra(m),
            CmMessage::Dreq(m) => rx.dreq(m),
            CmMessage::Drep(m) => rx.drep(m),
        }
    });
}

/// One received message being handled under the CM lock.
struct Rx<'a> {
    device: &'a dyn Host,
    inner: &'a mut Inner,
    /// The sender's address.
    src: IpAddr,
    /// Our address it was sent to (one of the device's).
    dst: IpAddr,
    /// The message's transaction ID.
    tid: u64,
    now: u64,
}

impl Rx<'_> {
    /// The connection `our_comm_id` names, if the message comes from its
    /// peer (`peer_comm_id`, unless we do not know the peer's yet).
    fn conn(&mut self, our_comm_id: u32, peer_comm_id: u32) -> Option<(u32, &mut Conn, &mut Io)> {
        let id = self.inner.io.conn_id(our_comm_id);
        let (src, dst) = (self.src, self.dst);
        let (_, conn) = self.inner.conns.get(id)?;
        let from_peer = conn.remote.ip() == src
            && conn.local.ip() == dst
            && (conn.remote_comm_id == 0 || conn.remote_comm_id == peer_comm_id);
        if from_peer {
            Some((id, conn, &mut self.inner.io))
        } else {
            self.inner.io.stats.unmatched += 1;
            None
        }
    }

    /// Answers a message for no connection with a REJ.
    fn refuse(&mut self, peer_comm_id: u32, rejected: MessageRef, reason: RejReason) {
        if let Some(mad) = msg::rej(self.tid, 0, peer_comm_id, rejected, reason, &[]) {
            self.inner.io.send(self.device, self.dst, self.src, &mad);
        }
    }

    fn req(&mut self, m: &ReqMsg) {
        let peer_comm_id = m.local_comm_id();
        if let Some(id) = self.inner.conns.passive_by_peer(self.src, peer_comm_id) {
            let Some((_, conn)) = self.inner.conns.get(id) else {
                return;
            };
            let io = &mut self.inner.io;
            io.stats.duplicates += 1;
            match conn.state {
                // The consumer is still deciding: ask the initiator to wait.
                State::ReqRcvd => {
                    let mad = msg::mra(
                        self.tid,
                        io.comm_id(id),
                        peer_comm_id,
                        MessageRef::REQ,
                        MRA_SERVICE_TIMEOUT,
                    );
                    io.send(self.device, self.dst, self.src, &mad);
                }
                // Our REP (or REJ) was lost: send it again.
                State::RepSent | State::Closed | State::TimeWait
                    if matches!(conn.out.header.attribute_id.get(), ATTR_REP | ATTR_REJ) =>
                {
                    io.resend(self.device, conn);
                }
                _ => {}
            }
            return;
        }
        if m.transport_service_type() != TRANSPORT_RC {
            return self.refuse(
                peer_comm_id,
                MessageRef::REQ,
                RejReason::INVALID_TRANSPORT_TYPE,
            );
        }
        let (Some((PORT_SPACE_TCP, port)), Ok((cma, consumer_data))) = (
            ip_service_port(m.service_id()),
            CmaHeader::parse(m.private_data()),
        ) else {
            return self.refuse(peer_comm_id, MessageRef::REQ, RejReason::INVALID_SERVICE_ID);
        };
        // The RDMA CM header addresses the connection in the packet's own
        // IP version (an IPv6 REQ saying IPv4 is not a request we can map).
        let version = if self.src.is_ipv4() { 4 } else { 6 };
        if cma.ip_version() != version {
            return self.refuse(peer_comm_id, MessageRef::REQ, RejReason::INVALID_SERVICE_ID);
        }
        let addr = self.dst;
        // Paused listeners behave as absent.
        let Some(listen_id) = self.inner.listeners.find(addr, port) else {
            self.inner.io.stats.no_listener += 1;
            return self.refuse(peer_comm_id, MessageRef::REQ, RejReason::INVALID_SERVICE_ID);
        };
        let own_pmtu = super::device_pmtu(self.device, self.src);
        let Some(pmtu) = Pmtu::from_code(m.path_mtu()) else {
            return self.refuse(peer_comm_id, MessageRef::REQ, RejReason::INVALID_MTU);
        };
        if pmtu > own_pmtu {
            // Refuse with our MTU: the initiator asks again with the
            // smaller one, and both QPs use min(path MTUs).
            let mad = msg::rej_mtu(self.tid, peer_comm_id, own_pmtu);
            return self.inner.io.send(self.device, self.dst, self.src, &mad);
        }
        let Some((id, conn)) = self.inner.conns.alloc() else {
            return self.refuse(peer_comm_id, MessageRef::REQ, RejReason::NO_RESOURCES);
        };
        conn.state = State::ReqRcvd;
        conn.active = false;
        conn.listen_id = listen_id;
        conn.local = SocketAddr::new(addr, port);
        conn.remote = SocketAddr::new(self.src, cma.src_port());
        conn.remote_comm_id = peer_comm_id;
        conn.remote_qpn = m.local_qpn();
        conn.tid = self.tid;
        // The initiator's receive queue expects this PSN: we send from it.
        conn.send_psn = m.starting_psn();
        conn.pmtu = pmtu;
        conn.peer_ird = m.responder_resources();
        conn.peer_ord = m.initiator_depth();
        conn.peer_timeout = m.local_cm_response_timeout();
        conn.max_retries = m.max_cm_retries();
        // Our QP's reliability, as Linux's cm_req_handler and
        // cm_init_qp_rts_attr take it from a REQ.
        conn.ack_timeout = ack_timeout::acceptor(m.primary_path().local_ack_timeout());
        conn.retry_count = m.retry_count();
        conn.rnr_retry = m.rnr_retry_count();
        conn.set_peer_data(consumer_data);
        self.inner.io.report(conn, id, Kind::ConnectRequest);
    }

    fn rep(&mut self, m: &RepMsg) {
        let (device, tid) = (self.device, self.tid);
        let Some((id, conn, io)) = self.conn(m.remote_comm_id(), m.local_comm_id()) else {
            return self.refuse(
                m.local_comm_id(),
                MessageRef::REP,
                RejReason::INVALID_COMM_ID,
            );
        };
        if !conn.active {
            io.stats.unmatched += 1;
            return;
        }
        match conn.state {
            State::ReqSent => {
                conn.remote_comm_id = m.local_comm_id();
                conn.remote_qpn = m.local_qpn();
                // The acceptor's receive queue expects this PSN.
                conn.send_psn = m.starting_psn();
                conn.peer_ird = m.responder_resources();
                conn.peer_ord = m.initiator_depth();
                // As Linux's cm_rep_handler: the timeout from the
                // acceptor's ACK delay, the RNR retries it asks for.
                conn.ack_timeout = ack_timeout::initiator(m.target_ack_delay());
                conn.rnr_retry = m.rnr_retry_count();
                conn.ord = conn.ord.min(conn.peer_ird);
                conn.ird = conn.ird.min(conn.peer_ord);
                // The REP field is 196 bytes, but an acceptor can only have
                // supplied up to the adapter's accept-data limit (the REJ's
                // 148, one NDK limit for both): the rest is padding, and
                // reporting it would exceed the advertised MaxCalleeData.
                let data = m.private_data();
                conn.set_peer_data(data.get(..REJ_PRIVATE_LEN).unwrap_or(data));
                conn.state = State::RepRcvd;
                conn.disarm();
                io.report(conn, id, Kind::Replied);
            }
            // Our consumer has not completed yet: ask the acceptor to wait.
            State::RepRcvd => {
                io.stats.duplicates += 1;
                let mad = msg::mra(
                    tid,
                    io.comm_id(id),
                    conn.remote_comm_id,
                    MessageRef::REP,
                    MRA_SERVICE_TIMEOUT,
                );
                io.send(device, conn.local.ip(), conn.remote.ip(), &mad);
            }
            // Our RTU was lost: send it again. After a REQ that timed out
            // or a reject, the REJ again.
            State::Established | State::Closed | State::TimeWait => {
                io.stats.duplicates += 1;
                let last = conn.out.header.attribute_id.get();
                if conn.state == State::Established || last == ATTR_REJ {
                    io.resend(device, conn);
                }
            }
            _ => io.stats.unmatched += 1,
        }
    }

    fn rtu(&mut self, m: &RtuMsg) {
        let device = self.device;
        let Some((id, conn, io)) = self.conn(m.remote_comm_id(), m.local_comm_id()) else {
            return;
        };
        if conn.active || conn.state != State::RepSent {
            io.stats.duplicates += 1;
            return;
        }
        establish_passive(device, id, conn, io);
    }

    fn rej(&mut self, m: &RejMsg) {
        let reason = m.reason();
        let (device, now) = (self.device, self.now);
        let (id, conn, io) = if m.remote_comm_id() == 0 {
            // The initiator gives up before it learned our ID.
            let Some(id) = self
                .inner
                .conns
                .passive_by_peer(self.src, m.local_comm_id())
            else {
                self.inner.io.stats.unmatched += 1;
                return;
            };
            let Some((_, conn)) = self.inner.conns.get(id) else {
                return;
            };
            (id, conn, &mut self.inner.io)
        } else {
            match self.conn(m.remote_comm_id(), m.local_comm_id()) {
                Some(found) => found,
                None => return,
            }
        };
        if conn.state == State::ReqSent
            && let Some(offered) = msg::rej_offered_mtu(m).filter(|p| *p < conn.pmtu)
        {
            // The acceptor's path MTU is smaller: propose it instead (the
            // REJ left no state there). The consumer sees one attempt.
            conn.pmtu = offered;
            msg::lower_req_mtu(&mut conn.out, offered);
            conn.retries = 0;
            conn.set_deadline(now + conn.period_us);
            io.arm(conn.deadline_us);
            io.stats.mtu_retries += 1;
            io.resend(device, conn);
            return;
        }
        let kind = match conn.state {
            State::ReqSent => {
                let data = m.private_data();
                conn.set_peer_data(data.get(..REJ_PRIVATE_LEN).unwrap_or(data));
                Kind::Rejected {
                    by_consumer: reason == RejReason::CONSUMER_REJECT,
                }
            }
            // The initiator abandoned the attempt before we answered.
            State::ReqRcvd => Kind::Failed { timed_out: false },
            // The peer gave up on the handshake after the reply.
            State::RepSent | State::RepRcvd => Kind::Failed {
                timed_out: reason == RejReason::TIMEOUT,
            },
            // The acceptor timed out waiting for our RTU: the connection
            // is gone.
            State::Established => Kind::Disconnected,
            State::DreqSent => Kind::DisconnectDone,
            State::Closed | State::TimeWait | State::Free => {
                io.stats.unmatched += 1;
                return;
            }
        };
        conn.state = State::Closed;
        conn.disarm();
        io.report(conn, id, kind);
    }

    fn mra(&mut self, m: &MraMsg) {
        let now = self.now;
        let Some((_, conn, io)) = self.conn(m.remote_comm_id(), m.local_comm_id()) else {
            return;
        };
        let waiting = match conn.state {
            State::ReqSent => m.message_mraed() == MessageRef::REQ,
            State::RepSent => m.message_mraed() == MessageRef::REP,
            _ => false,
        };
        if waiting {
            // The peer received our message and needs longer: stretch the
            // timer to its service timeout.
            conn.period_us = answer_wait_us(m.service_timeout());
            conn.set_deadline(now + conn.period_us);
            io.arm(conn.deadline_us);
        }
    }

    fn dreq(&mut self, m: &DreqMsg) {
        let (device, tid, src, dst) = (self.device, self.tid, self.src, self.dst);
        let Some((id, conn, io)) = self.conn(m.remote_comm_id(), m.local_comm_id()) else {
            // Forgotten connection: answer anyway so the peer finishes.
            let mad = msg::drep(tid, m.remote_comm_id(), m.local_comm_id());
            return self.inner.io.send(device, dst, src, &mad);
        };
        let mad = msg::drep(tid, io.comm_id(id), conn.remote_comm_id);
        let kind = match conn.state {
            State::Established => Some(Kind::Disconnected),
            // Both sides disconnect at once: ours is done.
            State::DreqSent => Some(Kind::DisconnectDone),
            // The initiator established and left before our RTU arrived.
            State::RepSent | State::RepRcvd => Some(Kind::Failed { timed_out: false }),
            State::Closed | State::TimeWait => {
                io.stats.duplicates += 1;
                None
            }
            State::Free | State::ReqSent | State::ReqRcvd => {
                io.stats.unmatched += 1;
                return;
            }
        };
        io.send_conn(device, conn, &mad);
        if let Some(kind) = kind {
            conn.state = State::Closed;
            conn.disarm();
            io.report(conn, id, kind);
        }
    }

    fn drep(&mut self, m: &DrepMsg) {
        let Some((id, conn, io)) = self.conn(m.remote_comm_id(), m.local_comm_id()) else {
            return;
        };
        if conn.state == State::DreqSent {
            conn.state = State::Closed;
            conn.disarm();
            io.report(conn, id, Kind::DisconnectDone);
        } else {
            io.stats.duplicates += 1;
        }
    }
}

/// The passive side's RTU (or the first request packet standing in for a
/// lost one): connects the QP and reports the connection established, or
/// fails the attempt if the QP cannot be connected.
fn establish_passive(device: &dyn Host, id: u32, conn: &mut Conn, io: &mut Io) {
    conn.disarm();
    if super::connect_qp(device, conn).is_ok() {
        conn.state = State::Established;
        io.report(conn, id, Kind::Established);
    } else {
        // The QP cannot be connected (destroyed meanwhile, or the path
        // refused): the attempt fails.
        conn.state = State::Closed;
        if let Some(mad) = msg::rej(
            conn.tid,
            io.comm_id(id),
            conn.remote_comm_id,
            MessageRef::OTHER,
            RejReason::NO_QP,
            &[],
        ) {
            io.send_conn(device, conn, &mad);
        }
        io.report(conn, id, Kind::Failed { timed_out: false });
    }
}

/// A request packet reached QP `qpn` (not yet connected) from `src`: if
/// the QP's passive connection replied and waits for its RTU, the RTU was
/// lost or overtaken and the initiator is already sending. Establish now
/// (IB's "communication established" event), so the packet is not
/// dropped. Returns whether the QP was connected.
pub(crate) fn establish_on_request(device: &dyn Host, qpn: u32, src: IpAddr) -> bool {
    device.cm().with(device, |inner| {
        let Some(id) = inner.conns.awaiting_rtu(qpn, src) else {
            return false;
        };
        let Some((_, conn)) = inner.conns.get(id) else {
            return false;
        };
        establish_passive(device, id, conn, &mut inner.io);
        inner.io.stats.implicit_establish += 1;
        conn.state == State::Established
    })
}
