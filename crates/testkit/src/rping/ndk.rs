//! The NDK objects of one rping side on a raw `NDK_ADAPTER`, made and
//! closed through the dispatch tables with every call that may pend
//! waited out (bounded), errors as text: a PD, one CQ, rping's QP, the
//! registered buffers, and the connection (connect / listen + accept /
//! disconnect). Works the same on librsndk's adapters and on a bottled
//! driver's, whose memory the caller describes ([`super::RpingAdapter`]).

use std::ptr;
use std::time::{Duration, Instant};

use ndkpi::{
    NDK_ADAPTER, NDK_CONNECTOR, NDK_CQ, NDK_LISTENER, NDK_MR, NDK_PD, NDK_QP, NDK_RESULT_EX,
    NDK_SGE, NTSTATUS, STATUS_PENDING, STATUS_SUCCESS,
};

use crate::adapter::{
    Mdl, Pages, Recorder, SockAddr, adapter_table, close, connect_cb, connector_table, cq_cb,
    create_cb, disconnect_cb, listener_table, mr_table, mr_tokens, pd_table, request_cb,
    results_ex, sge,
};

/// rping's QP (`rping_create_qp`): 16 sends, 2 receives, one SGE each.
const SEND_DEPTH: u32 = 16;
const RECEIVE_DEPTH: u32 = 2;
/// rping's CQ: `RPING_SQ_DEPTH * 2`.
const CQ_DEPTH: u32 = 32;

/// rping's read limits (`rping_init_conn_param`): responder resources =
/// initiator depth = 1.
pub const READ_LIMIT: u32 = 1;

/// How long a create, register, close or disconnect may stay pending.
const OBJECT_WAIT: Duration = Duration::from_secs(10);

/// Waits, bounded, for `done`; sleeps a little between looks.
pub fn wait_for(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    let mut spins = 0u32;
    loop {
        if done() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        // A short while of yielding keeps a ping-pong quick; then sleep.
        if spins < 2000 {
            spins += 1;
            std::thread::yield_now();
        } else {
            std::thread::sleep(Duration::from_micros(100));
        }
    }
}

/// The final status of a call that may pend, `rec` being its completion
/// context.
pub fn settle(status: NTSTATUS, rec: &Recorder, what: &str) -> Result<NTSTATUS, String> {
    if status != STATUS_PENDING {
        return Ok(status);
    }
    if wait_for(OBJECT_WAIT, || rec.count() >= 1) {
        Ok(rec.statuses()[0])
    } else {
        Err(format!("{what} did not complete within {OBJECT_WAIT:?}"))
    }
}

/// `what` succeeded, or the error naming it.
pub fn check(status: NTSTATUS, what: &str) -> Result<(), String> {
    if status == STATUS_SUCCESS {
        Ok(())
    } else {
        Err(format!("{what} failed: {:#010x}", status as u32))
    }
}

/// Closes `object`, waiting for a pending close; false if it did not
/// finish (the caller then leaks what the object uses).
fn close_wait<T>(object: *mut T) -> bool {
    if object.is_null() {
        return true;
    }
    let rec = Recorder::new();
    let status = close(object, rec);
    matches!(settle(status, rec, "close"), Ok(STATUS_SUCCESS))
}

/// A page-aligned buffer registered on a PD.
#[derive(Debug)]
pub struct Buffer {
    pub mr: *mut NDK_MR,
    _mdl: Mdl,
    pages: Pages,
    len: usize,
    /// Token for local SGEs.
    pub local: u32,
    /// Token the peer names in RDMA.
    pub remote: u32,
}

impl Buffer {
    /// Its address: what SGEs and the peer name.
    pub fn va(&self) -> u64 {
        self.pages.addr()
    }

    /// An SGE over `len` bytes at `at`.
    pub fn sge(&self, at: usize, len: usize) -> NDK_SGE {
        assert!(at + len <= self.len);
        sge(self.va() + at as u64, len as u32, self.local)
    }

