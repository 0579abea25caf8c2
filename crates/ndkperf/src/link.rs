//! A connected queue pair with its CQ and PD, how it gets connected, and
//! the helpers every workload uses: SGE lists, receive pools, request
//! tags, waiting for completions.

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use ndkpi::{
    NDK_MR_FLAG_ALLOW_LOCAL_WRITE, NDK_MR_FLAG_ALLOW_REMOTE_READ, NDK_MR_FLAG_ALLOW_REMOTE_WRITE,
    NDK_RESULT_EX, NDK_SGE, STATUS_CONNECTION_REFUSED, STATUS_IO_TIMEOUT, STATUS_SUCCESS,
};

use crate::error::{Context, Error, Result, describe_status};
use crate::ndk::{Adapter, Connector, Cq, Listener, Pd, Qp, QpLimits, Region, show_duration};

/// No completion for this long ends a run.
pub const STALL_TIMEOUT: Duration = Duration::from_secs(30);

/// Access flags of every data region: local and remote read and write.
pub const DATA_ACCESS: u32 =
    NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_ALLOW_REMOTE_READ | NDK_MR_FLAG_ALLOW_REMOTE_WRITE;

/// Request-context tags: the kind in the top byte, an index below.
pub mod tag {
    /// A receive.
    pub const RECV: u64 = 1 << 56;
    /// A data send.
    pub const SEND: u64 = 2 << 56;
    /// An RDMA read.
    pub const READ: u64 = 3 << 56;
    /// An RDMA write.
    pub const WRITE: u64 = 4 << 56;
    /// A control send.
    pub const CTRL: u64 = 5 << 56;
    /// A fast register.
    pub const FR: u64 = 6 << 56;
    /// An invalidate.
    pub const INV: u64 = 7 << 56;
    /// A send-and-invalidate.
    pub const SEND_INV: u64 = 8 << 56;

    /// The kind of a context.
    pub fn kind(context: u64) -> u64 {
        context & (0xFF << 56)
    }

    /// The index of a context.
    pub fn index(context: u64) -> usize {
        (context & ((1 << 56) - 1)) as usize
    }

    /// A readable name of a kind.
    pub fn name(context: u64) -> &'static str {
        match kind(context) {
            RECV => "receive",
            SEND => "send",
            READ => "RDMA READ",
            WRITE => "RDMA WRITE",
            CTRL => "control send",
            FR => "fast register",
            INV => "invalidate",
            SEND_INV => "send-and-invalidate",
            _ => "request",
        }
    }
}

/// The request context of a completion.
pub fn context_of(r: &NDK_RESULT_EX) -> u64 {
    r.RequestContext as usize as u64
}

/// An error for a completion that did not succeed.
pub fn check_completion(r: &NDK_RESULT_EX) -> Result<()> {
    if r.Status == STATUS_SUCCESS {
        return Ok(());
    }
    let ctx = context_of(r);
    Err(Error::msg(format!(
        "{} #{} completed with {}",
        tag::name(ctx),
        tag::index(ctx),
        describe_status(r.Status)
    ))
    .with_status(r.Status))
}

/// Up to 16 SGEs splitting one span of a region.
#[derive(Debug, Clone, Copy)]
pub struct Sgl {
    items: [NDK_SGE; 16],
    n: usize,
}

impl Sgl {
    /// `len` bytes at `offset` of `region`, split evenly into `parts`
    /// entries (fewer if `len` is smaller).
    pub fn new(region: &Region, offset: usize, len: usize, parts: u32) -> Self {
        let parts = (parts.clamp(1, 16) as usize).min(len.max(1));
        let mut items = [NDK_SGE::default(); 16];
        let base = len / parts;
        let mut at = offset;
        for (i, item) in items.iter_mut().enumerate().take(parts) {
            let piece = if i + 1 == parts {
                offset + len - at
            } else {
                base
            };
            *item = NDK_SGE::with_virtual_address(
                region.addr(at) as usize as *mut _,
                piece as u32,
                region.local_token,
            );
            at += piece;
        }
        Self { items, n: parts }
    }

