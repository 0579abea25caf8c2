//! librdmacm's rping (rdma-core `librdmacm/examples/rping.c`) over any
//! raw `NDK_ADAPTER`: librsndk's, or a bottled `rsndk.sys`'s, so either
//! can be checked against Linux rxe's `rping` (or `ndkperf ping`) on a
//! shared segment.
//!
//! The protocol, with the rping.c function that does each step:
//! - an RC QP of 16 sends and 2 receives, one SGE each, on a CQ of 32
//!   (`rping_create_qp`, `rping_setup_qp`); one receive posted before the
//!   connection and reposted as each completes (`rping_run_client`,
//!   `rping_cq_event_handler`);
//! - the connection through the adapter's CM on the rdma_cm port (an
//!   rsndk ND port is the IB CM service ID `0x106_0000 | port`,
//!   RDMA_PS_TCP, as rdma_cm's), no private data of the consumer,
//!   responder resources = initiator depth = 1 (`rping_init_conn_param`);
//! - the buffers (`rping_setup_buffers`): `rdma_buf` of the side's size
//!   and the client's `start_buf`, both registered for remote READ and
//!   WRITE and advertised as {virtual address, remote token, size}
//!   (`rping_format_send`): an rsndk token addresses its region by the
//!   virtual address the MDL describes (rxe: the iova given at
//!   registration, the virtual address for `ibv_reg_mr`);
//! - one ping (`rping_test_client`, `rping_test_server`): the client
//!   SENDs start_buf's info; the server RDMA READs `size` bytes of it,
//!   SENDs a go-ahead (16 zero bytes); the client SENDs rdma_buf's
//!   info; the server RDMA WRITEs `strlen + 1` bytes there and SENDs a
//!   go-ahead; the client compares the buffers (`validate`) and prints
//!   `ping data: ...` (`verbose`; the server: `server ping data: ...`);
//! - the end: the client disconnects after `count` pings; the server
//!   answers until the client disconnects, then disconnects.
//!
//! Memory is described by the caller ([`RpingAdapter::mdl`]): librsndk's
//! provider reads page frame numbers as virtual addresses >> 12
//! ([`host_mdl`]), a bottled driver as the bottle's physical pages
//! ([`bottle_mdl`]). Calls that may pend are waited out, bounded.

mod ndk;

use std::collections::VecDeque;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::{Duration, Instant};

use ndkpi::{
    NDK_ADAPTER, NDK_CONNECTOR, NDK_MR_FLAG_ALLOW_LOCAL_WRITE, NDK_MR_FLAG_ALLOW_REMOTE_READ,
    NDK_MR_FLAG_ALLOW_REMOTE_WRITE, NDK_RESULT_EX, STATUS_CANCELLED, STATUS_SUCCESS,
};

use crate::adapter::{Mdl, Recorder, SockAddr, logical_of, qp_table};
pub use ::rping::{INFO_LEN, PingText, RdmaInfo, shown, write_len};
use ndk::{Side, check, wait_for};

/// How long a server told its ping count waits for the client's DREQ
/// after the last ping before it disconnects itself.
pub const CLIENT_DREQ_GRACE: Duration = Duration::from_secs(10);

/// rping's default port.
pub const RPING_PORT: u16 = 7174;

/// rping's size range: `RPING_MIN_BUFSIZE` (23 as rping.c compiles: see
/// ndkperf's `-S`) to `RPING_BUFSIZE - 1`.
pub const RPING_SIZES: std::ops::RangeInclusive<u32> = 23..=65_535;

