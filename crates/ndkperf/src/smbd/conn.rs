//! One SMB Direct connection: negotiate, credit-based flow control,
//! fragmentation and reassembly, keepalive ([MS-SMBD] 3.1.5).
//!
//! The connection owns the queue pair. Its own work (receives, sends) is
//! handled inside [`SmbdConn::poll`]; completions of the caller's RDMA
//! work on the same QP (fast registers, reads, writes, invalidates) are
//! handed back. Every SMB Direct send is signalled (its buffer is reused
//! when it completes); the caller's RDMA posts use SILENT_SUCCESS and DEFER
//! where SMB Direct does.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use ndkpi::{
    NDK_RESULT_EX, NdkOperationTypeReceiveAndInvalidate, STATUS_CANCELLED, STATUS_SUCCESS,
};

use super::proto::{
    DATA_HEADER_LEN, DataHeader, FLAG_RESPONSE_REQUESTED, NegotiateRequest, NegotiateResponse,
};
use crate::error::{Error, Result};
use crate::link::{DATA_ACCESS, Link, RecvPool, Sgl, check_completion, context_of, tag};
use crate::ndk::Region;

/// What each side offers before negotiation.
#[derive(Debug, Clone, Copy)]
pub struct Config {
    /// ReceiveCreditMax and SendCreditTarget.
    pub credits: u16,
    /// PreferredSendSize.
    pub max_send_size: u32,
    /// MaxReceiveSize.
    pub max_receive_size: u32,
    /// MaxFragmentedSize.
    pub max_fragmented_size: u32,
    /// MaxReadWriteSize (responder).
    pub max_read_write_size: u32,
    /// Idle time before a keepalive.
    pub keepalive: Duration,
}

/// Counters of one connection.
#[derive(Debug, Default, Clone, Copy)]
pub struct Stats {
    /// Data-transfer messages sent (including empty ones).
    pub messages_sent: u64,
    /// Data-transfer messages received.
    pub messages_received: u64,
    /// Upper-layer messages sent in more than one segment.
    pub fragmented_sent: u64,
    /// Upper-layer messages received in more than one segment.
    pub fragmented_received: u64,
    /// Empty messages sent (credit grants and keepalive answers).
    pub empty_sent: u64,
    /// Keepalives sent (RESPONSE_REQUESTED).
    pub keepalives_sent: u64,
    /// Keepalives the peer sent that were answered.
    pub keepalives_answered: u64,
    /// Credits granted to the peer.
    pub credits_granted: u64,
    /// Times a message waited because no send credit was left.
    pub credit_stalls: u64,
    /// Sends that carried a remote invalidate.
    pub send_and_invalidate: u64,
    /// Receives that invalidated a local token.
    pub remote_invalidations: u64,
}

/// A reassembled upper-layer message.
#[derive(Debug)]
pub struct Message {
    /// Its bytes.
    pub data: Vec<u8>,
    /// The local token the peer invalidated with its last segment.
    pub invalidated: Option<u32>,
}

#[derive(Debug)]
struct Segment {
    payload: Vec<u8>,
    remaining: u32,
    invalidate: Option<u32>,
    flags: u16,
    /// Reported through [`SmbdConn::take_sent`] once sent and completed.
    cookie: Option<u64>,
}

/// A send in flight.
#[derive(Debug, Clone, Copy)]
struct Sent {
    cookie: Option<u64>,
}

/// An SMB Direct connection over a connected [`Link`].
#[derive(Debug)]
pub struct SmbdConn {
    send_bufs: Region,
    recv: RecvPool,
    /// The queue pair; last so it drops after the regions above.
    pub link: Link,
    config: Config,
    // Negotiated.
    max_send_size: usize,
    max_receive_size: usize,
    max_fragmented_send: usize,
    /// Largest RDMA transfer per descriptor.
    pub max_read_write_size: u32,
    // Credits.
    send_credits: u32,
    receive_credit_target: u16,
    posted: u32,
    granted_total: u64,
    received_total: u64,
    // Sending.
    queue: VecDeque<Segment>,
    free_send: Vec<usize>,
    sent: VecDeque<u64>,
    /// Per send buffer: in use, and the cookie of the message it ends.
    in_flight: Vec<Option<Sent>>,
    // Receiving.
    reassembly: Vec<u8>,
    delivered: VecDeque<Message>,
    negotiate_payload: Option<Vec<u8>>,
    last_receive: Instant,
    last_send: Instant,
    keepalive_pending: bool,
    rdma: Vec<NDK_RESULT_EX>,
    /// The session is ending: flushed requests are expected.
    pub closing: bool,
    /// Requests flushed while closing.
    pub flushed: u64,
    /// Counters.
    pub stats: Stats,
}

