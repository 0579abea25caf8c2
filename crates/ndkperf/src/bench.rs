//! The `bw` and `lat` workloads, both sides.
//!
//! Protocol: the client's connect private data carries the run's
//! parameters ([`Params`], 56 bytes); the server sizes its buffers from
//! them and answers in the accept private data with its buffer's address
//! and token (`Welcome`). The client runs the measured loop, then sends a
//! DONE control message; the server checks what it must check and answers
//! with an ACK carrying its mismatch count. The same code runs both sides
//! in one process (two threads, two adapters) or in two processes.

use std::collections::VecDeque;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ndkpi::{NDK_RESULT_EX, NdkOperationTypeReceive};

use crate::cpu::{Mark, SideCpu};
use crate::error::{Error, Result};
use crate::link::{DATA_ACCESS, Link, RecvPool, Sgl, connect_with_retry, context_of, tag};
use crate::meter::Meter;
use crate::ndk::{Adapter, Connector, Listener, QpLimits, Region, show_duration};
use crate::progress::Progress;
use crate::stats::Samples;
use crate::verify::Pattern;
use ndkperf_cli::Op;

/// Bytes of a control message.
pub const CTRL: usize = 64;
/// `Params::iters` of a run bounded by time (`--duration`): a cap no run
/// reaches; the client's DONE says how many it ran.
pub const UNTIL_STOPPED: u64 = 1 << 40;
/// Memory budget of a side's data slots.
const SLOT_BUDGET: u64 = 64 << 20;

/// Time allowed per GiB of buffer for both sides to allocate and register
/// it while connecting (about 4 s per GiB was seen on a loaded 2-core box).
const REGISTER_ALLOWANCE_PER_GIB: Duration = Duration::from_secs(20);
/// Memory budget of the server's receive pool.
const RECV_BUDGET: u64 = 128 << 20;
/// Receives the server keeps posted for send bandwidth (budget allowing).
const MAX_RECEIVES: u64 = 512;
const MAGIC_HELLO: u32 = u32::from_le_bytes(*b"NDKP");
const MAGIC_WELCOME: u32 = u32::from_le_bytes(*b"NDKW");
const MAGIC_CTRL: u32 = u32::from_le_bytes(*b"NDKC");
const CTRL_DONE: u32 = 1;
const CTRL_ACK: u32 = 2;

/// Bandwidth or latency.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Test {
    /// A window of operations.
    Bw,
    /// One operation at a time.
    Lat,
}

/// What the client asks the server to take part in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Params {
    /// Bandwidth or latency.
    pub test: Test,
    /// The operation.
    pub op: Op,
    /// Bytes per operation.
    pub size: u64,
    /// Operations (round trips for send latency).
    pub iters: u64,
    /// Operations in flight (1 for latency).
    pub depth: u32,
    /// SGEs per operation.
    pub sge: u32,
    /// Check every byte at the target.
    pub verify: bool,
    /// Pattern seed.
    pub seed: u32,
}