/// What a run does.
#[derive(Debug, Clone)]
pub struct RpingOptions {
    /// Ping size in bytes (rping -S; the server's buffer size).
    pub size: u32,
    /// Pings (rping -C). A client pings this often (0: until the server
    /// leaves). A server (0, as rping's, which ignores -C) answers until
    /// the client disconnects; after N it waits [`CLIENT_DREQ_GRACE`] for
    /// that, then disconnects itself: a lost DREQ of rping's client is
    /// never resent (Linux's `cm_destroy_id` cancels it, and rping
    /// destroys its id right after disconnecting).
    pub count: u32,
    /// Compare each ping's echo with what was sent (rping -V; client).
    pub validate: bool,
    /// Print each ping's data (rping -v) besides collecting it.
    pub verbose: bool,
    /// How long a connect or a wait for a client, and each step of a
    /// ping, may take.
    pub timeout: Duration,
}

impl RpingOptions {
    /// `count` pings of `size` bytes, validated, not printed, 10 s steps.
    pub fn new(size: u32, count: u32) -> Self {
        Self {
            size,
            count,
            validate: true,
            verbose: false,
            timeout: Duration::from_secs(10),
        }
    }
}

/// What a run did.
#[derive(Debug, Clone, Default)]
pub struct RpingReport {
    /// Pings completed.
    pub rounds: u64,
    /// Bytes moved by RDMA READ and WRITE.
    pub bytes: u64,
    /// From the first ping to the last.
    pub elapsed: Duration,
    /// Every ping was compared (client with `validate`).
    pub validated: bool,
    /// The run ended with the peer's disconnect.
    pub peer_disconnected: bool,
    /// Each ping's text as rping prints it with -v (`ping data: ...` or
    /// `server ping data: ...`), whether printed or not.
    pub lines: Vec<String>,
}

/// An open NDK adapter and how its kernel sees this process's memory.
pub struct RpingAdapter<'a> {
    /// The adapter (librsndk's or a bottled driver's).
    pub adapter: *mut NDK_ADAPTER,
    /// An MDL over `len` bytes at virtual address `va` as the adapter's
    /// kernel describes them.
    pub mdl: &'a (dyn Fn(u64, u32) -> Mdl + Sync),
}

impl std::fmt::Debug for RpingAdapter<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RpingAdapter")
            .field("adapter", &self.adapter)
            .finish_non_exhaustive()
    }
}

impl RpingAdapter<'static> {
    /// A librsndk adapter (`RsNdkOpenAdapter`): page numbers are virtual.
    pub fn host(adapter: *mut NDK_ADAPTER) -> Self {
        Self {
            adapter,
            mdl: &host_mdl,
        }
    }

    /// A bottled driver's adapter: page numbers are the bottle's
    /// physical ones.
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    pub fn bottled(adapter: *mut NDK_ADAPTER) -> Self {
        Self {
            adapter,
            mdl: &bottle_mdl,
        }
    }
}

/// A librsndk adapter (`RsNdkOpenAdapter`) for an rping run, closed on
/// drop (its objects closed by the run that used it).
#[derive(Debug)]
pub struct HostAdapter(*mut NDK_ADAPTER);

impl HostAdapter {
    /// Opens `config` (`include/rsndk_host.h`'s grammar).
    ///
    /// # Panics
    /// When the configuration has a NUL or the open fails.
    pub fn open(config: &str) -> Self {
        let text = std::ffi::CString::new(config).expect("no NUL in a configuration");
        let mut raw = std::ptr::null_mut();
        // SAFETY: a NUL-terminated string and a valid out-pointer.
        let status = unsafe { host::RsNdkOpenAdapter(text.as_ptr(), &raw mut raw) };
        assert_eq!(
            status, STATUS_SUCCESS,
            "RsNdkOpenAdapter({config}) failed: {status:#x}"
        );
        Self(raw)
    }

    /// The raw adapter.
    pub fn raw(&self) -> *mut NDK_ADAPTER {
        self.0
    }

    /// The adapter for [`rping_client`] and [`RpingServer::listen`].
    pub fn rping(&self) -> RpingAdapter<'static> {
        RpingAdapter::host(self.0)
    }

    /// What its software RNIC's engine counted so far.
    ///
    /// # Panics
    /// When the adapter has no device (it always has while open).
    pub fn stats(&self) -> softrnic::engine::EngineStats {
        host::adapters::device_of(self.0)
            .expect("an open librsndk adapter has a device")
            .stats()
    }
}