impl SmbdConn {
    /// Sets up buffers on `link` and posts `config.credits` receives; call
    /// before connecting or accepting (receives must be ready for the
    /// first message).
    pub fn new(link: Link, config: Config) -> Result<Self> {
        let slots = usize::from(config.credits) + 1;
        let send_bufs = link
            .pd
            .register(slots * config.max_send_size as usize, DATA_ACCESS)?;
        let recv = RecvPool::new(
            &link.pd,
            usize::from(config.credits),
            config.max_receive_size as usize,
            1,
        )?;
        recv.post_all(&link.qp)?;
        Ok(Self {
            send_bufs,
            recv,
            link,
            config,
            max_send_size: config.max_send_size as usize,
            max_receive_size: config.max_receive_size as usize,
            max_fragmented_send: config.max_fragmented_size as usize,
            max_read_write_size: config.max_read_write_size,
            send_credits: 0,
            receive_credit_target: config.credits,
            posted: u32::from(config.credits),
            granted_total: 0,
            received_total: 0,
            queue: VecDeque::new(),
            free_send: (0..slots).rev().collect(),
            sent: VecDeque::new(),
            in_flight: vec![None; slots],
            reassembly: Vec::new(),
            delivered: VecDeque::new(),
            negotiate_payload: None,
            last_receive: Instant::now(),
            last_send: Instant::now(),
            keepalive_pending: false,
            rdma: Vec::new(),
            closing: false,
            flushed: 0,
            stats: Stats::default(),
        })
    }

    fn post_raw(
        &mut self,
        bytes: &[u8],
        invalidate: Option<u32>,
        cookie: Option<u64>,
    ) -> Result<()> {
        let slot = self
            .free_send
            .pop()
            .ok_or_else(|| Error::msg("SMB Direct: no free send buffer"))?;
        let at = slot * self.config.max_send_size as usize;
        self.send_bufs
            .buf
            .bytes_mut(at, bytes.len())
            .copy_from_slice(bytes);
        let sgl = Sgl::new(&self.send_bufs, at, bytes.len(), 1);
        let request = tag::SEND | slot as u64;
        let posted = match invalidate {
            Some(token) => {
                self.stats.send_and_invalidate += 1;
                self.link
                    .qp
                    .send_and_invalidate(request, sgl.as_slice(), 0, token)
            }
            None => self.link.qp.send(request, sgl.as_slice(), 0),
        };
        if let Err(e) = posted {
            self.free_send.push(slot);
            return Err(e);
        }
        self.in_flight[slot] = Some(Sent { cookie });
        self.last_send = Instant::now();
        Ok(())
    }

    /// Waits for one receive completion during negotiation and returns
    /// its bytes (RDMA completions are not expected yet).
    fn wait_negotiate_message(&mut self) -> Result<Vec<u8>> {
        while self.negotiate_payload.is_none() {
            self.poll_once(true)?;
        }
        Ok(self.negotiate_payload.take().unwrap_or_default())
    }