impl Params {
    /// The connect private data.
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(40);
        b.extend_from_slice(&MAGIC_HELLO.to_le_bytes());
        b.push(1);
        b.push(match self.test {
            Test::Bw => 1,
            Test::Lat => 2,
        });
        b.push(match self.op {
            Op::Send => 1,
            Op::Read => 2,
            Op::Write => 3,
        });
        b.push(u8::from(self.verify));
        b.extend_from_slice(&self.size.to_le_bytes());
        b.extend_from_slice(&self.iters.to_le_bytes());
        b.extend_from_slice(&self.depth.to_le_bytes());
        b.extend_from_slice(&self.sge.to_le_bytes());
        b.extend_from_slice(&self.seed.to_le_bytes());
        b
    }

    /// Reads connect private data.
    pub fn decode(b: &[u8]) -> Result<Self> {
        let bad = || Error::msg("the client's connect data is not an ndkperf request");
        if b.len() < 36 || u32_at(b, 0) != MAGIC_HELLO || b[4] != 1 {
            return Err(bad());
        }
        let test = match b[5] {
            1 => Test::Bw,
            2 => Test::Lat,
            _ => return Err(bad()),
        };
        let op = match b[6] {
            1 => Op::Send,
            2 => Op::Read,
            3 => Op::Write,
            _ => return Err(bad()),
        };
        let p = Self {
            test,
            op,
            verify: b[7] != 0,
            size: u64_at(b, 8),
            iters: u64_at(b, 16),
            depth: u32_at(b, 24),
            sge: u32_at(b, 28),
            seed: u32_at(b, 32),
        };
        if p.size == 0 || p.size > ndkperf_cli::units::MAX_SIZE || p.iters == 0 || p.depth == 0 {
            return Err(bad());
        }
        Ok(p)
    }

    /// Data slots each side keeps: with `--verify`, one per operation in
    /// flight (`depth` while they fit the budget) so every operation's
    /// bytes can be told apart; without, one that all operations share, as
    /// perftest's cycle buffer does, so the figure is the transport's and
    /// not the memory system's (16 MiB in flight each way would not stay
    /// in any cache, while `ndkperf memcpy` copies cache-resident buffers).
    pub fn slots(&self) -> usize {
        if !self.verify {
            return 1;
        }
        (SLOT_BUDGET / self.size).clamp(1, u64::from(self.depth)) as usize
    }

    /// Bytes per server receive: a message for send tests, else a
    /// control message.
    fn receive_slot(&self) -> usize {
        if self.op == Op::Send {
            (self.size as usize).max(CTRL)
        } else {
            CTRL
        }
    }

    /// Receives the server keeps posted.
    fn server_receives(&self) -> usize {
        match (self.op, self.test) {
            // Sends complete when the server's adapter acknowledges them,
            // not when the server took them: keep a deep receive queue (as
            // perftest's rx-depth) so that bursts do not hit RNR.
            (Op::Send, Test::Bw) => (RECV_BUDGET / self.size)
                .clamp(1, MAX_RECEIVES.max(2 * u64::from(self.depth) + 1))
                as usize,
            (Op::Send, Test::Lat) => 2,
            _ => 1,
        }
    }

    /// Receives the client keeps posted.
    fn client_receives(&self) -> usize {
        if self.op == Op::Send && self.test == Test::Lat {
            2
        } else {
            1
        }
    }

    fn client_receive_slot(&self) -> usize {
        if self.op == Op::Send && self.test == Test::Lat {
            self.receive_slot()
        } else {
            CTRL
        }
    }

    /// A short description: `bw read 1M x 1000` (`x until stopped` for a
    /// run bounded by time).
    pub fn describe(&self) -> String {
        format!(
            "{} {} {} x {}",
            match self.test {
                Test::Bw => "bw",
                Test::Lat => "lat",
            },
            self.op.name(),
            ndkperf_cli::units::format_size(self.size),
            if self.iters == UNTIL_STOPPED {
                "until stopped".to_owned()
            } else {
                self.iters.to_string()
            }
        )
    }
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut w = [0u8; 4];
    w.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(w)
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(w)
}

/// The server's answer: where its data slots are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Welcome {
    addr: u64,
    token: u32,
    slots: u32,
}

impl Welcome {
    fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(24);
        b.extend_from_slice(&MAGIC_WELCOME.to_le_bytes());
        b.extend_from_slice(&self.token.to_le_bytes());
        b.extend_from_slice(&self.addr.to_le_bytes());
        b.extend_from_slice(&self.slots.to_le_bytes());
        b
    }

    fn decode(b: &[u8]) -> Result<Self> {
        if b.len() < 20 || u32_at(b, 0) != MAGIC_WELCOME {
            return Err(Error::msg(
                "the server's accept data is not an ndkperf answer (is it an ndkperf server?)",
            ));
        }
        Ok(Self {
            token: u32_at(b, 4),
            addr: u64_at(b, 8),
            slots: u32_at(b, 16),
        })
    }
}

