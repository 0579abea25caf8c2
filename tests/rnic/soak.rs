//! Bounded soak of the software RNIC through the NDK dispatch tables:
//! four adapters (four engine threads, plus the fabric's delivery thread)
//! on one in-memory fabric with loss, reordering and duplication; sixteen
//! live connections between them in both directions; random SENDs,
//! WRITEs and READs of 1 B to 256 KiB, up to four in flight per
//! connection; connections torn down and re-established at random.
//!
//! Checked: every request completes exactly once, successfully, with its
//! own context; every byte arrives exactly; nothing completes that was not
//! posted; every adapter closes; no pool allocation is left.
//!
//! Run: `cargo test --release --test rnic -- --ignored soak --nocapture`.
//! Duration: `RSNDK_SOAK_SECS` (default 60). Seed: `RSNDK_SOAK_SEED`.
//! `RSNDK_SOAK_FAULTS=0` runs it without faults, where the payload moves
//! in trains.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::rnic_util::*;
use ndkpi::*;
use testkit::adapter::*;

const NODES: usize = 4;
const LIVE: usize = 16;
const SLOTS: usize = 4;
const SLOT: usize = 256 * 1024;

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// xorshift: the test's own deterministic randomness.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// 1 B .. 256 KiB, log-uniform.
    fn size(&mut self) -> usize {
        let bits = self.below(19) as u32; // 2^0 .. 2^18
        let hi = 1usize << bits;
        (hi + self.below(hi as u64) as usize).clamp(1, SLOT)
    }
}

struct Node2 {
    node: Node,
    pd: *mut NDK_PD,
}

/// One connection: A (active) posts, B (passive) receives and is the
/// target of WRITEs and READs.
struct Conn2 {
    a: usize,
    b: usize,
    a_qp: *mut NDK_QP,
    b_qp: *mut NDK_QP,
    a_cq: *mut NDK_CQ,
    b_cq: *mut NDK_CQ,
    a_conn: *mut NDK_CONNECTOR,
    b_conn: *mut NDK_CONNECTOR,
    listener: *mut NDK_LISTENER,
    /// The callback contexts (they live as long as the test binary).
    recs: Vec<&'static Recorder>,
    /// A: source of SENDs and WRITEs, and sink of READs.
    a_src: Vec<u8>,
    a_sink: Vec<u8>,
    /// B: receive/WRITE target and READ source.
    b_dst: Vec<u8>,
    b_rsrc: Vec<u8>,
    regions: Vec<Region>,
}

static PORT: AtomicU64 = AtomicU64::new(0);

fn open_conn(nodes: &[Node2], a: usize, b: usize) -> Box<Conn2> {
    let (na, nb) = (&nodes[a], &nodes[b]);
    let n = PORT.fetch_add(1, Ordering::SeqCst);
    let notify = Recorder::new();
    let a_cq = na.node.create_cq(64, notify);
    let b_cq = nb.node.create_cq(64, notify);
    let a_qp = create_qp(na.pd, a_cq, a_cq, 0xA_0000 + n as usize, 8, 8, 1, 1, 0).expect("qp");
    let b_qp = create_qp(nb.pd, b_cq, b_cq, 0xB_0000 + n as usize, 8, 8, 1, 1, 0).expect("qp");
    let events = Recorder::new();
    let listener = nb.node.create_listener(events);
    let port = 8000 + (n % 50_000) as u16;
    let lrec = Recorder::new();
    assert_eq!(
        finish(listen(listener, &nb.node.addr(port)), lrec, "listen"),
        STATUS_SUCCESS
    );
    let a_conn = na.node.create_connector();
    let connected = Recorder::new();
    assert_eq!(
        connect(
            a_conn,
            a_qp,
            &na.node.addr(0),
            &nb.node.addr(port),
            b"soak",
            connected
        ),
        STATUS_PENDING
    );
    wait_calls(events, 1, "connect event");
    let b_conn = events.calls()[0].object as *mut NDK_CONNECTOR;
    let accepted = Recorder::new();
    let b_disc = Recorder::new();
    assert_eq!(
        accept(b_conn, b_qp, b"ok", b_disc, accepted),
        STATUS_PENDING
    );
    wait_calls(connected, 1, "connect completion");
    assert_eq!(connected.statuses(), vec![STATUS_SUCCESS], "connect");
    let a_disc = Recorder::new();
    assert_eq!(complete_connect(a_conn, a_disc), STATUS_SUCCESS);
    wait_calls(accepted, 1, "accept completion");
    let mut c = Box::new(Conn2 {
        a,
        b,
        a_qp,
        b_qp,
        a_cq,
        b_cq,
        a_conn,
        b_conn,
        listener,
        recs: vec![notify, events, lrec, connected, accepted, b_disc, a_disc],
        a_src: vec![0; SLOTS * SLOT],
        a_sink: vec![0; SLOTS * SLOT],
        b_dst: vec![0; SLOTS * SLOT],
        b_rsrc: pattern(SLOTS * SLOT, n as u8),
        regions: Vec::new(),
    });
    // The buffers live in the box, so their addresses stay put.
    c.regions = vec![
        Region::of(na.pd, &mut c.a_src, 0),
        Region::of(na.pd, &mut c.a_sink, NDK_MR_FLAG_ALLOW_LOCAL_WRITE),
        Region::of(nb.pd, &mut c.b_dst, REMOTE_ALL),
        Region::of(nb.pd, &mut c.b_rsrc, REMOTE_ALL),
    ];
    c
}