    /// The bytes (no posted request may target them).
    pub fn bytes(&mut self) -> &mut [u8] {
        &mut self.pages.bytes()[..self.len]
    }
}

/// One side's objects. Closed in dependency order by [`Side::close`]
/// (the connector and listener, the MRs, the QP, the CQ, the PD); if a
/// close does not finish, the memory is leaked rather than freed under
/// the device.
#[derive(Debug)]
pub struct Side {
    adapter: *mut NDK_ADAPTER,
    pub pd: *mut NDK_PD,
    pub cq: *mut NDK_CQ,
    pub qp: *mut NDK_QP,
    pub buffers: Vec<Buffer>,
    pub listener: *mut NDK_LISTENER,
    pub connector: *mut NDK_CONNECTOR,
    /// The connector's disconnect events.
    pub disconnects: &'static Recorder,
    connected: bool,
}

impl Side {
    /// A PD, rping's CQ and QP on `adapter`.
    pub fn new(adapter: *mut NDK_ADAPTER) -> Result<Self, String> {
        let mut side = Self {
            adapter,
            pd: ptr::null_mut(),
            cq: ptr::null_mut(),
            qp: ptr::null_mut(),
            buffers: Vec::new(),
            listener: ptr::null_mut(),
            connector: ptr::null_mut(),
            disconnects: Recorder::new(),
            connected: false,
        };
        match side.create() {
            Ok(()) => Ok(side),
            Err(e) => {
                side.close();
                Err(e)
            }
        }
    }

    fn create(&mut self) -> Result<(), String> {
        let (adapter, side) = (self.adapter, self);
        let table = adapter_table(adapter);
        let f = table.NdkCreatePd.ok_or("no NdkCreatePd")?;
        let rec = Recorder::new();
        let mut pd = ptr::null_mut();
        // SAFETY: the caller's open adapter, a recorder context and a valid
        // out-pointer.
        let status = unsafe { f(adapter, Some(create_cb), rec.ctx(), &raw mut pd) };
        check(settle(status, rec, "NdkCreatePd")?, "NdkCreatePd")?;
        side.pd = created(pd, rec);
        let f = table.NdkCreateCq.ok_or("no NdkCreateCq")?;
        let rec = Recorder::new();
        let mut cq = ptr::null_mut();
        // SAFETY: as above; the notification context is a recorder that
        // lives for the whole process.
        let status = unsafe {
            f(
                adapter,
                CQ_DEPTH,
                Some(cq_cb),
                Recorder::new().ctx(),
                ptr::null_mut(),
                Some(create_cb),
                rec.ctx(),
                &raw mut cq,
            )
        };
        check(settle(status, rec, "NdkCreateCq")?, "NdkCreateCq")?;
        side.cq = created(cq, rec);
        let f = pd_table(side.pd).NdkCreateQp.ok_or("no NdkCreateQp")?;
        let rec = Recorder::new();
        let mut qp = ptr::null_mut();
        // SAFETY: our PD and CQ, a recorder context, a valid out-pointer.
        let status = unsafe {
            f(
                side.pd,
                side.cq,
                side.cq,
                ptr::null_mut(),
                RECEIVE_DEPTH,
                SEND_DEPTH,
                1,
                1,
                0,
                Some(create_cb),
                rec.ctx(),
                &raw mut qp,
            )
        };
        check(settle(status, rec, "NdkCreateQp")?, "NdkCreateQp")?;
        side.qp = created(qp, rec);
        Ok(())
    }