/// A control message's fields. DONE (client to server): `count` is the
/// operations the client completed (fewer than asked when a run was
/// stopped early). ACK (server to client): what the server checked and
/// what its side cost in CPU.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Ctrl {
    mismatches: u64,
    checked: u64,
    count: u64,
    cpu: SideCpu,
}

fn ctrl_message(kind: u32, c: &Ctrl) -> [u8; CTRL] {
    let mut m = [0u8; CTRL];
    m[0..4].copy_from_slice(&MAGIC_CTRL.to_le_bytes());
    m[4..8].copy_from_slice(&kind.to_le_bytes());
    let fields = [
        c.mismatches,
        c.checked,
        c.count,
        c.cpu.consumer_ns,
        c.cpu.engine_ns,
        c.cpu.wall_ns,
    ];
    for (i, v) in fields.iter().enumerate() {
        m[8 + 8 * i..16 + 8 * i].copy_from_slice(&v.to_le_bytes());
    }
    m
}

/// A control message of `kind`. Data never parses as one: a pattern is
/// a run of rising bytes and unverified data is zeros, while a control
/// message starts with "NDKC".
fn parse_ctrl(b: &[u8], kind: u32) -> Result<Ctrl> {
    if b.len() >= CTRL && u32_at(b, 0) == MAGIC_CTRL && u32_at(b, 4) == kind {
        Ok(Ctrl {
            mismatches: u64_at(b, 8),
            checked: u64_at(b, 16),
            count: u64_at(b, 24),
            cpu: SideCpu {
                consumer_ns: u64_at(b, 32),
                engine_ns: u64_at(b, 40),
                wall_ns: u64_at(b, 48),
            },
        })
    } else {
        Err(Error::msg(format!(
            "expected a {} control message from the peer",
            if kind == CTRL_DONE { "DONE" } else { "ACK" }
        )))
    }
}

/// How a client run is bounded and watched, besides its [`Params`].
#[derive(Debug, Default, Clone, Copy)]
pub struct Control<'a> {
    /// Stop after this long (`--duration`) rather than after
    /// `Params::iters` operations (which then only caps the run).
    pub duration: Option<Duration>,
    /// Counts completed operations and their latencies as they complete
    /// (interval lines).
    pub meter: Option<&'a Meter>,
    /// Show a progress bar (on a terminal, for runs over a second).
    pub progress: bool,
}

impl Control<'_> {
    /// The loop should stop posting: `done` operations of `p` are
    /// complete, time is up or the user pressed Ctrl-C.
    fn stop(&self, done: u64, p: &Params, start: Instant) -> bool {
        self.stop_after(done, p.iters, start)
    }

    /// The loop should stop: `done` of `iters` operations are complete,
    /// time is up (run started at `start`) or the user pressed Ctrl-C.
    pub fn stop_after(&self, done: u64, iters: u64, start: Instant) -> bool {
        done >= iters
            || crate::interrupt::requested()
            || self.duration.is_some_and(|d| start.elapsed() >= d)
    }

    /// Counts one completed operation that took `latency` (interval
    /// lines).
    pub fn record(&self, latency: Duration) {
        if let Some(m) = self.meter {
            m.record(latency);
        }
    }
}

/// What the client measured.
#[derive(Debug)]
pub struct Outcome {
    /// The run.
    pub params: Params,
    /// Operations completed in the measured loop (`params.iters` unless
    /// stopped early by `--duration` or Ctrl-C).
    pub completed: u64,
    /// The loop was stopped by Ctrl-C.
    pub interrupted: bool,
    /// When the measured loop started and ended.
    pub span: (Instant, Instant),
    /// Wall time of the measured loop.
    pub seconds: f64,
    /// Per-operation latencies.
    pub samples: Samples,
    /// Mismatching bytes (both sides).
    pub mismatches: u64,
    /// Bytes checked (both sides).
    pub checked: u64,
    /// Times the client slept waiting for a completion.
    pub sleeps: u64,
    /// The client side's CPU time over the loop: its thread and its
    /// adapter's engine threads.
    pub client_cpu: SideCpu,
    /// The client's adapter (whose engine time several connections on
    /// one adapter share).
    pub client_adapter: usize,
    /// The server side's CPU time over its serving of this connection,
    /// as its ACK reported it.
    pub server_cpu: SideCpu,
}

