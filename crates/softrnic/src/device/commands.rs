//! The connection-management commands of the `hwq` contract: the
//! device's side of [`crate::cm`], which keeps the connections.
//!
//! A command has no time of its own: a timer it starts (a handshake's or
//! disconnect's retransmission, time-wait) runs from the device's next
//! pass, which stamps it (`Conn::start_from_next_pass` says why).

use core::net::{IpAddr, Ipv4Addr, SocketAddr};

use hwq::device::{AcceptParams, ConnectParams, Connections, DeviceError};
use hwq::{ConnId, ListenId, Qpn};

use super::SoftRnic;
use crate::cm::conn::State;
use crate::cm::events::Kind;
use crate::cm::msg::{self, ReqExtras};
use crate::cm::timer::time_wait;
use crate::cm::{CM_RESPONSE_TIMEOUT, MAX_CM_RETRIES, answer_wait_us};
use crate::qp::{QpState, Receives};
use crate::wire::cm::REJ_PRIVATE_LEN;
use crate::wire::cma::REQ_CONSUMER_PRIVATE_LEN;
use crate::wire::{MessageRef, RejReason};

/// Read limits as the CM carries them: capped by the device, in a byte.
fn read_limit(requested: u32, cap: u32) -> u8 {
    requested.min(cap).min(u32::from(u8::MAX)) as u8
}

impl SoftRnic {
    /// Connection-management counters.
    pub fn cm_stats(&self) -> crate::cm::CmStats {
        self.cm.stats()
    }

    /// Whether QP `qpn` may be bound to a connection (created, never
    /// connected); returns whether it takes receives from an SRQ.
    fn cm_qp(&self, qpn: u32) -> Result<bool, DeviceError> {
        self.qps
            .with(qpn, |qp| {
                if qp.state == QpState::Init && qp.path.is_none() {
                    Ok(matches!(qp.rq, Receives::Shared(_)))
                } else {
                    Err(DeviceError::InvalidState)
                }
            })
            .ok_or(DeviceError::NoSuchObject)?
    }

    /// The address a listener on `ip` binds (the module's address rules):
    /// one of the device's addresses as it is; `0.0.0.0` (any IPv4
    /// address) if the device has an IPv4 address; `::` (any address) if
    /// it has an IPv6 one, or as `0.0.0.0` if it has only IPv4 ones.
    fn cm_listen_ip(&self, ip: IpAddr) -> Result<IpAddr, DeviceError> {
        let set = self.addresses.read();
        match ip {
            IpAddr::V4(v4) if v4.is_unspecified() && set.has_family(true) => Ok(ip),
            IpAddr::V6(v6) if v6.is_unspecified() && set.has_family(false) => Ok(ip),
            IpAddr::V6(v6) if v6.is_unspecified() && set.has_family(true) => {
                Ok(IpAddr::V4(Ipv4Addr::UNSPECIFIED))
            }
            ip if set.contains(ip) => Ok(ip),
            _ => Err(DeviceError::InvalidAddress),
        }
    }

    /// The address a connection from `local` to `remote` sends from (the
    /// module's address rules): `local` itself if it is one of the
    /// device's addresses, of the remote's family; for an unspecified
    /// `local` (`::`, or `0.0.0.0` to an IPv4 remote), the device's
    /// address that [`crate::addresses::AddressSet::source_for`] picks.
    fn cm_source(&self, local: IpAddr, remote: IpAddr) -> Result<IpAddr, DeviceError> {
        let set = self.addresses.read();
        let source = if local.is_unspecified() {
            // The IPv4 wildcard reaches no IPv6 peer.
            (local.is_ipv6() || remote.is_ipv4())
                .then(|| set.source_for(remote))
                .flatten()
        } else {
            (set.contains(local) && local.is_ipv4() == remote.is_ipv4()).then_some(local)
        };
        source.ok_or(DeviceError::InvalidAddress)
    }

