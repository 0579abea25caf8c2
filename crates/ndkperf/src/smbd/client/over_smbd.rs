//! The SMB 3 session over real SMB Direct: the client's [`Connection`]
//! over [`SmbdTransport`] on one rsndk adapter, the scripted SMB 3 server
//! behind an [`SmbdConn`] on another, on the in-process memory fabric.
//! The server side moves RDMA-channel data with real NdkRead/NdkWrite on
//! every descriptor and answers with Send-with-Invalidate of the first
//! descriptor's token only (as ksmbd does: fs/smb/server/smb2pdu.c:6454
//! in Linux 6.1), so the client's fast registrations, the one remote
//! invalidation and its own local invalidations of the other descriptors
//! run as against ksmbd. The adapter refuses to fast-register an MR whose
//! last registration is still valid, so an I/O whose other descriptors
//! were not really invalidated fails the next one.

use std::net::{SocketAddr, SocketAddrV4};
use std::time::Duration;

use clap::Parser as _;
use ndkperf_cli::{Cli, Command, FabricArgs};

use super::codec::Reader;
use super::connection::{Connection, Tree};
use super::create::DISPOSITION_OVERWRITE_IF;
use super::io::{Data, decode_descriptors};
use super::rdma_buffer::RdmaBuffer;
use super::scripted_server::{Memory, config, server};
use super::signing::DIALECT_311;
use super::smbd_transport::SmbdTransport;
use crate::error::{Error, Result};
use crate::link::{DATA_ACCESS, Link, Sgl, context_of, listen, tag};
use crate::ndk::{Listener, QpLimits};
use crate::setup::Pair;
use crate::smbd::conn::{Config, SmbdConn};
use crate::smbd::proto::BufferDescriptor;

fn smbd_config() -> Config {
    Config {
        credits: 32,
        max_send_size: 1364,
        max_receive_size: 1364,
        max_fragmented_size: 1 << 20,
        max_read_write_size: 8 << 20,
        keepalive: Duration::ZERO,
    }
}

fn limits() -> QpLimits {
    QpLimits {
        receive_depth: 33,
        initiator_depth: 48,
        receive_sge: 1,
        initiator_sge: 1,
        inline_size: 0,
    }
}

fn fabric(port: u16) -> FabricArgs {
    match Cli::try_parse_from(["ndkperf", "smbd", "--port", &port.to_string()]) {
        Ok(Cli {
            command: Command::Smbd(args),
            ..
        }) => args.fabric,
        _ => panic!("ndkperf smbd's arguments no longer parse"),
    }
}

/// Waits for the completion of our own RDMA operation of `kind`.
fn wait_rdma(conn: &mut SmbdConn, kind: u64) -> Result<()> {
    loop {
        for r in conn.take_rdma() {
            if tag::kind(context_of(&r)) == kind {
                if r.Status != 0 {
                    return Err(Error::msg(format!(
                        "{} failed: {:#x}",
                        tag::name(context_of(&r)),
                        r.Status
                    )));
                }
                return Ok(());
            }
        }
        conn.poll()?;
    }
}

/// The descriptors of an RDMA-channel READ/WRITE request, if it is one
/// (`true` for a READ).
fn rdma_descriptors(m: &[u8]) -> Result<Option<(bool, Vec<BufferDescriptor>)>> {
    let r = Reader::new(m, "request");
    let (read, channel_at, info_at) = match r.u16(12)? {
        8 => (true, 100, 108),
        9 => (false, 96, 104),
        _ => return Ok(None),
    };
    if r.u32(channel_at)? != 2 {
        return Ok(None);
    }
    let d = decode_descriptors(
        &r,
        usize::from(r.u16(info_at)?),
        usize::from(r.u16(info_at + 2)?),
    )?;
    Ok(Some((read, d)))
}

/// How the scripted server behaves.
#[derive(Debug, Clone, Copy)]
struct Behaviour {
    /// Invalidate the last descriptor's token instead of the first's.
    invalidate_last: bool,
    /// MaxReadSize/MaxWriteSize granted in NEGOTIATE.
    max_io: u32,
}

