//! One test per defect an independent review of the driver shell
//! (`src/driver/`) found, each run on the real `rsndk.sys` in the bottle
//! and each failing on the image without its fix:
//!
//! 1. `Engine::stop` cancelled the timer before waiting out a running
//!    engine DPC, which then armed it again; the engine was freed with an
//!    armed timer (0xC4/0x15): [`timer_not_armed_after_stop`].
//! 2. The engine DPC requeued itself back to back under load (DPC
//!    watchdog 0x133, parameter 1 = 1):
//!    [`sustained_traffic_never_holds_a_processor_at_dispatch`], which also
//!    checks that the PASSIVE_LEVEL continuation taking its place does not
//!    hold a system worker thread for as long as the traffic lasts.
//! 3. Device commands ran at the consumer's PASSIVE_LEVEL holding a
//!    device spin lock while the engine DPC they queued preempted them and
//!    spun on it (0x133, parameter 1 = 0):
//!    [`flush_at_passive_does_not_deadlock_on_the_engine_dpc`].
//! 4. IRQL by writing CR8 (a trap in the bottle), and APC_LEVEL callers
//!    sent back at PASSIVE_LEVEL:
//!    [`consumer_call_at_apc_level_returns_at_apc_level`],
//!    [`image_never_touches_cr8`].
//! 5. Mapping MDLs freed with `MDL_PAGES_LOCKED` still set (0xCB):
//!    [`dma_then_halt_and_unload_leave_no_locked_mdl`].
//!
//! Each test that boots, halts, unloads or may bugcheck runs in a child
//! process with a machine of its own (kernel state is process-global; a
//! bugcheck aborts the child, whose report then fails the parent).

use std::net::Ipv4Addr;
use std::ptr;
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

use ::object::read::{Object, ObjectSection, SectionFlags};
use kbottle::Machine;
use kbottle::machine::{AdapterId, Keyword};
use kbottle::ndis::types::{NetEventNDKDisable, NetEventNDKEnable, OID_NDK_SET_STATE};
use kbottle::{cpu, ke, mm, verifier};
use ndkpi::*;

use crate::common::{
    READY, child_passes, fresh_address, give_address, image, is_child, keywords, ndk_enabled,
};
use crate::ndk::{Ndk, close_wait};
use testkit::adapter::*;

/// The NDK version the tests open.
const VERSION: NDK_VERSION = NDK_VERSION_1_2;

/// This child's machine.
pub(crate) fn boot() -> Machine {
    Machine::boot(&image()).unwrap_or_else(|e| panic!("boot {}: {e}", image().display()))
}

/// A new V of `machine` (this child's; its addresses are the child's own
/// block) on the default segment, NDK enabled, at a fresh address the
/// driver serves.
pub(crate) fn add_adapter(machine: &Machine) -> (AdapterId, Ipv4Addr) {
    add_adapter_framed(machine, None)
}

/// [`add_adapter`] with `*NetworkDirectRoCEFrameSize` = `frame` if given.
fn add_adapter_framed(machine: &Machine, frame: Option<u32>) -> (AdapterId, Ipv4Addr) {
    let ip = fresh_address();
    let mut kw = keywords();
    if let Some(frame) = frame {
        kw.push(("*NetworkDirectRoCEFrameSize", Keyword::Int(frame)));
    }
    let id = machine
        .add_adapter(&kw)
        .unwrap_or_else(|s| panic!("adapter for {ip}: {:#010x}", s as u32));
    assert!(ndk_enabled(machine, id), "V for {ip} has NDK disabled");
    give_address(machine, id, ip.into());
    (id, ip)
}

/// Unloads `machine` and fails unless it left nothing behind.
pub(crate) fn unload_clean(machine: Machine) {
    let report = machine.unload();
    assert!(report.is_clean(), "the driver left: {report}");
}

// ---------------------------------------------------------------- NDK

/// One open NDK adapter of a bottled adapter.
pub(crate) type Nic = Ndk;

