//! Property tests of the NDK dispatch entry points: arbitrary flags, SGE
//! counts, lengths, tokens, addresses and call orders.
//!
//! * Over the scripted device, each call is checked against the status the
//!   provider documents for its inputs, computed here by a model of the
//!   QP's limits and queues (send WQEs must also reach the device in post
//!   order, and `NdkGetCqResults` must return exactly the completions the
//!   model expects). The only consumer memory the provider may read is the
//!   registered region (inline payloads are copied from it at post time);
//!   it sits between two guard pages filled with a canary, and region and
//!   guards are checked unchanged after every call. Every case ends with
//!   `Env::finish`: nothing left in the routing tables, on the device, or
//!   in the pool.
//! * Over the software RNIC (in-memory fabric), SENDs, WRITEs and READs
//!   with arbitrary local and remote addresses, lengths and tokens must
//!   complete exactly once, successfully exactly when every byte they
//!   touch is inside a registration with the right token, and change
//!   memory only as a model applying the valid ones says (guards never).
//!
//! Proptest catches panics (the test harness unwinds even though the
//! dev profile aborts), so a panic is a failing, shrunk case.
//!
//! Case counts: 256 per scripted property, 32 on the RNIC; the
//! `PROPTEST_CASES` environment variable sets every property's count.

use std::collections::VecDeque;
use std::ptr;

use hwq::CqeStatus;
use ndkpi::*;
use proptest::prelude::*;
use testkit::adapter::*;

fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

const PAGE: usize = 4096;
const CANARY: u8 = 0xA5;
const MAX_TRANSFER: u64 = 1 << 24;
const MAX_SGE: usize = 16;
const MAX_INLINE: u32 = 256;

/// Every defined `NDK_OP_FLAG_*` bit.
const OP_FLAGS: [u32; 10] = [
    NDK_OP_FLAG_SILENT_SUCCESS,
    NDK_OP_FLAG_READ_FENCE,
    NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT,
    NDK_OP_FLAG_ALLOW_REMOTE_READ,
    NDK_OP_FLAG_ALLOW_LOCAL_WRITE,
    NDK_OP_FLAG_ALLOW_REMOTE_WRITE,
    NDK_OP_FLAG_INLINE,
    NDK_OP_FLAG_RDMA_READ_SINK,
    NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE,
    NDK_OP_FLAG_DEFER,
];

const COMMON: u32 = NDK_OP_FLAG_SILENT_SUCCESS
    | NDK_OP_FLAG_READ_FENCE
    | NDK_OP_FLAG_DEFER
    | NDK_OP_FLAG_RDMA_READ_SINK;
const SEND_OK: u32 = COMMON | NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT | NDK_OP_FLAG_INLINE;
const WRITE_OK: u32 = COMMON | NDK_OP_FLAG_INLINE;
const READ_OK: u32 = COMMON | NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE;
const BIND_OK: u32 = COMMON | NDK_OP_FLAG_ALLOW_REMOTE_READ | NDK_OP_FLAG_ALLOW_REMOTE_WRITE;
const FR_OK: u32 = COMMON
    | NDK_OP_FLAG_ALLOW_REMOTE_READ
    | NDK_OP_FLAG_ALLOW_LOCAL_WRITE
    | NDK_OP_FLAG_ALLOW_REMOTE_WRITE;
const INVALIDATE_OK: u32 = COMMON;

/// Op flags: mostly combinations of defined bits, sometimes anything.
fn op_flags() -> impl Strategy<Value = u32> {
    prop_oneof![
        4 => prop::collection::vec(prop::sample::select(&OP_FLAGS[..]), 0..4)
            .prop_map(|v| v.into_iter().fold(0, |a, b| a | b)),
        1 => any::<u32>(),
    ]
}

/// One SGE: where it points (inside the region, just outside it, or
/// anywhere), how long, with which token.
#[derive(Clone, Debug)]
struct SgeSpec {
    offset: i64,
    len: u32,
    token: TokenSpec,
}

#[derive(Clone, Copy, Debug)]
enum TokenSpec {
    Local,
    Remote,
    Privileged,
    Any(u32),
}

fn sge_spec() -> impl Strategy<Value = SgeSpec> {
    (
        prop_oneof![0i64..PAGE as i64, -64i64..0, any::<i64>()],
        prop_oneof![
            0u32..300,
            300u32..5000,
            (1u32 << 24) - 8..(1u32 << 24) + 8,
            any::<u32>()
        ],
        prop_oneof![
            Just(TokenSpec::Local),
            Just(TokenSpec::Remote),
            Just(TokenSpec::Privileged),
            any::<u32>().prop_map(TokenSpec::Any)
        ],
    )
        .prop_map(|(offset, len, token)| SgeSpec { offset, len, token })
}

