//! SMB2-style I/O over SMB Direct: the client registers its buffer per
//! I/O with NdkFastRegister (DEFER, SILENT_SUCCESS) and sends READ/WRITE
//! requests carrying buffer descriptors with Channel
//! RDMA_V1_INVALIDATE; the server moves the data with RDMA READ (WRITE
//! requests) or RDMA WRITE (READ requests) and answers with
//! NdkSendAndInvalidate of the first descriptor's token. Small I/Os go
//! inline in the SMB2 message instead (fragmented by SMB Direct).

use std::collections::{HashMap, VecDeque};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ndkpi::{
    NDK_LOGICAL_ADDRESS, NDK_OP_FLAG_ALLOW_LOCAL_WRITE, NDK_OP_FLAG_ALLOW_REMOTE_READ,
    NDK_OP_FLAG_ALLOW_REMOTE_WRITE, NDK_OP_FLAG_DEFER, NDK_OP_FLAG_SILENT_SUCCESS, PAGE_SIZE,
    STATUS_DATA_ERROR,
};

use super::conn::{Config, SmbdConn, Stats};
use super::proto::{
    BufferDescriptor, CHANNEL_NONE, CHANNEL_RDMA_V1_INVALIDATE, SMB2_LOGOFF, SMB2_READ, SMB2_WRITE,
    Smb2,
};
use crate::error::{Error, Result};
use crate::link::{DATA_ACCESS, Link, Sgl, connect_with_retry, context_of, tag};
use crate::ndk::{Adapter, Buffer, Connector, Lam, Listener, Mr, QpLimits, Region};
use crate::progress::Progress;
use crate::stats::Samples;
use crate::verify::Pattern;
use ndkperf_cli::Mix;

const MAGIC: u32 = u32::from_le_bytes(*b"NDKS");

/// The run, as the client tells the server in its connect data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Job {
    /// Number of I/Os.
    pub ops: u64,
    /// Bytes per I/O.
    pub io_size: u32,
    /// Outstanding I/Os.
    pub depth: u32,
    /// READ/WRITE mix.
    pub mix: Mix,
    /// Check data.
    pub verify: bool,
    /// I/Os below this size go inline.
    pub inline_threshold: u32,
    /// Pattern seed.
    pub seed: u32,
    /// Pages per fast-register MR, if limited.
    pub fr_pages: Option<u32>,
}

impl Job {
    /// Connect private data: magic, verify, seed, depth, I/O size and
    /// descriptors per I/O (for the server's queue sizes).
    fn encode(&self, chunks: u32) -> Vec<u8> {
        let mut b = Vec::with_capacity(24);
        b.extend_from_slice(&MAGIC.to_le_bytes());
        b.extend_from_slice(&u32::from(self.verify).to_le_bytes());
        b.extend_from_slice(&self.seed.to_le_bytes());
        b.extend_from_slice(&self.depth.to_le_bytes());
        b.extend_from_slice(&self.io_size.to_le_bytes());
        b.extend_from_slice(&chunks.to_le_bytes());
        b
    }

    /// (verify, seed, depth, I/O size, descriptors per I/O).
    fn decode(b: &[u8]) -> Result<(bool, u32, u32, u32, u32)> {
        let word = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        if b.len() < 24 || word(0) != MAGIC {
            return Err(Error::msg("the client is not an ndkperf smbd client"));
        }
        let (depth, chunks) = (word(12), word(20));
        if depth == 0 || depth > 4096 || chunks == 0 || chunks > 4096 {
            return Err(Error::msg("the smbd client asked for an impossible job"));
        }
        Ok((word(4) != 0, word(8), depth, word(16), chunks))
    }

    /// Whether I/O number `n` is a READ.
    fn is_read(&self, n: u64) -> bool {
        match self.mix {
            Mix::Read => true,
            Mix::Write => false,
            Mix::Mixed => n % 2 == 0,
        }
    }

    fn rdma(&self) -> bool {
        self.io_size >= self.inline_threshold
    }
}

/// Queue depths for a side: sends, and RDMA work per I/O.
fn limits(credits: u16, depth: u32, chunks: u32) -> QpLimits {
    QpLimits {
        receive_depth: u32::from(credits) + 1,
        initiator_depth: u32::from(credits) + 2 + depth * (2 * chunks + 2),
        receive_sge: 1,
        initiator_sge: 1,
        inline_size: 0,
    }
}