/// Opens an NDK adapter on bottled adapter `id` of `machine`.
pub(crate) fn open_nic(machine: &Machine, id: AdapterId, ip: Ipv4Addr) -> Nic {
    let adapter = machine
        .open_ndk(id, VERSION)
        .unwrap_or_else(|s| panic!("open NDK at {ip}: {:#010x}", s as u32));
    Ndk {
        adapter,
        ip,
        bottled: true,
    }
}

/// A PD, one CQ for both directions and a QP.
#[derive(Clone, Copy)]
pub(crate) struct Queue {
    pub(crate) pd: *mut NDK_PD,
    pub(crate) cq: *mut NDK_CQ,
    pub(crate) qp: *mut NDK_QP,
    /// The PD's privileged token: local SGEs name logical addresses.
    pub(crate) token: u32,
}

impl Queue {
    pub(crate) fn new(nic: &Nic, depth: u32, notify: &Recorder) -> Self {
        let pd = nic.create_pd();
        let cq = nic.create_cq(4 * depth, notify);
        let qp = create_qp(pd, cq, cq, 0x0def, depth, depth, 4, 4, 0).expect("NdkCreateQp");
        Self {
            pd,
            cq,
            qp,
            token: privileged_token(pd),
        }
    }

    pub(crate) fn close(self) {
        close_wait(self.qp);
        close_wait(self.cq);
        close_wait(self.pd);
    }
}

/// Bytes one MDL of a registration describes at most.
const MDL_BYTES: usize = 8 << 20;

/// Bottle memory a bottled adapter reaches by DMA: leaked, so the device
/// may touch it until the end of the process whatever a failing test
/// leaves running.
#[derive(Clone, Copy)]
pub(crate) struct Buffer {
    pub(crate) va: usize,
    len: usize,
}

impl Buffer {
    pub(crate) fn new(len: usize, fill: u8) -> Self {
        let bytes: &'static mut [u8] = Box::leak(vec![fill; len].into_boxed_slice());
        Self {
            va: bytes.as_mut_ptr() as usize,
            len,
        }
    }

    /// A local SGE: the logical (physical, in the bottle's model) address
    /// with the PD's privileged token.
    pub(crate) fn local(&self, offset: usize, len: usize, token: u32) -> NDK_SGE {
        assert!(offset + len <= self.len);
        sge(mm::phys_of(self.va + offset), len as u32, token)
    }

    pub(crate) fn bytes(&self) -> Vec<u8> {
        // SAFETY: the leaked buffer; read after the completions that wrote it.
        unsafe { std::slice::from_raw_parts(self.va as *const u8, self.len) }.to_vec()
    }

    /// Registers the buffer with `pd` for remote access: its MR and remote
    /// token (the remote address is `va`, the MDL's virtual address). The
    /// buffer is described by a chain of MDLs of at most [`MDL_BYTES`]
    /// each (an MDL's `Size` is a `CSHORT`).
    fn register(&self, pd: *mut NDK_PD) -> (*mut NDK_MR, u32) {
        let mr = create_mr(pd, false);
        // Leaked with the buffer: the registration names its pages.
        let mut parts: Vec<mm::OwnedMdl> = (0..self.len.div_ceil(MDL_BYTES))
            .map(|k| {
                let at = k * MDL_BYTES;
                let len = MDL_BYTES.min(self.len - at);
                mm::OwnedMdl::describe((self.va + at) as *mut u8, len)
            })
            .collect();
        for k in (1..parts.len()).rev() {
            let next = parts[k].as_ptr();
            parts[k - 1].set_next(next);
        }
        let mdl: &'static mm::OwnedMdl = &Vec::leak(parts)[0];
        let flags = NDK_MR_FLAG_ALLOW_LOCAL_WRITE
            | NDK_MR_FLAG_ALLOW_REMOTE_READ
            | NDK_MR_FLAG_ALLOW_REMOTE_WRITE;
        let f = mr_table(mr).NdkRegisterMr.unwrap();
        let done = Recorder::new();
        // SAFETY: our MR and an MDL describing the whole buffer.
        let status = unsafe {
            f(
                mr,
                mdl.as_ptr(),
                self.len,
                flags,
                Some(request_cb),
                done.ctx(),
            )
        };
        if status == STATUS_PENDING {
            wait_until("NdkRegisterMr", || done.count() >= 1);
            assert_eq!(done.statuses(), vec![STATUS_SUCCESS], "NdkRegisterMr");
        } else {
            assert_eq!(status, STATUS_SUCCESS, "NdkRegisterMr");
        }
        (mr, mr_tokens(mr).1)
    }
}

