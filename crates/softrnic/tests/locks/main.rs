//! Device locks across devices (#23 item 5): with reader/writer locks
//! that prefer writers (an `EX_SPIN_LOCK` does), no thread may wait for a
//! device lock while holding another lock of the same class, or two
//! engines placing each other's trains while writers (registrations) wait
//! on both tables deadlock. These tests run the device under lock
//! operations that record any such nesting and are writer-preferring
//! themselves (`hwq::lock::rw`), with a watchdog reporting a hang.

#[path = "../common/mod.rs"]
mod common;

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use common::*;
use hwq::device::{Device, DeviceEvents, EventSink, Registration};
use hwq::lock::{LockClass, LockToken, SpinLockOps, rw, test_and_set};
use hwq::wqe::{Access, SendOpcode};
use hwq::{CqeStatus, Cqn, Qpn, Srqn, Verbs};
use links::{
    Clock, Load,
    fabric::{Fabric, FabricEndpoint},
};

/// Lock operations that record a thread taking a lock of a class it
/// already holds (a class not declared nestable), then lock as the
/// platform-less form does (writer-preferring reader/writer locks).
struct NestingCheck;

static CHECK: NestingCheck = NestingCheck;

/// What [`NestingCheck`] saw nested.
static NESTED: Mutex<Vec<String>> = Mutex::new(Vec::new());

thread_local! {
    static HELD: RefCell<Vec<&'static str>> = const { RefCell::new(Vec::new()) };
}

fn taking(class: &'static LockClass) {
    HELD.with(|held| {
        let mut held = held.borrow_mut();
        if !class.nestable && held.contains(&class.name) {
            NESTED.lock().unwrap().push(format!(
                "{:?} takes a {:?} lock holding one (holding {:?})",
                thread::current().name().unwrap_or("?"),
                class.name,
                *held
            ));
        }
        held.push(class.name);
    });
}

fn leaving(class: &'static LockClass) {
    HELD.with(|held| {
        let mut held = held.borrow_mut();
        if let Some(at) = held.iter().rposition(|&c| c == class.name) {
            held.remove(at);
        }
    });
}

impl SpinLockOps for NestingCheck {
    fn acquire(&self, word: &AtomicUsize, class: &'static LockClass) -> LockToken {
        taking(class);
        test_and_set(word);
        LockToken(0)
    }

    fn release(&self, word: &AtomicUsize, class: &'static LockClass, _token: LockToken) {
        hwq::lock::clear(word);
        leaving(class);
    }

    fn acquire_shared(&self, word: &AtomicI32, class: &'static LockClass) -> LockToken {
        taking(class);
        rw::read_lock(word);
        LockToken(0)
    }

    fn release_shared(&self, word: &AtomicI32, class: &'static LockClass, _token: LockToken) {
        rw::read_unlock(word);
        leaving(class);
    }

    fn acquire_exclusive(&self, word: &AtomicI32, class: &'static LockClass) -> LockToken {
        taking(class);
        rw::write_lock(word);
        LockToken(0)
    }

    fn release_exclusive(&self, word: &AtomicI32, class: &'static LockClass, _token: LockToken) {
        rw::write_unlock(word);
        leaving(class);
    }
}

fn install() {
    // First caller installs; every test of this binary uses the same.
    softrnic::sync::use_lock_ops(&CHECK);
}

/// The first few nestings seen (a nesting on a hot path repeats).
fn nested() -> Vec<String> {
    NESTED.lock().unwrap().iter().take(3).cloned().collect()
}

const PMTU: u32 = 1024;
/// Nine segments per message, the last short.
const LEN: u32 = 8 * 1024 + 300;
const REMOTE: Access = Access::LOCAL_WRITE
    .union(Access::REMOTE_READ)
    .union(Access::REMOTE_WRITE);

/// Two devices on one memory whose fabric carries trains, each driven by
/// its own thread.
struct Pair {
    clock: Arc<SimClock>,
    fabric: Arc<Fabric>,
    a: Node,
    b: Node,
    stop: AtomicBool,
}

fn pair() -> (Arc<Pair>, Qp, Qp) {
    let clock = Arc::new(SimClock::default());
    clock.set(1_000);
    let fabric = Fabric::new();
    let mem = HostMem::new(1 << 21);
    let node = |addr: std::net::Ipv4Addr| {
        let c: Arc<dyn Clock> = clock.clone();
        let port = FabricEndpoint::with_trains(fabric.clone(), c);
        let n = Node::sharing(
            addr,
            PMTU,
            &clock,
            mem.clone(),
            Box::new(port),
            Box::new(NoWake),
        );
        n.dev.set_default_rc_config(fast_rc());
        n
    };
    let (a, b) = (node(ADDR_A), node(ADDR_B));
    let (qa, qb) = (a.qp(8), b.qp(8));
    let w = World {
        clock: clock.clone(),
        fabric: fabric.clone(),
        faults: links::FaultInjector::new(links::Faults::default()),
        a,
        b,
        steps: 0,
    };
    w.connect(&qa, &qb, PMTU, 100, 900, 4);
    let World { a, b, .. } = w;
    let p = Arc::new(Pair {
        clock,
        fabric,
        a,
        b,
        stop: AtomicBool::new(false),
    });
    (p, qa, qb)
}

