//! One whole client run against an SMB Direct server: connect the QP,
//! negotiate [MS-SMBD], sign in (SMB 3), TREE_CONNECT, CREATE the file,
//! the [`file_io`](super::file_io) workload, CLOSE, LOGOFF, disconnect.
//! What `ndkperf smbd --server` calls.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use super::connection::{Config, Connection};
use super::create::DISPOSITION_OVERWRITE_IF;
use super::file_io::{FileIo, FileIoReport, descriptors_per_io, write_then_read};
use super::smbd_transport::SmbdTransport;
use super::tree::SHARE_TYPE_DISK;
use crate::error::{Error, Result};
use crate::link::Link;
use crate::ndk::{Adapter, QpLimits};
use crate::smbd::conn::{self, SmbdConn, Stats};

/// Where and what.
#[derive(Debug, Clone)]
pub struct Target {
    /// Our adapter's address (the server's family).
    pub local: IpAddr,
    /// The server (ksmbd listens on 445 for RoCE).
    pub server: SocketAddr,
    /// The share to connect.
    pub share: String,
    /// The file to create (overwritten) in it.
    pub file: String,
    /// How long to wait for the connection.
    pub timeout: Duration,
}

/// QP sizes: SMB Direct's sends and receives, plus per I/O in flight a
/// fast register per descriptor, the request's send and the local
/// invalidations of all descriptors but the first, with room to spare.
fn limits(credits: u16, depth: usize, descriptors: usize) -> QpLimits {
    let per_io = 2 * descriptors as u32 + 2;
    QpLimits {
        receive_depth: u32::from(credits) + 1,
        initiator_depth: u32::from(credits) + 2 + per_io.max(4) * depth as u32,
        receive_sge: 1,
        initiator_sge: 1,
        inline_size: 0,
    }
}

/// Runs `job` on `target` as `session`; returns what the workload
/// measured and the SMB Direct counters. Each I/O takes one descriptor
/// per FRMRPageCount pages.
pub fn run_file_io(
    adapter: &Arc<Adapter>,
    target: &Target,
    smbd: conn::Config,
    session: &Config,
    job: &FileIo,
) -> Result<(FileIoReport, Stats)> {
    let frmr_pages = adapter.info().FRMRPageCount as usize;
    run_file_io_in_segments(adapter, target, smbd, session, job, frmr_pages)
}

/// [`run_file_io`] with one descriptor per `segment_pages` pages (at most
/// FRMRPageCount).
pub fn run_file_io_in_segments(
    adapter: &Arc<Adapter>,
    target: &Target,
    smbd: conn::Config,
    session: &Config,
    job: &FileIo,
    segment_pages: usize,
) -> Result<(FileIoReport, Stats)> {
    if target.local.is_ipv4() != target.server.is_ipv4() {
        return Err(Error::msg(format!(
            "--local {} and the server {} are of different address families",
            target.local,
            target.server.ip()
        )));
    }
    let descriptors = descriptors_per_io(job.io_size, segment_pages);
    let mut conn = SmbdConn::new(
        Link::new(adapter, limits(smbd.credits, job.depth, descriptors))?,
        smbd,
    )?;
    let info = adapter.info();
    conn.link.connect_with(
        SocketAddr::new(target.local, 0),
        target.server,
        (info.MaxInboundReadLimit, info.MaxOutboundReadLimit),
        &[],
        target.timeout,
    )?;
    conn.negotiate_client()?;
    let report = {
        let mut c = Connection::connect(SmbdTransport::new(&mut conn), session)?;
        let tree = c.tree_connect(&session.server_name, &target.share)?;
        if tree.info.share_type != SHARE_TYPE_DISK {
            return Err(Error::msg(format!(
                "share {} is not a disk share (ShareType {:#04x}): no file to write",
                target.share, tree.info.share_type
            )));
        }
        let file = c
            .create(&tree, &target.file, DISPOSITION_OVERWRITE_IF)?
            .file_id;
        let report = write_then_read(&mut c, adapter, &tree, file, job, segment_pages)?;
        c.close(&tree, file)?;
        c.logoff()?;
        report
    };
    conn.closing = true;
    while !conn.idle() {
        conn.poll()?;
    }
    let stats = conn.stats;
    let _ = conn.link.disconnect();
    Ok((report, stats))
}
