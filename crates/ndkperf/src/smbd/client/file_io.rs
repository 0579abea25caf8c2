//! A file workload over one SMB 3 session on SMB Direct: `ops` I/Os of
//! `io_size` bytes written at successive offsets of one file, then read
//! back, `depth` in flight, every byte checked. Data moves over the RDMA
//! channel (SMB2_CHANNEL_RDMA_V1_INVALIDATE): the server RDMA-READs each
//! WRITE's buffer, RDMA-WRITEs each READ's, and invalidates the first
//! descriptor's token with its response; an I/O larger than one fast
//! registration has several descriptors, and the client invalidates the
//! others itself before the buffer is used again
//! ([`RdmaBuffer::invalidated`]).

use std::collections::HashMap;
use std::time::Instant;

use crate::stats::{Samples, Summary};

use super::connection::{Connection, Tree};
use super::create::FileId;
use super::header::{command, status};
use super::io::{self, Data};
use super::rdma_buffer::{RdmaBuffer, invalidate_target};
use super::smbd_transport::SmbdTransport;
use crate::error::{Error, Result};
use crate::link::{check_completion, context_of, tag};
use crate::ndk::Adapter;
use crate::verify::Pattern;

/// What to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileIo {
    /// Bytes per I/O: one descriptor per `segment_pages` pages.
    pub io_size: usize,
    /// I/Os per direction.
    pub ops: u64,
    /// I/Os in flight.
    pub depth: usize,
    /// Pattern seed.
    pub seed: u32,
}

/// Descriptors (fast registrations) per I/O of `io_size` bytes in
/// segments of `segment_pages` pages.
pub fn descriptors_per_io(io_size: usize, segment_pages: usize) -> usize {
    io_size
        .div_ceil(ndkpi::PAGE_SIZE)
        .div_ceil(segment_pages.max(1))
}

/// What it measured.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct FileIoReport {
    /// Wall time of the WRITE phase.
    pub write_seconds: f64,
    /// Wall time of the READ phase.
    pub read_seconds: f64,
    /// WRITE latencies, from the I/O's start (buffer filled and
    /// registered, request sent) to its response.
    pub write_latency: Summary,
    /// READ latencies.
    pub read_latency: Summary,
    /// Bytes moved per direction.
    pub bytes: u64,
    /// Bytes read back that differ from what was written.
    pub mismatched_bytes: u64,
    /// Responses that invalidated the I/O's first token, as they must.
    pub remote_invalidations: u64,
    /// Tokens the client invalidated itself (every descriptor but the
    /// first of each I/O), each completion checked.
    pub local_invalidations: u64,
    /// Descriptors per I/O.
    pub descriptors_per_io: usize,
    /// READ responses signed over the RFC 1002 length too (ksmbd's
    /// RDMA-channel READ, [`super::signing::verify_length_prefixed`]).
    pub length_prefixed_signatures: u64,
    /// The dialect the session runs (0x0302, 0x0311).
    pub dialect: u16,
    /// The server requires signing (SecurityMode SIGNING_REQUIRED).
    pub server_requires_signing: bool,
}

/// Writes the file, then reads it back and compares; one descriptor per
/// `segment_pages` pages of each I/O (the adapter's FRMRPageCount, or
/// fewer: the tests get several descriptors out of small I/Os).
pub fn write_then_read(
    c: &mut Connection<SmbdTransport<'_>>,
    adapter: &Adapter,
    tree: &Tree,
    file: FileId,
    job: &FileIo,
    segment_pages: usize,
) -> Result<FileIoReport> {
    if job.depth == 0 || job.ops == 0 {
        return Err(Error::msg(
            "a file workload needs at least one I/O and a depth of one",
        ));
    }
    check_io_size(
        job.io_size,
        c.negotiated().max_read_size,
        c.negotiated().max_write_size,
        c.transport_mut().conn().max_read_write_size,
    )?;
    let mut buffers = Vec::with_capacity(job.depth);
    for _ in 0..job.depth {
        buffers.push(RdmaBuffer::with_segment_pages(
            adapter,
            &c.transport_mut().conn().link.pd,
            job.io_size,
            segment_pages,
        )?);
    }
    let pattern = Pattern::new(job.io_size, job.seed);
    let mut report = FileIoReport {
        bytes: job.ops * job.io_size as u64,
        descriptors_per_io: buffers[0].segments(),
        dialect: c.negotiated().dialect,
        server_requires_signing: c.negotiated().signing_required(),
        ..FileIoReport::default()
    };
    (report.write_seconds, report.write_latency) = phase(
        c,
        tree,
        file,
        &mut buffers,
        job,
        &pattern,
        false,
        &mut report,
    )?;
    (report.read_seconds, report.read_latency) = phase(
        c,
        tree,
        file,
        &mut buffers,
        job,
        &pattern,
        true,
        &mut report,
    )?;
    report.length_prefixed_signatures = c.length_prefixed_signatures();
    Ok(report)
}

