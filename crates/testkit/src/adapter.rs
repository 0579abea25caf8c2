//! The adapter-level harness of rsndk's consumer-level tests: an adapter
//! opened over a scripted device, the software RNIC or the bottled driver
//! ([`Env`], in `env`), address builders ([`SockAddr`]), and one thin
//! wrapper per NDK dispatch entry, with the kit's backend macro, callback
//! recorders and MDL builders re-exported, so that a test module needs
//! one `use testkit::adapter::*;`. Every wrapper goes through the object's
//! dispatch table, exactly as a kernel consumer calls it.
//!
//! Users: the provider's suite (`crates/provider/tests/suite`), the
//! root's `rnic`, `abi` and `bottle` tests and the `post_send` bench.
//! Its process-wide state (the address and port counters, the context
//! numbers of [`Env::qp_setup`]) exists once per test binary, as this
//! crate is linked once into each.
//!
//! The wrappers take the raw object pointers the provider handed out,
//! as a kernel consumer holds them; an invalid one is the calling test's
//! bug, so they are safe functions (hence the module's
//! `not_unsafe_ptr_arg_deref` allowance).

#![allow(clippy::not_unsafe_ptr_arg_deref)]

use std::ptr;

use ndkpi::{
    AF_INET, AF_INET6, IN_ADDR, IN6_ADDR, NDK_ADAPTER, NDK_ADAPTER_DISPATCH, NDK_CONNECTOR,
    NDK_CONNECTOR_DISPATCH, NDK_CQ, NDK_CQ_DISPATCH, NDK_FN_CLOSE_OBJECT, NDK_FN_READ,
    NDK_FN_SRQ_NOTIFICATION_CALLBACK, NDK_LISTENER, NDK_LISTENER_DISPATCH, NDK_LOGICAL_ADDRESS,
    NDK_MR, NDK_MR_DISPATCH, NDK_MW, NDK_MW_DISPATCH, NDK_OBJECT_HEADER, NDK_PD, NDK_PD_DISPATCH,
    NDK_QP, NDK_QP_DISPATCH, NDK_RESULT, NDK_RESULT_EX, NDK_SGE, NDK_SHARED_ENDPOINT,
    NDK_SHARED_ENDPOINT_DISPATCH, NDK_SRQ, NDK_SRQ_DISPATCH, NTSTATUS, PSOCKADDR, PVOID,
    SOCKADDR_IN, SOCKADDR_IN6, STATUS_PENDING, STATUS_SUCCESS,
};

use crate::scripted::ADDR_V4;

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
pub mod bottle;
mod env;
pub use crate::backend::Backend;
pub use crate::backend_tests;
pub use crate::dma::*;
pub use crate::recorder::*;
pub use env::*;

// ---------------------------------------------------------------- tables

macro_rules! table {
    ($name:ident, $obj:ty, $table:ty) => {
        /// The dispatch table of a live object of this kind.
        pub fn $name(object: *mut $obj) -> &'static $table {
            assert!(!object.is_null());
            // SAFETY: a live object the provider handed out.
            let table = unsafe { (*object).Dispatch };
            // SAFETY: dispatch tables are the provider's statics.
            unsafe { &*table }
        }
    };
}

table!(adapter_table, NDK_ADAPTER, NDK_ADAPTER_DISPATCH);
table!(pd_table, NDK_PD, NDK_PD_DISPATCH);
table!(cq_table, NDK_CQ, NDK_CQ_DISPATCH);
table!(mr_table, NDK_MR, NDK_MR_DISPATCH);
table!(mw_table, NDK_MW, NDK_MW_DISPATCH);
table!(srq_table, NDK_SRQ, NDK_SRQ_DISPATCH);
table!(qp_table, NDK_QP, NDK_QP_DISPATCH);
table!(connector_table, NDK_CONNECTOR, NDK_CONNECTOR_DISPATCH);
table!(listener_table, NDK_LISTENER, NDK_LISTENER_DISPATCH);
table!(
    endpoint_table,
    NDK_SHARED_ENDPOINT,
    NDK_SHARED_ENDPOINT_DISPATCH
);