fn close_conn(c: Box<Conn2>) {
    let done = Recorder::new();
    let st = disconnect(c.a_conn, done);
    if st == STATUS_PENDING {
        wait_calls(done, 1, "disconnect");
    }
    let lclose = Recorder::new();
    let lst = close(c.listener, lclose);
    close_wait(c.b_conn);
    close_wait(c.a_conn);
    finish(lst, lclose, "listener close");
    close_wait(c.a_qp);
    close_wait(c.b_qp);
    close_wait(c.a_cq);
    close_wait(c.b_cq);
    let c = *c;
    for r in c.regions {
        r.release();
    }
    drop(c.recs);
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Send,
    Write,
    Read,
}

#[derive(Default, Debug)]
struct Totals {
    ops: u64,
    bytes: u64,
    sends: u64,
    writes: u64,
    reads: u64,
    connections: u64,
}

/// One batch of up to `SLOTS` requests on `c`, each in its own slot;
/// waits for every completion and checks data and exactly-once.
fn batch(c: &mut Conn2, rng: &mut Rng, next_ctx: &mut usize, t: &mut Totals) {
    let n = 1 + rng.below(SLOTS as u64) as usize;
    let mut posted = Vec::new();
    let mut receives = HashSet::new();
    for slot in 0..n {
        let kind = match rng.below(3) {
            0 => Kind::Send,
            1 => Kind::Write,
            _ => Kind::Read,
        };
        let len = rng.size();
        let off = slot * SLOT;
        let ctx = *next_ctx;
        *next_ctx += 1;
        let (src, sink, dst, rsrc) = (&c.regions[0], &c.regions[1], &c.regions[2], &c.regions[3]);
        match kind {
            Kind::Send | Kind::Write => {
                let data = pattern(len, ctx as u8);
                c.a_src[off..off + len].copy_from_slice(&data);
                c.b_dst[off..off + SLOT].fill(0);
            }
            Kind::Read => c.a_sink[off..off + len].fill(0),
        }
        let st = match kind {
            Kind::Send => {
                let rctx = ctx | 1 << 40;
                assert_eq!(receive(c.b_qp, rctx, &[dst.sge(off, SLOT)]), STATUS_SUCCESS);
                receives.insert(rctx);
                send(c.a_qp, ctx, &[src.sge(off, len)], 0)
            }
            Kind::Write => write(
                c.a_qp,
                ctx,
                &[src.sge(off, len)],
                dst.va + off as u64,
                dst.remote,
                0,
            ),
            Kind::Read => read(
                c.a_qp,
                ctx,
                &[sink.sge(off, len)],
                rsrc.va + off as u64,
                rsrc.remote,
                0,
            ),
        };
        assert_eq!(st, STATUS_SUCCESS, "{kind:?} post");
        posted.push((ctx, kind, len, off));
    }
    let done = wait_results(c.a_cq, posted.len());
    let mut seen = HashSet::new();
    for r in &done {
        assert_eq!(r.Status, STATUS_SUCCESS, "completion {r:?}");
        let ctx = r.RequestContext as usize;
        assert!(seen.insert(ctx), "request {ctx} completed twice");
    }
    let want: HashSet<usize> = posted.iter().map(|p| p.0).collect();
    assert_eq!(seen, want, "every request completes exactly once");
    if !receives.is_empty() {
        let got = wait_results(c.b_cq, receives.len());
        let mut rseen = HashSet::new();
        for r in &got {
            assert_eq!(r.Status, STATUS_SUCCESS, "receive {r:?}");
            assert!(rseen.insert(r.RequestContext as usize), "receive twice");
        }
        assert_eq!(rseen, receives, "every receive completes exactly once");
    }
    for &(ctx, kind, len, off) in &posted {
        match kind {
            Kind::Send | Kind::Write => {
                assert!(
                    c.b_dst[off..off + len] == c.a_src[off..off + len],
                    "{kind:?} {ctx} of {len} B is byte-exact"
                );
                if off + len < off + SLOT {
                    assert_eq!(
                        c.b_dst[off + len],
                        0,
                        "{kind:?} {ctx}: nothing past the end"
                    );
                }
            }
            Kind::Read => assert!(
                c.a_sink[off..off + len] == c.b_rsrc[off..off + len],
                "READ {ctx} of {len} B is byte-exact"
            ),
        }
        t.ops += 1;
        t.bytes += len as u64;
        match kind {
            Kind::Send => t.sends += 1,
            Kind::Write => t.writes += 1,
            Kind::Read => t.reads += 1,
        }
    }
}