    /// Initiator: Negotiate Request, then the response (3.1.5.7).
    pub fn negotiate_client(&mut self) -> Result<NegotiateResponse> {
        let req = NegotiateRequest {
            credits_requested: self.config.credits,
            preferred_send_size: self.config.max_send_size,
            max_receive_size: self.config.max_receive_size,
            max_fragmented_size: self.config.max_fragmented_size,
        };
        self.post_raw(&req.encode(), None, None)?;
        let bytes = self.wait_negotiate_message()?;
        let resp = NegotiateResponse::decode(&bytes)?;
        if resp.preferred_send_size > self.config.max_receive_size {
            return Err(Error::msg(format!(
                "SMB Direct: the server's PreferredSendSize {} exceeds our MaxReceiveSize {}",
                resp.preferred_send_size, self.config.max_receive_size
            )));
        }
        self.max_receive_size = (self.config.max_receive_size as usize)
            .min(resp.preferred_send_size as usize)
            .max(128);
        self.max_send_size =
            (self.config.max_send_size as usize).min(resp.max_receive_size as usize);
        self.max_fragmented_send = resp.max_fragmented_size as usize;
        self.max_read_write_size = self
            .config
            .max_read_write_size
            .min(resp.max_read_write_size);
        self.send_credits = u32::from(resp.credits_granted);
        self.receive_credit_target = resp.credits_requested;
        Ok(resp)
    }

    /// Responder: the request, then the Negotiate Response (3.1.5.6).
    pub fn negotiate_server(&mut self) -> Result<NegotiateRequest> {
        let bytes = self.wait_negotiate_message()?;
        let req = NegotiateRequest::decode(&bytes)?;
        self.max_receive_size = (self.config.max_receive_size as usize)
            .min(req.preferred_send_size as usize)
            .max(128);
        self.max_send_size =
            (self.config.max_send_size as usize).min(req.max_receive_size as usize);
        self.max_fragmented_send = req.max_fragmented_size as usize;
        self.receive_credit_target = req.credits_requested;
        // The initiator may now use every receive we have posted.
        let grant = self.posted.min(u32::from(u16::MAX)) as u16;
        self.granted_total += u64::from(grant);
        self.stats.credits_granted += u64::from(grant);
        let resp = NegotiateResponse {
            credits_requested: self.config.credits,
            credits_granted: grant,
            status: 0,
            max_read_write_size: self.max_read_write_size,
            preferred_send_size: self.max_send_size as u32,
            max_receive_size: self.config.max_receive_size,
            max_fragmented_size: self.config.max_fragmented_size,
        };
        self.post_raw(&resp.encode(), None, None)?;
        Ok(req)
    }

    /// Credits the peer holds by our count.
    fn peer_credits(&self) -> u64 {
        self.granted_total.saturating_sub(self.received_total)
    }

    /// Receives posted but not yet announced to the peer.
    fn ungranted(&self) -> u32 {
        (u64::from(self.posted).saturating_sub(self.peer_credits())) as u32
    }

    /// Bytes of payload per segment.
    fn segment_payload(&self) -> usize {
        self.max_send_size - DATA_HEADER_LEN
    }

    /// Segments a message of `len` bytes takes.
    pub fn segments_for(&self, len: usize) -> usize {
        len.div_ceil(self.segment_payload()).max(1)
    }

    /// True when a message of `len` bytes would go out right away (credits
    /// and send buffers for all its segments, nothing queued).
    pub fn can_send_now(&self, len: usize) -> bool {
        let n = self.segments_for(len) as u32;
        self.queue.is_empty() && self.send_credits > n && self.free_send.len() > n as usize
    }

    /// Queues an upper-layer message; `invalidate` goes with its last
    /// segment; `cookie` is reported by [`SmbdConn::take_sent`] when the
    /// last segment's send completed.
    pub fn queue(
        &mut self,
        payload: &[u8],
        invalidate: Option<u32>,
        cookie: Option<u64>,
    ) -> Result<()> {
        if payload.len() > self.max_fragmented_send {
            return Err(Error::msg(format!(
                "SMB Direct: a {}-byte message exceeds the peer's MaxFragmentedSize {}",
                payload.len(),
                self.max_fragmented_send
            )));
        }
        let per = self.segment_payload();
        let chunks: Vec<&[u8]> = payload.chunks(per).collect();
        if chunks.len() > 1 {
            self.stats.fragmented_sent += 1;
        }
        let mut remaining = payload.len();
        let last = chunks.len().saturating_sub(1);
        for (i, c) in chunks.into_iter().enumerate() {
            remaining -= c.len();
            self.queue.push_back(Segment {
                payload: c.to_vec(),
                remaining: remaining as u32,
                invalidate: if i == last { invalidate } else { None },
                flags: 0,
                cookie: if i == last { cookie } else { None },
            });
        }
        self.pump()
    }