/// The object's header, as the close and invalidate entries take it.
pub fn header<T>(object: *mut T) -> *mut NDK_OBJECT_HEADER {
    object.cast()
}

/// Reads an object's header.
pub fn read_header<T>(object: *mut T) -> NDK_OBJECT_HEADER {
    // SAFETY: a live object of the provider; the header is its first field.
    unsafe { object.cast::<NDK_OBJECT_HEADER>().read() }
}

// ---------------------------------------------------------------- closes

/// Closes any object through its table's close entry, with a recorder for
/// the completion.
pub fn close<T>(object: *mut T, rec: &Recorder) -> NTSTATUS {
    // Every table starts with its close entry.
    // SAFETY: a live object; its dispatch pointer follows the header.
    let table = unsafe {
        object
            .wrapping_byte_add(size_of::<NDK_OBJECT_HEADER>())
            .cast::<*const NDK_FN_CLOSE_OBJECT>()
            .read()
    };
    // SAFETY: the provider's static table; its first slot is the close.
    let f = unsafe { table.read() }.unwrap();
    // SAFETY: closing our object once.
    unsafe { f(header(object), Some(close_cb), rec.ctx()) }
}

/// Closes and expects synchronous success. On the RNIC (see
/// [`device_is_async`]) a close may also pend while one of the object's
/// callbacks is still returning on a device thread (the recorder saw the
/// call, the provider not yet its return): then its one completion must
/// follow.
pub fn close_now<T>(object: *mut T) {
    let rec = Recorder::new();
    let status = close(object, rec);
    if status == STATUS_PENDING && device_is_async() {
        wait_until("close completion", || rec.count() >= 1);
        assert_eq!(rec.statuses(), vec![0], "one close completion");
        return;
    }
    assert_eq!(status, STATUS_SUCCESS);
    assert_eq!(rec.count(), 0, "no callback for a synchronous close");
}

// ---------------------------------------------------------------- PD children

/// `NdkCreateQp` on `pd` (synchronous completion expected): the QP or the refusal.
pub fn create_qp(
    pd: *mut NDK_PD,
    rcq: *mut NDK_CQ,
    icq: *mut NDK_CQ,
    context: usize,
    receive_depth: u32,
    initiator_depth: u32,
    receive_sge: u32,
    initiator_sge: u32,
    inline: u32,
) -> Result<*mut NDK_QP, NTSTATUS> {
    let mut qp = ptr::null_mut();
    let f = pd_table(pd).NdkCreateQp.unwrap();
    // SAFETY: our PD and CQs, a valid out-pointer.
    let status = unsafe {
        f(
            pd,
            rcq,
            icq,
            context as PVOID,
            receive_depth,
            initiator_depth,
            receive_sge,
            initiator_sge,
            inline,
            Some(create_cb),
            ptr::null_mut(),
            &raw mut qp,
        )
    };
    if status == STATUS_SUCCESS {
        Ok(qp)
    } else {
        Err(status)
    }
}

/// `NdkCreateQpWithSrq` on `pd`, one CQ for both directions, receives from `srq`.
pub fn create_qp_with_srq(
    pd: *mut NDK_PD,
    cq: *mut NDK_CQ,
    srq: *mut NDK_SRQ,
    context: usize,
    depth: u32,
    sge: u32,
) -> Result<*mut NDK_QP, NTSTATUS> {
    let mut qp = ptr::null_mut();
    let f = pd_table(pd).NdkCreateQpWithSrq.unwrap();
    // SAFETY: our PD, CQ and SRQ, a valid out-pointer.
    let status = unsafe {
        f(
            pd,
            cq,
            cq,
            srq,
            context as PVOID,
            depth,
            sge,
            0,
            Some(create_cb),
            ptr::null_mut(),
            &raw mut qp,
        )
    };
    if status == STATUS_SUCCESS {
        Ok(qp)
    } else {
        Err(status)
    }
}