/// Refuses an I/O larger than the server takes: over the RDMA channel
/// an SMB2 READ/WRITE may move at most the NEGOTIATE response's
/// MaxReadSize/MaxWriteSize ([MS-SMB2] 3.2.4.6/3.2.4.7) and the SMB
/// Direct negotiation's MaxReadWriteSize ([MS-SMBD] 3.1.5.7, here
/// already capped by what the client offered). ksmbd 6.1 grants 4 MiB in
/// NEGOTIATE (SMB3_DEFAULT_IOSIZE, fs/smb/common/smb2pdu.h:95) and 8 MiB
/// for SMB Direct (SMBD_DEFAULT_IOSIZE, fs/smb/server/transport_rdma.h:10);
/// its RDMA-channel READ/WRITE check the latter only
/// (smb2pdu.c:6523/6780), the client honours both.
pub fn check_io_size(
    io_size: usize,
    max_read: u32,
    max_write: u32,
    max_read_write: u32,
) -> Result<()> {
    let limit = max_read.min(max_write).min(max_read_write);
    if io_size > limit as usize {
        let show = |n: u32| ndkperf_cli::units::format_size(u64::from(n));
        return Err(Error::msg(format!(
            "--size {} is more than the server takes per I/O ({}): SMB2 NEGOTIATE granted MaxReadSize {} and MaxWriteSize {}, SMB Direct MaxReadWriteSize {}",
            ndkperf_cli::units::format_size(io_size as u64),
            show(limit),
            show(max_read),
            show(max_write),
            show(max_read_write)
        )));
    }
    Ok(())
}

/// What one direction keeps track of.
struct Phase {
    /// Buffers ready for an I/O.
    free: Vec<usize>,
    /// MessageId -> (buffer, I/O number, when it was sent).
    sent: HashMap<u64, (usize, u64, Instant)>,
    /// Local invalidations posted and not yet completed.
    invalidating: usize,
}

impl Phase {
    /// Takes the completions of our local invalidations (the only RDMA
    /// work the client posts signalled): each must have succeeded; a
    /// buffer whose last one completed is free again.
    fn reap(
        &mut self,
        c: &mut Connection<SmbdTransport<'_>>,
        buffers: &mut [RdmaBuffer],
        report: &mut FileIoReport,
    ) -> Result<()> {
        for r in c.transport_mut().conn().take_rdma() {
            let context = context_of(&r);
            if tag::kind(context) != tag::INV {
                return Err(Error::msg(format!(
                    "an unexpected {} completion (context {context:#x}) during the file workload",
                    tag::name(context)
                )));
            }
            check_completion(&r).map_err(|e| e.context("local invalidation"))?;
            let (b, segment) = invalidate_target(context);
            let buffer = buffers.get_mut(b).ok_or_else(|| {
                Error::msg(format!(
                    "a local invalidation of buffer {b}, which is not ours"
                ))
            })?;
            self.invalidating = self
                .invalidating
                .checked_sub(1)
                .ok_or_else(|| Error::msg("more local invalidations completed than were posted"))?;
            report.local_invalidations += 1;
            if buffer.locally_invalidated(segment)? {
                self.free.push(b);
            }
        }
        Ok(())
    }
}