    /// Sends what credits and buffers allow (3.1.5.9 credit rules).
    pub fn pump(&mut self) -> Result<()> {
        while let Some(seg) = self.queue.front() {
            if self.free_send.is_empty() || self.send_credits == 0 {
                self.stats.credit_stalls += 1;
                break;
            }
            let grant = self.ungranted().min(255) as u16;
            // Never spend the last credit without granting one back.
            if self.send_credits == 1 && grant == 0 {
                self.stats.credit_stalls += 1;
                break;
            }
            let mut flags = seg.flags;
            if self.keepalive_pending {
                // Any message answers a keepalive.
                self.keepalive_pending = false;
                self.stats.keepalives_answered += 1;
                flags &= !FLAG_RESPONSE_REQUESTED;
            }
            let h = DataHeader {
                credits_requested: self.config.credits,
                credits_granted: grant,
                flags,
                remaining_data_length: seg.remaining,
                data_offset: if seg.payload.is_empty() {
                    0
                } else {
                    DATA_HEADER_LEN as u32
                },
                data_length: seg.payload.len() as u32,
            };
            let mut bytes = vec![0u8; DATA_HEADER_LEN + seg.payload.len()];
            let header = h.encode_into(&mut bytes);
            bytes.truncate(header);
            bytes.extend_from_slice(&seg.payload);
            let (invalidate, cookie, empty) = (seg.invalidate, seg.cookie, seg.payload.is_empty());
            self.post_raw(&bytes, invalidate, cookie)?;
            self.queue.pop_front();
            self.send_credits -= 1;
            self.granted_total += u64::from(grant);
            self.stats.credits_granted += u64::from(grant);
            self.stats.messages_sent += 1;
            if empty {
                self.stats.empty_sent += 1;
            }
            if flags & FLAG_RESPONSE_REQUESTED != 0 {
                self.stats.keepalives_sent += 1;
            }
        }
        Ok(())
    }

    fn queue_empty(&mut self, flags: u16) -> Result<()> {
        self.queue.push_back(Segment {
            payload: Vec::new(),
            remaining: 0,
            invalidate: None,
            flags,
            cookie: None,
        });
        self.pump()
    }

    /// Sends a keepalive (an empty message with RESPONSE_REQUESTED).
    pub fn send_keepalive(&mut self) -> Result<()> {
        self.queue_empty(FLAG_RESPONSE_REQUESTED)
    }

    /// Handles one receive completion.
    fn on_receive(&mut self, r: &NDK_RESULT_EX, negotiating: bool) -> Result<()> {
        let i = tag::index(context_of(r));
        let len = r.BytesTransferred as usize;
        self.posted -= 1;
        self.last_receive = Instant::now();
        let invalidated = (r.Type == NdkOperationTypeReceiveAndInvalidate)
            .then_some(r.TypeSpecificCompletionOutput as u32);
        if invalidated.is_some() {
            self.stats.remote_invalidations += 1;
        }
        if negotiating {
            self.negotiate_payload = Some(self.recv.bytes(i, len).to_vec());
        } else {
            self.received_total += 1;
            self.stats.messages_received += 1;
            let bytes = self.recv.bytes(i, len);
            let h = DataHeader::decode(bytes, self.config.max_fragmented_size)?;
            if h.data_length > 0 {
                let start = h.data_offset as usize;
                let payload = &bytes[start..start + h.data_length as usize];
                if self.reassembly.is_empty() && h.remaining_data_length == 0 {
                    self.delivered.push_back(Message {
                        data: payload.to_vec(),
                        invalidated,
                    });
                } else {
                    self.reassembly.extend_from_slice(payload);
                    if h.remaining_data_length == 0 {
                        self.stats.fragmented_received += 1;
                        self.delivered.push_back(Message {
                            data: std::mem::take(&mut self.reassembly),
                            invalidated,
                        });
                    }
                }
            } else if let Some(token) = invalidated {
                // An empty message that invalidated: still report it.
                self.delivered.push_back(Message {
                    data: Vec::new(),
                    invalidated: Some(token),
                });
            }
            self.send_credits += u32::from(h.credits_granted);
            self.receive_credit_target = h.credits_requested;
            if h.flags & FLAG_RESPONSE_REQUESTED != 0 {
                self.keepalive_pending = true;
            }
        }
        // Repost at once: it becomes a credit to grant.
        self.recv.post(&self.link.qp, i)?;
        self.posted += 1;
        Ok(())
    }