/// `NdkCreateMr` on `pd` (`fast`: for fast registration); must succeed.
pub fn create_mr(pd: *mut NDK_PD, fast: bool) -> *mut NDK_MR {
    let mut mr = ptr::null_mut();
    let f = pd_table(pd).NdkCreateMr.unwrap();
    // SAFETY: our PD and a valid out-pointer.
    let status = unsafe {
        f(
            pd,
            u8::from(fast),
            Some(create_cb),
            ptr::null_mut(),
            &raw mut mr,
        )
    };
    assert_eq!(status, STATUS_SUCCESS);
    mr
}

/// `NdkCreateMw` on `pd`; must succeed.
pub fn create_mw(pd: *mut NDK_PD) -> *mut NDK_MW {
    let mut mw = ptr::null_mut();
    let f = pd_table(pd).NdkCreateMw.unwrap();
    // SAFETY: our PD and a valid out-pointer.
    let status = unsafe { f(pd, Some(create_cb), ptr::null_mut(), &raw mut mw) };
    assert_eq!(status, STATUS_SUCCESS);
    mw
}

/// `NdkCreateSrq` on `pd`, its limit notifications recorded by `notify` if given.
pub fn try_create_srq(
    pd: *mut NDK_PD,
    depth: u32,
    sge: u32,
    threshold: u32,
    notify: Option<&Recorder>,
) -> Result<*mut NDK_SRQ, NTSTATUS> {
    let mut srq = ptr::null_mut();
    let f = pd_table(pd).NdkCreateSrq.unwrap();
    let (cb, ctx): (NDK_FN_SRQ_NOTIFICATION_CALLBACK, PVOID) = match notify {
        Some(r) => (Some(srq_cb), r.ctx()),
        None => (None, ptr::null_mut()),
    };
    // SAFETY: our PD and a valid out-pointer.
    let status = unsafe {
        f(
            pd,
            depth,
            sge,
            threshold,
            cb,
            ctx,
            ptr::null_mut(),
            Some(create_cb),
            ptr::null_mut(),
            &raw mut srq,
        )
    };
    if status == STATUS_SUCCESS {
        Ok(srq)
    } else {
        Err(status)
    }
}

/// `NdkGetPrivilegedMemoryRegionToken` of `pd`.
pub fn privileged_token(pd: *mut NDK_PD) -> u32 {
    let mut token = 0;
    let f = pd_table(pd).NdkGetPrivilegedMemoryRegionToken.unwrap();
    // SAFETY: our PD and a valid out-pointer.
    unsafe { f(pd, &raw mut token) };
    token
}

// ---------------------------------------------------------------- MR / MW

/// `NdkRegisterMr` of `length` bytes of `mdl`'s chain with `flags`.
pub fn register_mr(mr: *mut NDK_MR, mdl: &mut Mdl, length: usize, flags: u32) -> NTSTATUS {
    let f = mr_table(mr).NdkRegisterMr.unwrap();
    // SAFETY: our MR and a valid MDL chain.
    unsafe {
        f(
            mr,
            mdl.ptr(),
            length,
            flags,
            Some(request_cb),
            ptr::null_mut(),
        )
    }
}

/// `NdkDeregisterMr`.
pub fn deregister_mr(mr: *mut NDK_MR) -> NTSTATUS {
    let f = mr_table(mr).NdkDeregisterMr.unwrap();
    // SAFETY: our MR.
    unsafe { f(mr, Some(request_cb), ptr::null_mut()) }
}

/// `NdkInitializeFastRegisterMr` for `pages` pages (`remote`: remotely accessible).
pub fn init_fast_register(mr: *mut NDK_MR, pages: u32, remote: bool) -> NTSTATUS {
    let f = mr_table(mr).NdkInitializeFastRegisterMr.unwrap();
    // SAFETY: our MR.
    unsafe {
        f(
            mr,
            pages,
            u8::from(remote),
            Some(request_cb),
            ptr::null_mut(),
        )
    }
}

/// `NdkGetLocalTokenFromMr` and `NdkGetRemoteTokenFromMr`: (local, remote).
pub fn mr_tokens(mr: *mut NDK_MR) -> (u32, u32) {
    let t = mr_table(mr);
    // SAFETY: our MR.
    let local = unsafe { t.NdkGetLocalTokenFromMr.unwrap()(mr) };
    // SAFETY: our MR.
    let remote = unsafe { t.NdkGetRemoteTokenFromMr.unwrap()(mr) };
    (local, remote)
}