/// What the client measured.
#[derive(Debug)]
pub struct ClientReport {
    /// Wall time of the I/O phase.
    pub seconds: f64,
    /// I/Os completed.
    pub ops: u64,
    /// READs among them.
    pub reads: u64,
    /// Request-to-response latency per I/O.
    pub samples: Samples,
    /// I/Os whose data did not match (both directions).
    pub bad_ios: u64,
    /// Bytes checked by the client (READ data).
    pub checked: u64,
    /// Fast registers posted.
    pub fast_registers: u64,
    /// Local invalidates posted (descriptors after the first).
    pub local_invalidates: u64,
    /// SMB Direct counters.
    pub stats: Stats,
    /// Negotiated (max send, max receive, max fragmented send, max r/w).
    pub sizes: (usize, usize, usize, u32),
}

/// What the server did.
#[derive(Debug, Default)]
pub struct ServerReport {
    /// RDMA READs posted.
    pub rdma_reads: u64,
    /// RDMA WRITEs posted.
    pub rdma_writes: u64,
    /// Bytes of WRITE data checked.
    pub checked: u64,
    /// WRITE I/Os whose data did not match.
    pub bad_writes: u64,
    /// SMB Direct counters.
    pub stats: Stats,
}

/// One client buffer and its fast-register MRs (one per 256 pages).
/// Field order is drop order: mappings and MRs before the memory.
#[derive(Debug)]
struct Slot {
    lams: Vec<Lam>,
    mrs: Vec<Mr>,
    pages: Vec<Vec<NDK_LOGICAL_ADDRESS>>,
    buf: Buffer,
    io: Option<ClientIo>,
}

#[derive(Debug)]
struct ClientIo {
    id: u64,
    read: bool,
    rdma: bool,
    started: Instant,
    tokens: Vec<u32>,
    invalidates_left: usize,
}

/// Chunk size of one descriptor: what one fast-register MR maps
/// (`fr_pages` pages, at most the adapter's FRMRPageCount).
fn chunk_bytes(adapter: &Adapter, fr_pages: Option<u32>, max_read_write: u32) -> usize {
    let frmr = adapter.info().FRMRPageCount.max(1);
    let pages = fr_pages.map_or(frmr, |p| p.clamp(1, frmr));
    (pages as usize * PAGE_SIZE)
        .min(max_read_write as usize)
        .max(PAGE_SIZE)
}

/// The client side: connects, negotiates, runs `job`, logs off.
pub fn run_client(
    adapter: &Arc<Adapter>,
    local: Ipv4Addr,
    server: SocketAddrV4,
    job: &Job,
    config: Config,
    timeout: Duration,
    show_progress: bool,
) -> Result<ClientReport> {
    let chunk = chunk_bytes(adapter, job.fr_pages, config.max_read_write_size);
    let chunks = (job.io_size as usize).div_ceil(chunk) as u32;
    let mut conn = connect_with_retry(server, timeout, |left| {
        let link = Link::new(adapter, limits(config.credits, job.depth, chunks))?;
        let mut conn = SmbdConn::new(link, config)?;
        conn.link
            .connect(local, server, &job.encode(chunks), left)?;
        Ok(conn)
    })?;
    let resp = conn.negotiate_client()?;
    let (max_send, max_recv, max_frag) = conn.sizes();
    // Descriptors must not exceed what the server moves per RDMA op.
    let chunk = chunk.min(resp.max_read_write_size as usize).max(PAGE_SIZE);
    let chunks = (job.io_size as usize).div_ceil(chunk);
    let rdma = job.rdma();
    let mut slots = Vec::with_capacity(job.depth as usize);
    for _ in 0..job.depth {
        let buf = Buffer::new(job.io_size as usize)?;
        let (mut lams, mut mrs, mut pages) = (Vec::new(), Vec::new(), Vec::new());
        if rdma {
            for c in 0..chunks {
                let off = c * chunk;
                let len = chunk.min(job.io_size as usize - off);
                let lam = Lam::build(adapter, &buf, off, len)?;
                let mr = conn.link.pd.create_mr(true)?;
                mr.init_fast_register(len.div_ceil(PAGE_SIZE) as u32, true)?;
                pages.push(lam.pages());
                lams.push(lam);
                mrs.push(mr);
            }
        }
        slots.push(Slot {
            lams,
            mrs,
            pages,
            buf,
            io: None,
        });
    }
    let mut client = Client {
        job: *job,
        pattern: Pattern::new(job.io_size as usize, job.seed),
        chunk,
        slots,
        by_id: HashMap::new(),
        samples: Samples::with_capacity(job.ops.min(1 << 22) as usize),
        bad_ios: 0,
        checked: 0,
        fast_registers: 0,
        local_invalidates: 0,
        reads: 0,
        conn,
    };
    // Exercise keepalive once: the server must answer.
    client.conn.send_keepalive()?;
    let mut progress = Progress::new(job.ops, "smbd", !show_progress);
    let start = Instant::now();
    let (mut issued, mut completed) = (0u64, 0u64);
    while completed < job.ops {
        while issued < job.ops {
            let Some(slot) = client.free_slot() else {
                break;
            };
            if !client.conn.can_send_now(client.request_len(issued)) {
                break;
            }
            client.start(slot, issued)?;
            issued += 1;
        }
        client.conn.poll()?;
        let n = client.process()?;
        completed += n;
        progress.inc(n);
    }
    let seconds = start.elapsed().as_secs_f64();
    progress.finish();
    client.logoff()?;
    let _ = client.conn.link.disconnect();
    Ok(ClientReport {
        seconds,
        ops: completed,
        reads: client.reads,
        samples: std::mem::take(&mut client.samples),
        bad_ios: client.bad_ios,
        checked: client.checked,
        fast_registers: client.fast_registers,
        local_invalidates: client.local_invalidates,
        stats: client.conn.stats,
        sizes: (
            max_send,
            max_recv,
            max_frag,
            client.conn.max_read_write_size,
        ),
    })
}