/// One side's resources for a run. Field order is drop order: regions
/// before the link (whose PD they belong to).
#[derive(Debug)]
struct Side {
    data: Region,
    ctrl: Region,
    recv: RecvPool,
    link: Link,
}

impl Side {
    fn new(adapter: &Arc<Adapter>, p: &Params, client: bool) -> Result<Self> {
        let receives = if client {
            p.client_receives()
        } else {
            p.server_receives()
        };
        let slot = if client {
            p.client_receive_slot()
        } else {
            p.receive_slot()
        };
        let limits = QpLimits {
            receive_depth: receives as u32 + 1,
            initiator_depth: p.depth + 2,
            receive_sge: p.sge,
            initiator_sge: p.sge,
            inline_size: 0,
        };
        let link = Link::new(adapter, limits)?;
        let data_len = p.slots() * p.size as usize;
        let t0 = Instant::now();
        let data = link.pd.register(data_len, DATA_ACCESS)?;
        crate::error::trace!("registered {data_len} bytes in {:?}", t0.elapsed());
        let ctrl = link.pd.register(CTRL, DATA_ACCESS)?;
        let recv = RecvPool::new(&link.pd, receives, slot, p.sge)?;
        recv.post_all(&link.qp)?;
        Ok(Self {
            data,
            ctrl,
            recv,
            link,
        })
    }

    fn send_ctrl(&mut self, kind: u32, c: &Ctrl) -> Result<()> {
        let msg = &ctrl_message(kind, c);
        self.ctrl.buf.bytes_mut(0, CTRL).copy_from_slice(msg);
        let sgl = Sgl::new(&self.ctrl, 0, CTRL, 1);
        self.link.qp.send(tag::CTRL, sgl.as_slice(), 0)
    }

    /// Waits until the control send completed.
    fn wait_ctrl_sent(&mut self) -> Result<()> {
        let mut sent = false;
        while !sent {
            self.link.drain(|r| {
                if tag::kind(context_of(r)) == tag::CTRL {
                    sent = true;
                }
                Ok(())
            })?;
        }
        Ok(())
    }

    fn fill(&mut self, p: &Params, pattern: &Pattern) {
        let size = p.size as usize;
        for slot in 0..p.slots() {
            pattern.fill(slot as u64, self.data.buf.bytes_mut(slot * size, size));
        }
    }
}

/// Accepts one connection on `listener` and serves the run it asks for.
/// Returns a one-line description of what was served.
pub fn serve_one(adapter: &Arc<Adapter>, listener: &Listener, wait: Duration) -> Result<String> {
    let Some(connector) = listener.next(wait)? else {
        return Err(Error::msg(format!(
            "no client connected within {}",
            show_duration(wait)
        )));
    };
    serve(adapter, connector)
}

/// Serves the run `connector` (a client's connection request) asks for.
/// Returns a one-line description of what was served.
pub fn serve(adapter: &Arc<Adapter>, mut connector: Connector) -> Result<String> {
    let (_, _, hello) = connector.connection_data()?;
    let p = match Params::decode(&hello) {
        Ok(p) => p,
        Err(e) => {
            let _ = connector.reject(&[]);
            return Err(e);
        }
    };
    let peer = connector
        .peer_address()
        .map(|a| a.ip().to_string())
        .unwrap_or_default();
    let mut side = Side::new(adapter, &p, false)?;
    let pattern = Pattern::new(p.size as usize, p.seed);
    if p.op == Op::Read || (p.op == Op::Send && p.test == Test::Lat) {
        side.fill(&p, &pattern);
    }
    let welcome = Welcome {
        addr: side.data.addr(0),
        token: side.data.remote_token,
        slots: p.slots() as u32,
    };
    side.link
        .accept(connector, &welcome.encode(), Duration::from_secs(10))?;
    let consumer = Mark::this_thread();
    let engine = Mark::now(adapter.threads());
    let served = serve_loop(&mut side, &p, &pattern)
        .map_err(|e| e.context(format!("client {peer} ({})", p.describe())))?;
    let ack = Ctrl {
        cpu: SideCpu::since(&consumer, Some(&engine)),
        ..served
    };
    side.send_ctrl(CTRL_ACK, &ack)?;
    side.wait_ctrl_sent()?;
    let _ = side.link.disconnect();
    let verdict = if !p.verify {
        String::new()
    } else if served.mismatches == 0 {
        format!(", {} bytes checked, all correct", served.checked)
    } else {
        format!(
            ", {} of {} bytes checked WRONG",
            served.mismatches, served.checked
        )
    };
    let ops = if served.count < p.iters {
        format!(" (stopped by the client after {} operations)", served.count)
    } else {
        String::new()
    };
    Ok(format!("served {} from {peer}{ops}{verdict}", p.describe()))
}