impl Default for Behaviour {
    fn default() -> Self {
        Self {
            invalidate_last: false,
            max_io: 8 << 20,
        }
    }
}

/// One SMB Direct connection served by the scripted SMB 3 server, with
/// the RDMA channel done for real; returns the file it stored.
fn serve(pair: &Pair, listener: &Listener, behaviour: Behaviour) -> Result<Vec<u8>> {
    let connector = listener
        .next(Duration::from_secs(20))?
        .ok_or_else(|| Error::msg("no client connected"))?;
    let mut conn = SmbdConn::new(Link::new(&pair.server, limits())?, smbd_config())?;
    conn.link.accept(connector, &[], Duration::from_secs(10))?;
    conn.negotiate_server()?;
    let memory = Memory::default();
    let srv = server(DIALECT_311, "s3cret", &memory);
    {
        // Grant what the client asks for (up to 64 per response), as
        // ksmbd does: 2 MiB I/Os cost 32 credits each.
        let mut s = srv.borrow_mut();
        s.max_io = behaviour.max_io;
        s.grants = [1, 1, 64]
            .into_iter()
            .chain(std::iter::repeat_n(64, 4096))
            .collect();
    }
    let mut logged_off = false;
    while !logged_off {
        conn.poll()?;
        while let Some(m) = conn.take_message() {
            logged_off |= m.data.get(12) == Some(&2); // LOGOFF
            let rdma = rdma_descriptors(&m.data)?;
            if let Some((false, ds)) = &rdma {
                // WRITE: pull each descriptor with an RDMA READ.
                for d in ds {
                    let region = conn.link.pd.register(d.length as usize, DATA_ACCESS)?;
                    let sgl = Sgl::new(&region, 0, d.length as usize, 1);
                    conn.link
                        .qp
                        .read(tag::READ | 1, sgl.as_slice(), d.offset, d.token, 0)?;
                    wait_rdma(&mut conn, tag::READ)?;
                    memory
                        .borrow_mut()
                        .insert(d.token, region.buf.bytes(0, d.length as usize).to_vec());
                }
            }
            srv.borrow_mut().handle(&m.data)?;
            if let Some((true, ds)) = &rdma {
                // READ: push the data into each descriptor first.
                for d in ds {
                    let Some(data) = memory.borrow_mut().remove(&d.token) else {
                        continue;
                    };
                    let mut region = conn.link.pd.register(data.len(), DATA_ACCESS)?;
                    region.buf.bytes_mut(0, data.len()).copy_from_slice(&data);
                    let sgl = Sgl::new(&region, 0, data.len(), 1);
                    conn.link
                        .qp
                        .write(tag::WRITE | 2, sgl.as_slice(), d.offset, d.token, 0)?;
                    wait_rdma(&mut conn, tag::WRITE)?;
                }
            }
            // RDMA_V1_INVALIDATE: the response invalidates one token.
            let invalidate = rdma.as_ref().and_then(|(_, ds)| {
                if behaviour.invalidate_last {
                    ds.last()
                } else {
                    ds.first()
                }
                .map(|d| d.token)
            });
            let out: Vec<Vec<u8>> = srv.borrow_mut().outbox.drain(..).collect();
            for r in out {
                conn.queue(&r, invalidate, None)?;
            }
        }
    }
    while !conn.idle() {
        conn.poll()?;
    }
    let _ = conn.link.disconnect();
    let file = srv.borrow().file.clone();
    Ok(file)
}