/// Field order is drop order: the slots' MRs and mappings before the
/// connection (its PD and adapter).
#[derive(Debug)]
struct Client {
    job: Job,
    pattern: Pattern,
    chunk: usize,
    slots: Vec<Slot>,
    by_id: HashMap<u64, usize>,
    samples: Samples,
    bad_ios: u64,
    checked: u64,
    fast_registers: u64,
    local_invalidates: u64,
    reads: u64,
    conn: SmbdConn,
}

impl Client {
    fn free_slot(&self) -> Option<usize> {
        self.slots.iter().position(|s| s.io.is_none())
    }

    /// Bytes of the SMB2 request for I/O `n`.
    fn request_len(&self, n: u64) -> usize {
        if self.job.rdma() {
            0x70 + 16 * self.slots[0].mrs.len().max(1)
        } else if self.job.is_read(n) {
            0x71
        } else {
            0x70 + self.job.io_size as usize
        }
    }

    /// Starts I/O `n` in slot `s`.
    fn start(&mut self, s: usize, n: u64) -> Result<()> {
        let read = self.job.is_read(n);
        let id = n + 1;
        let size = self.job.io_size as usize;
        let rdma = self.job.rdma();
        let slot = &mut self.slots[s];
        if !read && self.job.verify {
            self.pattern.fill(id, slot.buf.bytes_mut(0, size));
        }
        let mut msg = Smb2 {
            command: if read { SMB2_READ } else { SMB2_WRITE },
            message_id: id,
            length: self.job.io_size,
            file_offset: n * u64::from(self.job.io_size),
            channel: if rdma {
                CHANNEL_RDMA_V1_INVALIDATE
            } else {
                CHANNEL_NONE
            },
            ..Smb2::default()
        };
        let mut tokens = Vec::new();
        if rdma {
            // The server READs our buffer for a WRITE and WRITEs it for a
            // READ; the registrations are deferred and rung by the send.
            let access = if read {
                NDK_OP_FLAG_ALLOW_REMOTE_WRITE | NDK_OP_FLAG_ALLOW_LOCAL_WRITE
            } else {
                NDK_OP_FLAG_ALLOW_REMOTE_READ
            };
            for (c, mr) in slot.mrs.iter().enumerate() {
                let off = c * self.chunk;
                let len = self.chunk.min(size - off);
                let base = slot.buf.addr() + off as u64;
                self.conn.link.qp.fast_register(
                    tag::FR | (s as u64) << 8 | c as u64,
                    mr,
                    &slot.pages[c],
                    slot.lams[c].fbo,
                    len,
                    base,
                    access | NDK_OP_FLAG_DEFER | NDK_OP_FLAG_SILENT_SUCCESS,
                )?;
                self.fast_registers += 1;
                let token = mr.remote_token()?;
                tokens.push(token);
                msg.descriptors.push(BufferDescriptor {
                    offset: base,
                    token,
                    length: len as u32,
                });
            }
        } else if !read {
            msg.data = slot.buf.bytes(0, size).to_vec();
        }
        slot.io = Some(ClientIo {
            id,
            read,
            rdma,
            started: Instant::now(),
            tokens,
            invalidates_left: 0,
        });
        self.by_id.insert(id, s);
        self.conn.queue(&msg.encode(), None, None)
    }