impl Drop for HostAdapter {
    fn drop(&mut self) {
        // SAFETY: opened by RsNdkOpenAdapter, closed once here.
        let status = unsafe { host::RsNdkCloseAdapter(self.0) };
        if !std::thread::panicking() {
            assert_eq!(status, STATUS_SUCCESS, "RsNdkCloseAdapter: {status:#x}");
        }
    }
}

/// An MDL over `len` bytes at `va` whose page numbers are `pfn_of(page
/// address)`, whatever the calling thread's [`crate::dma::set_pfn_offset`].
fn mdl_with(va: u64, len: u32, pfn_of: impl Fn(u64) -> u64) -> Mdl {
    let mut mdl = Mdl::new(va, len);
    // `set_pfn` adds this thread's offset: hand it the number less that.
    let thread_offset = logical_of(0) >> 12;
    let first = va & !0xfff;
    let pages = ((va & 0xfff) + u64::from(len)).div_ceil(4096);
    for i in 0..pages {
        let pfn = pfn_of(first + i * 4096);
        mdl.set_pfn(0, i as usize, pfn - thread_offset);
    }
    mdl
}

/// librsndk's view of memory: page frame number = virtual address >> 12.
pub fn host_mdl(va: u64, len: u32) -> Mdl {
    mdl_with(va, len, |page| page >> 12)
}

/// A bottled driver's view: the bottle's physical page of each page.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
pub fn bottle_mdl(va: u64, len: u32) -> Mdl {
    mdl_with(va, len, |page| kbottle::mm::phys_of(page as usize) >> 12)
}

/// Request contexts of the posts.
const RECV: usize = 1;
const SEND: usize = 2;
const READ: usize = 3;
const WRITE: usize = 4;

/// Indexes of the buffers in [`Side::buffers`].
const CONTROL: usize = 0;
const RDMA: usize = 1;
const START: usize = 2;

/// Offsets of the received and sent message in the control buffer.
const RECV_AT: usize = 0;
const SEND_AT: usize = 64;

const REMOTE: u32 =
    NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_ALLOW_REMOTE_READ | NDK_MR_FLAG_ALLOW_REMOTE_WRITE;

/// One connected side and the completions it took but did not use yet.
struct Run {
    side: Side,
    taken: VecDeque<NDK_RESULT_EX>,
    sends_pending: usize,
    step: Duration,
}

impl Run {
    /// rping's objects and buffers on `ndk`, the receive posted.
    fn new(
        ndk: &RpingAdapter<'_>,
        size: u32,
        client: bool,
        step: Duration,
    ) -> Result<Self, String> {
        if !RPING_SIZES.contains(&size) {
            return Err(format!(
                "invalid size {size} (valid range is {} to {}, as rping's)",
                RPING_SIZES.start(),
                RPING_SIZES.end()
            ));
        }
        let mut side = Side::new(ndk.adapter)?;
        let mut registered = || -> Result<(), String> {
            side.register(SEND_AT + INFO_LEN, REMOTE, ndk.mdl)?;
            side.register(size as usize, REMOTE, ndk.mdl)?;
            if client {
                side.register(size as usize, REMOTE, ndk.mdl)?;
            }
            Ok(())
        };
        if let Err(e) = registered() {
            side.close();
            return Err(e);
        }
        let run = Self {
            side,
            taken: VecDeque::new(),
            sends_pending: 0,
            step,
        };
        if let Err(e) = run.post_receive() {
            run.side.close();
            return Err(e);
        }
        Ok(run)
    }

    fn post_receive(&self) -> Result<(), String> {
        let sge = self.side.buffers[CONTROL].sge(RECV_AT, INFO_LEN);
        let f = qp_table(self.side.qp).NdkReceive.ok_or("no NdkReceive")?;
        // SAFETY: our QP; the SGE names registered memory that outlives
        // the QP; the array is read during the call.
        let status = unsafe { f(self.side.qp, RECV as *mut _, &raw const sge, 1) };
        check(status, "NdkReceive")
    }