    /// The entries.
    pub fn as_slice(&self) -> &[NDK_SGE] {
        &self.items[..self.n]
    }
}

/// Receives of equal slots in one region, reposted as they complete.
#[derive(Debug)]
pub struct RecvPool {
    /// The slots' memory.
    pub region: Region,
    slot: usize,
    count: usize,
    sge: u32,
}

impl RecvPool {
    /// `count` receive slots of `slot` bytes.
    pub fn new(pd: &Pd, count: usize, slot: usize, sge: u32) -> Result<Self> {
        let region = pd.register(count * slot, DATA_ACCESS)?;
        Ok(Self {
            region,
            slot,
            count,
            sge,
        })
    }

    /// Posts slot `i`.
    pub fn post(&self, qp: &Qp, i: usize) -> Result<()> {
        let sgl = Sgl::new(&self.region, i * self.slot, self.slot, self.sge);
        qp.receive(tag::RECV | i as u64, sgl.as_slice())
    }

    /// Posts every slot.
    pub fn post_all(&self, qp: &Qp) -> Result<()> {
        (0..self.count).try_for_each(|i| self.post(qp, i))
    }

    /// The first `len` bytes of slot `i`.
    pub fn bytes(&self, i: usize, len: usize) -> &[u8] {
        self.region.buf.bytes(i * self.slot, len.min(self.slot))
    }
}

/// A queue pair, its CQ and PD, and (once connected) its connector.
/// Field order is drop order: disconnect and close the connector, then the
/// QP, the CQ, the PD, and the adapter reference last.
#[derive(Debug)]
pub struct Link {
    connector: Option<Connector>,
    /// The queue pair.
    pub qp: Qp,
    /// One CQ for both directions.
    pub cq: Cq,
    /// The protection domain.
    pub pd: Pd,
    /// The adapter.
    pub adapter: Arc<Adapter>,
    results: Vec<NDK_RESULT_EX>,
}

impl Link {
    /// A PD, a CQ and a QP of `limits` on `adapter`.
    pub fn new(adapter: &Arc<Adapter>, limits: QpLimits) -> Result<Self> {
        let info = adapter.info();
        let sge = limits.initiator_sge.max(limits.receive_sge);
        if sge > info.MaxInitiatorRequestSge || sge > info.MaxReceiveRequestSge {
            return Err(Error::msg(format!(
                "--sge {sge} is more than the adapter allows ({})",
                info.MaxInitiatorRequestSge.min(info.MaxReceiveRequestSge)
            )));
        }
        let depth = limits.initiator_depth.max(limits.receive_depth);
        if depth > info.MaxInitiatorQueueDepth || depth > info.MaxReceiveQueueDepth {
            return Err(Error::msg(format!(
                "a queue depth of {depth} is more than the adapter allows ({})",
                info.MaxInitiatorQueueDepth.min(info.MaxReceiveQueueDepth)
            )));
        }
        let cq_depth = (limits.initiator_depth + limits.receive_depth + 16).min(info.MaxCqDepth);
        let pd = adapter.create_pd()?;
        let cq = adapter.create_cq(cq_depth)?;
        let qp = pd.create_qp(&cq, &cq, 0, limits)?;
        Ok(Self {
            connector: None,
            qp,
            cq,
            pd,
            adapter: adapter.clone(),
            results: vec![NDK_RESULT_EX::default(); 64],
        })
    }

    /// Connects to `server` from `local` with `private_data`; returns the
    /// server's private data. Waits at most `timeout` for the answer.
    pub fn connect(
        &mut self,
        local: Ipv4Addr,
        server: SocketAddrV4,
        private_data: &[u8],
        timeout: Duration,
    ) -> Result<Vec<u8>> {
        let info = self.adapter.info();
        let limits = (info.MaxInboundReadLimit, info.MaxOutboundReadLimit);
        self.connect_with(
            SocketAddr::new(local.into(), 0),
            SocketAddr::V4(server),
            limits,
            private_data,
            timeout,
        )
    }