#[derive(Clone, Debug)]
enum Op {
    Send(Vec<SgeSpec>, u32, bool),
    SendInvalidate(Vec<SgeSpec>, u32, TokenSpec),
    Write(Vec<SgeSpec>, u32, i64, TokenSpec),
    Read(Vec<SgeSpec>, u32, i64, TokenSpec),
    Receive(Vec<SgeSpec>, bool),
    SrqReceive(Vec<SgeSpec>),
    Bind(i64, u64, u32),
    FastRegister(u32, u32, u64, u32),
    Invalidate(bool, u32),
    Arm(u32),
    Results(u8),
    CompleteSend,
    CompleteRecv,
}

fn sges() -> impl Strategy<Value = Vec<SgeSpec>> {
    prop_oneof![
        3 => prop::collection::vec(sge_spec(), 0..4),
        1 => prop::collection::vec(sge_spec(), 4..20),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (sges(), op_flags(), any::<bool>()).prop_map(|(s, f, null)| Op::Send(s, f, null)),
        (
            sges(),
            op_flags(),
            prop::sample::select(&[TokenSpec::Remote, TokenSpec::Any(7)][..])
        )
            .prop_map(|(s, f, t)| Op::SendInvalidate(s, f, t)),
        (
            sges(),
            op_flags(),
            any::<i64>(),
            any::<u32>().prop_map(TokenSpec::Any)
        )
            .prop_map(|(s, f, a, t)| Op::Write(s, f, a, t)),
        (sges(), op_flags(), -16i64..9000, Just(TokenSpec::Remote))
            .prop_map(|(s, f, a, t)| Op::Read(s, f, a, t)),
        (sges(), any::<bool>()).prop_map(|(s, null)| Op::Receive(s, null)),
        sges().prop_map(Op::SrqReceive),
        (
            -64i64..5000,
            prop_oneof![0u64..5000, any::<u64>()],
            op_flags()
        )
            .prop_map(|(o, l, f)| Op::Bind(o, l, f)),
        (
            0u32..10,
            any::<u32>(),
            prop_oneof![0u64..20_000, any::<u64>()],
            op_flags()
        )
            .prop_map(|(n, fbo, l, f)| Op::FastRegister(n, fbo, l, f)),
        (any::<bool>(), op_flags()).prop_map(|(mw, f)| Op::Invalidate(mw, f)),
        prop_oneof![0u32..4, any::<u32>()].prop_map(Op::Arm),
        (0u8..10).prop_map(Op::Results),
        Just(Op::CompleteSend),
        Just(Op::CompleteRecv),
    ]
}

// ---------------------------------------------------------------- memory

/// A page-aligned region between two guard pages.
struct Guarded {
    pages: Pages,
}

impl Guarded {
    fn new() -> Self {
        let mut pages = Pages::new(3);
        pages.bytes().fill(CANARY);
        for (i, b) in pages.bytes()[PAGE..2 * PAGE].iter_mut().enumerate() {
            *b = i as u8;
        }
        Self { pages }
    }

    fn region(&self) -> u64 {
        self.pages.addr() + PAGE as u64
    }

    fn region_slice(&mut self) -> &[u8] {
        &self.pages.bytes()[PAGE..2 * PAGE]
    }

    fn intact(&mut self) -> bool {
        let b = self.pages.bytes();
        b[..PAGE].iter().all(|&x| x == CANARY)
            && b[2 * PAGE..].iter().all(|&x| x == CANARY)
            && b[PAGE..2 * PAGE]
                .iter()
                .enumerate()
                .all(|(i, &x)| x == i as u8)
    }
}

// ---------------------------------------------------------------- model

/// One QP as the model sees it: its limits and what is outstanding.
struct Model {
    depth: usize,
    sge: usize,
    inline: u32,
    /// Send WQEs posted and not completed: (request context, signaled).
    sq: VecDeque<(usize, bool)>,
    rq: VecDeque<usize>,
    srq: VecDeque<usize>,
    srq_depth: usize,
    srq_sge: usize,
    /// CQEs written and not yet taken.
    cqes: usize,
}

struct Tokens {
    local: u32,
    remote: u32,
    privileged: u32,
}

impl Tokens {
    fn of(&self, t: TokenSpec) -> u32 {
        match t {
            TokenSpec::Local => self.local,
            TokenSpec::Remote => self.remote,
            TokenSpec::Privileged => self.privileged,
            TokenSpec::Any(x) => x,
        }
    }
}