    /// Handles responses and invalidate completions; returns I/Os
    /// completed.
    fn process(&mut self) -> Result<u64> {
        let mut completed = 0;
        for r in self.conn.take_rdma() {
            let ctx = context_of(&r);
            if tag::kind(ctx) == tag::INV {
                let s = tag::index(ctx) >> 8;
                let slot = &mut self.slots[s];
                if let Some(io) = slot.io.as_mut() {
                    io.invalidates_left = io.invalidates_left.saturating_sub(1);
                    if io.invalidates_left == 0 {
                        slot.io = None;
                    }
                }
            }
        }
        while let Some(m) = self.conn.take_message() {
            if m.data.is_empty() {
                continue;
            }
            let smb = Smb2::decode(&m.data)?;
            if !smb.response {
                return Err(Error::msg("SMB2: the server sent a request"));
            }
            let s = self.by_id.remove(&smb.message_id).ok_or_else(|| {
                Error::msg(format!(
                    "SMB2: response to unknown message {}",
                    smb.message_id
                ))
            })?;
            let size = self.job.io_size as usize;
            let slot = &mut self.slots[s];
            let Some(io) = slot.io.as_mut() else {
                return Err(Error::msg("SMB2: response for an idle buffer"));
            };
            self.samples.push(io.started.elapsed());
            if io.rdma {
                // RDMA_V1_INVALIDATE: the response arrives as
                // ReceiveAndInvalidate of the first descriptor's token.
                if m.invalidated != io.tokens.first().copied() {
                    return Err(Error::msg(format!(
                        "SMB Direct: the response to I/O {} invalidated {:?}, expected token {:#x}",
                        io.id,
                        m.invalidated,
                        io.tokens.first().copied().unwrap_or_default()
                    )));
                }
            }
            if smb.status != 0 {
                self.bad_ios += 1;
            }
            if io.read {
                self.reads += 1;
                if self.job.verify {
                    let got = if io.rdma {
                        slot.buf.bytes(0, size)
                    } else {
                        &smb.data[..]
                    };
                    if self.pattern.mismatches(io.id, got) > 0 {
                        self.bad_ios += 1;
                    }
                    self.checked += size as u64;
                }
            }
            completed += 1;
            // Tokens after the first were not invalidated by the server.
            let extra = io.tokens.len().saturating_sub(1);
            if extra == 0 {
                slot.io = None;
            } else {
                io.invalidates_left = extra;
                for (c, mr) in slot.mrs.iter().enumerate().skip(1) {
                    let last = c + 1 == slot.mrs.len();
                    let flags = if last {
                        0
                    } else {
                        NDK_OP_FLAG_DEFER | NDK_OP_FLAG_SILENT_SUCCESS
                    };
                    self.conn.link.qp.invalidate(
                        tag::INV | (s as u64) << 8 | c as u64,
                        mr,
                        flags,
                    )?;
                    self.local_invalidates += 1;
                }
                // Only the last invalidate is signalled.
                io.invalidates_left = 1;
            }
        }
        Ok(completed)
    }

    fn logoff(&mut self) -> Result<()> {
        let msg = Smb2 {
            command: SMB2_LOGOFF,
            message_id: u64::MAX >> 1,
            ..Smb2::default()
        };
        self.conn.closing = true;
        self.conn.queue(&msg.encode(), None, None)?;
        loop {
            self.conn.poll()?;
            while let Some(m) = self.conn.take_message() {
                if m.data.is_empty() {
                    continue;
                }
                let smb = Smb2::decode(&m.data)?;
                if smb.command == SMB2_LOGOFF && smb.response {
                    return Ok(());
                }
            }
        }
    }
}

/// One I/O on the server.
#[derive(Debug)]
struct ServerIo {
    id: u64,
    descriptors: Vec<BufferDescriptor>,
    region: Option<usize>,
}

/// The server side of one connection.
pub fn serve_one(
    adapter: &Arc<Adapter>,
    listener: &Listener,
    config: Config,
    wait: Duration,
) -> Result<ServerReport> {
    let Some(connector) = listener.next(wait)? else {
        return Err(Error::msg(format!(
            "no SMB Direct client connected within {}",
            crate::ndk::show_duration(wait)
        )));
    };
    serve(adapter, connector, config)
}