/// How long a server waits for the next message of its client before it
/// gives the connection up as stalled.
const CLIENT_SILENCE: Duration = crate::link::STALL_TIMEOUT;

/// Takes completions like [`Link::drain`], but gives up early, in words,
/// when the client disconnects, and after [`CLIENT_SILENCE`] without a
/// completion.
fn wait_for_client(
    side: &mut Side,
    received: u64,
    each: impl FnMut(&NDK_RESULT_EX) -> Result<()>,
) -> Result<()> {
    let mut each = each;
    let since = Instant::now();
    loop {
        if side.link.drain_for(Duration::from_millis(200), &mut each)? > 0 {
            return Ok(());
        }
        if side.link.peer_disconnected() {
            return Err(Error::msg(format!(
                "the client disconnected before its run ended ({received} messages received)"
            )));
        }
        if since.elapsed() >= CLIENT_SILENCE {
            return Err(Error::msg(format!(
                "the client went silent: nothing from it for {} ({received} messages received); \
                 it was killed or lost its network, and this connection is given up",
                show_duration(CLIENT_SILENCE)
            )));
        }
    }
}

/// The server's loop: take messages until DONE; returns what the server
/// checked and how many operations the client reported.
fn serve_loop(side: &mut Side, p: &Params, pattern: &Pattern) -> Result<Ctrl> {
    let size = p.size as usize;
    let slots = p.slots() as u64;
    let mut received = 0u64;
    let mut done = None;
    let (mut mismatches, mut checked) = (0u64, 0u64);
    let mut pongs_in_flight = 0u32;
    while done.is_none() || pongs_in_flight > 0 {
        let mut events = Vec::new();
        wait_for_client(side, received, |r| {
            events.push(*r);
            Ok(())
        })?;
        for r in events {
            let ctx = context_of(&r);
            match tag::kind(ctx) {
                tag::RECV => {
                    let i = tag::index(ctx);
                    let got = side.recv.bytes(i, CTRL);
                    let is_done =
                        r.BytesTransferred as usize == CTRL && parse_ctrl(got, CTRL_DONE).is_ok();
                    let data_message = p.op == Op::Send && !is_done;
                    if data_message && received >= p.iters {
                        return Err(Error::msg(format!(
                            "the client sent more than the {} messages it asked for",
                            p.iters
                        )));
                    }
                    if data_message {
                        if r.BytesTransferred as usize != size {
                            return Err(Error::msg(format!(
                                "message {received} has {} bytes, expected {size}",
                                r.BytesTransferred
                            )));
                        }
                        if p.verify {
                            let slot = if p.test == Test::Lat {
                                0
                            } else {
                                received % slots
                            };
                            mismatches += pattern.mismatches(slot, side.recv.bytes(i, size));
                            checked += p.size;
                        }
                        received += 1;
                        side.recv.post(&side.link.qp, i)?;
                        if p.test == Test::Lat {
                            let sgl = Sgl::new(&side.data, 0, size, p.sge);
                            side.link.qp.send(tag::SEND, sgl.as_slice(), 0)?;
                            pongs_in_flight += 1;
                        }
                    } else {
                        done = Some(parse_ctrl(got, CTRL_DONE)?.count);
                    }
                }
                tag::SEND => pongs_in_flight -= 1,
                _ => {}
            }
        }
    }
    let count = done.unwrap_or_default().min(p.iters);
    if p.op == Op::Write && p.verify {
        // WRITEs land without telling the target: what can be checked is
        // each slot's last WRITE, once, at the end.
        for slot in 0..slots.min(count) {
            let got = side.data.buf.bytes(slot as usize * size, size);
            mismatches += pattern.mismatches(slot, got);
            checked += p.size;
        }
    }
    Ok(Ctrl {
        mismatches,
        checked,
        count,
        cpu: SideCpu::default(),
    })
}