fn build_sges(specs: &[SgeSpec], region: u64, tokens: &Tokens, inline: bool) -> Vec<NDK_SGE> {
    specs
        .iter()
        .map(|s| {
            // Inline payloads are read by the provider at post time: they
            // must point at readable memory (the consumer's contract), so
            // they stay inside the region whenever they could be copied
            // (a total above the QP's inline size is refused unread).
            let va = if inline {
                region + (s.offset.rem_euclid(512)) as u64
            } else {
                region.wrapping_add_signed(s.offset)
            };
            sge(va, s.len, tokens.of(s.token))
        })
        .collect()
}

fn total(s: &[NDK_SGE]) -> u64 {
    s.iter().map(|x| u64::from(x.Length)).sum()
}

const IP: NTSTATUS = STATUS_INVALID_PARAMETER;
const IR: NTSTATUS = STATUS_INSUFFICIENT_RESOURCES;

impl Model {
    /// The documented status of a data post (send, send-and-invalidate,
    /// write, read).
    fn data(&self, allowed: u32, flags: u32, s: &[NDK_SGE], read: bool, null: bool) -> NTSTATUS {
        if null && !s.is_empty() {
            return IP;
        }
        if flags & !allowed != 0 {
            return IP;
        }
        if flags & NDK_OP_FLAG_INLINE != 0 {
            if total(s) > u64::from(self.inline) {
                return IP;
            }
        } else {
            let max = if read { MAX_SGE } else { self.sge };
            if s.len() > max || total(s) > MAX_TRANSFER {
                return IP;
            }
        }
        if read && flags & NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE != 0 && s.is_empty() {
            return IP;
        }
        if self.sq.len() >= self.depth {
            return IR;
        }
        STATUS_SUCCESS
    }

    fn receive(s: &[NDK_SGE], null: bool, queued: usize, depth: usize, sge: usize) -> NTSTATUS {
        if null && !s.is_empty() {
            return IP;
        }
        if s.len() > sge || total(s) > MAX_TRANSFER {
            return IP;
        }
        if queued >= depth {
            return IR;
        }
        STATUS_SUCCESS
    }
}

fn signaled(flags: u32) -> bool {
    flags & NDK_OP_FLAG_SILENT_SUCCESS == 0
}

// ---------------------------------------------------------------- driver

#[derive(Debug)]
struct Case {
    depth: u32,
    sge: u32,
    inline: u32,
    srq_depth: u32,
    srq_sge: u32,
    ops: Vec<Op>,
}

fn case() -> impl Strategy<Value = Case> {
    (
        1u32..6,
        1u32..=16,
        prop_oneof![Just(0u32), 1..=MAX_INLINE],
        1u32..6,
        1u32..=16,
        prop::collection::vec(op(), 1..40),
    )
        .prop_map(|(depth, sge, inline, srq_depth, srq_sge, ops)| Case {
            depth,
            sge,
            inline,
            srq_depth,
            srq_sge,
            ops,
        })
}