    /// Connects to `server` from `local` (either family) offering
    /// `(inbound, outbound)` RDMA READ limits (responder resources,
    /// initiator depth) and `private_data`; returns the server's private
    /// data. Waits at most `timeout` for the answer.
    pub fn connect_with(
        &mut self,
        local: SocketAddr,
        server: SocketAddr,
        (ird, ord): (u32, u32),
        private_data: &[u8],
        timeout: Duration,
    ) -> Result<Vec<u8>> {
        let mut connector = self.adapter.create_connector()?;
        connector.connect(&self.qp, local, server, ird, ord, private_data, timeout)?;
        let (_, _, data) = connector.connection_data()?;
        connector.complete_connect(timeout)?;
        self.connector = Some(connector);
        Ok(data)
    }

    /// Accepts `connector` onto this QP with `private_data`.
    pub fn accept(
        &mut self,
        connector: Connector,
        private_data: &[u8],
        timeout: Duration,
    ) -> Result<()> {
        let info = self.adapter.info();
        let limits = (info.MaxInboundReadLimit, info.MaxOutboundReadLimit);
        self.accept_with(connector, limits, private_data, timeout)
    }

    /// Accepts `connector` onto this QP with `(inbound, outbound)` RDMA
    /// READ limits and `private_data`.
    pub fn accept_with(
        &mut self,
        mut connector: Connector,
        (ird, ord): (u32, u32),
        private_data: &[u8],
        timeout: Duration,
    ) -> Result<()> {
        connector.accept(&self.qp, ird, ord, private_data, timeout)?;
        self.connector = Some(connector);
        Ok(())
    }

    /// Disconnects gracefully (also done on drop).
    pub fn disconnect(&mut self) -> Result<()> {
        match self.connector.as_mut() {
            Some(c) => c.disconnect(Duration::from_secs(5)),
            None => Ok(()),
        }
    }

    /// Takes at least one completion (every one must have succeeded),
    /// calling `each` for each; fails after [`STALL_TIMEOUT`] without one.
    pub fn drain(&mut self, each: impl FnMut(&NDK_RESULT_EX) -> Result<()>) -> Result<usize> {
        let n = self.drain_for(STALL_TIMEOUT, each)?;
        if n == 0 {
            let peer = if self.peer_disconnected() {
                ": the peer disconnected"
            } else {
                ": the peer stopped answering (its process was stopped or killed, or the network between went away)"
            };
            return Err(Error::msg(format!(
                "no completion for {}{peer}",
                show_duration(STALL_TIMEOUT)
            )));
        }
        Ok(n)
    }

    /// Like [`Link::drain`], but returns 0 when `timeout` passes without a
    /// completion.
    pub fn drain_for(
        &mut self,
        timeout: Duration,
        mut each: impl FnMut(&NDK_RESULT_EX) -> Result<()>,
    ) -> Result<usize> {
        let n = self.cq.wait(&mut self.results, timeout)?;
        for r in &self.results[..n] {
            check_completion(r)?;
            each(r)?;
        }
        Ok(n)
    }

    /// Like [`Link::drain_for`], but hands failed completions to `each`
    /// too (for callers that expect flushed requests).
    pub fn drain_unchecked(
        &mut self,
        timeout: Duration,
        mut each: impl FnMut(&NDK_RESULT_EX) -> Result<()>,
    ) -> Result<usize> {
        let n = self.cq.wait(&mut self.results, timeout)?;
        for r in &self.results[..n] {
            each(r)?;
        }
        Ok(n)
    }

    /// The peer disconnected (or the connection broke).
    pub fn peer_disconnected(&self) -> bool {
        self.connector
            .as_ref()
            .is_some_and(Connector::peer_disconnected)
    }
}