/// One direction: keeps `depth` I/Os in flight until `ops` are done;
/// returns its wall time and its I/Os' latencies.
fn phase(
    c: &mut Connection<SmbdTransport<'_>>,
    tree: &Tree,
    file: FileId,
    buffers: &mut [RdmaBuffer],
    job: &FileIo,
    pattern: &Pattern,
    read: bool,
    report: &mut FileIoReport,
) -> Result<(f64, Summary)> {
    let start = Instant::now();
    let mut samples = Samples::with_capacity(job.ops.min(1 << 20) as usize);
    let mut ph = Phase {
        free: (0..buffers.len()).rev().collect(),
        sent: HashMap::new(),
        invalidating: 0,
    };
    let (mut next, mut done) = (0u64, 0u64);
    let size = job.io_size as u32;
    let charge = u32::from(io::credit_charge(size));
    while done < job.ops {
        // Registration is deferred to the request's send: check the
        // credits first, so a registered buffer is always sent.
        while next < job.ops
            && c.credits_available() >= charge
            && let Some(b) = ph.free.pop()
        {
            let offset = next * u64::from(size);
            let qp = &c.transport_mut().conn().link.qp;
            let sent = Instant::now();
            let id = if read {
                let d = buffers[b].register(qp, true, next)?;
                c.submit_read(tree, file, offset, size, Some(&d))?
            } else {
                pattern.fill(next, buffers[b].bytes_mut());
                let d = buffers[b].register(qp, false, next)?;
                c.submit_write(tree, file, offset, &Data::Rdma(&d))?.0
            };
            ph.sent.insert(id, (b, next, sent));
            next += 1;
        }
        if ph.sent.is_empty() {
            if ph.invalidating == 0 {
                return Err(Error::msg(format!(
                    "out of SMB2 credits: an I/O of {size} bytes costs {charge}, the server granted {} not yet used, and nothing is in flight to earn more",
                    c.credits_available()
                )));
            }
            // Only local invalidations to wait for.
            c.transport_mut().conn().poll()?;
            ph.reap(c, buffers, report)?;
            continue;
        }
        let r = c.receive()?;
        let (b, n, sent) = ph.sent.remove(&r.header.message_id).ok_or_else(|| {
            Error::msg(format!(
                "a response to MessageId {} outside the workload",
                r.header.message_id
            ))
        })?;
        // Success or not, the server must have invalidated the first
        // token; the client invalidates the others.
        let token = c.transport_mut().take_invalidated().last().copied();
        let posted = {
            let qp = &c.transport_mut().conn().link.qp;
            buffers[b].invalidated(qp, b, token)?
        };
        report.remote_invalidations += 1;
        ph.invalidating += posted;
        if posted == 0 {
            ph.free.push(b);
        }
        ph.reap(c, buffers, report)?;
        if r.header.status != status::SUCCESS {
            return Err(Error::msg(format!(
                "SMB2 {} of I/O {n} failed: {} ({:#010X})",
                if read { "READ" } else { "WRITE" },
                status::name(r.header.status),
                r.header.status
            )));
        }
        if read {
            let got = io::decode_read_response(&r.message)?;
            if got.data_remaining != size || r.header.command != command::READ {
                return Err(Error::msg(format!(
                    "SMB2 READ of I/O {n}: {} bytes placed, {size} asked",
                    got.data_remaining
                )));
            }
            report.mismatched_bytes += pattern.mismatches(n, buffers[b].bytes());
        } else {
            let written = io::decode_write_response(&r.message)?;
            if written != size {
                return Err(Error::msg(format!(
                    "SMB2 WRITE of I/O {n} wrote {written} of {size} bytes"
                )));
            }
        }
        samples.push(sent.elapsed());
        done += 1;
    }
    // Every buffer free again before the next phase (or the CLOSE).
    while ph.invalidating > 0 {
        c.transport_mut().conn().poll()?;
        ph.reap(c, buffers, report)?;
    }
    Ok((start.elapsed().as_secs_f64(), samples.summary(1.0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_size_is_bounded_by_all_three_grants() {
        check_io_size(4 << 20, 4 << 20, 4 << 20, 8 << 20).unwrap();
        let e = check_io_size(8 << 20, 4 << 20, 8 << 20, 8 << 20)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--size 8M") && e.contains("MaxReadSize 4M") && e.contains("(4M)"),
            "{e}"
        );
        let e = check_io_size(2 << 20, 8 << 20, 8 << 20, 1 << 20)
            .unwrap_err()
            .to_string();
        assert!(e.contains("MaxReadWriteSize 1M"), "{e}");
    }

    #[test]
    fn descriptors_per_io_of_sizes() {
        assert_eq!(descriptors_per_io(1 << 20, 256), 1);
        assert_eq!(descriptors_per_io((1 << 20) + 1, 256), 2);
        assert_eq!(descriptors_per_io(4 << 20, 256), 4);
        assert_eq!(descriptors_per_io(256 << 10, 16), 4);
        assert_eq!(descriptors_per_io(4096, 16), 1);
        assert_eq!(descriptors_per_io(1, 16), 1);
    }
}