impl Pair {
    /// One device's engine: hands it what the fabric carried to it
    /// (trains as trains) and polls it, moving the clock along.
    fn drive(&self, a: bool) {
        let (me, addr) = if a {
            (&self.a, ADDR_A)
        } else {
            (&self.b, ADDR_B)
        };
        let mut batch = Vec::new();
        while !self.stop.load(Ordering::Relaxed) {
            self.fabric
                .exchange_due_for(addr, self.clock.now(), &mut batch, 64);
            for load in &batch {
                match load {
                    Load::Datagram(d) => me.receive(d),
                    Load::Train(t) => me.receive_train(t),
                }
            }
            me.poll();
            self.clock.set(self.clock.now() + 5);
            thread::yield_now();
        }
    }

    /// Registers and deregisters a region on either device, over and
    /// over: writers on both key tables while trains cross.
    fn churn(&self, scratch: [u64; 2], rounds: &AtomicU64) {
        while !self.stop.load(Ordering::Relaxed) {
            for (i, n) in [&self.a, &self.b].into_iter().enumerate() {
                let key = n.dev.alloc_key(n.pd, false).unwrap();
                let pages = [scratch[i]];
                let reg = Registration {
                    pd: n.pd,
                    access: REMOTE,
                    va: scratch[i] + VA_OFFSET,
                    length: PAGE,
                    first_byte_offset: 0,
                    pages: &pages,
                };
                let key = n.dev.register(key, &reg).unwrap();
                n.dev.deregister(key).unwrap();
                n.dev.free_key(key);
            }
            rounds.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Waits for `n` completions on `cq`, all successful, or panics naming
/// what it waited for after `limit` (a deadlock leaves the engines
/// spinning: the report is the watchdog's).
fn complete(cq: &mut Cq, n: usize, limit: Instant, what: &str) {
    let start = cq.seen.len();
    while cq.seen.len() < start + n {
        cq.drain();
        assert!(
            Instant::now() < limit,
            "{what}: no completion within the limit (deadlocked? nesting seen: {:?})",
            nested()
        );
        thread::yield_now();
    }
    for c in &cq.seen[start..] {
        assert_eq!(c.status, CqeStatus::Success as u8, "{what}: {c:?}");
    }
}

/// Both devices READ from and WRITE to each other at once, every
/// payload crossing as a train placed by the receiving engine, while a
/// third thread registers and deregisters on both key tables. Before the
/// crossing went through a buffer, each placement held the receiver's
/// key table while taking the sender's: the check records that nesting
/// at once, and with writers queued on both tables the two engines hang
/// (the watchdog then reports it).
#[test]
fn trains_cross_both_ways_while_both_key_tables_change() {
    install();
    let (p, mut qa, mut qb) = pair();
    let src_a = p.a.register(u64::from(LEN), REMOTE);
    let src_b = p.b.register(u64::from(LEN), REMOTE);
    let dst_a = p.a.register(u64::from(LEN), REMOTE);
    let dst_b = p.b.register(u64::from(LEN), REMOTE);
    let target_a = p.a.register(u64::from(LEN), REMOTE);
    let target_b = p.b.register(u64::from(LEN), REMOTE);
    p.a.mem.fill(src_a.logical, &pattern(1, LEN as usize));
    p.b.mem.fill(src_b.logical, &pattern(2, LEN as usize));
    let scratch = [p.a.mem.alloc(PAGE), p.b.mem.alloc(PAGE)];
    let rounds = Arc::new(AtomicU64::new(0));
    let threads: Vec<_> = [
        {
            let p = p.clone();
            thread::Builder::new()
                .name("engine A".into())
                .spawn(move || p.drive(true))
        },
        {
            let p = p.clone();
            thread::Builder::new()
                .name("engine B".into())
                .spawn(move || p.drive(false))
        },
        {
            let (p, r) = (p.clone(), rounds.clone());
            thread::Builder::new()
                .name("registrations".into())
                .spawn(move || p.churn(scratch, &r))
        },
    ]
    .into_iter()
    .map(Result::unwrap)
    .collect();

    let limit = Instant::now() + Duration::from_secs(60);
    for round in 0..40u64 {
        let read_a = rdma(SendOpcode::Read, round, &[dst_a.sge(0, LEN)], &src_b, 0);
        let write_a = rdma(SendOpcode::Write, round, &[src_a.sge(0, LEN)], &target_b, 0);
        let read_b = rdma(SendOpcode::Read, round, &[dst_b.sge(0, LEN)], &src_a, 0);
        let write_b = rdma(SendOpcode::Write, round, &[src_b.sge(0, LEN)], &target_a, 0);
        p.a.post_send(&mut qa, read_a);
        p.b.post_send(&mut qb, read_b);
        p.a.post_send(&mut qa, write_a);
        p.b.post_send(&mut qb, write_b);
        complete(&mut qa.scq, 2, limit, "A's READ and WRITE");
        complete(&mut qb.scq, 2, limit, "B's READ and WRITE");
        assert!(nested().is_empty(), "nested locks: {:?}", nested());
    }
    p.stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().unwrap();
    }
    for (node, buf, id) in [
        (&p.a, dst_a, 2),
        (&p.b, dst_b, 1),
        (&p.b, target_b, 1),
        (&p.a, target_a, 2),
    ] {
        assert_eq!(
            node.mem.get(buf.logical, LEN as usize),
            pattern(id, LEN as usize)
        );
    }
    assert!(
        rounds.load(Ordering::Relaxed) > 0,
        "the registration thread never ran: the tables never changed under the trains"
    );
    assert!(nested().is_empty(), "nested locks: {:?}", nested());
}

/// An event sink whose CQ callback re-enters the device's delivery while
/// another thread detaches: the callback runs with no device lock held.
struct Reentering {
    dev: *const softrnic::device::SoftRnic,
    /// Set by the callback; the detaching thread starts then.
    called: mpsc::SyncSender<()>,
    /// The callback's nested delivery returned.
    nested_done: AtomicBool,
}

// SAFETY: `dev` points at a device that outlives the sink (the test
// detaches before dropping it); it is only read through `&`.
unsafe impl Send for Reentering {}
// SAFETY: as above: only shared access to a `Sync` device.
unsafe impl Sync for Reentering {}

impl DeviceEvents for Reentering {
    fn cq_event(&self, _cqn: Cqn, _overflow: bool) {
        let _ = self.called.try_send(());
        // Let the detaching thread queue its exclusive acquire first.
        thread::sleep(Duration::from_millis(100));
        // SAFETY: see the type's `Send`/`Sync` reasoning.
        let dev = unsafe { &*self.dev };
        dev.deliver_events();
        self.nested_done.store(true, Ordering::SeqCst);
    }

    fn srq_limit(&self, _srqn: Srqn) {}

    fn qp_error(&self, _qpn: Qpn) {}

    fn cm_event(&self, _event: hwq::device::CmEvent<'_>) {}
}

/// A consumer callback that re-enters the device (here: its delivery)
/// while another thread detaches. Before, the delivery held the sink's
/// lock shared across callbacks: the detach queued for it exclusively
/// and the nested delivery's shared acquire waited behind that writer
/// (recorded as nesting, and hung: reported by the watchdog).
#[test]
fn a_callback_reentering_the_device_while_it_detaches_does_not_deadlock() {
    install();
    let (p, mut qa, _qb) = pair();
    let (tx, rx) = mpsc::sync_channel(1);
    let events = Box::leak(Box::new(Reentering {
        dev: &raw const p.a.dev,
        called: tx,
        nested_done: AtomicBool::new(false),
    }));
    // SAFETY: `events` is leaked: it outlives the device's use of it.
    let sink = unsafe { EventSink::new(&*events) };
    p.a.dev.attach(sink).unwrap();
    p.a.dev.arm_cq(qa.scq.cqn, false);
    let src = p.b.register(u64::from(LEN), REMOTE);
    let dst = p.a.register(u64::from(LEN), REMOTE);
    p.a.post_send(
        &mut qa,
        rdma(SendOpcode::Read, 1, &[dst.sge(0, LEN)], &src, 0),
    );
    let drivers: Vec<_> = [true, false]
        .map(|a| {
            let p = p.clone();
            thread::spawn(move || p.drive(a))
        })
        .into_iter()
        .collect();
    let delivering = {
        let p = p.clone();
        thread::spawn(move || {
            while !p.stop.load(Ordering::Relaxed) {
                p.a.dev.deliver_events();
                thread::yield_now();
            }
        })
    };
    rx.recv_timeout(Duration::from_secs(30))
        .expect("the CQ event never came");
    let detached = Arc::new(AtomicBool::new(false));
    let detacher = {
        let (p, d) = (p.clone(), detached.clone());
        thread::spawn(move || {
            p.a.dev.detach();
            d.store(true, Ordering::SeqCst);
        })
    };
    let limit = Instant::now() + Duration::from_secs(20);
    while !(detached.load(Ordering::SeqCst) && events.nested_done.load(Ordering::SeqCst)) {
        assert!(
            Instant::now() < limit,
            "deadlock: detach returned {}, the nested delivery returned {} (nesting seen: {:?})",
            detached.load(Ordering::SeqCst),
            events.nested_done.load(Ordering::SeqCst),
            nested()
        );
        thread::sleep(Duration::from_millis(10));
    }
    p.stop.store(true, Ordering::Relaxed);
    detacher.join().unwrap();
    delivering.join().unwrap();
    for d in drivers {
        d.join().unwrap();
    }
    assert!(nested().is_empty(), "nested locks: {:?}", nested());
}