fn serve(adapter: &Arc<Adapter>, mut connector: Connector, config: Config) -> Result<ServerReport> {
    let (_, _, data) = connector.connection_data()?;
    let (verify, seed, depth, io_size, chunks) = match Job::decode(&data) {
        Ok(v) => v,
        Err(e) => {
            let _ = connector.reject(&[]);
            return Err(e);
        }
    };
    let link = Link::new(adapter, limits(config.credits, depth, chunks))?;
    let mut conn = SmbdConn::new(link, config)?;
    conn.link.accept(connector, &[], Duration::from_secs(10))?;
    conn.negotiate_server()?;
    let mut server = Server {
        verify,
        pattern: Pattern::new(io_size as usize, seed),
        regions: Vec::new(),
        free: Vec::new(),
        ios: HashMap::new(),
        waiting: VecDeque::new(),
        reads_in_flight: 0,
        ord: adapter.info().MaxOutboundReadLimit.max(1) as usize,
        report: ServerReport::default(),
        conn,
    };
    let mut done = false;
    while !(done && server.conn.idle()) {
        server.conn.poll()?;
        done |= server.process()?;
    }
    let _ = server.conn.link.disconnect();
    server.report.stats = server.conn.stats;
    Ok(std::mem::take(&mut server.report))
}

/// Field order is drop order: regions before the connection.
#[derive(Debug)]
struct Server {
    verify: bool,
    pattern: Pattern,
    regions: Vec<Region>,
    free: Vec<usize>,
    ios: HashMap<u64, ServerIo>,
    waiting: VecDeque<u64>,
    reads_in_flight: usize,
    ord: usize,
    report: ServerReport,
    conn: SmbdConn,
}

impl Server {
    fn region(&mut self, len: usize) -> Result<usize> {
        if let Some(i) = self.free.pop() {
            if self.regions[i].buf.len() >= len {
                return Ok(i);
            }
            self.free.push(i);
        }
        self.regions
            .push(self.conn.link.pd.register(len, DATA_ACCESS)?);
        Ok(self.regions.len() - 1)
    }

    /// Handles everything that arrived; true once LOGOFF was answered.
    fn process(&mut self) -> Result<bool> {
        let mut done = false;
        for r in self.conn.take_rdma() {
            let ctx = context_of(&r);
            if tag::kind(ctx) == tag::READ {
                let id = tag::index(ctx) as u64;
                self.pulled(id)?;
            }
        }
        for cookie in self.conn.take_sent() {
            if let Some(io) = self.ios.remove(&cookie) {
                if let Some(i) = io.region {
                    self.free.push(i);
                }
            }
        }
        while let Some(m) = self.conn.take_message() {
            if m.data.is_empty() {
                continue;
            }
            let smb = Smb2::decode(&m.data)?;
            match smb.command {
                SMB2_WRITE if smb.channel != CHANNEL_NONE => self.start_write(smb)?,
                SMB2_READ if smb.channel != CHANNEL_NONE => self.start_read(&smb)?,
                SMB2_WRITE => {
                    let mut status = 0;
                    if self.verify {
                        self.report.checked += smb.data.len() as u64;
                        if self.pattern.mismatches(smb.message_id, &smb.data) > 0 {
                            self.report.bad_writes += 1;
                            status = STATUS_DATA_ERROR as u32;
                        }
                    }
                    let resp = Smb2 {
                        command: SMB2_WRITE,
                        message_id: smb.message_id,
                        response: true,
                        status,
                        length: smb.length,
                        ..Smb2::default()
                    };
                    self.conn.queue(&resp.encode(), None, None)?;
                }
                SMB2_READ => {
                    let resp = Smb2 {
                        command: SMB2_READ,
                        message_id: smb.message_id,
                        response: true,
                        length: smb.length,
                        data: self.pattern.expected(smb.message_id).to_vec(),
                        ..Smb2::default()
                    };
                    self.conn.queue(&resp.encode(), None, None)?;
                }
                SMB2_LOGOFF => {
                    let resp = Smb2 {
                        command: SMB2_LOGOFF,
                        message_id: smb.message_id,
                        response: true,
                        ..Smb2::default()
                    };
                    self.conn.closing = true;
                    self.conn.queue(&resp.encode(), None, None)?;
                    done = true;
                }
                c => return Err(Error::msg(format!("SMB2: unexpected command {c:#06x}"))),
            }
        }
        self.start_waiting_reads()?;
        Ok(done)
    }