/// Connects to the server at `server` from `local` and runs `p`.
pub fn run_client(
    adapter: &Arc<Adapter>,
    local: Ipv4Addr,
    server: SocketAddrV4,
    p: &Params,
    timeout: Duration,
    ctl: &Control<'_>,
) -> Result<Outcome> {
    // Both sides allocate and register their buffers inside the connect
    // (the server once it has read the request): allow for that on top of
    // the wait for the peer, or a 1 GiB run would time out registering.
    let data = p.slots() as u64 * p.size;
    let timeout = timeout + REGISTER_ALLOWANCE_PER_GIB.mul_f64(data as f64 / f64::from(1u32 << 30));
    let (mut side, welcome) = connect_with_retry(server, timeout, |left| {
        let mut side = Side::new(adapter, p, true)?;
        let answer = side.link.connect(local, server, &p.encode(), left)?;
        let welcome = Welcome::decode(&answer)?;
        Ok((side, welcome))
    })?;
    if welcome.slots as usize != p.slots() {
        return Err(Error::msg(
            "the server answered with a different slot count (another ndkperf version?)",
        ));
    }
    let pattern = Pattern::new(p.size as usize, p.seed);
    if p.verify && matches!(p.op, Op::Send | Op::Write) {
        side.fill(p, &pattern);
    }
    let mut progress = Progress::new(
        p.iters,
        &p.describe(),
        !ctl.progress || ctl.duration.is_some(),
    );
    let consumer = Mark::this_thread();
    let engine = Mark::now(adapter.threads());
    let mut out = match p.test {
        Test::Bw => client_bw(&mut side, p, &welcome, &pattern, &mut progress, ctl)?,
        Test::Lat => client_lat(&mut side, p, &welcome, &pattern, &mut progress, ctl)?,
    };
    out.client_cpu = SideCpu::since(&consumer, Some(&engine));
    out.client_adapter = Arc::as_ptr(adapter) as usize;
    progress.finish();
    let done = Ctrl {
        count: out.completed,
        ..Ctrl::default()
    };
    side.send_ctrl(CTRL_DONE, &done)?;
    // The ACK: the last message the server sends.
    let mut ack = None;
    while ack.is_none() {
        let mut got = Vec::new();
        side.link.drain(|r| {
            if tag::kind(context_of(r)) == tag::RECV {
                got.push(tag::index(context_of(r)));
            }
            Ok(())
        })?;
        if let Some(&i) = got.first() {
            ack = Some(parse_ctrl(side.recv.bytes(i, CTRL), CTRL_ACK)?);
        }
    }
    let ack = ack.unwrap_or_default();
    out.mismatches += ack.mismatches;
    out.checked += ack.checked;
    out.server_cpu = ack.cpu;
    out.sleeps = side.link.cq.sleeps();
    let _ = side.link.disconnect();
    Ok(out)
}