    /// Registers `len` zeroed bytes with `flags`, described by `mdl`;
    /// returns its index in [`Side::buffers`].
    pub fn register(
        &mut self,
        len: usize,
        flags: u32,
        mdl: &dyn Fn(u64, u32) -> Mdl,
    ) -> Result<usize, String> {
        let pages = Pages::new(len.div_ceil(4096).max(1));
        let mut described = mdl(pages.addr(), len as u32);
        let f = pd_table(self.pd).NdkCreateMr.ok_or("no NdkCreateMr")?;
        let rec = Recorder::new();
        let mut mr = ptr::null_mut();
        // SAFETY: our PD, a recorder context and a valid out-pointer.
        let status = unsafe { f(self.pd, 0, Some(create_cb), rec.ctx(), &raw mut mr) };
        check(settle(status, rec, "NdkCreateMr")?, "NdkCreateMr")?;
        let mr = created(mr, rec);
        let f = mr_table(mr).NdkRegisterMr.ok_or("no NdkRegisterMr")?;
        let rec = Recorder::new();
        // SAFETY: our MR and an MDL over `pages`, which live as long as
        // the registration (the buffer owns both).
        let status = unsafe { f(mr, described.ptr(), len, flags, Some(request_cb), rec.ctx()) };
        if let Err(e) = settle(status, rec, "NdkRegisterMr").and_then(|s| check(s, "NdkRegisterMr"))
        {
            close_wait(mr);
            return Err(e);
        }
        let (local, remote) = mr_tokens(mr);
        self.buffers.push(Buffer {
            mr,
            _mdl: described,
            pages,
            len,
            local,
            remote,
        });
        Ok(self.buffers.len() - 1)
    }

    /// Completions that arrived by now, up to `max`.
    pub fn poll(&self, max: usize) -> Vec<NDK_RESULT_EX> {
        results_ex(self.cq, max)
    }

    /// Connects the QP from `local` to `peer` with rping's read limits and
    /// no private data; waits `limit` for the answer.
    pub fn connect(
        &mut self,
        local: &SockAddr,
        peer: &SockAddr,
        limit: Duration,
    ) -> Result<(), String> {
        let f = adapter_table(self.adapter)
            .NdkCreateConnector
            .ok_or("no NdkCreateConnector")?;
        let rec = Recorder::new();
        let mut c = ptr::null_mut();
        // SAFETY: the caller's open adapter, a recorder context and a valid
        // out-pointer.
        let status = unsafe { f(self.adapter, Some(create_cb), rec.ctx(), &raw mut c) };
        check(
            settle(status, rec, "NdkCreateConnector")?,
            "NdkCreateConnector",
        )?;
        self.connector = created(c, rec);
        let table = connector_table(self.connector);
        let f = table.NdkConnect.ok_or("no NdkConnect")?;
        let done = Recorder::new();
        // SAFETY: our connector and QP; the addresses are read during the
        // call; no private data; a recorder context.
        let status = unsafe {
            f(
                self.connector,
                self.qp,
                local.ptr(),
                local.len(),
                peer.ptr(),
                peer.len(),
                READ_LIMIT,
                READ_LIMIT,
                ptr::null_mut(),
                0,
                Some(request_cb),
                done.ctx(),
            )
        };
        let status = if status == STATUS_PENDING {
            if !wait_for(limit, || done.count() >= 1) {
                return Err(format!("NdkConnect: no answer within {limit:?}"));
            }
            done.statuses()[0]
        } else {
            status
        };
        check(status, "NdkConnect")?;
        let f = table.NdkCompleteConnect.ok_or("no NdkCompleteConnect")?;
        let rec = Recorder::new();
        // SAFETY: our connector; the disconnect context is a recorder that
        // lives for the whole process; a recorder completion context.
        let status = unsafe {
            f(
                self.connector,
                Some(disconnect_cb),
                self.disconnects.ctx(),
                Some(request_cb),
                rec.ctx(),
            )
        };
        check(
            settle(status, rec, "NdkCompleteConnect")?,
            "NdkCompleteConnect",
        )?;
        self.connected = true;
        Ok(())
    }

