//! One rping connection over a [`Link`]: the client's and the server's
//! loops of rdma-core `librdmacm/examples/rping.c` (`rping_test_client`,
//! `rping_test_server`), step for step.
//!
//! rping runs its protocol from a CQ thread that turns completions into
//! states (`rping_cq_event_handler`, `server_recv`, `client_recv`); here
//! one thread takes completions in order and waits for the one the next
//! step needs. What is seen on the wire is the same: one receive posted
//! before the connection and reposted as each completes, SENDs of 16
//! bytes, one RDMA READ and one RDMA WRITE per ping.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use ndkpi::{NDK_RESULT_EX, NDK_SGE, STATUS_CANCELLED, STATUS_SUCCESS};

use crate::error::{Error, Result, describe_status};
use crate::link::{DATA_ACCESS, Link, STALL_TIMEOUT, context_of, tag};
use crate::ndk::{QpLimits, Region};
use rping::{INFO_LEN, PingText, RdmaInfo, shown, write_len};

/// rping's QP: `max_send_wr` RPING_SQ_DEPTH (16), `max_recv_wr` 2, one
/// SGE each way (`rping_create_qp`); its CQ holds 32.
pub const LIMITS: QpLimits = QpLimits {
    receive_depth: 2,
    initiator_depth: 16,
    receive_sge: 1,
    initiator_sge: 1,
    inline_size: 0,
};

/// rping's read limits: `responder_resources = initiator_depth = 1`
/// (`rping_init_conn_param`).
pub const READ_LIMITS: (u32, u32) = (1, 1);

/// Offsets of the receive and send messages in the control region.
const RECV_AT: usize = 0;
const SEND_AT: usize = 64;

/// How long one wait on the CQ lasts before the peer's disconnect is
/// looked at.
const SLICE: Duration = Duration::from_millis(50);

/// The registered memory of one side (`rping_setup_buffers`): the receive
/// and send messages, `rdma_buf` and, on the client, `start_buf`.
#[derive(Debug)]
pub struct Buffers {
    control: Region,
    rdma: Region,
    start: Option<Region>,
    size: usize,
}

impl Buffers {
    /// `size`-byte buffers on `link`'s PD; `start` for a client.
    pub fn new(link: &Link, size: usize, client: bool) -> Result<Self> {
        Ok(Self {
            control: link.pd.register(SEND_AT + INFO_LEN, DATA_ACCESS)?,
            rdma: link.pd.register(size, DATA_ACCESS)?,
            start: if client {
                Some(link.pd.register(size, DATA_ACCESS)?)
            } else {
                None
            },
            size,
        })
    }

    fn sge(region: &Region, at: usize, len: usize) -> NDK_SGE {
        NDK_SGE::with_virtual_address(
            region.addr(at) as usize as *mut _,
            len as u32,
            region.local_token,
        )
    }

    /// Posts the one receive (`cb->rq_wr`).
    pub fn post_receive(&self, link: &Link) -> Result<()> {
        link.qp
            .receive(tag::RECV, &[Self::sge(&self.control, RECV_AT, INFO_LEN)])
    }

    fn info_of(region: &Region, size: usize) -> RdmaInfo {
        RdmaInfo {
            buf: region.addr(0),
            rkey: region.remote_token,
            size: size as u32,
        }
    }
}

/// What a wait on the CQ ended with.
enum Step {
    /// A completion of this kind (`tag::*`) with these bytes.
    Done(u32),
    /// The peer disconnected (rping's `RDMA_CM_EVENT_DISCONNECTED`).
    Disconnected,
}

/// One side's connection, its buffers, and completions taken but not
/// yet used. Field order is drop order: the buffers' MRs close before
/// the link's PD (whose close would wait for them), as in `bench.rs`.
#[derive(Debug)]
pub struct Session {
    buffers: Buffers,
    /// The connected QP.
    pub link: Link,
    taken: VecDeque<NDK_RESULT_EX>,
    sends_pending: usize,
}