// One match arm per entry point; c, m, s name case, model and setup.
#[allow(clippy::too_many_lines, clippy::many_single_char_names)]
fn run(c: &Case) -> Result<(), TestCaseError> {
    let env = Env::new();
    let pair = env.connected_pair(c.depth, c.sge, c.inline);
    let s = pair.active_qp;
    let qp = s.qp;
    let mut mem = Guarded::new();
    let region = mem.region();
    let (mr, _mdl) = registered_mr(
        s.pd,
        mem.region_slice(),
        NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_ALLOW_REMOTE_READ,
    );
    let (local, remote) = mr_tokens(mr);
    let tokens = Tokens {
        local,
        remote,
        privileged: privileged_token(s.pd),
    };
    let mw = create_mw(s.pd);
    let fr = create_mr(s.pd, true);
    prop_assert_eq!(init_fast_register(fr, 4, true), STATUS_SUCCESS);
    let srq = try_create_srq(s.pd, c.srq_depth, c.srq_sge, 0, None)
        .map_err(|st| TestCaseError::fail(format!("create srq {st:#x}")))?;
    let srqn = *env.dev().srqns().last().expect("an SRQ");
    let pages: Vec<NDK_LOGICAL_ADDRESS> = (0..10).map(|i| (region as i64) + i * 4096).collect();
    let mut m = Model {
        depth: c.depth as usize,
        sge: c.sge as usize,
        inline: c.inline,
        sq: VecDeque::new(),
        rq: VecDeque::new(),
        srq: VecDeque::new(),
        srq_depth: c.srq_depth as usize,
        srq_sge: c.srq_sge as usize,
        cqes: 0,
    };
    for (i, op) in c.ops.iter().enumerate() {
        let ctx = 0x1000 + i;
        match op {
            Op::Send(specs, flags, null) => {
                let inline = flags & NDK_OP_FLAG_INLINE != 0;
                let list = build_sges(specs, region, &tokens, inline);
                let want = m.data(SEND_OK, *flags, &list, false, *null);
                let st = if *null {
                    let f = qp_table(qp).NdkSend.unwrap();
                    // SAFETY: our QP; a null list with its count, which
                    // the provider must refuse unread when non-zero.
                    unsafe { f(qp, ctx as PVOID, ptr::null(), list.len() as u32, *flags) }
                } else {
                    send(qp, ctx, &list, *flags)
                };
                prop_assert_eq!(st, want, "NdkSend {:x?} flags {:#x}", specs, flags);
                if st == STATUS_SUCCESS {
                    m.sq.push_back((ctx, signaled(*flags)));
                }
            }
            Op::SendInvalidate(specs, flags, t) => {
                let inline = flags & NDK_OP_FLAG_INLINE != 0;
                let list = build_sges(specs, region, &tokens, inline);
                let want = m.data(SEND_OK, *flags, &list, false, false);
                let st = send_and_invalidate(qp, ctx, &list, *flags, tokens.of(*t));
                prop_assert_eq!(st, want, "NdkSendAndInvalidate flags {:#x}", flags);
                if st == STATUS_SUCCESS {
                    m.sq.push_back((ctx, signaled(*flags)));
                }
            }
            Op::Write(specs, flags, addr, t) => {
                let inline = flags & NDK_OP_FLAG_INLINE != 0;
                let list = build_sges(specs, region, &tokens, inline);
                let want = m.data(WRITE_OK, *flags, &list, false, false);
                let st = write(qp, ctx, &list, *addr as u64, tokens.of(*t), *flags);
                prop_assert_eq!(st, want, "NdkWrite flags {:#x}", flags);
                if st == STATUS_SUCCESS {
                    m.sq.push_back((ctx, signaled(*flags)));
                }
            }
            Op::Read(specs, flags, offset, t) => {
                let list = build_sges(specs, region, &tokens, false);
                let want = m.data(READ_OK, *flags, &list, true, false);
                let st = read(
                    qp,
                    ctx,
                    &list,
                    region.wrapping_add_signed(*offset),
                    tokens.of(*t),
                    *flags,
                );
                prop_assert_eq!(st, want, "NdkRead flags {:#x}", flags);
                if st == STATUS_SUCCESS {
                    m.sq.push_back((ctx, signaled(*flags)));
                }
            }
            Op::Receive(specs, null) => {
                let list = build_sges(specs, region, &tokens, false);
                let want = Model::receive(&list, *null, m.rq.len(), m.depth, m.sge);
                let st = if *null {
                    let f = qp_table(qp).NdkReceive.unwrap();
                    // SAFETY: our QP; a null list the provider must refuse.
                    unsafe { f(qp, ctx as PVOID, ptr::null(), list.len() as u32) }
                } else {
                    receive(qp, ctx, &list)
                };
                prop_assert_eq!(st, want, "NdkReceive {} SGEs", list.len());
                if st == STATUS_SUCCESS {
                    m.rq.push_back(ctx);
                }
            }
            Op::SrqReceive(specs) => {
                let list = build_sges(specs, region, &tokens, false);
                let want = Model::receive(&list, false, m.srq.len(), m.srq_depth, m.srq_sge);
                let st = srq_receive(srq, ctx, &list);
                prop_assert_eq!(st, want, "NdkSrqReceive {} SGEs", list.len());
                if st == STATUS_SUCCESS {
                    m.srq.push_back(ctx);
                }
            }
            Op::Bind(offset, len, flags) => {
                let st = bind(
                    qp,
                    ctx,
                    mr,
                    mw,
                    region.wrapping_add_signed(*offset),
                    *len as usize,
                    *flags,
                );
                check_other(&mut m, st, *flags, BIND_OK, ctx, "NdkBind")?;
            }
            Op::FastRegister(n, fbo, len, flags) => {
                let st = fast_register(
                    qp,
                    ctx,
                    fr,
                    &pages[..*n as usize],
                    *fbo,
                    *len as usize,
                    region,
                    *flags,
                );
                check_other(&mut m, st, *flags, FR_OK, ctx, "NdkFastRegister")?;
            }
            Op::Invalidate(window, flags) => {
                let st = if *window {
                    invalidate(qp, ctx, mw, *flags)
                } else {
                    invalidate(qp, ctx, fr, *flags)
                };
                check_other(&mut m, st, *flags, INVALIDATE_OK, ctx, "NdkInvalidate")?;
            }
            Op::Arm(kind) => arm(s.cq, *kind),
            Op::Results(max) => {
                let got = results(s.cq, usize::from(*max));
                prop_assert_eq!(got.len(), m.cqes.min(usize::from(*max)), "NdkGetCqResults");
                m.cqes -= got.len();
            }
            Op::CompleteSend => {
                let done = env.dev().complete_next_send(s.qpn, CqeStatus::Success);
                match (done, m.sq.pop_front()) {
                    (None, None) => {}
                    (Some(w), Some((want_ctx, sig))) => {
                        prop_assert_eq!(w.wr_id as usize, want_ctx, "send WQEs in post order");
                        m.cqes += usize::from(sig);
                    }
                    (d, w) => {
                        return Err(TestCaseError::fail(format!(
                            "device {:?} vs model {:?}",
                            d.map(|x| x.wr_id),
                            w
                        )));
                    }
                }
            }
            Op::CompleteRecv => {
                let done = env
                    .dev()
                    .complete_next_recv(s.qpn, CqeStatus::Success, 0, 0);
                match (done, m.rq.pop_front()) {
                    (None, None) => {}
                    (Some(w), Some(want_ctx)) => {
                        prop_assert_eq!(w.wr_id as usize, want_ctx, "receives in post order");
                        m.cqes += 1;
                    }
                    (d, w) => {
                        return Err(TestCaseError::fail(format!(
                            "device {:?} vs model {:?}",
                            d.map(|x| x.wr_id),
                            w
                        )));
                    }
                }
            }
        }
        prop_assert!(
            mem.intact(),
            "memory outside the registration touched after {:?}",
            op
        );
    }
    prop_assert_eq!(env.dev().srq_pending(srqn).len(), m.srq.len());
    // Tear down: everything completes as cancelled, nothing leaks.
    flush(qp);
    while env
        .dev()
        .complete_next_send(s.qpn, CqeStatus::Flushed)
        .is_some()
    {}
    while env
        .dev()
        .complete_next_recv(s.qpn, CqeStatus::Flushed, 0, 0)
        .is_some()
    {}
    env.dev().deliver_events();
    let _ = results(s.cq, 4096);
    close_now(srq);
    close_now(fr);
    close_now(mw);
    assert_eq!(deregister_mr(mr), STATUS_SUCCESS);
    close_now(mr);
    pair.close();
    prop_assert!(mem.intact());
    env.finish();
    Ok(())
}