    /// Takes completions (waiting for at least one), handles SMB Direct's
    /// own, keeps the caller's RDMA completions for [`SmbdConn::take_rdma`],
    /// then sends what can be sent, answers keepalives and grants credits.
    pub fn poll(&mut self) -> Result<()> {
        self.poll_once(false)?;
        self.housekeeping()
    }

    fn poll_once(&mut self, negotiating: bool) -> Result<()> {
        let mut got: Vec<NDK_RESULT_EX> = Vec::new();
        let wait = if negotiating || self.config.keepalive.is_zero() {
            crate::link::STALL_TIMEOUT
        } else {
            self.config.keepalive
        };
        self.link
            .drain_unchecked(wait, |r| {
                got.push(*r);
                Ok(())
            })
            .map_err(|e| e.context("SMB Direct"))?;
        for r in &got {
            if r.Status != STATUS_SUCCESS {
                // Once the session is over, the disconnect flushes what is
                // still posted: that is expected, anything else is not.
                if r.Status == STATUS_CANCELLED && self.closing {
                    self.flushed += 1;
                    if tag::kind(context_of(r)) == tag::SEND {
                        let slot = tag::index(context_of(r));
                        if self.in_flight[slot].take().is_some() {
                            self.free_send.push(slot);
                        }
                    }
                    continue;
                }
                check_completion(r).map_err(|e| e.context("SMB Direct"))?;
            }
            match tag::kind(context_of(r)) {
                tag::RECV => self.on_receive(r, negotiating)?,
                tag::SEND => {
                    let slot = tag::index(context_of(r));
                    if let Some(sent) = self.in_flight[slot].take() {
                        if let Some(c) = sent.cookie {
                            self.sent.push_back(c);
                        }
                        self.free_send.push(slot);
                    }
                }
                _ => self.rdma.push(*r),
            }
        }
        Ok(())
    }

    fn housekeeping(&mut self) -> Result<()> {
        if self.last_receive.elapsed() > crate::link::STALL_TIMEOUT {
            return Err(Error::msg(format!(
                "SMB Direct: nothing from the peer for {}{}",
                crate::ndk::show_duration(crate::link::STALL_TIMEOUT),
                if self.link.peer_disconnected() {
                    " (it disconnected)"
                } else {
                    ""
                }
            )));
        }
        self.pump()?;
        if self.queue.is_empty() {
            let posted = self.posted;
            let ungranted = self.ungranted();
            if self.keepalive_pending
                || (ungranted > 0 && (ungranted >= posted / 2 || self.peer_credits() == 0))
            {
                self.queue_empty(0)?;
            }
        }
        if !self.config.keepalive.is_zero()
            && self.last_receive.elapsed() >= self.config.keepalive
            && self.last_send.elapsed() >= self.config.keepalive
            && self.queue.is_empty()
        {
            self.send_keepalive()?;
        }
        Ok(())
    }

    /// The next reassembled message.
    pub fn take_message(&mut self) -> Option<Message> {
        self.delivered.pop_front()
    }

    /// Completions of the caller's RDMA work, oldest first.
    pub fn take_rdma(&mut self) -> Vec<NDK_RESULT_EX> {
        std::mem::take(&mut self.rdma)
    }

    /// Cookies of messages whose sends completed.
    pub fn take_sent(&mut self) -> Vec<u64> {
        self.sent.drain(..).collect()
    }

    /// Nothing queued and every send completed.
    pub fn idle(&self) -> bool {
        self.queue.is_empty() && self.in_flight.iter().all(Option::is_none)
    }

    /// The negotiated sizes: (max send, max receive, max fragmented send).
    pub fn sizes(&self) -> (usize, usize, usize) {
        (
            self.max_send_size,
            self.max_receive_size,
            self.max_fragmented_send,
        )
    }
}