fn client_bw(
    side: &mut Side,
    p: &Params,
    w: &Welcome,
    pattern: &Pattern,
    progress: &mut Progress,
    ctl: &Control<'_>,
) -> Result<Outcome> {
    let size = p.size as usize;
    let slots = p.slots() as u64;
    let mut samples = Samples::with_capacity(p.iters.min(1 << 22) as usize);
    let mut in_flight: VecDeque<(u64, Instant)> = VecDeque::with_capacity(p.depth as usize);
    let (mut posted, mut completed) = (0u64, 0u64);
    let (mut mismatches, mut checked) = (0u64, 0u64);
    let post = |side: &Side, n: u64| -> Result<()> {
        let slot = n % slots;
        let local = Sgl::new(&side.data, slot as usize * size, size, p.sge);
        let remote = w.addr + slot * p.size;
        match p.op {
            Op::Send => side.link.qp.send(tag::SEND | n, local.as_slice(), 0),
            Op::Read => side
                .link
                .qp
                .read(tag::READ | n, local.as_slice(), remote, w.token, 0),
            Op::Write => side
                .link
                .qp
                .write(tag::WRITE | n, local.as_slice(), remote, w.token, 0),
        }
    };
    let start = Instant::now();
    while !ctl.stop(posted, p, start) && posted < u64::from(p.depth) {
        in_flight.push_back((posted, Instant::now()));
        post(side, posted)?;
        posted += 1;
    }
    let mut done = Vec::new();
    while completed < posted {
        done.clear();
        side.link.drain(|r| {
            done.push(*r);
            Ok(())
        })?;
        let now = Instant::now();
        for r in &done {
            let kind = tag::kind(context_of(r));
            if kind == tag::RECV {
                return Err(Error::msg(
                    "unexpected message from the server during the run",
                ));
            }
            if !matches!(kind, tag::SEND | tag::READ | tag::WRITE) {
                continue;
            }
            let (n, t0) = in_flight
                .pop_front()
                .ok_or_else(|| Error::msg("a completion nobody posted"))?;
            if tag::index(context_of(r)) as u64 != n {
                return Err(Error::msg(format!(
                    "operation {} completed before operation {n}",
                    tag::index(context_of(r))
                )));
            }
            samples.push(now - t0);
            ctl.record(now - t0);
            if p.op == Op::Read && p.verify {
                let slot = n % slots;
                mismatches +=
                    pattern.mismatches(slot, side.data.buf.bytes(slot as usize * size, size));
                checked += p.size;
            }
            completed += 1;
            progress.inc(1);
            if !ctl.stop(posted, p, start) {
                in_flight.push_back((posted, Instant::now()));
                post(side, posted)?;
                posted += 1;
            }
        }
    }
    let end = Instant::now();
    Ok(Outcome {
        params: *p,
        completed,
        interrupted: completed < p.iters && crate::interrupt::requested(),
        span: (start, end),
        seconds: (end - start).as_secs_f64(),
        samples,
        mismatches,
        checked,
        sleeps: 0,
        client_cpu: SideCpu::default(),
        client_adapter: 0,
        server_cpu: SideCpu::default(),
    })
}