    /// WRITE: pull the client's buffer with RDMA READ (at most ORD reads
    /// in flight), then answer.
    fn start_write(&mut self, smb: Smb2) -> Result<()> {
        let len: usize = smb.descriptors.iter().map(|d| d.length as usize).sum();
        let region = self.region(len)?;
        self.ios.insert(
            smb.message_id,
            ServerIo {
                id: smb.message_id,
                descriptors: smb.descriptors,
                region: Some(region),
            },
        );
        self.waiting.push_back(smb.message_id);
        Ok(())
    }

    fn start_waiting_reads(&mut self) -> Result<()> {
        while let Some(&id) = self.waiting.front() {
            let Some(io) = self.ios.get(&id) else {
                self.waiting.pop_front();
                continue;
            };
            let n = io.descriptors.len();
            if self.reads_in_flight > 0 && self.reads_in_flight + n > self.ord {
                break;
            }
            self.waiting.pop_front();
            let region = &self.regions[io.region.unwrap_or_default()];
            let mut at = 0usize;
            for (c, d) in io.descriptors.iter().enumerate() {
                let last = c + 1 == n;
                // Deferred and silent but the last, which rings and
                // reports the whole chain.
                let flags = if last {
                    0
                } else {
                    NDK_OP_FLAG_DEFER | NDK_OP_FLAG_SILENT_SUCCESS
                };
                let sgl = Sgl::new(region, at, d.length as usize, 1);
                self.conn.link.qp.read(
                    tag::READ | io.id,
                    sgl.as_slice(),
                    d.offset,
                    d.token,
                    flags,
                )?;
                self.report.rdma_reads += 1;
                at += d.length as usize;
            }
            self.reads_in_flight += n;
        }
        Ok(())
    }

    /// The last RDMA READ of WRITE `id` completed: check and answer.
    fn pulled(&mut self, id: u64) -> Result<()> {
        let Some(io) = self.ios.get(&id) else {
            return Err(Error::msg(format!("RDMA READ for unknown I/O {id}")));
        };
        self.reads_in_flight = self.reads_in_flight.saturating_sub(io.descriptors.len());
        let len: usize = io.descriptors.iter().map(|d| d.length as usize).sum();
        let mut status = 0;
        if self.verify {
            let region = &self.regions[io.region.unwrap_or_default()];
            self.report.checked += len as u64;
            if self.pattern.mismatches(id, region.buf.bytes(0, len)) > 0 {
                self.report.bad_writes += 1;
                status = STATUS_DATA_ERROR as u32;
            }
        }
        let resp = Smb2 {
            command: SMB2_WRITE,
            message_id: id,
            response: true,
            status,
            length: len as u32,
            ..Smb2::default()
        };
        let token = io.descriptors.first().map(|d| d.token);
        self.conn.queue(&resp.encode(), token, Some(id))
    }

    /// READ: push the data with RDMA WRITE, then answer with
    /// send-and-invalidate (RC ordering places the data first).
    fn start_read(&mut self, smb: &Smb2) -> Result<()> {
        let len: usize = smb.descriptors.iter().map(|d| d.length as usize).sum();
        let region = self.region(len)?;
        if self.verify {
            let pattern = &self.pattern;
            pattern.fill(smb.message_id, self.regions[region].buf.bytes_mut(0, len));
        }
        let resp = Smb2 {
            command: SMB2_READ,
            message_id: smb.message_id,
            response: true,
            length: len as u32,
            ..Smb2::default()
        }
        .encode();
        // Defer the writes when the response goes out right after them
        // (its send rings the doorbell); otherwise the last write rings.
        let response_now = self.conn.can_send_now(resp.len());
        let mut at = 0usize;
        let n = smb.descriptors.len();
        for (c, d) in smb.descriptors.iter().enumerate() {
            let mut flags = NDK_OP_FLAG_SILENT_SUCCESS;
            if response_now || c + 1 < n {
                flags |= NDK_OP_FLAG_DEFER;
            }
            let sgl = Sgl::new(&self.regions[region], at, d.length as usize, 1);
            self.conn.link.qp.write(
                tag::WRITE | smb.message_id,
                sgl.as_slice(),
                d.offset,
                d.token,
                flags,
            )?;
            self.report.rdma_writes += 1;
            at += d.length as usize;
        }
        self.ios.insert(
            smb.message_id,
            ServerIo {
                id: smb.message_id,
                descriptors: smb.descriptors.clone(),
                region: Some(region),
            },
        );
        let token = smb.descriptors.first().map(|d| d.token);
        self.conn.queue(&resp, token, Some(smb.message_id))
    }
}