/// A connection from QP `a` (of `from`) to QP `b` (of `to`).
pub(crate) struct Connection {
    listener: *mut NDK_LISTENER,
    active: *mut NDK_CONNECTOR,
    passive: *mut NDK_CONNECTOR,
}

impl Connection {
    fn new(from: &Nic, a: *mut NDK_QP, to: &Nic, b: *mut NDK_QP, port: u16) -> Self {
        let listen_events = Recorder::new();
        let listener = to.create_listener(listen_events);
        assert_eq!(
            listen(listener, &to.addr(port)),
            STATUS_SUCCESS,
            "NdkListen"
        );
        let active = from.create_connector();
        let connected = Recorder::new();
        let status = connect(active, a, &from.addr(0), &to.addr(port), b"hi", connected);
        assert_eq!(status, STATUS_PENDING, "NdkConnect");
        wait_until("the connect request", || listen_events.count() >= 1);
        let passive = listen_events.calls()[0].object as *mut NDK_CONNECTOR;
        let accepted = Recorder::new();
        let status = accept(passive, b, b"ok", Recorder::new(), accepted);
        assert_eq!(status, STATUS_PENDING, "NdkAccept");
        wait_until("the connect completion", || connected.count() >= 1);
        assert_eq!(connected.statuses(), vec![STATUS_SUCCESS], "NdkConnect");
        assert_eq!(
            complete_connect(active, Recorder::new()),
            STATUS_SUCCESS,
            "NdkCompleteConnect"
        );
        wait_until("the accept completion", || accepted.count() >= 1);
        assert_eq!(accepted.statuses(), vec![STATUS_SUCCESS], "NdkAccept");
        Self {
            listener,
            active,
            passive,
        }
    }

    pub(crate) fn close(self) {
        close_wait(self.active);
        close_wait(self.passive);
        close_wait(self.listener);
    }
}

/// Takes `n` completions from `cq`, each successful; their contexts.
pub(crate) fn complete(cq: *mut NDK_CQ, n: usize) -> Vec<usize> {
    let mut got = Vec::new();
    wait_until("completions", || {
        for r in results(cq, n - got.len()) {
            assert_eq!(
                r.Status, STATUS_SUCCESS,
                "completion of request {:?}",
                r.RequestContext
            );
            got.push(r.RequestContext as usize);
        }
        got.len() == n
    });
    got
}

/// Two bottled adapters of `machine`, a QP on each, connected; and a
/// remotely writable and readable region of the second.
pub(crate) struct Pair {
    pub(crate) a: Nic,
    pub(crate) b: Nic,
    pub(crate) qa: Queue,
    pub(crate) qb: Queue,
    pub(crate) conn: Connection,
    pub(crate) region: Buffer,
    pub(crate) region_mr: *mut NDK_MR,
    pub(crate) region_token: u32,
    pub(crate) ids: [AdapterId; 2],
}

impl Pair {
    pub(crate) fn new(
        machine: &Machine,
        frame: Option<u32>,
        depth: u32,
        region_len: usize,
    ) -> Self {
        let (ida, ipa) = add_adapter_framed(machine, frame);
        let (idb, ipb) = add_adapter_framed(machine, frame);
        let a = open_nic(machine, ida, ipa);
        let b = open_nic(machine, idb, ipb);
        let qa = Queue::new(&a, depth, Recorder::new());
        let qb = Queue::new(&b, depth, Recorder::new());
        let conn = Connection::new(&a, qa.qp, &b, qb.qp, 5000);
        let region = Buffer::new(region_len, 0);
        let (region_mr, region_token) = region.register(qb.pd);
        Self {
            a,
            b,
            qa,
            qb,
            conn,
            region,
            region_mr,
            region_token,
            ids: [ida, idb],
        }
    }