    /// Listens on `at`; connect requests are recorded by the returned
    /// recorder.
    pub fn listen(&mut self, at: &SockAddr) -> Result<&'static Recorder, String> {
        let f = adapter_table(self.adapter)
            .NdkCreateListener
            .ok_or("no NdkCreateListener")?;
        let events = Recorder::new();
        let rec = Recorder::new();
        let mut l = ptr::null_mut();
        // SAFETY: the caller's open adapter; the connect-event context is
        // a recorder that lives for the whole process; a valid out-pointer.
        let status = unsafe {
            f(
                self.adapter,
                Some(connect_cb),
                events.ctx(),
                Some(create_cb),
                rec.ctx(),
                &raw mut l,
            )
        };
        check(
            settle(status, rec, "NdkCreateListener")?,
            "NdkCreateListener",
        )?;
        self.listener = created(l, rec);
        let f = listener_table(self.listener)
            .NdkListen
            .ok_or("no NdkListen")?;
        let rec = Recorder::new();
        // SAFETY: our listener; the address is read during the call.
        let status = unsafe {
            f(
                self.listener,
                at.ptr(),
                at.len(),
                Some(request_cb),
                rec.ctx(),
            )
        };
        check(settle(status, rec, "NdkListen")?, "NdkListen")?;
        Ok(events)
    }

    /// Accepts `connector` (a connect event's) onto the QP with rping's
    /// read limits and no private data.
    pub fn accept(&mut self, connector: *mut NDK_CONNECTOR) -> Result<(), String> {
        self.connector = connector;
        let f = connector_table(connector).NdkAccept.ok_or("no NdkAccept")?;
        let rec = Recorder::new();
        // SAFETY: the connector the listener handed us and our QP; no
        // private data; recorder contexts that live for the process.
        let status = unsafe {
            f(
                connector,
                self.qp,
                READ_LIMIT,
                READ_LIMIT,
                ptr::null_mut(),
                0,
                Some(disconnect_cb),
                self.disconnects.ctx(),
                Some(request_cb),
                rec.ctx(),
            )
        };
        check(settle(status, rec, "NdkAccept")?, "NdkAccept")?;
        self.connected = true;
        Ok(())
    }

    /// The peer disconnected (or the connection broke).
    pub fn peer_left(&self) -> bool {
        self.disconnects.count() > 0
    }

    /// `NdkDisconnect` (rping_disconnect), once.
    pub fn disconnect(&mut self) -> Result<(), String> {
        if !std::mem::take(&mut self.connected) {
            return Ok(());
        }
        let f = connector_table(self.connector)
            .NdkDisconnect
            .ok_or("no NdkDisconnect")?;
        let rec = Recorder::new();
        // SAFETY: our connected connector and a recorder context.
        let status = unsafe { f(self.connector, Some(request_cb), rec.ctx()) };
        check(settle(status, rec, "NdkDisconnect")?, "NdkDisconnect")
    }

    /// Closes everything (disconnecting first if still connected).
    pub fn close(mut self) {
        let _ = self.disconnect();
        let mut clean = close_wait(self.connector) && close_wait(self.listener);
        for b in &self.buffers {
            if let Some(f) = mr_table(b.mr).NdkDeregisterMr {
                let rec = Recorder::new();
                // SAFETY: our registered MR and a recorder context.
                let status = unsafe { f(b.mr, Some(request_cb), rec.ctx()) };
                clean &= matches!(settle(status, rec, "NdkDeregisterMr"), Ok(STATUS_SUCCESS));
            }
            clean &= close_wait(b.mr);
        }
        clean = clean && close_wait(self.qp) && close_wait(self.cq) && close_wait(self.pd);
        if !clean {
            // The device may still reach the buffers: never free them.
            std::mem::forget(std::mem::take(&mut self.buffers));
        }
    }
}

/// The object a create made: its out-pointer, or the one its pending
/// completion handed over.
fn created<T>(out: *mut T, rec: &Recorder) -> *mut T {
    match rec.calls().first() {
        Some(call) if call.object != 0 => call.object as *mut T,
        _ => out,
    }
}