/// What one side did.
#[derive(Debug, Clone, Copy, Default)]
pub struct Outcome {
    /// Pings completed.
    pub rounds: u64,
    /// Bytes moved by RDMA READ and WRITE.
    pub bytes: u64,
    /// From the first ping to the last.
    pub elapsed: Duration,
    /// The client checked every ping (-V).
    pub validated: bool,
    /// The run ended because the peer disconnected.
    pub peer_disconnected: bool,
}

/// A ping's data differed (`data mismatch!`): exit code 1.
#[derive(Debug)]
pub struct Mismatch {
    /// Which ping.
    pub ping: u64,
    /// The first differing byte.
    pub at: usize,
}

impl Session {
    /// A session over a `link` whose receive `buffers` posted.
    pub fn new(link: Link, buffers: Buffers) -> Self {
        Self {
            link,
            buffers,
            taken: VecDeque::new(),
            sends_pending: 0,
        }
    }

    /// Waits for the next completion of `kind`, keeping others; a failed
    /// one ends the run (a flushed one after the peer left ends it
    /// quietly).
    fn wait(&mut self, kind: u64) -> Result<Step> {
        let deadline = Instant::now() + STALL_TIMEOUT;
        let mut left_seen = false;
        loop {
            if let Some(i) = self
                .taken
                .iter()
                .position(|r| tag::kind(context_of(r)) == kind)
            {
                let r = self.taken.remove(i).unwrap_or_default();
                if tag::kind(context_of(&r)) == tag::CTRL {
                    self.sends_pending -= 1;
                }
                return Ok(Step::Done(r.BytesTransferred));
            }
            let mut got = Vec::new();
            self.link.drain_unchecked(SLICE, |r| {
                got.push(*r);
                Ok(())
            })?;
            for r in got {
                if r.Status == STATUS_SUCCESS {
                    self.taken.push_back(r);
                } else if r.Status == STATUS_CANCELLED && self.link.peer_disconnected() {
                    return Ok(Step::Disconnected);
                } else {
                    return Err(Error::msg(format!(
                        "cq completion failed: {} completed with {}",
                        tag::name(context_of(&r)),
                        describe_status(r.Status)
                    ))
                    .with_status(r.Status));
                }
            }
            // Once the peer left, one more look at the CQ takes what it
            // completed before its disconnect reached us.
            if self.link.peer_disconnected() {
                if left_seen && !self.taken.iter().any(|r| tag::kind(context_of(r)) == kind) {
                    return Ok(Step::Disconnected);
                }
                left_seen = true;
            }
            if Instant::now() >= deadline {
                return Err(Error::msg(format!(
                    "no {} completed within {}s",
                    tag::name(kind),
                    STALL_TIMEOUT.as_secs()
                )));
            }
        }
    }

    /// The next received message (the receive reposted, as
    /// `rping_cq_event_handler` does), or `None` when the peer left.
    fn receive(&mut self) -> Result<Option<RdmaInfo>> {
        let Step::Done(len) = self.wait(tag::RECV)? else {
            return Ok(None);
        };
        let bytes = self.buffers.control.buf.bytes(RECV_AT, INFO_LEN);
        let info = RdmaInfo::decode(bytes, len as usize)
            .ok_or_else(|| Error::msg(format!("received bogus data, size {len}")))?;
        self.buffers.post_receive(&self.link)?;
        Ok(Some(info))
    }

    /// SENDs `info` (`cb->sq_wr`, signalled), after the previous SEND of
    /// the message buffer completed.
    fn send(&mut self, info: RdmaInfo) -> Result<()> {
        while self.sends_pending > 0 {
            if let Step::Disconnected = self.wait(tag::CTRL)? {
                return Err(Error::msg("the peer disconnected"));
            }
        }
        self.buffers
            .control
            .buf
            .bytes_mut(SEND_AT, INFO_LEN)
            .copy_from_slice(&info.encode());
        let sge = Buffers::sge(&self.buffers.control, SEND_AT, INFO_LEN);
        self.link.qp.send(tag::CTRL, &[sge], 0)?;
        self.sends_pending += 1;
        Ok(())
    }

    /// Waits for this side's RDMA operation of `kind`.
    fn rdma_done(&mut self, kind: u64) -> Result<()> {
        match self.wait(kind)? {
            Step::Done(_) => Ok(()),
            Step::Disconnected => Err(Error::msg(format!(
                "the peer disconnected during an {}",
                tag::name(kind)
            ))),
        }
    }

