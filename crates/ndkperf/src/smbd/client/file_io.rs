//! A file workload over one SMB 3 session on SMB Direct: `ops` I/Os of
//! `io_size` bytes written at successive offsets of one file, then read
//! back, `depth` in flight, every byte checked. Data moves over the RDMA
//! channel (SMB2_CHANNEL_RDMA_V1_INVALIDATE): the server RDMA-READs each
//! WRITE's buffer, RDMA-WRITEs each READ's, and invalidates the token
//! with its response.

use std::collections::HashMap;
use std::time::Instant;

use crate::stats::{Samples, Summary};

use super::connection::{Connection, Tree};
use super::create::FileId;
use super::header::{command, status};
use super::io::{self, Data};
use super::rdma_buffer::RdmaBuffer;
use super::smbd_transport::SmbdTransport;
use crate::error::{Error, Result};
use crate::ndk::Adapter;
use crate::verify::Pattern;

/// What to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileIo {
    /// Bytes per I/O (one descriptor: at most FRMRPageCount pages).
    pub io_size: usize,
    /// I/Os per direction.
    pub ops: u64,
    /// I/Os in flight.
    pub depth: usize,
    /// Pattern seed.
    pub seed: u32,
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
    /// Responses that invalidated the I/O's token, as they must.
    pub remote_invalidations: u64,
    /// READ responses signed over the RFC 1002 length too (ksmbd's
    /// RDMA-channel READ, [`super::signing::verify_length_prefixed`]).
    pub length_prefixed_signatures: u64,
    /// The dialect the session runs (0x0302, 0x0311).
    pub dialect: u16,
    /// The server requires signing (SecurityMode SIGNING_REQUIRED).
    pub server_requires_signing: bool,
}

/// Writes the file, then reads it back and compares.
pub fn write_then_read(
    c: &mut Connection<SmbdTransport<'_>>,
    adapter: &Adapter,
    tree: &Tree,
    file: FileId,
    job: &FileIo,
) -> Result<FileIoReport> {
    if job.depth == 0 || job.ops == 0 {
        return Err(Error::msg(
            "a file workload needs at least one I/O and a depth of one",
        ));
    }
    let mut buffers = Vec::with_capacity(job.depth);
    for _ in 0..job.depth {
        buffers.push(RdmaBuffer::new(
            adapter,
            &c.transport_mut().conn().link.pd,
            job.io_size,
        )?);
    }
    let pattern = Pattern::new(job.io_size, job.seed);
    let mut report = FileIoReport {
        bytes: job.ops * job.io_size as u64,
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
    let mut free: Vec<usize> = (0..buffers.len()).rev().collect();
    // MessageId -> (buffer, I/O number, when it was sent).
    let mut in_flight: HashMap<u64, (usize, u64, Instant)> = HashMap::new();
    let (mut next, mut done) = (0u64, 0u64);
    let size = job.io_size as u32;
    while done < job.ops {
        while next < job.ops
            && let Some(b) = free.pop()
        {
            let offset = next * u64::from(size);
            let qp = &c.transport_mut().conn().link.qp;
            let sent = Instant::now();
            let id = if read {
                let d = buffers[b].register(qp, true, next)?;
                c.submit_read(tree, file, offset, size, Some(&[d]))?
            } else {
                pattern.fill(next, buffers[b].bytes_mut());
                let d = buffers[b].register(qp, false, next)?;
                c.submit_write(tree, file, offset, &Data::Rdma(&[d]))?.0
            };
            in_flight.insert(id, (b, next, sent));
            next += 1;
        }
        let r = c.receive()?;
        let (b, n, sent) = in_flight.remove(&r.header.message_id).ok_or_else(|| {
            Error::msg(format!(
                "a response to MessageId {} outside the workload",
                r.header.message_id
            ))
        })?;
        // Success or not, the server must have invalidated the token.
        let token = c.transport_mut().take_invalidated().last().copied();
        buffers[b].invalidated(token)?;
        report.remote_invalidations += 1;
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
        free.push(b);
        done += 1;
    }
    Ok((start.elapsed().as_secs_f64(), samples.summary(1.0)))
}