    fn info(&self, buffer: usize, size: u32) -> RdmaInfo {
        let b = &self.side.buffers[buffer];
        RdmaInfo {
            buf: b.va(),
            rkey: b.remote,
            size,
        }
    }

    /// The next completion of request `kind`: its bytes, or `None` when
    /// the peer left (its flushed requests end the run quietly).
    fn wait(&mut self, kind: usize) -> Result<Option<u32>, String> {
        let deadline = Instant::now() + self.step;
        let mut left_seen = false;
        loop {
            if let Some(i) = self
                .taken
                .iter()
                .position(|r| r.RequestContext as usize == kind)
            {
                let r = self.taken.remove(i).unwrap_or_default();
                if kind == SEND {
                    self.sends_pending -= 1;
                }
                return Ok(Some(r.BytesTransferred));
            }
            let mut got = Vec::new();
            wait_for(Duration::from_millis(20), || {
                got = self.side.poll(16);
                !got.is_empty()
            });
            for r in got {
                if r.Status == STATUS_SUCCESS {
                    self.taken.push_back(r);
                } else if r.Status == STATUS_CANCELLED && self.side.peer_left() {
                    return Ok(None);
                } else {
                    return Err(format!(
                        "cq completion failed: request {} completed with {:#010x}",
                        r.RequestContext as usize, r.Status as u32
                    ));
                }
            }
            // Once the peer left, one more look at the CQ takes what it
            // completed before its disconnect reached us.
            if self.side.peer_left() {
                if left_seen && !self.taken.iter().any(|r| r.RequestContext as usize == kind) {
                    return Ok(None);
                }
                left_seen = true;
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "request {kind} did not complete within {:?}",
                    self.step
                ));
            }
        }
    }

    /// The next message (the receive reposted), or `None` when the peer
    /// left.
    fn receive(&mut self) -> Result<Option<RdmaInfo>, String> {
        let Some(len) = self.wait(RECV)? else {
            return Ok(None);
        };
        let bytes = self.side.buffers[CONTROL].bytes()[RECV_AT..RECV_AT + INFO_LEN].to_vec();
        let info = RdmaInfo::decode(&bytes, len as usize)
            .ok_or_else(|| format!("received bogus data, size {len}"))?;
        self.post_receive()?;
        Ok(Some(info))
    }

    /// SENDs `info` once the previous SEND of the message completed.
    fn send(&mut self, info: RdmaInfo) -> Result<(), String> {
        while self.sends_pending > 0 {
            if self.wait(SEND)?.is_none() {
                return Err("the peer disconnected".into());
            }
        }
        self.side.buffers[CONTROL].bytes()[SEND_AT..SEND_AT + INFO_LEN]
            .copy_from_slice(&info.encode());
        let sge = self.side.buffers[CONTROL].sge(SEND_AT, INFO_LEN);
        let f = qp_table(self.side.qp).NdkSend.ok_or("no NdkSend")?;
        // SAFETY: our QP; the SGE names registered memory; the array is
        // read during the call.
        let status = unsafe { f(self.side.qp, SEND as *mut _, &raw const sge, 1, 0) };
        check(status, "NdkSend")?;
        self.sends_pending += 1;
        Ok(())
    }

    /// An RDMA READ (`write` false) or WRITE of `len` bytes of rdma_buf
    /// from or to the peer's `remote`, waited for.
    fn rdma(&mut self, write: bool, len: usize, remote: RdmaInfo) -> Result<(), String> {
        let sge = self.side.buffers[RDMA].sge(0, len);
        let table = qp_table(self.side.qp);
        let (f, kind, name) = if write {
            (table.NdkWrite, WRITE, "NdkWrite")
        } else {
            (table.NdkRead, READ, "NdkRead")
        };
        let f = f.ok_or_else(|| format!("no {name}"))?;
        // SAFETY: our QP; the SGE names registered memory; the array is
        // read during the call.
        let status = unsafe {
            f(
                self.side.qp,
                kind as *mut _,
                &raw const sge,
                1,
                remote.buf,
                remote.rkey,
                0,
            )
        };
        check(status, name)?;
        match self.wait(kind)? {
            Some(_) => Ok(()),
            None => Err(format!("the peer disconnected during an {name}")),
        }
    }

    /// `rping_test_client`.
    fn client(&mut self, opts: &RpingOptions) -> Result<RpingReport, String> {
        let size = opts.size as usize;
        let mut text = PingText::new();
        let began = Instant::now();
        let mut report = RpingReport {
            validated: opts.validate,
            ..RpingReport::default()
        };
        let mut ping: i32 = 0;
        while opts.count == 0 || report.rounds < u64::from(opts.count) {
            text.fill(ping, &mut self.side.buffers[START].bytes()[..size]);
            self.send(self.info(START, opts.size))?;
            if self.receive()?.is_none() {
                report.peer_disconnected = true;
                break;
            }
            self.send(self.info(RDMA, opts.size))?;
            if self.receive()?.is_none() {
                report.peer_disconnected = true;
                break;
            }
            let sent = self.side.buffers[START].bytes()[..size].to_vec();
            let echoed = &self.side.buffers[RDMA].bytes()[..size];
            if opts.validate && sent != echoed {
                let at = sent.iter().zip(echoed).position(|(a, b)| a != b);
                return Err(format!(
                    "data mismatch! (ping {}, first difference at byte {})",
                    report.rounds,
                    at.unwrap_or(0)
                ));
            }
            let line = format!("ping data: {}", shown(echoed));
            if opts.verbose {
                println!("{line}");
            }
            report.lines.push(line);
            report.rounds += 1;
            report.bytes += 2 * size as u64;
            ping = ping.wrapping_add(1);
        }
        report.elapsed = began.elapsed();
        Ok(report)
    }

    /// `rping_test_server`.
    fn server(&mut self, opts: &RpingOptions) -> Result<RpingReport, String> {
        let own = opts.size as usize;
        let mut report = RpingReport::default();
        let (mut began, mut last) = (None, None);
        loop {
            let Some(source) = self.receive()? else {
                report.peer_disconnected = true;
                break;
            };
            began.get_or_insert_with(Instant::now);
            let len = source.size as usize;
            if len == 0 || len > own {
                return Err(format!(
                    "the client's ping is {len} bytes; this server reads into a buffer of {own} \
                     (its size, as rping's rdma_buf)"
                ));
            }
            self.rdma(false, len, source)?;
            let data = self.side.buffers[RDMA].bytes()[..len].to_vec();
            let line = format!("server ping data: {}", shown(&data));
            if opts.verbose {
                println!("{line}");
            }
            report.lines.push(line);
            let echo_len = write_len(&data);
            self.send(RdmaInfo::default())?;
            let Some(sink) = self.receive()? else {
                report.peer_disconnected = true;
                break;
            };
            self.rdma(true, echo_len, sink)?;
            self.send(RdmaInfo::default())?;
            report.rounds += 1;
            report.bytes += (len + echo_len) as u64;
            last = Some(Instant::now());
            if opts.count != 0 && report.rounds == u64::from(opts.count) {
                // Disconnecting at once would race the client's last
                // go-ahead (rping's client then hangs in
                // RDMA_WRITE_COMPLETE): give its DREQ a while first.
                report.peer_disconnected = wait_for(CLIENT_DREQ_GRACE, || self.side.peer_left());
                break;
            }
        }
        report.elapsed = match (began, last) {
            (Some(b), Some(l)) => l - b,
            _ => Duration::ZERO,
        };
        Ok(report)
    }
}