/// `NdkGetRemoteTokenFromMw`.
pub fn mw_token(mw: *mut NDK_MW) -> u32 {
    // SAFETY: our MW.
    unsafe { mw_table(mw).NdkGetRemoteTokenFromMw.unwrap()(mw) }
}

/// A registered regular MR over `buf` with `flags`.
pub fn registered_mr(pd: *mut NDK_PD, buf: &[u8], flags: u32) -> (*mut NDK_MR, Mdl) {
    let mr = create_mr(pd, false);
    let mut mdl = Mdl::new(buf.as_ptr() as u64, buf.len() as u32);
    assert_eq!(register_mr(mr, &mut mdl, buf.len(), flags), STATUS_SUCCESS);
    (mr, mdl)
}

// ---------------------------------------------------------------- QP posts

/// `NdkSend` of `sges` with request context `ctx`.
pub fn send(qp: *mut NDK_QP, ctx: usize, sges: &[NDK_SGE], flags: u32) -> NTSTATUS {
    let f = qp_table(qp).NdkSend.unwrap();
    // SAFETY: our QP and SGE array.
    unsafe { f(qp, ctx as PVOID, sges.as_ptr(), sges.len() as u32, flags) }
}

/// `NdkSendAndInvalidate`: a SEND that invalidates the peer's `token`.
pub fn send_and_invalidate(
    qp: *mut NDK_QP,
    ctx: usize,
    sges: &[NDK_SGE],
    flags: u32,
    token: u32,
) -> NTSTATUS {
    let f = qp_table(qp).NdkSendAndInvalidate.unwrap();
    // SAFETY: our QP and SGE array.
    unsafe {
        f(
            qp,
            ctx as PVOID,
            sges.as_ptr(),
            sges.len() as u32,
            flags,
            token,
        )
    }
}

/// Posts an RDMA operation through `entry` (NdkRead and NdkWrite share
/// one signature).
fn rdma(
    entry: NDK_FN_READ,
    qp: *mut NDK_QP,
    ctx: usize,
    sges: &[NDK_SGE],
    addr: u64,
    token: u32,
    flags: u32,
) -> NTSTATUS {
    let f = entry.unwrap();
    // SAFETY: our QP and SGE array.
    unsafe {
        f(
            qp,
            ctx as PVOID,
            sges.as_ptr(),
            sges.len() as u32,
            addr,
            token,
            flags,
        )
    }
}

/// `NdkWrite` of `sges` to the peer's `addr` under `token`.
pub fn write(
    qp: *mut NDK_QP,
    ctx: usize,
    sges: &[NDK_SGE],
    addr: u64,
    token: u32,
    flags: u32,
) -> NTSTATUS {
    rdma(qp_table(qp).NdkWrite, qp, ctx, sges, addr, token, flags)
}

/// `NdkRead` from the peer's `addr` under `token` into `sges`.
pub fn read(
    qp: *mut NDK_QP,
    ctx: usize,
    sges: &[NDK_SGE],
    addr: u64,
    token: u32,
    flags: u32,
) -> NTSTATUS {
    rdma(qp_table(qp).NdkRead, qp, ctx, sges, addr, token, flags)
}

/// `NdkReceive` of `sges` with request context `ctx`.
pub fn receive(qp: *mut NDK_QP, ctx: usize, sges: &[NDK_SGE]) -> NTSTATUS {
    let f = qp_table(qp).NdkReceive.unwrap();
    // SAFETY: our QP and SGE array.
    unsafe { f(qp, ctx as PVOID, sges.as_ptr(), sges.len() as u32) }
}

/// `NdkSrqReceive` of `sges` with request context `ctx`.
pub fn srq_receive(srq: *mut NDK_SRQ, ctx: usize, sges: &[NDK_SGE]) -> NTSTATUS {
    let f = srq_table(srq).NdkSrqReceive.unwrap();
    // SAFETY: our SRQ and SGE array.
    unsafe { f(srq, ctx as PVOID, sges.as_ptr(), sges.len() as u32) }
}