/// Bind, fast register and invalidate: the flag check is documented to
/// come first; past it, a refusal is `INVALID_PARAMETER` (range, state) or,
/// with a full send queue, `INSUFFICIENT_RESOURCES`.
fn check_other(
    m: &mut Model,
    st: NTSTATUS,
    flags: u32,
    allowed: u32,
    ctx: usize,
    what: &str,
) -> Result<(), TestCaseError> {
    if flags & !allowed != 0 {
        prop_assert_eq!(st, IP, "{} flags {:#x}", what, flags);
        return Ok(());
    }
    let full = m.sq.len() >= m.depth;
    match st {
        STATUS_SUCCESS => {
            prop_assert!(!full, "{} succeeded on a full queue", what);
            m.sq.push_back((ctx, signaled(flags)));
        }
        STATUS_INVALID_PARAMETER => {}
        STATUS_INSUFFICIENT_RESOURCES => prop_assert!(full, "{} refused with room", what),
        other => {
            return Err(TestCaseError::fail(format!(
                "{what}: undocumented status {other:#x}"
            )));
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(256), failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn posts_in_any_order_get_their_documented_status(c in case()) {
        run(&c)?;
    }

    /// NdkCreateCq and NdkCreateQp with arbitrary limits: refused with
    /// `INVALID_PARAMETER` exactly when a limit is 0 or above the adapter's.
    #[test]
    fn creates_with_arbitrary_limits(
        cq_depth in prop_oneof![0u32..8, 4090u32..4100, any::<u32>()],
        rd in prop_oneof![0u32..4, 1020u32..1030, any::<u32>()],
        id in prop_oneof![0u32..4, 1020u32..1030, any::<u32>()],
        rs in 0u32..20,
        is in 0u32..20,
        inline in prop_oneof![0u32..300, any::<u32>()],
    ) {
        let env = Env::new();
        let info = env.info();
        let notify = Recorder::new();
        let cq = env.try_create_cq(cq_depth, notify);
        let cq_ok = cq_depth != 0 && cq_depth <= info.MaxCqDepth;
        prop_assert_eq!(cq.is_ok(), cq_ok, "CreateCq({}) -> {:?}", cq_depth, cq);
        if let Err(st) = cq {
            prop_assert_eq!(st, IP);
        }
        let pd = env.create_pd();
        let qcq = env.create_cq(4, notify);
        let q = create_qp(pd, qcq, qcq, 0x77, rd, id, rs, is, inline);
        let max = info.MaxReceiveQueueDepth.min(info.MaxInitiatorQueueDepth);
        let depth_ok = |d: u32| d != 0 && d <= max;
        let qp_ok = depth_ok(rd) && depth_ok(id) && rs <= 16 && is <= 16 && inline <= MAX_INLINE;
        prop_assert_eq!(q.is_ok(), qp_ok, "CreateQp({}, {}, {}, {}, {}) -> {:?}", rd, id, rs, is, inline, q);
        if let Err(st) = q {
            prop_assert_eq!(st, IP);
        }
        if let Ok(q) = q {
            close_now(q);
        }
        close_now(qcq);
        close_now(pd);
        if let Ok(cq) = cq {
            close_now(cq);
        }
        env.finish();
    }

    /// NdkRegisterMr with arbitrary flags and lengths over a guarded region.
    #[test]
    fn register_mr_with_arbitrary_flags_and_lengths(
        flags in prop_oneof![0u32..16, any::<u32>()],
        length in prop_oneof![0usize..8, PAGE - 2..PAGE + 2, any::<usize>()],
    ) {
        let env = Env::new();
        let pd = env.create_pd();
        let mut mem = Guarded::new();
        let region = mem.region();
        let mr = create_mr(pd, false);
        let mut mdl = Mdl::new(region, PAGE as u32);
        let st = register_mr(mr, &mut mdl, length, flags);
        let known = NDK_MR_FLAG_ALLOW_LOCAL_WRITE
            | NDK_MR_FLAG_ALLOW_REMOTE_READ
            | NDK_MR_FLAG_ALLOW_REMOTE_WRITE
            | NDK_MR_FLAG_RDMA_READ_SINK;
        let remote_write_bit = NDK_MR_FLAG_ALLOW_REMOTE_WRITE & !NDK_MR_FLAG_ALLOW_LOCAL_WRITE;
        let flags_ok = flags & !known == 0
            && (flags & remote_write_bit == 0 || flags & NDK_MR_FLAG_ALLOW_LOCAL_WRITE != 0);
        if !flags_ok || length == 0 || length > 1 << 30 {
            prop_assert_eq!(st, IP, "flags {:#x} length {}", flags, length);
        } else if length <= PAGE {
            prop_assert_eq!(st, STATUS_SUCCESS, "flags {:#x} length {}", flags, length);
            prop_assert_eq!(deregister_mr(mr), STATUS_SUCCESS);
        } else {
            // Longer than the MDL describes: refused.
            prop_assert!(st != STATUS_SUCCESS && st != STATUS_PENDING, "{:#x}", st);
        }
        close_now(mr);
        close_now(pd);
        prop_assert!(mem.intact());
        env.finish();
    }
}

// ================================================================ on the RNIC

/// Where one SGE points: inside the region (in bounds or straddling an
/// edge) or anywhere, with the right token or a wrong one.
#[derive(Clone, Debug)]
struct RnicSge {
    offset: i64,
    len: u32,
    right_token: bool,
}

fn rnic_sge() -> impl Strategy<Value = RnicSge> {
    (
        prop_oneof![4 => 0i64..PAGE as i64, 1 => -128i64..0, 1 => any::<i64>()],
        prop_oneof![4 => 1u32..1500, 1 => 1u32..=PAGE as u32 + 64],
        prop_oneof![5 => Just(true), 1 => Just(false)],
    )
        .prop_map(|(offset, len, right_token)| RnicSge {
            offset,
            len,
            right_token,
        })
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RnicKind {
    Send,
    Write,
    Read,
}

#[derive(Clone, Debug)]
struct RnicOp {
    kind: RnicKind,
    local: Vec<RnicSge>,
    /// Remote offset in B's region (WRITE/READ) and whether the token is B's.
    remote_offset: i64,
    remote_token: bool,
    /// B's receive (SEND).
    recv: Vec<RnicSge>,
}

fn rnic_op() -> impl Strategy<Value = RnicOp> {
    (
        prop::sample::select(&[RnicKind::Send, RnicKind::Write, RnicKind::Read][..]),
        prop::collection::vec(rnic_sge(), 1..4),
        prop_oneof![4 => 0i64..PAGE as i64, 1 => -64i64..0, 1 => any::<i64>()],
        prop_oneof![5 => Just(true), 1 => Just(false)],
        prop::collection::vec(rnic_sge(), 1..4),
    )
        .prop_map(|(kind, local, remote_offset, remote_token, recv)| RnicOp {
            kind,
            local,
            remote_offset,
            remote_token,
            recv,
        })
}

/// A guarded page registered on one side of the connection.
struct Side2 {
    mem: Guarded,
    region: crate::rnic_util::Region,
}

impl Side2 {
    fn new(pd: *mut NDK_PD, flags: u32) -> Self {
        let mem = Guarded::new();
        let region = crate::rnic_util::Region::register(pd, mem.region() as *mut u8, PAGE, flags);
        Self { mem, region }
    }

    fn sges(&self, specs: &[RnicSge]) -> Vec<NDK_SGE> {
        specs
            .iter()
            .map(|s| {
                let token = if s.right_token {
                    self.region.local
                } else {
                    self.region.local ^ 0x0100
                };
                sge(self.region.va.wrapping_add_signed(s.offset), s.len, token)
            })
            .collect()
    }

    /// The (offset, len) pieces of `specs` if every one lies inside the
    /// region with the right token.
    fn valid(specs: &[RnicSge]) -> Option<Vec<(usize, usize)>> {
        specs
            .iter()
            .map(|s| {
                let inside = s.right_token
                    && s.offset >= 0
                    && (s.offset as u64).saturating_add(u64::from(s.len)) <= PAGE as u64;
                inside.then_some((s.offset as usize, s.len as usize))
            })
            .collect()
    }

    fn page(&mut self) -> Vec<u8> {
        self.mem.pages.bytes()[PAGE..2 * PAGE].to_vec()
    }

    fn guards_intact(&mut self) -> bool {
        let b = self.mem.pages.bytes();
        b[..PAGE].iter().all(|&x| x == CANARY) && b[2 * PAGE..].iter().all(|&x| x == CANARY)
    }
}

/// The pieces of `specs` a message of `total` bytes is scattered into, in
/// order, each cut to the bytes it receives.
fn used(specs: &[RnicSge], total: usize) -> Vec<RnicSge> {
    let mut left = total;
    let mut out = Vec::new();
    for s in specs {
        if left == 0 {
            break;
        }
        let n = left.min(s.len as usize);
        out.push(RnicSge {
            len: n as u32,
            ..s.clone()
        });
        left -= n;
    }
    out
}

/// Fabric `fzrnic`, nodes 127.0.7.41/42 (this module's only RNIC test).
fn rnic_cfg(_test: u8, node: u8) -> String {
    format!("mem:fzrnic/127.0.7.{}", 40 + node)
}

/// Runs `ops` on a fresh connection; each must complete (exactly once)
/// with success exactly when every SGE, token and range is valid, and the
/// memory of both sides must match a model that applies only the valid
/// operations, with the guard pages untouched.
fn run_rnic(ops: &[RnicOp]) -> Result<(), TestCaseError> {
    let c = crate::rnic_util::Conn::open(rnic_cfg, 1, 8, 4);
    let mut a = Side2::new(c.a.pd, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    let mut b = Side2::new(c.b.pd, crate::rnic_util::REMOTE_ALL);
    // Whatever the verdict, close everything so the next case (and the
    // shrinker) starts clean.
    let verdict = rnic_ops(&c, &mut a, &mut b, ops);
    a.region.release();
    b.region.release();
    c.close();
    verdict
}

/// Up to `n` results of `cq` within the hang guard (no panic).
fn poll_results(cq: *mut NDK_CQ, n: usize) -> Vec<NDK_RESULT_EX> {
    let deadline = std::time::Instant::now() + WAIT;
    let mut got = Vec::new();
    while got.len() < n && std::time::Instant::now() < deadline {
        got.extend(results_ex(cq, n - got.len()));
        std::thread::sleep(std::time::Duration::from_micros(100));
    }
    got
}

// a, b, c: the sides and the connection; one pass per request, told in
// order (post, completion, model update).
#[allow(clippy::many_single_char_names, clippy::too_many_lines)]
fn rnic_ops(
    c: &crate::rnic_util::Conn,
    a: &mut Side2,
    b: &mut Side2,
    ops: &[RnicOp],
) -> Result<(), TestCaseError> {
    let mut model_a = a.page();
    let mut model_b = b.page();
    for (i, op) in ops.iter().enumerate() {
        let ctx = 0x100 + i;
        let local = a.sges(&op.local);
        let local_ok = Side2::valid(&op.local);
        let total: usize = op.local.iter().map(|s| s.len as usize).sum();
        let remote_va = b.region.va.wrapping_add_signed(op.remote_offset);
        let remote_ok = op.remote_token
            && op.remote_offset >= 0
            && (op.remote_offset as u64).saturating_add(total as u64) <= PAGE as u64;
        let remote_token = if op.remote_token {
            b.region.remote
        } else {
            b.region.remote ^ 0x0100
        };
        let (st, valid) = match op.kind {
            RnicKind::Send => {
                let recv = b.sges(&op.recv);
                let room: usize = op.recv.iter().map(|s| s.len as usize).sum();
                // Receive SGEs are checked as data is scattered into them
                // (as verbs devices do): only the bytes the message
                // reaches must be valid.
                let recv_ok = Side2::valid(&used(&op.recv, total));
                prop_assert_eq!(receive(c.b.qp, ctx, &recv), STATUS_SUCCESS);
                let valid = local_ok.is_some() && recv_ok.is_some() && total <= room;
                (send(c.a.qp, ctx, &local, 0), valid)
            }
            RnicKind::Write => (
                write(c.a.qp, ctx, &local, remote_va, remote_token, 0),
                local_ok.is_some() && remote_ok,
            ),
            RnicKind::Read => (
                read(c.a.qp, ctx, &local, remote_va, remote_token, 0),
                local_ok.is_some() && remote_ok,
            ),
        };
        prop_assert_eq!(st, STATUS_SUCCESS, "post {:?}", op.kind);
        let r = poll_results(c.a.cq, 1);
        prop_assert_eq!(r.len(), 1, "{:?} never completed", op);
        prop_assert_eq!(r[0].RequestContext as usize, ctx);
        prop_assert_eq!(
            r[0].Status == STATUS_SUCCESS,
            valid,
            "{:?} completed {:#x}; valid = {}",
            op,
            r[0].Status,
            valid
        );
        if !valid {
            // The connection is in error now; what was posted is flushed
            // at close. A failed SEND or READ may have scattered part of
            // its data (packet by packet) before meeting the bad byte: the
            // destination is undefined after an error, as in verbs. Only
            // the parts of its SGEs inside the registration (with the
            // right token) may change; the guards never.
            let (dst, model): (&[RnicSge], &mut Vec<u8>) = match op.kind {
                RnicKind::Send => (&op.recv, &mut model_b),
                RnicKind::Read => (&op.local, &mut model_a),
                RnicKind::Write => (&[], &mut model_b),
            };
            let side = if op.kind == RnicKind::Send {
                &mut *b
            } else {
                &mut *a
            };
            let now = side.page();
            for s in dst.iter().filter(|s| s.right_token) {
                let start = s.offset.clamp(0, PAGE as i64) as usize;
                let end = s
                    .offset
                    .saturating_add(i64::from(s.len))
                    .clamp(0, PAGE as i64) as usize;
                if start < end {
                    model[start..end].copy_from_slice(&now[start..end]);
                }
            }
            break;
        }
        if op.kind == RnicKind::Send {
            let rr = poll_results(c.b.cq, 1);
            prop_assert_eq!(rr.len(), 1, "receive of a valid SEND never completed");
            prop_assert_eq!(rr[0].RequestContext as usize, ctx);
            prop_assert_eq!(rr[0].Status, STATUS_SUCCESS);
            prop_assert_eq!(rr[0].BytesTransferred as usize, total);
        }
        let pieces = local_ok.unwrap_or_default();
        let mut bytes = Vec::new();
        match op.kind {
            RnicKind::Send | RnicKind::Write => {
                for &(o, l) in &pieces {
                    bytes.extend_from_slice(&model_a[o..o + l]);
                }
                let dst: Vec<(usize, usize)> = if op.kind == RnicKind::Send {
                    Side2::valid(&used(&op.recv, total)).unwrap_or_default()
                } else {
                    vec![(op.remote_offset as usize, total)]
                };
                let mut at = 0;
                for (o, l) in dst {
                    let n = l.min(bytes.len() - at);
                    model_b[o..o + n].copy_from_slice(&bytes[at..at + n]);
                    at += n;
                }
            }
            RnicKind::Read => {
                let o = op.remote_offset as usize;
                bytes.extend_from_slice(&model_b[o..o + total]);
                let mut at = 0;
                for &(lo, l) in &pieces {
                    model_a[lo..lo + l].copy_from_slice(&bytes[at..at + l]);
                    at += l;
                }
            }
        }
    }
    crate::rnic_util::settle();
    prop_assert!(a.guards_intact(), "A's guard pages written");
    prop_assert!(b.guards_intact(), "B's guard pages written");
    prop_assert!(a.page() == model_a, "A's region differs from the model");
    prop_assert!(b.page() == model_b, "B's region differs from the model");
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, failure_persistence: None, ..ProptestConfig::default() })]

    /// Arbitrary SGE addresses, lengths and tokens, remote addresses and
    /// tokens on the software RNIC (in-memory fabric): success exactly for
    /// valid requests, memory changed only as they say, guards intact.
    #[test]
    fn rnic_requests_touch_only_what_valid_tokens_allow(ops in prop::collection::vec(rnic_op(), 1..6)) {
        run_rnic(&ops)?;
    }
}