    /// Closes every NDK object and adapter, then halts both adapters.
    pub(crate) fn close_and_halt(self, machine: &Machine) {
        close_wait(self.region_mr);
        self.conn.close();
        self.qa.close();
        self.qb.close();
        machine.close_ndk(self.ids[0], self.a.adapter);
        machine.close_ndk(self.ids[1], self.b.adapter);
        machine.halt(self.ids[0]);
        machine.halt(self.ids[1]);
    }
}

// ---------------------------------------------------------------- 1

/// Defect 1: halting an adapter while its engine DPC runs must not leave
/// the engine's timer armed in freed pool.
///
/// The stall holds the engine DPC (an idle-timer run) at its first
/// `KeQueryPerformanceCounter`, after it read `stopping == false`, until
/// halt's `Engine::stop` calls `KeFlushQueuedDpcs`; the DPC then finds the
/// device idle and arms the timer. The old stop cancelled the timer
/// before that flush, so the engine was freed with the timer armed
/// (0xC4/0x15 at `ExFreePoolWithTag`); the fixed stop cancels after it.
#[test]
fn timer_not_armed_after_stop() {
    if !is_child() {
        child_passes("defects::timer_not_armed_after_stop");
        return;
    }
    let machine = boot();
    let (id, _) = add_adapter(&machine);
    let stalls = ke::stalls_done();
    ke::stall_in_dpc(
        "KeQueryPerformanceCounter",
        "KeFlushQueuedDpcs",
        Duration::from_secs(10),
    );
    // The idle engine's timer fires at least every 50 ms: its next DPC
    // run is stalled well within this.
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(ke::stalls_done(), stalls, "the stall ended before halt");
    machine.halt(id);
    assert_eq!(
        ke::stalls_done(),
        stalls + 1,
        "halt ran while the engine DPC was stalled"
    );
    assert!(verifier::bugchecks().is_empty());
    unload_clean(machine);
}

// ---------------------------------------------------------------- 2

/// How long test 2 keeps the traffic going.
const SUSTAIN: Duration = Duration::from_secs(3);
/// The cumulative DPC watchdog limit during test 2: half the bottle's
/// default (2 s), far above the longest stretch the fixed driver spends at
/// DISPATCH_LEVEL here (a receive batch: about 30 ms, up to 250 ms on a
/// loaded two-core machine where the bottle's processors are preempted).
const CUMULATIVE_LIMIT: Duration = Duration::from_secs(1);