/// `NdkModifySrq` to `depth` entries and limit `threshold`.
pub fn modify_srq(srq: *mut NDK_SRQ, depth: u32, threshold: u32) -> NTSTATUS {
    let f = srq_table(srq).NdkModifySrq.unwrap();
    // SAFETY: our SRQ.
    unsafe { f(srq, depth, threshold, Some(request_cb), ptr::null_mut()) }
}

/// `NdkFastRegister` of `mr` over `pages` at `va` (first byte offset `fbo`).
pub fn fast_register(
    qp: *mut NDK_QP,
    ctx: usize,
    mr: *mut NDK_MR,
    pages: &[NDK_LOGICAL_ADDRESS],
    fbo: u32,
    length: usize,
    va: u64,
    flags: u32,
) -> NTSTATUS {
    let f = qp_table(qp).NdkFastRegister.unwrap();
    // SAFETY: our QP and MR, a page array of `pages.len()` entries.
    unsafe {
        f(
            qp,
            ctx as PVOID,
            mr,
            pages.len() as u32,
            pages.as_ptr(),
            fbo,
            length,
            va as PVOID,
            flags,
        )
    }
}

/// `NdkBind` of `mw` to `length` bytes of `mr` at `va`.
pub fn bind(
    qp: *mut NDK_QP,
    ctx: usize,
    mr: *mut NDK_MR,
    mw: *mut NDK_MW,
    va: u64,
    length: usize,
    flags: u32,
) -> NTSTATUS {
    let f = qp_table(qp).NdkBind.unwrap();
    // SAFETY: our QP, MR and MW.
    unsafe { f(qp, ctx as PVOID, mr, mw, va as PVOID, length, flags) }
}

/// `NdkInvalidate` of an MR or MW of ours (`object`).
pub fn invalidate<T>(qp: *mut NDK_QP, ctx: usize, object: *mut T, flags: u32) -> NTSTATUS {
    let f = qp_table(qp).NdkInvalidate.unwrap();
    // SAFETY: our QP and an MR or MW of ours.
    unsafe { f(qp, ctx as PVOID, header(object), flags) }
}

/// `NdkFlush` of the QP's queues.
pub fn flush(qp: *mut NDK_QP) {
    let f = qp_table(qp).NdkFlush.unwrap();
    // SAFETY: our QP.
    unsafe { f(qp) };
}

/// An SGE of `length` bytes at `va` under `token`.
pub fn sge(va: u64, length: u32, token: u32) -> NDK_SGE {
    NDK_SGE::with_virtual_address(va as PVOID, length, token)
}

// ---------------------------------------------------------------- CQ

/// `NdkArmCq` for notifications of `kind`.
pub fn arm(cq: *mut NDK_CQ, kind: u32) {
    let f = cq_table(cq).NdkArmCq.unwrap();
    // SAFETY: our CQ.
    unsafe { f(cq, kind) };
}

/// `NdkGetCqResults`: up to `max` results.
pub fn results(cq: *mut NDK_CQ, max: usize) -> Vec<NDK_RESULT> {
    let mut out = vec![NDK_RESULT::default(); max];
    let f = cq_table(cq).NdkGetCqResults.unwrap();
    // SAFETY: our CQ and an array of `max` results.
    let n = unsafe { f(cq, out.as_mut_ptr(), max as u32) };
    out.truncate(n as usize);
    out
}

/// `NdkGetCqResultsEx`: up to `max` extended results.
pub fn results_ex(cq: *mut NDK_CQ, max: usize) -> Vec<NDK_RESULT_EX> {
    let mut out = vec![NDK_RESULT_EX::default(); max];
    let f = cq_table(cq).NdkGetCqResultsEx.unwrap();
    // SAFETY: our CQ and an array of `max` results.
    let n = unsafe { f(cq, out.as_mut_ptr(), max as u32) };
    out.truncate(n as usize);
    out
}