/// The client's whole session; `io` runs between CREATE and CLOSE.
fn session(
    pair: &Pair,
    fabric: &FabricArgs,
    io: impl FnOnce(&mut Connection<SmbdTransport<'_>>, &Tree, super::create::FileId) -> Result<()>,
) -> Result<super::super::conn::Stats> {
    let mut conn = SmbdConn::new(Link::new(&pair.client, limits())?, smbd_config())?;
    let server_addr = SocketAddrV4::new(fabric.server_addr, fabric.port());
    conn.link.connect(
        fabric.client_addr,
        server_addr,
        &[],
        Duration::from_secs(10),
    )?;
    conn.negotiate_client()?;
    let cfg = config();
    let mut c = Connection::connect(SmbdTransport::new(&mut conn), &cfg)?;
    let tree = c.tree_connect(&cfg.server_name, "share")?;
    let file = c
        .create(&tree, "ndkperf.dat", DISPOSITION_OVERWRITE_IF)?
        .file_id;
    io(&mut c, &tree, file)?;
    c.close(&tree, file)?;
    let mut transport = c.logoff()?;
    while !transport.conn().idle() {
        transport.conn().poll()?;
    }
    Ok(transport.conn().stats)
}

fn run(
    port: u16,
    io: impl FnOnce(
        &Pair,
        &mut Connection<SmbdTransport<'_>>,
        &Tree,
        super::create::FileId,
    ) -> Result<()>
    + Send,
) -> (super::super::conn::Stats, Vec<u8>) {
    let fabric = fabric(port);
    let pair = Pair::open(&fabric).expect("two adapters on the memory fabric");
    let listener = listen(&pair.server, fabric.server_addr, port).expect("listen");
    let (client, served) = std::thread::scope(|s| {
        let serving = s.spawn(|| serve(&pair, &listener, Behaviour::default()));
        let client = session(&pair, &fabric, |c, tree, file| io(&pair, c, tree, file));
        if client.is_err() {
            listener.cancel_waits();
        }
        (client, serving.join().expect("server thread"))
    });
    let stats = client.expect("the client's session");
    (stats, served.expect("the scripted server over SMB Direct"))
}

fn pattern(len: usize) -> Vec<u8> {
    (0..len as u32)
        .map(|i| (i ^ (i >> 8) ^ (i >> 16)) as u8)
        .collect()
}

#[test]
fn smb3_session_with_inline_io_over_smb_direct() {
    let payload = pattern(65_536);
    let (stats, file) = run(44_511, |_, c, tree, file| {
        assert_eq!(c.write(tree, file, 0, &Data::Inline(&payload))?, 65_536);
        let back = c.read(tree, file, 0, 65_536, None)?.data;
        assert_eq!(back, payload, "READ returned what WRITE stored");
        assert!(
            c.transport_mut().take_invalidated().is_empty(),
            "inline I/O invalidates nothing"
        );
        Ok(())
    });
    assert_eq!(file, pattern(65_536));
    assert!(
        stats.fragmented_sent >= 1,
        "the 64 KiB WRITE went fragmented: {stats:?}"
    );
}

/// Waits for `n` local invalidations of ours to complete successfully,
/// reporting each to `buffer`.
fn wait_local_invalidations(
    conn: &mut SmbdConn,
    buffer: &mut RdmaBuffer,
    mut n: usize,
) -> Result<()> {
    while n > 0 {
        for r in conn.take_rdma() {
            crate::link::check_completion(&r)?;
            assert_eq!(tag::kind(context_of(&r)), tag::INV, "only invalidations");
            let (_, segment) = super::rdma_buffer::invalidate_target(context_of(&r));
            buffer.locally_invalidated(segment)?;
            n -= 1;
        }
        if n > 0 {
            conn.poll()?;
        }
    }
    Ok(())
}

#[test]
fn smb3_rdma_write_and_read_with_remote_and_local_invalidation_over_smb_direct() {
    let (stats, file) = run(44_512, |pair, c, tree, file| {
        // Three segments: two full fast registrations and one page.
        let frmr = pair.client.info().FRMRPageCount as usize * ndkpi::PAGE_SIZE;
        let len = 2 * frmr + 4096;
        let pd = &c.transport_mut().conn().link.pd;
        let mut wbuf = RdmaBuffer::new(&pair.client, pd, len)?;
        let mut rbuf = RdmaBuffer::new(&pair.client, pd, len)?;
        assert_eq!((wbuf.segments(), rbuf.segments()), (3, 3));
        let data = pattern(len);
        for round in 0..3u64 {
            wbuf.bytes_mut().copy_from_slice(&data);
            let d = wbuf.register(&c.transport_mut().conn().link.qp, false, 2 * round)?;
            assert_eq!(
                d.iter().map(|d| d.length as usize).collect::<Vec<_>>(),
                vec![frmr, frmr, 4096]
            );
            assert_eq!(c.write(tree, file, 0, &Data::Rdma(&d))?, len as u32);
            let gone = c.transport_mut().take_invalidated();
            assert_eq!(
                gone,
                vec![d[0].token],
                "the WRITE response invalidated the first token only"
            );
            assert!(
                wbuf.register(&c.transport_mut().conn().link.qp, false, 99)
                    .is_err(),
                "registering again before the other tokens are invalidated"
            );
            let posted =
                wbuf.invalidated(&c.transport_mut().conn().link.qp, 0, gone.last().copied())?;
            assert_eq!(posted, 2, "the client invalidates descriptors 2 and 3");
            assert!(!wbuf.is_free());
            wait_local_invalidations(c.transport_mut().conn(), &mut wbuf, posted)?;
            assert!(wbuf.is_free());
            rbuf.bytes_mut().fill(0);
            let d = rbuf.register(&c.transport_mut().conn().link.qp, true, 2 * round + 1)?;
            let r = c.read(tree, file, 0, len as u32, Some(&d))?;
            assert_eq!((r.data.len(), r.data_remaining), (0, len as u32));
            let gone = c.transport_mut().take_invalidated();
            let posted =
                rbuf.invalidated(&c.transport_mut().conn().link.qp, 1, gone.last().copied())?;
            wait_local_invalidations(c.transport_mut().conn(), &mut rbuf, posted)?;
            assert!(
                rbuf.bytes() == data.as_slice(),
                "the server's RDMA WRITEs placed the file"
            );
        }
        // Dropping a buffer whose deferred registration is still in the
        // send queue would let the next send ring a FastRegister of freed
        // pages (it completes with STATUS_ACCESS_VIOLATION): every
        // registration above was used and invalidated.
        wbuf.invalidated(&c.transport_mut().conn().link.qp, 0, None)
            .expect_err("a response that invalidates nothing is an error");
        Ok(())
    });
    assert_eq!(file, pattern(file.len()));
    assert_eq!(
        stats.remote_invalidations, 6,
        "three rounds of WRITE + READ: {stats:?}"
    );
}

/// `run_file_io_in_segments` against the scripted server over SMB
/// Direct; returns the client's result and the server's.
fn file_io_run(
    port: u16,
    job: &super::file_io::FileIo,
    segment_pages: usize,
    behaviour: Behaviour,
) -> (
    Result<(super::file_io::FileIoReport, super::super::conn::Stats)>,
    Result<Vec<u8>>,
) {
    let fabric = fabric(port);
    let pair = Pair::open(&fabric).expect("two adapters on the memory fabric");
    let listener = listen(&pair.server, fabric.server_addr, port).expect("listen");
    let target = super::run::Target {
        local: fabric.client_addr.into(),
        server: SocketAddr::V4(SocketAddrV4::new(fabric.server_addr, port)),
        share: "share".into(),
        file: "ndkperf.dat".into(),
        timeout: Duration::from_secs(10),
    };
    std::thread::scope(|s| {
        let serving = s.spawn(|| serve(&pair, &listener, behaviour));
        let client = super::run::run_file_io_in_segments(
            &pair.client,
            &target,
            smbd_config(),
            &config(),
            job,
            segment_pages,
        );
        if client.is_err() {
            listener.cancel_waits();
        }
        (client, serving.join().expect("server thread"))
    })
}

fn check_file(file: &[u8], job: &super::file_io::FileIo) {
    let pattern = crate::verify::Pattern::new(job.io_size, job.seed);
    assert_eq!(file.len() as u64, job.ops * job.io_size as u64);
    for (n, chunk) in file.chunks(job.io_size).enumerate() {
        assert_eq!(
            chunk,
            pattern.expected(n as u64),
            "the server's copy of I/O {n}"
        );
    }
}

#[test]
fn run_file_io_at_depth_four_over_smb_direct() {
    let job = super::file_io::FileIo {
        io_size: 65_536,
        ops: 12,
        depth: 4,
        seed: 7,
    };
    let (client, served) = file_io_run(44_513, &job, 256, Behaviour::default());
    let (report, stats) = client.expect("the client's run");
    let file = served.expect("the scripted server over SMB Direct");
    assert_eq!(report.mismatched_bytes, 0, "{report:?}");
    assert_eq!(report.remote_invalidations, 24);
    assert_eq!(
        (report.descriptors_per_io, report.local_invalidations),
        (1, 0)
    );
    assert_eq!(report.bytes, 12 * 65_536);
    assert!(report.write_seconds > 0.0 && report.read_seconds > 0.0);
    assert_eq!(stats.remote_invalidations, 24, "{stats:?}");
    check_file(&file, &job);
}

#[test]
fn run_file_io_with_four_descriptors_per_io_over_smb_direct() {
    // 256 KiB I/Os in 64 KiB registrations: four descriptors each, the
    // server invalidates the first, the client the other three, and
    // every buffer is fast-registered again 3 times per phase.
    let job = super::file_io::FileIo {
        io_size: 256 << 10,
        ops: 9,
        depth: 3,
        seed: 11,
    };
    let (client, served) = file_io_run(44_514, &job, 16, Behaviour::default());
    let (report, stats) = client.expect("the client's run");
    let file = served.expect("the scripted server over SMB Direct");
    assert_eq!(report.mismatched_bytes, 0, "{report:?}");
    assert_eq!(report.descriptors_per_io, 4);
    assert_eq!(report.remote_invalidations, 18, "one per I/O");
    assert_eq!(report.local_invalidations, 18 * 3, "three per I/O");
    assert_eq!(stats.remote_invalidations, 18, "{stats:?}");
    check_file(&file, &job);
}

#[test]
fn run_file_io_of_two_fast_registrations_per_io_over_smb_direct() {
    // 2 MiB I/Os at the adapter's own FRMRPageCount (256 pages): two
    // descriptors of 1 MiB each.
    let job = super::file_io::FileIo {
        io_size: 2 << 20,
        ops: 3,
        depth: 2,
        seed: 12,
    };
    let (client, served) = file_io_run(44_515, &job, 256, Behaviour::default());
    let (report, _) = client.expect("the client's run");
    let file = served.expect("the scripted server over SMB Direct");
    assert_eq!(report.mismatched_bytes, 0, "{report:?}");
    assert_eq!(
        (
            report.descriptors_per_io,
            report.remote_invalidations,
            report.local_invalidations
        ),
        (2, 6, 6)
    );
    check_file(&file, &job);
}

#[test]
fn a_server_that_invalidates_another_descriptor_fails_the_run() {
    let job = super::file_io::FileIo {
        io_size: 128 << 10,
        ops: 2,
        depth: 1,
        seed: 13,
    };
    let behaviour = Behaviour {
        invalidate_last: true,
        ..Behaviour::default()
    };
    let (client, _) = file_io_run(44_516, &job, 16, behaviour);
    let e = client.expect_err("the wrong token invalidated").to_string();
    assert!(e.contains("the I/O's first descriptor has token"), "{e}");
}

#[test]
fn an_io_above_the_servers_grant_is_refused_before_any_io() {
    let job = super::file_io::FileIo {
        io_size: 2 << 20,
        ops: 1,
        depth: 1,
        seed: 14,
    };
    let behaviour = Behaviour {
        max_io: 1 << 20,
        ..Behaviour::default()
    };
    let (client, _) = file_io_run(44_517, &job, 256, behaviour);
    let e = client.expect_err("2M above a 1M grant").to_string();
    assert!(
        e.contains("--size 2M is more than the server takes per I/O (1M)")
            && e.contains("MaxReadSize 1M"),
        "{e}"
    );
}