/// Connects a fresh link built by `build` to `server`, retrying refused
/// connections (the server may still be starting) until `timeout`.
pub fn connect_with_retry<T>(
    server: SocketAddrV4,
    timeout: Duration,
    mut attempt: impl FnMut(Duration) -> Result<T>,
) -> Result<T> {
    let deadline = Instant::now() + timeout;
    let what = || format!("cannot connect to {server}");
    let refused_for = |e: Error| {
        e.context(format!(
            "connection refused (no listener on that ND port) for {}",
            show_duration(timeout)
        ))
        .context(what())
    };
    let not_taken = || {
        Error::msg(format!(
            "the server did not take the connection request within {} ({}): nothing answers \
             on that ND port, or the server's connection manager took the request for one \
             of an earlier client from this address (a client that was killed); \
             try again, or from another --client-addr",
            show_duration(timeout),
            describe_status(STATUS_IO_TIMEOUT)
        ))
        .context(what())
    };
    let mut refused = None;
    let mut timed_out: Option<Error> = None;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match attempt(left.max(Duration::from_millis(1))) {
            Ok(v) => return Ok(v),
            Err(e) if e.status() == Some(STATUS_CONNECTION_REFUSED) => {
                if crate::interrupt::requested() {
                    return Err(Error::msg("interrupted (Ctrl-C) while connecting").context(what()));
                }
                if Instant::now() + Duration::from_millis(50) >= deadline {
                    return Err(refused_for(e));
                }
                refused = Some(e);
                thread::sleep(Duration::from_millis(50));
            }
            // The server's connection manager gave up on this request (its
            // CM retries ran out): a new request has a new communication
            // ID. A server can take a request for an old connection's
            // duplicate when a killed client's process had the same ID
            // from the same address (librsndk seeds its IDs per process,
            // `DeviceConfig::cm_entropy`; other clients may not); the next
            // one is fresh.
            Err(e)
                if e.status() == Some(STATUS_IO_TIMEOUT)
                    && Instant::now() + Duration::from_millis(50) < deadline =>
            {
                crate::error::trace!("connect: {e}; trying again");
                timed_out = Some(e);
            }
            Err(e) if e.status() == Some(STATUS_IO_TIMEOUT) => return Err(not_taken()),
            Err(e) if e.to_string().contains("did not complete within") => {
                if timed_out.is_some() {
                    return Err(not_taken());
                }
                // The last retry may get only what was left of the time
                // (on a loaded machine less than a refusal takes): the
                // peer's last answer was still a refusal.
                if let Some(e) = refused {
                    return Err(refused_for(e));
                }
                return Err(Error::msg(format!(
                    "no answer within {} (no server there, or it did not accept in time: see --timeout)",
                    show_duration(timeout)
                ))
                .context(what()));
            }
            Err(e) => return Err(e.context(what())),
        }
    }
}

/// Listens on `addr:port` of `adapter`.
pub fn listen(adapter: &Adapter, addr: Ipv4Addr, port: u16) -> Result<Listener> {
    listen_at(adapter, SocketAddr::new(addr.into(), port))
}

/// Listens on `at` (either family) of `adapter`.
pub fn listen_at(adapter: &Adapter, at: SocketAddr) -> Result<Listener> {
    let listener = adapter.create_listener()?;
    listener
        .listen(at, Duration::from_secs(10))
        .with_context(|| format!("cannot listen on {at}"))?;
    Ok(listener)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A peer that refused until the deadline is reported as refusing,
    /// even when the last retry ran out of time before its answer came.
    #[test]
    fn a_last_retry_that_runs_out_of_time_still_reports_the_refusal() {
        let server = SocketAddrV4::new(Ipv4Addr::LOCALHOST, 6001);
        let mut attempts = 0;
        let e = connect_with_retry::<()>(server, Duration::from_millis(120), |_| {
            attempts += 1;
            if attempts < 2 {
                Err(Error::ndk("NdkConnect", STATUS_CONNECTION_REFUSED))
            } else {
                Err(Error::msg("NdkConnect did not complete within 1ms"))
            }
        })
        .unwrap_err();
        assert!(e.to_string().contains("connection refused"), "{e}");
        assert!(!e.to_string().contains("no answer"), "{e}");
    }

    #[test]
    fn a_peer_that_never_answers_is_reported_as_silent() {
        let server = SocketAddrV4::new(Ipv4Addr::LOCALHOST, 6001);
        let e = connect_with_retry::<()>(server, Duration::from_millis(10), |_| {
            Err(Error::msg("NdkConnect did not complete within 10ms"))
        })
        .unwrap_err();
        assert!(e.to_string().contains("no answer within 10ms"), "{e}");
    }
}