/// The unspecified address of `peer`'s family (the provider picks the
/// local address).
fn any_like(peer: IpAddr) -> IpAddr {
    match peer {
        IpAddr::V4(_) => Ipv4Addr::UNSPECIFIED.into(),
        IpAddr::V6(_) => Ipv6Addr::UNSPECIFIED.into(),
    }
}

/// rping's client (`rping -c -a PEER [-I LOCAL] -p PORT -S size -C count
/// [-V] [-v]`) on `ndk`: connects from `local` (or the unspecified
/// address of the peer's family) to `peer`, pings, disconnects. A server
/// that disconnects before `count` pings is an error.
pub fn rping_client(
    ndk: &RpingAdapter<'_>,
    local: Option<IpAddr>,
    peer: SocketAddr,
    opts: &RpingOptions,
) -> Result<RpingReport, String> {
    let mut run = Run::new(ndk, opts.size, true, opts.timeout)?;
    let from = SockAddr::ip(local.unwrap_or_else(|| any_like(peer.ip())), 0);
    let result = run
        .side
        .connect(&from, &SockAddr::ip(peer.ip(), peer.port()), opts.timeout)
        .map_err(|e| format!("cannot connect to {peer}: {e}"))
        .and_then(|()| run.client(opts));
    let ended = run.side.disconnect();
    run.side.close();
    let report = result?;
    // A connection the peer already ended may refuse a second end.
    if !report.peer_disconnected {
        ended?;
    }
    if report.peer_disconnected && opts.count != 0 {
        return Err(format!(
            "the server disconnected after {} of {} pings",
            report.rounds, opts.count
        ));
    }
    Ok(report)
}