/// `NdkResizeCq` to `depth` entries.
pub fn resize_cq(cq: *mut NDK_CQ, depth: u32) -> NTSTATUS {
    let f = cq_table(cq).NdkResizeCq.unwrap();
    // SAFETY: our CQ.
    unsafe { f(cq, depth, Some(request_cb), ptr::null_mut()) }
}

/// `NdkControlCqInterruptModeration`.
pub fn moderate(cq: *mut NDK_CQ, interval: u32, count: u32) -> NTSTATUS {
    let f = cq_table(cq).NdkControlCqInterruptModeration.unwrap();
    // SAFETY: our CQ.
    unsafe { f(cq, interval, count) }
}

// ---------------------------------------------------------------- addresses

/// A Windows socket address (v4 or v6) with its length.
#[derive(Clone, Copy, Debug)]
pub enum SockAddr {
    /// An IPv4 socket address.
    V4(SOCKADDR_IN),
    /// An IPv6 socket address.
    V6(SOCKADDR_IN6),
}

impl SockAddr {
    /// `ip`:`port` (IPv4).
    pub fn v4(ip: [u8; 4], port: u16) -> Self {
        Self::V4(SOCKADDR_IN {
            sin_family: AF_INET,
            sin_port: port.to_be(),
            sin_addr: IN_ADDR::new(ip),
            sin_zero: [0; 8],
        })
    }

    /// The scripted device's IPv4 address at `port`.
    pub fn device(port: u16) -> Self {
        Self::v4(ADDR_V4.octets(), port)
    }

    /// The socket address of `ip` (either family) and `port`.
    pub fn ip(ip: std::net::IpAddr, port: u16) -> Self {
        match ip {
            std::net::IpAddr::V4(v4) => Self::v4(v4.octets(), port),
            std::net::IpAddr::V6(v6) => Self::v6(v6.octets(), port),
        }
    }

    /// `[ip]`:`port` (IPv6).
    pub fn v6(ip: [u8; 16], port: u16) -> Self {
        Self::V6(SOCKADDR_IN6 {
            sin6_family: AF_INET6,
            sin6_port: port.to_be(),
            sin6_flowinfo: 0,
            sin6_addr: IN6_ADDR { u: ip },
            sin6_scope_id: 0,
        })
    }

    /// The address as the NDK entries take it.
    pub fn ptr(&self) -> PSOCKADDR {
        match self {
            Self::V4(a) => ptr::from_ref(a).cast_mut().cast(),
            Self::V6(a) => ptr::from_ref(a).cast_mut().cast(),
        }
    }

    /// Its length in bytes, as the NDK entries take it.
    // A socket address is never empty.
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> u32 {
        match self {
            Self::V4(_) => size_of::<SOCKADDR_IN>() as u32,
            Self::V6(_) => size_of::<SOCKADDR_IN6>() as u32,
        }
    }
}

/// Port of a SOCKADDR_IN written by the provider.
pub fn port_of(buf: &[u8]) -> u16 {
    u16::from_be_bytes([buf[2], buf[3]])
}

// ---------------------------------------------------------------- connections

/// `NdkListen` at `addr`.
pub fn listen(l: *mut NDK_LISTENER, addr: &SockAddr) -> NTSTATUS {
    let f = listener_table(l).NdkListen.unwrap();
    // SAFETY: our listener and address.
    unsafe { f(l, addr.ptr(), addr.len(), Some(request_cb), ptr::null_mut()) }
}

/// `NdkConnect` of `qp` from `src` to `dst` with private `data` (8 reads each way), completion recorded by `done`.
pub fn connect(
    c: *mut NDK_CONNECTOR,
    qp: *mut NDK_QP,
    src: &SockAddr,
    dst: &SockAddr,
    data: &[u8],
    done: &Recorder,
) -> NTSTATUS {
    let f = connector_table(c).NdkConnect.unwrap();
    // SAFETY: our connector and QP, valid addresses and private data.
    unsafe {
        f(
            c,
            qp,
            src.ptr(),
            src.len(),
            dst.ptr(),
            dst.len(),
            8,
            8,
            data.as_ptr().cast_mut().cast(),
            data.len() as u32,
            Some(request_cb),
            done.ctx(),
        )
    }
}