    /// `rping_test_client`: `count` pings (0: until the server leaves),
    /// each validated if `validate`, printed if `verbose`.
    pub fn client(
        &mut self,
        count: u32,
        validate: bool,
        verbose: bool,
    ) -> Result<std::result::Result<Outcome, Mismatch>> {
        let size = self.buffers.size;
        let mut text = PingText::new();
        let began = Instant::now();
        let mut out = Outcome {
            validated: validate,
            ..Outcome::default()
        };
        let mut ping: i32 = 0;
        while count == 0 || out.rounds < u64::from(count) {
            let start = self
                .buffers
                .start
                .as_mut()
                .ok_or_else(|| Error::msg("a client session without its start buffer"))?;
            text.fill(ping, start.buf.bytes_mut(0, size));
            let start_info = Buffers::info_of(start, size);
            self.send(start_info)?;
            // The server READs start_buf and says go ahead.
            if self.receive()?.is_none() {
                out.peer_disconnected = true;
                break;
            }
            self.send(Buffers::info_of(&self.buffers.rdma, size))?;
            // The server WRITEs rdma_buf and says go ahead.
            if self.receive()?.is_none() {
                out.peer_disconnected = true;
                break;
            }
            let sent = self
                .buffers
                .start
                .as_ref()
                .ok_or_else(|| Error::msg("a client session without its start buffer"))?
                .buf
                .bytes(0, size);
            let echoed = self.buffers.rdma.buf.bytes(0, size);
            if validate && sent != echoed {
                let at = sent
                    .iter()
                    .zip(echoed)
                    .position(|(a, b)| a != b)
                    .unwrap_or(0);
                return Ok(Err(Mismatch {
                    ping: out.rounds,
                    at,
                }));
            }
            if verbose {
                println!("ping data: {}", shown(echoed));
            }
            out.rounds += 1;
            out.bytes += 2 * size as u64;
            ping = ping.wrapping_add(1);
        }
        out.elapsed = began.elapsed();
        Ok(Ok(out))
    }

    /// `rping_test_server`: answers pings until the client disconnects.
    pub fn server(&mut self, verbose: bool) -> Result<Outcome> {
        let own = self.buffers.size;
        let mut out = Outcome::default();
        let mut began = None;
        let mut last = None;
        loop {
            // The client's start_buf: READ it into rdma_buf.
            let Some(source) = self.receive()? else {
                out.peer_disconnected = true;
                break;
            };
            began.get_or_insert_with(Instant::now);
            let len = source.size as usize;
            if len == 0 || len > own {
                return Err(Error::msg(format!(
                    "the client's ping is {len} bytes; this server reads into a buffer of {own} \
                     (its -S, as rping's rdma_buf): start it with -S {len} or more"
                )));
            }
            let sge = Buffers::sge(&self.buffers.rdma, 0, len);
            self.link
                .qp
                .read(tag::READ, &[sge], source.buf, source.rkey, 0)?;
            self.rdma_done(tag::READ)?;
            let data = self.buffers.rdma.buf.bytes(0, own);
            if verbose {
                println!("server ping data: {}", shown(data));
            }
            let echo_len = write_len(&data[..len]);
            // Go ahead: 16 zero bytes, as rping's never-formatted send_buf.
            self.send(RdmaInfo::default())?;
            // The client's rdma_buf: WRITE the text and its NUL there.
            let Some(sink) = self.receive()? else {
                out.peer_disconnected = true;
                break;
            };
            let sge = Buffers::sge(&self.buffers.rdma, 0, echo_len);
            self.link
                .qp
                .write(tag::WRITE, &[sge], sink.buf, sink.rkey, 0)?;
            self.rdma_done(tag::WRITE)?;
            self.send(RdmaInfo::default())?;
            out.rounds += 1;
            out.bytes += (len + echo_len) as u64;
            last = Some(Instant::now());
        }
        // From the first request to the last go-ahead: the wait for the
        // client's disconnect is not the pings' time.
        out.elapsed = match (began, last) {
            (Some(b), Some(l)) => l - b,
            _ => Duration::ZERO,
        };
        Ok(out)
    }
}