    /// A peer's address, which must be a unicast address (not
    /// unspecified, multicast, IPv4 broadcast, or an IPv4-mapped IPv6
    /// address) of a family the device has an address of, with a port;
    /// returned without IPv6 flow information and scope.
    fn cm_remote(&self, remote: SocketAddr) -> Result<SocketAddr, DeviceError> {
        let usable = crate::addresses::usable_unicast(remote.ip())
            && self.addresses.read().has_family(remote.is_ipv4());
        if usable && remote.port() != 0 {
            Ok(SocketAddr::new(remote.ip(), remote.port()))
        } else {
            Err(DeviceError::InvalidAddress)
        }
    }

    /// Starts the active side's handshake (`cm_connect`): binds QP `qpn`
    /// to a new connection and sends its REQ.
    fn start_connect(
        &self,
        qpn: u32,
        params: &ConnectParams<'_>,
    ) -> Result<(ConnId, SocketAddr), DeviceError> {
        let remote = self.cm_remote(params.remote)?;
        let addr = self.cm_source(params.local.ip(), remote.ip())?;
        if params.private_data.len() > REQ_CONSUMER_PRIVATE_LEN {
            return Err(DeviceError::InvalidParameter);
        }
        let srq = self.cm_qp(qpn)?;
        let caps = self.config().caps();
        let pmtu = crate::cm::device_pmtu(self, remote.ip());
        self.cm.with(self, |inner| {
            if inner.conns.iter().any(|c| c.binds(qpn)) {
                return Err(DeviceError::InvalidState);
            }
            let port = match params.local.port() {
                0 => inner
                    .listeners
                    .ephemeral_port()
                    .ok_or(DeviceError::NoPortAvailable)?,
                port => {
                    let local = SocketAddr::new(addr, port);
                    if inner
                        .conns
                        .iter()
                        .any(|c| c.owned() && c.local == local && c.remote == remote)
                    {
                        return Err(DeviceError::AddressInUse);
                    }
                    inner.listeners.hold_port(port);
                    port
                }
            };
            let Some((id, conn)) = inner.conns.alloc() else {
                inner.listeners.release_port(port);
                return Err(DeviceError::NoResources);
            };
            let io = &mut inner.io;
            conn.state = State::ReqSent;
            conn.active = true;
            conn.qpn = qpn;
            conn.local = SocketAddr::new(addr, port);
            conn.remote = remote;
            conn.tid = io.new_tid();
            // The REQ announces the PSN we expect; the REP says where we
            // send from.
            conn.recv_psn = io.random_psn();
            conn.pmtu = pmtu;
            conn.ird = read_limit(params.inbound_reads, caps.max_inbound_reads);
            conn.ord = read_limit(params.outbound_reads, caps.max_outbound_reads);
            conn.peer_timeout = CM_RESPONSE_TIMEOUT;
            conn.max_retries = MAX_CM_RETRIES;
            // The REQ's retry count is both QPs'; the timeout and the RNR
            // retries come with the REP.
            conn.retry_count = msg::RETRY_COUNT;
            conn.period_us = answer_wait_us(CM_RESPONSE_TIMEOUT);
            let extras = ReqExtras {
                local_comm_id: io.comm_id(id),
                srq,
                private_data: params.private_data,
            };
            if let Some(mad) = msg::req(conn, &extras) {
                io.send_conn(self, conn, &mad);
            }
            conn.start_from_next_pass(conn.period_us);
            io.arm(conn.deadline_us);
            Ok((ConnId::from_raw(id), conn.local))
        })
    }
}

impl Connections for SoftRnic {
    fn cm_listen(&self, addr: SocketAddr) -> Result<(ListenId, SocketAddr), DeviceError> {
        let ip = self.cm_listen_ip(addr.ip())?;
        self.cm.with(self, |inner| {
            let listeners = &mut inner.listeners;
            let port = if addr.port() == 0 {
                listeners
                    .ephemeral_port()
                    .ok_or(DeviceError::NoPortAvailable)?
            } else if listeners.port_taken(SocketAddr::new(ip, addr.port())) {
                return Err(DeviceError::AddressInUse);
            } else {
                listeners.hold_port(addr.port());
                addr.port()
            };
            let bound = SocketAddr::new(ip, port);
            let Some(id) = listeners.add(bound) else {
                listeners.release_port(port);
                return Err(DeviceError::NoResources);
            };
            Ok((ListenId::from_raw(id), bound))
        })
    }