/// `NdkAccept` on `qp` with private `data`, disconnects recorded by `disc`, completion by `done`.
pub fn accept(
    c: *mut NDK_CONNECTOR,
    qp: *mut NDK_QP,
    data: &[u8],
    disc: &Recorder,
    done: &Recorder,
) -> NTSTATUS {
    let f = connector_table(c).NdkAccept.unwrap();
    // SAFETY: our connector and QP, valid private data.
    unsafe {
        f(
            c,
            qp,
            8,
            8,
            data.as_ptr().cast_mut().cast(),
            data.len() as u32,
            Some(disconnect_cb),
            disc.ctx(),
            Some(request_cb),
            done.ctx(),
        )
    }
}

/// `NdkCompleteConnect`, disconnects recorded by `disc`.
pub fn complete_connect(c: *mut NDK_CONNECTOR, disc: &Recorder) -> NTSTATUS {
    let f = connector_table(c).NdkCompleteConnect.unwrap();
    // SAFETY: our connector.
    unsafe {
        f(
            c,
            Some(disconnect_cb),
            disc.ctx(),
            Some(request_cb),
            ptr::null_mut(),
        )
    }
}

/// `NdkAcceptEx` (NDKPI 2.1 adapters): as [`accept`], with the extended
/// disconnect callback recording reasons in `disc`.
pub fn accept_ex(
    c: *mut NDK_CONNECTOR,
    qp: *mut NDK_QP,
    data: &[u8],
    disc: &Recorder,
    done: &Recorder,
) -> NTSTATUS {
    let f = connector_table(c).NdkAcceptEx.unwrap();
    // SAFETY: our connector and QP, valid private data.
    unsafe {
        f(
            c,
            qp,
            8,
            8,
            data.as_ptr().cast_mut().cast(),
            data.len() as u32,
            Some(disconnect_ex_cb),
            disc.ctx(),
            Some(request_cb),
            done.ctx(),
        )
    }
}

/// `NdkCompleteConnectEx` (NDKPI 2.1 adapters): as [`complete_connect`],
/// with the extended disconnect callback recording reasons in `disc`.
pub fn complete_connect_ex(c: *mut NDK_CONNECTOR, disc: &Recorder) -> NTSTATUS {
    let f = connector_table(c).NdkCompleteConnectEx.unwrap();
    // SAFETY: our connector.
    unsafe {
        f(
            c,
            Some(disconnect_ex_cb),
            disc.ctx(),
            Some(request_cb),
            ptr::null_mut(),
        )
    }
}

/// `NdkDisconnect`, completion recorded by `done`.
pub fn disconnect(c: *mut NDK_CONNECTOR, done: &Recorder) -> NTSTATUS {
    let f = connector_table(c).NdkDisconnect.unwrap();
    // SAFETY: our connector.
    unsafe { f(c, Some(request_cb), done.ctx()) }
}

/// `NdkReject` with private `data`.
pub fn reject(c: *mut NDK_CONNECTOR, data: &[u8]) -> NTSTATUS {
    let f = connector_table(c).NdkReject.unwrap();
    // SAFETY: our connector and private data.
    unsafe { f(c, data.as_ptr().cast_mut().cast(), data.len() as u32) }
}

// ---------------------------------------------------------------- captures

/// Runs tshark on capture `file` with `extra` arguments (RPC-over-RDMA's
/// heuristic off: it mislabels SEND payloads); its output lines.
pub fn tshark(file: &str, extra: &[&str]) -> Vec<String> {
    let mut cmd = std::process::Command::new("tshark");
    cmd.args(["-r", file, "--disable-heuristic", "rpcrdma_infiniband"])
        .args(extra);
    let out = match cmd.output() {
        Ok(o) => o,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => panic!(
            "tshark is not installed: install it (e.g. `apt-get install tshark`; CI installs it) \
             to run the capture decoding test"
        ),
        Err(e) => panic!("cannot run tshark: {e}"),
    };
    assert!(
        out.status.success(),
        "tshark failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}