#[test]
#[allow(clippy::cast_precision_loss)] // MiB figure for the log
#[ignore = "soak: run with `cargo test --release --test rnic -- --ignored soak`"]
fn soak() {
    let secs = env_u64("RSNDK_SOAK_SECS", 60);
    let seed = env_u64("RSNDK_SOAK_SEED", 0x5EED_50A4);
    let mut rng = Rng(seed | 1);
    // `RSNDK_SOAK_FAULTS=0`: a fabric without faults, on which READ
    // responses, SENDs and WRITEs travel as trains (`softrnic::train`).
    let faulty = env_u64("RSNDK_SOAK_FAULTS", 1) != 0;
    let faults = if faulty {
        format!("loss=0.01,reorder=0.02,duplicate=0.01,seed={seed}")
    } else {
        format!("seed={seed}")
    };
    let nodes: Vec<Node2> = (0..NODES)
        .map(|i| {
            let node = Node::open(&format!("mem:soak/127.0.7.{},pmtu=4096,{faults}", 101 + i));
            let pd = node.create_pd();
            Node2 { node, pd }
        })
        .collect();
    let pair = |i: usize| -> (usize, usize) {
        // Both directions between 0-1 and 2-3, and across.
        [(0, 1), (1, 0), (2, 3), (3, 2), (0, 3), (2, 1)][i % 6]
    };
    let mut t = Totals::default();
    let mut live: Vec<Box<Conn2>> = (0..LIVE)
        .map(|i| {
            let (a, b) = pair(i);
            open_conn(&nodes, a, b)
        })
        .collect();
    t.connections = LIVE as u64;
    let mut next_ctx = 1usize;
    let start = Instant::now();
    let deadline = start + Duration::from_secs(secs);
    let mut churn = 0u64;
    while Instant::now() < deadline {
        let i = rng.below(LIVE as u64) as usize;
        batch(&mut live[i], &mut rng, &mut next_ctx, &mut t);
        if rng.below(8) == 0 {
            let old = live.swap_remove(i);
            let (a, b) = (old.a, old.b);
            close_conn(old);
            live.push(open_conn(&nodes, b, a));
            t.connections += 1;
            churn += 1;
        }
    }
    let elapsed = start.elapsed();
    let faults = rsndk::adapters::fabric_of(nodes[0].node.adapter)
        .expect("a fabric")
        .faults()
        .stats();
    let retransmitted: u64 = nodes
        .iter()
        .map(|n| {
            rsndk::adapters::device_of(n.node.adapter)
                .expect("a device")
                .stats()
                .retransmitted
        })
        .sum();
    assert!(
        !faulty || (faults.lost > 0 && faults.duplicated > 0 && faults.reordered > 0),
        "the fabric's links injected faults: {faults:?}"
    );
    for c in live {
        close_conn(c);
    }
    let ips: Vec<std::net::IpAddr> = nodes.iter().map(|n| n.node.ip).collect();
    for n in nodes {
        close_wait(n.pd);
        n.node.close();
    }
    // Each device accounts its pool on its own address's platform.
    for ip in ips {
        let left = rsndk::platform::HostPlatform::for_address(ip).outstanding();
        assert!(
            left.is_empty(),
            "pool left after the soak on {ip:?}: {left:?}"
        );
    }
    eprintln!(
        "soak: {:.1} s, {} ops ({} SEND, {} WRITE, {} READ), {:.1} MiB, {} connections ({} churned), seed {:#x}, 0 leaks; faults {:?}; {} packets retransmitted",
        elapsed.as_secs_f64(),
        t.ops,
        t.sends,
        t.writes,
        t.reads,
        t.bytes as f64 / (1024.0 * 1024.0),
        t.connections,
        churn,
        seed,
        faults,
        retransmitted
    );
}