    fn cm_pause_listener(&self, listen_id: ListenId, paused: bool) {
        self.cm
            .with(self, |inner| inner.listeners.pause(listen_id.raw(), paused));
    }

    fn cm_stop_listener(&self, listen_id: ListenId) {
        self.cm
            .with(self, |inner| inner.listeners.remove(listen_id.raw()));
    }

    fn cm_connect(
        &self,
        qpn: Qpn,
        params: &ConnectParams<'_>,
    ) -> Result<(ConnId, SocketAddr), DeviceError> {
        let result = self.start_connect(qpn.raw(), params);
        // Refused before anything was sent: a failed attempt all the same.
        self.engine().stats.connect_failures.inc_if(result.is_err());
        result
    }

    // Accepts inbound connection `conn_id` onto the QP of `params`
    // (sends the REP).
    fn cm_accept(&self, conn_id: ConnId, params: &AcceptParams<'_>) -> Result<(), DeviceError> {
        let conn_id = conn_id.raw();
        let qpn = params.qpn.raw();
        let private_data = params.private_data;
        // The REP field holds 196 bytes, but the adapter advertises one
        // accept/reject limit (the REJ's 148), and the initiator reports
        // exactly that much of the field as the acceptor's data.
        if private_data.len() > REJ_PRIVATE_LEN {
            return Err(DeviceError::InvalidParameter);
        }
        let srq = self.cm_qp(qpn)?;
        let caps = self.config().caps();
        self.cm.with(self, |inner| {
            if inner.conns.iter().any(|c| c.binds(qpn)) {
                return Err(DeviceError::InvalidState);
            }
            let (_, conn) = inner
                .conns
                .owned(conn_id)
                .ok_or(DeviceError::NoSuchObject)?;
            if conn.state != State::ReqRcvd {
                return Err(DeviceError::InvalidState);
            }
            let io = &mut inner.io;
            conn.qpn = qpn;
            // We serve at most as many reads as the initiator issues, and
            // issue at most as many as it serves.
            conn.ird = read_limit(params.inbound_reads, caps.max_inbound_reads).min(conn.peer_ord);
            conn.ord =
                read_limit(params.outbound_reads, caps.max_outbound_reads).min(conn.peer_ird);
            // The REP announces the PSN we expect (the REQ said where we
            // send from).
            conn.recv_psn = io.random_psn();
            let mad = msg::rep(conn, io.comm_id(conn_id), srq, private_data)
                .ok_or(DeviceError::InvalidParameter)?;
            conn.state = State::RepSent;
            conn.retries = 0;
            conn.period_us = answer_wait_us(conn.peer_timeout);
            io.send_conn(self, conn, &mad);
            conn.start_from_next_pass(conn.period_us);
            io.arm(conn.deadline_us);
            Ok(())
        })
    }

    // Rejects a connection: inbound before accept, or outbound after the
    // reply arrived.
    fn cm_reject(&self, conn_id: ConnId, private_data: &[u8]) -> Result<(), DeviceError> {
        let conn_id = conn_id.raw();
        if private_data.len() > REJ_PRIVATE_LEN {
            return Err(DeviceError::InvalidParameter);
        }
        self.cm.with(self, |inner| {
            let (_, conn) = inner
                .conns
                .owned(conn_id)
                .ok_or(DeviceError::NoSuchObject)?;
            let rejected = match conn.state {
                State::ReqRcvd => MessageRef::REQ,
                State::RepRcvd => MessageRef::REP,
                _ => return Err(DeviceError::InvalidState),
            };
            let io = &mut inner.io;
            let local = io.comm_id(conn_id);
            let mad = msg::rej(
                conn.tid,
                local,
                conn.remote_comm_id,
                rejected,
                RejReason::CONSUMER_REJECT,
                private_data,
            )
            .ok_or(DeviceError::InvalidParameter)?;
            conn.state = State::Closed;
            conn.disarm();
            io.send_conn(self, conn, &mad);
            Ok(())
        })
    }