fn client_lat(
    side: &mut Side,
    p: &Params,
    w: &Welcome,
    pattern: &Pattern,
    progress: &mut Progress,
    ctl: &Control<'_>,
) -> Result<Outcome> {
    let size = p.size as usize;
    let mut samples = Samples::with_capacity(p.iters.min(1 << 22) as usize);
    let (mut mismatches, mut checked) = (0u64, 0u64);
    let local = Sgl::new(&side.data, 0, size, p.sge);
    let mut sends_in_flight = 0u32;
    let mut done: Vec<NDK_RESULT_EX> = Vec::new();
    let start = Instant::now();
    let mut n = 0u64;
    while !ctl.stop(n, p, start) {
        let t0 = Instant::now();
        match p.op {
            Op::Send => {
                side.link.qp.send(tag::SEND | n, local.as_slice(), 0)?;
                sends_in_flight += 1;
            }
            Op::Read => {
                let qp = &side.link.qp;
                qp.read(tag::READ | n, local.as_slice(), w.addr, w.token, 0)?;
            }
            Op::Write => {
                let qp = &side.link.qp;
                qp.write(tag::WRITE | n, local.as_slice(), w.addr, w.token, 0)?;
            }
        }
        let mut finished = false;
        while !finished {
            done.clear();
            side.link.drain(|r| {
                done.push(*r);
                Ok(())
            })?;
            let now = Instant::now();
            for r in &done {
                let ctx = context_of(r);
                match (p.op, tag::kind(ctx)) {
                    (Op::Send, tag::SEND) => sends_in_flight -= 1,
                    (Op::Send, tag::RECV) if r.Type == NdkOperationTypeReceive || r.Type == 0 => {
                        let i = tag::index(ctx);
                        if r.BytesTransferred as usize != size {
                            return Err(Error::msg(format!(
                                "reply {n} has {} bytes, expected {size}",
                                r.BytesTransferred
                            )));
                        }
                        if p.verify {
                            mismatches += pattern.mismatches(0, side.recv.bytes(i, size));
                            checked += p.size;
                        }
                        side.recv.post(&side.link.qp, i)?;
                        samples.push(now - t0);
                        ctl.record(now - t0);
                        finished = true;
                    }
                    (Op::Read, tag::READ) | (Op::Write, tag::WRITE) => {
                        samples.push(now - t0);
                        ctl.record(now - t0);
                        if p.op == Op::Read && p.verify {
                            mismatches += pattern.mismatches(0, side.data.buf.bytes(0, size));
                            checked += p.size;
                        }
                        finished = true;
                    }
                    _ => {}
                }
            }
        }
        progress.inc(1);
        n += 1;
    }
    let end = Instant::now();
    let seconds = (end - start).as_secs_f64();
    while sends_in_flight > 0 {
        side.link.drain(|r| {
            if tag::kind(context_of(r)) == tag::SEND {
                sends_in_flight -= 1;
            }
            Ok(())
        })?;
    }
    Ok(Outcome {
        params: *p,
        completed: n,
        interrupted: n < p.iters && crate::interrupt::requested(),
        span: (start, end),
        seconds,
        samples,
        mismatches,
        checked,
        sleeps: 0,
        client_cpu: SideCpu::default(),
        client_adapter: 0,
        server_cpu: SideCpu::default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_round_trip_and_fit_connect_data() {
        let p = Params {
            test: Test::Lat,
            op: Op::Write,
            size: 1 << 20,
            iters: 12345,
            depth: 16,
            sge: 3,
            verify: true,
            seed: 99,
        };
        let b = p.encode();
        assert!(b.len() <= 56, "MaxCallerData is 56");
        assert_eq!(Params::decode(&b).unwrap(), p);
        assert!(Params::decode(&b[..20]).is_err());
        let w = Welcome {
            addr: 0x7f00_1234_5000,
            token: 77,
            slots: 16,
        };
        assert_eq!(Welcome::decode(&w.encode()).unwrap(), w);
        let ack = Ctrl {
            mismatches: 3,
            checked: 4,
            count: 5,
            cpu: SideCpu {
                consumer_ns: 6,
                engine_ns: 7,
                wall_ns: 8,
            },
        };
        assert_eq!(
            parse_ctrl(&ctrl_message(CTRL_ACK, &ack), CTRL_ACK).unwrap(),
            ack
        );
        assert!(parse_ctrl(&ctrl_message(CTRL_ACK, &ack), CTRL_DONE).is_err());
        // Data is never taken for a DONE: patterns rise byte by byte.
        let pattern = Pattern::new(CTRL, 7);
        for slot in 0..300 {
            assert!(parse_ctrl(pattern.expected(slot), CTRL_DONE).is_err());
        }
        assert!(parse_ctrl(&[0; CTRL], CTRL_DONE).is_err());
    }

    #[test]
    fn slots_follow_the_budget() {
        let mut p = Params {
            test: Test::Bw,
            op: Op::Send,
            size: 1 << 20,
            iters: 1,
            depth: 16,
            sge: 1,
            verify: true,
            seed: 0,
        };
        assert_eq!(p.slots(), 16);
        p.verify = false;
        assert_eq!(p.slots(), 1, "unverified runs share one slot");
        p.verify = true;
        p.size = 1 << 30;
        assert_eq!(p.slots(), 1);
        assert_eq!(p.server_receives(), 1);
        p.size = 64;
        assert_eq!(p.server_receives(), 512);
        p.size = 1 << 20;
        assert_eq!(p.server_receives(), 128);
    }
}