/// Defect 2: under sustained RDMA traffic between two bottled adapters no
/// processor may stay at DISPATCH_LEVEL past the cumulative DPC watchdog
/// limit. The old engine DPC requeued itself whenever its budget ran out
/// with work left, so the processor running it never came back below
/// DISPATCH_LEVEL while the work lasted (0x133, parameter 1 = 1).
///
/// The traffic is RDMA READs of 8 MiB, eight in flight, at a path MTU of
/// 256 bytes: the eight are 262,144 response packets for the responder
/// (the second adapter) to emit, work that needs no input (READ responses
/// are not acknowledged), so its engine always has work; each completed
/// READ is posted again at once. (They were 64 MiB each over the old UDP
/// socket path; through the emulated NIC and segment, which carry every
/// frame as an NBL, one such READ takes about as long as the whole run on
/// a loaded two-core machine, so "some READ completed" would measure the
/// machine, not the driver.) Whatever is still in flight when the time is
/// up is flushed by the close.
#[test]
fn sustained_traffic_never_holds_a_processor_at_dispatch() {
    const LEN: usize = 8 << 20;
    const IN_FLIGHT: usize = 8;
    if !is_child() {
        child_passes("defects::sustained_traffic_never_holds_a_processor_at_dispatch");
        return;
    }
    let machine = boot();
    let pair = Pair::new(&machine, Some(256), 16, LEN);
    let pattern: Vec<u8> = (0..LEN).map(|i| (i / 4096 + i) as u8).collect();
    // SAFETY: the leaked region, no request in flight on it yet.
    unsafe { ptr::copy_nonoverlapping(pattern.as_ptr(), pair.region.va as *mut u8, LEN) };
    // Every READ lands in the same sink, with the same bytes.
    let sink = Buffer::new(LEN, 0);
    let (single, _) = verifier::watchdog_limits();
    verifier::set_watchdog_limits(single, CUMULATIVE_LIMIT);

    let post = |n: usize| {
        let sges = [sink.local(0, LEN, pair.qa.token)];
        assert_eq!(
            read(
                pair.qa.qp,
                n,
                &sges,
                pair.region.va as u64,
                pair.region_token,
                0
            ),
            STATUS_SUCCESS,
            "NdkRead"
        );
    };
    (0..IN_FLIGHT).for_each(post);
    let started = Instant::now();
    let mut reads = 0usize;
    // A third adapter arrives while the traffic runs (bind, V's
    // initialisation, its address from the stack), and NDK is switched off
    // and on again on it: `NetEventNDKEnable` is raised from the adapter's
    // work item, which must not wait behind the engines' continuations
    // (system worker threads are shared; a continuation that looped for as
    // long as traffic lasted held one until the traffic stopped).
    let third_ready = std::thread::scope(|scope| {
        let third = scope.spawn(|| {
            std::thread::sleep(SUSTAIN / 6);
            let (id, _) = add_adapter(&machine);
            for (on, event) in [(0u8, NetEventNDKDisable), (1, NetEventNDKEnable)] {
                let seen = machine.pnp_events(id).len();
                assert_eq!(machine.oid_set(id, OID_NDK_SET_STATE, &[on]), Ok(1));
                let events = machine.wait_pnp_events(id, seen + 1, READY);
                assert_eq!(events.last(), Some(&event), "{events:?}");
            }
            (id, Instant::now())
        });
        while started.elapsed() < SUSTAIN {
            for r in results(pair.qa.cq, IN_FLIGHT) {
                assert_eq!(r.Status, STATUS_SUCCESS, "READ {:?}", r.RequestContext);
                reads += 1;
                post(r.RequestContext as usize);
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        third.join().expect("the third adapter")
    });
    let elapsed = started.elapsed();
    assert!(
        third_ready.1 < started + SUSTAIN,
        "the third adapter was up and NDK re-enabled only {:?} after the traffic began, once it \
         had stopped",
        third_ready.1 - started
    );
    machine.halt(third_ready.0);
    println!(
        "{reads} READs of {LEN} bytes completed in {elapsed:?} ({} MB/s)",
        (reads * LEN) as u128 / elapsed.as_micros().max(1)
    );
    assert!(reads > 0, "no READ completed in {elapsed:?}");
    assert!(sink.bytes() == pattern, "the READs brought the region");
    assert!(verifier::bugchecks().is_empty());
    verifier::set_watchdog_limits(single, Duration::from_secs(2));
    pair.close_and_halt(&machine);
    unload_clean(machine);
}

// ---------------------------------------------------------------- 3

/// Defect 3: `NdkFlush` at PASSIVE_LEVEL on a QP with posted receives and
/// an armed CQ completes. The device flushes under the QP's spin lock and
/// the armed CQ's event queues the engine DPC from inside it; a DPC
/// queued at PASSIVE_LEVEL runs at once on the same processor, and its
/// consumer callback posts another receive, which the same DPC run then
/// serves under the same QP lock. Called at PASSIVE_LEVEL (the old
/// driver), the DPC spins on the lock its own processor holds (0x133,
/// parameter 1 = 0, after the single-DPC limit); at DISPATCH_LEVEL (the
/// fixed driver) the DPC runs when the flush lowers, after the lock is
/// released, and both receives complete as flushed.
#[test]
fn flush_at_passive_does_not_deadlock_on_the_engine_dpc() {
    if !is_child() {
        child_passes("defects::flush_at_passive_does_not_deadlock_on_the_engine_dpc");
        return;
    }
    let machine = boot();
    let (id, ip) = add_adapter(&machine);
    let nic = open_nic(&machine, id, ip);
    // One round deadlocks the old driver unless the engine DPC happened to
    // be queued or polling elsewhere (the idle timer's run) at the moment
    // the flush kicked it: enough rounds make missing it by luck vanish.
    for round in 0..FLUSH_ROUNDS {
        flush_round(&nic, round);
    }
    assert!(verifier::bugchecks().is_empty());
    machine.close_ndk(id, nic.adapter);
    machine.halt(id);
    unload_clean(machine);
}

/// Rounds of [`flush_at_passive_does_not_deadlock_on_the_engine_dpc`].
const FLUSH_ROUNDS: usize = 20;

/// One round of [`flush_at_passive_does_not_deadlock_on_the_engine_dpc`]
/// on a fresh QP and CQ.
fn flush_round(nic: &Nic, round: usize) {
    let notify = Recorder::new();
    let q = Queue::new(nic, 8, notify);
    // Zero-length receives: no memory involved.
    assert_eq!(receive(q.qp, 1, &[]), STATUS_SUCCESS, "NdkReceive");
    let qp = q.qp as usize;
    // What the callback's post returned (it must not panic: it runs in
    // the driver's DPC).
    let posted = Arc::new(AtomicI32::new(i32::MIN));
    let result = Arc::clone(&posted);
    notify.set_hook(move |_| {
        // In the engine DPC (the CQ event): another receive on the QP.
        result.store(receive(qp as *mut NDK_QP, 2, &[]), Ordering::SeqCst);
    });
    // Let the engine take the doorbell, then arm and flush at PASSIVE.
    std::thread::sleep(Duration::from_millis(20));
    arm(q.cq, NDK_CQ_NOTIFY_ANY);
    assert_eq!(cpu::current(), 0, "the test calls at PASSIVE_LEVEL");
    flush(q.qp);
    assert_eq!(cpu::current(), 0, "NdkFlush returned at PASSIVE_LEVEL");
    // The event normally came from inside the flush (the DPC its device
    // call queued on this processor); an engine DPC queued elsewhere just
    // before (the idle timer's) may deliver it instead, a moment later.
    wait_until("the CQ event", || notify.count() >= 1);
    assert_eq!(notify.count(), 1, "one CQ event (round {round})");
    assert_eq!(
        posted.load(Ordering::SeqCst),
        STATUS_SUCCESS,
        "NdkReceive from the CQ callback (round {round})"
    );
    let mut flushed = Vec::new();
    wait_until("both receives flushed", || {
        flushed.extend(
            results(q.cq, 4)
                .iter()
                .map(|r| (r.RequestContext as usize, r.Status)),
        );
        flushed.len() >= 2
    });
    assert_eq!(
        flushed,
        vec![(1, STATUS_CANCELLED), (2, STATUS_CANCELLED)],
        "both receives complete as flushed (round {round})"
    );
    q.close();
}

// ---------------------------------------------------------------- 4

/// `APC_LEVEL`.
const APC_LEVEL: u8 = 1;

/// Defect 4: a consumer call made at APC_LEVEL returns at APC_LEVEL. The
/// provider only knows PASSIVE and DISPATCH; the old platform lowered
/// every raise it made from below DISPATCH_LEVEL to PASSIVE_LEVEL (and the
/// old IRQL code wrote CR8, which the bottle traps).
#[test]
fn consumer_call_at_apc_level_returns_at_apc_level() {
    if !is_child() {
        child_passes("defects::consumer_call_at_apc_level_returns_at_apc_level");
        return;
    }
    let machine = boot();
    let (id, ip) = add_adapter(&machine);
    let nic = open_nic(&machine, id, ip);
    let q = Queue::new(&nic, 8, Recorder::new());

    let old = cpu::raise(APC_LEVEL);
    assert_eq!(old, 0);
    // NdkGetCqResults (CQ lock, busy poll of the device), NdkArmCq (its
    // notify lock, the device's arm), NdkReceive (RQ lock, doorbell).
    assert!(results(q.cq, 4).is_empty());
    assert_eq!(cpu::current(), APC_LEVEL, "NdkGetCqResults came back at");
    arm(q.cq, NDK_CQ_NOTIFY_ANY);
    assert_eq!(cpu::current(), APC_LEVEL, "NdkArmCq came back at");
    assert_eq!(receive(q.qp, 1, &[]), STATUS_SUCCESS);
    assert_eq!(cpu::current(), APC_LEVEL, "NdkReceive came back at");
    cpu::lower(old);

    assert!(verifier::bugchecks().is_empty());
    q.close();
    machine.close_ndk(id, nic.adapter);
    machine.halt(id);
    unload_clean(machine);
}

/// Defect 4: the image reads and writes the IRQL only through
/// `KeGetCurrentIrql`/`KfRaiseIrql`/`KeLowerIrql`: no executable section
/// holds a move to or from CR8 (`0F 20 /r` or `0F 22 /r` with REX.R and
/// ModRM.reg 0, i.e. `[44-47|4C-4F] 0F 20|22 xx`), as the old `irql.rs`
/// emitted.
#[test]
fn image_never_touches_cr8() {
    let path = image();
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let pe = ::object::read::pe::PeFile64::parse(bytes.as_slice()).expect("a PE32+ image");
    let mut found = Vec::new();
    let mut scanned = 0;
    for section in pe.sections() {
        let SectionFlags::Coff { characteristics } = section.flags() else {
            continue;
        };
        if characteristics.0 & ::object::pe::IMAGE_SCN_MEM_EXECUTE.0 == 0 {
            continue;
        }
        let code = section.data().expect("section data");
        scanned += code.len();
        for (at, w) in code.windows(4).enumerate() {
            let rex_r = w[0] & 0xF4 == 0x44;
            if rex_r && w[1] == 0x0F && matches!(w[2], 0x20 | 0x22) && w[3] & 0x38 == 0 {
                found.push(format!(
                    "{} at RVA {:#x}: {:02x} {:02x} {:02x} {:02x}",
                    if w[2] == 0x20 {
                        "mov reg, cr8"
                    } else {
                        "mov cr8, reg"
                    },
                    section.address() - pe.relative_address_base() + at as u64,
                    w[0],
                    w[1],
                    w[2],
                    w[3]
                ));
            }
        }
    }
    assert!(scanned > 0, "no executable section in {}", path.display());
    assert!(found.is_empty(), "CR8 accesses:\n{}", found.join("\n"));
}

// ---------------------------------------------------------------- 5

/// Defect 5: after DMA-heavy traffic (RDMA WRITE and READ of 1 MiB, both
/// checked), halting both adapters and unloading the driver leave
/// nothing behind. The old mapping MDLs kept `MDL_PAGES_LOCKED`, set by
/// hand, until `IoFreeMdl` at halt (0xCB, pages left locked).
#[test]
fn dma_then_halt_and_unload_leave_no_locked_mdl() {
    const LEN: usize = 1 << 20;
    if !is_child() {
        child_passes("defects::dma_then_halt_and_unload_leave_no_locked_mdl");
        return;
    }
    let machine = boot();
    let pair = Pair::new(&machine, None, 8, LEN);
    let pattern: Vec<u8> = (0..LEN).map(|i| (i * 7 + i / 4096) as u8).collect();
    let source = Buffer::new(LEN, 0);
    // SAFETY: the leaked source buffer, no request in flight on it.
    unsafe { ptr::copy_nonoverlapping(pattern.as_ptr(), source.va as *mut u8, LEN) };
    let sink = Buffer::new(LEN, 0);

    let sges = [source.local(0, LEN, pair.qa.token)];
    assert_eq!(
        write(
            pair.qa.qp,
            1,
            &sges,
            pair.region.va as u64,
            pair.region_token,
            0
        ),
        STATUS_SUCCESS
    );
    assert_eq!(complete(pair.qa.cq, 1), vec![1]);
    assert!(pair.region.bytes() == pattern, "the WRITE landed");
    let sges = [sink.local(0, LEN, pair.qa.token)];
    assert_eq!(
        read(
            pair.qa.qp,
            2,
            &sges,
            pair.region.va as u64,
            pair.region_token,
            0
        ),
        STATUS_SUCCESS
    );
    assert_eq!(complete(pair.qa.cq, 1), vec![2]);
    assert!(sink.bytes() == pattern, "the READ brought it back");

    assert!(verifier::bugchecks().is_empty());
    pair.close_and_halt(&machine);
    assert!(verifier::bugchecks().is_empty());
    unload_clean(machine);
}