    // Completes an outbound connection after the reply: connects the QP,
    // then sends the RTU.
    fn cm_establish(&self, conn_id: ConnId) -> Result<(), DeviceError> {
        let conn_id = conn_id.raw();
        self.cm.with(self, |inner| {
            let (_, conn) = inner
                .conns
                .owned(conn_id)
                .ok_or(DeviceError::NoSuchObject)?;
            if conn.state != State::RepRcvd {
                return Err(DeviceError::InvalidState);
            }
            crate::cm::connect_qp(self, conn)?;
            let io = &mut inner.io;
            let mad = msg::rtu(conn.tid, io.comm_id(conn_id), conn.remote_comm_id);
            conn.state = State::Established;
            io.send_conn(self, conn, &mad);
            Ok(())
        })?;
        self.engine().stats.connects.inc();
        Ok(())
    }

    // Starts a graceful disconnect; `DisconnectDone` follows. During a
    // handshake it aborts the attempt (REJ to the peer); after the
    // connection ended it completes at once.
    fn cm_disconnect(&self, conn_id: ConnId) -> Result<(), DeviceError> {
        let conn_id = conn_id.raw();
        self.cm.with(self, |inner| {
            let (_, conn) = inner
                .conns
                .owned(conn_id)
                .ok_or(DeviceError::NoSuchObject)?;
            if conn.disconnecting {
                return Err(DeviceError::InvalidState);
            }
            conn.disconnecting = true;
            let io = &mut inner.io;
            let local = io.comm_id(conn_id);
            match conn.state {
                State::Established => {
                    let tid = io.new_tid();
                    let mad = msg::dreq(tid, local, conn.remote_comm_id, conn.remote_qpn);
                    conn.state = State::DreqSent;
                    conn.retries = 0;
                    conn.max_retries = MAX_CM_RETRIES;
                    conn.period_us = answer_wait_us(conn.peer_timeout);
                    io.send_conn(self, conn, &mad);
                    conn.start_from_next_pass(conn.period_us);
                    io.arm(conn.deadline_us);
                    return Ok(());
                }
                State::ReqSent | State::ReqRcvd | State::RepSent | State::RepRcvd => {
                    let rejected = if matches!(conn.state, State::ReqSent | State::ReqRcvd) {
                        MessageRef::REQ
                    } else {
                        MessageRef::REP
                    };
                    if let Some(mad) = msg::rej(
                        conn.tid,
                        local,
                        conn.remote_comm_id,
                        rejected,
                        RejReason::CONSUMER_REJECT,
                        &[],
                    ) {
                        io.send_conn(self, conn, &mad);
                    }
                    conn.state = State::Closed;
                    conn.disarm();
                }
                State::Closed => {}
                State::DreqSent | State::TimeWait | State::Free => {
                    return Err(DeviceError::InvalidState);
                }
            }
            io.report(conn, conn_id, Kind::DisconnectDone);
            Ok(())
        })
    }

    // Forgets a connection. Unfinished business with the peer ends as IB
    // CM ends it when a connection is destroyed: an unanswered or
    // unfinished handshake is rejected, an established connection gets one
    // DREQ. The slot then answers duplicates for a while (time-wait).
    fn cm_release(&self, conn_id: ConnId) {
        let conn_id = conn_id.raw();
        self.cm.with(self, |inner| {
            let Some((index, conn)) = inner.conns.owned(conn_id) else {
                return;
            };
            let io = &mut inner.io;
            let local = io.comm_id(conn_id);
            let remote = conn.remote_comm_id;
            let mad = match conn.state {
                State::ReqSent => msg::rej(
                    conn.tid,
                    local,
                    remote,
                    MessageRef::REQ,
                    RejReason::TIMEOUT,
                    &[],
                ),
                State::ReqRcvd => msg::rej(
                    conn.tid,
                    local,
                    remote,
                    MessageRef::REQ,
                    RejReason::CONSUMER_REJECT,
                    &[],
                ),
                State::RepSent | State::RepRcvd => msg::rej(
                    conn.tid,
                    local,
                    remote,
                    MessageRef::REP,
                    RejReason::CONSUMER_REJECT,
                    &[],
                ),
                State::Established => Some(msg::dreq(io.new_tid(), local, remote, conn.remote_qpn)),
                State::DreqSent | State::Closed | State::TimeWait | State::Free => None,
            };
            if let Some(mad) = mad {
                io.send_conn(self, conn, &mad);
            }
            time_wait(inner, index);
        });
    }
}