/// rping's server, listening: [`RpingServer::serve`] answers one client.
pub struct RpingServer {
    run: Run,
    events: &'static Recorder,
    opts: RpingOptions,
    at: SocketAddr,
}

// SAFETY: NDK objects may be used from any thread; the server's are used
// by one thread at a time (whoever owns it), and its recorders live for
// the whole process.
unsafe impl Send for RpingServer {}

impl std::fmt::Debug for RpingServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RpingServer")
            .field("at", &self.at)
            .finish_non_exhaustive()
    }
}

impl RpingServer {
    /// rping's server objects on `ndk`, listening on `at` (`rping -s -a
    /// ADDR -p PORT -S size`).
    pub fn listen(
        ndk: &RpingAdapter<'_>,
        at: SocketAddr,
        opts: &RpingOptions,
    ) -> Result<Self, String> {
        let mut run = Run::new(ndk, opts.size, false, opts.timeout)?;
        match run.side.listen(&SockAddr::ip(at.ip(), at.port())) {
            Ok(events) => Ok(Self {
                run,
                events,
                opts: opts.clone(),
                at,
            }),
            Err(e) => {
                run.side.close();
                Err(format!("cannot listen on {at}: {e}"))
            }
        }
    }

    /// Waits (at most the options' timeout) for one client, accepts it,
    /// answers its pings until it disconnects, disconnects and closes.
    pub fn serve(mut self) -> Result<RpingReport, String> {
        let result = self.accept_and_serve();
        let ended = self.run.side.disconnect();
        self.run.side.close();
        let report = result?;
        if !report.peer_disconnected {
            ended?;
        }
        Ok(report)
    }

    fn accept_and_serve(&mut self) -> Result<RpingReport, String> {
        if !wait_for(self.opts.timeout, || self.events.count() >= 1) {
            return Err(format!(
                "no client connected to {} within {:?}",
                self.at, self.opts.timeout
            ));
        }
        let connector = self.events.calls()[0].object as *mut NDK_CONNECTOR;
        self.run.side.accept(connector)?;
        self.run.server(&self.opts)
    }
}

/// [`RpingServer::listen`] then [`RpingServer::serve`].
pub fn rping_server(
    ndk: &RpingAdapter<'_>,
    at: SocketAddr,
    opts: &RpingOptions,
) -> Result<RpingReport, String> {
    RpingServer::listen(ndk, at, opts)?.serve()
}
