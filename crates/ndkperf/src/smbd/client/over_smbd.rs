//! The SMB 3 session over real SMB Direct: the client's [`Connection`]
//! over [`SmbdTransport`] on one rsndk adapter, the scripted SMB 3 server
//! behind an [`SmbdConn`] on another, on the in-process memory fabric.
//! Inline READ/WRITE only (the scripted server has no RDMA engine): it
//! proves the SMB2 layer rides [MS-SMBD] negotiation, credits and
//! fragmentation unchanged.

use std::time::Duration;

use clap::Parser as _;
use ndkperf_cli::{Cli, Command};

use super::connection::Connection;
use super::create::DISPOSITION_OVERWRITE_IF;
use super::io::Data;
use super::scripted_server::{Memory, config, server};
use super::signing::DIALECT_311;
use super::smbd_transport::SmbdTransport;
use crate::error::{Error, Result};
use crate::link::{Link, listen};
use crate::ndk::QpLimits;
use crate::setup::Pair;
use crate::smbd::conn::{Config, SmbdConn};

const PORT: u16 = 44_511;

fn smbd_config() -> Config {
    Config {
        credits: 32,
        max_send_size: 1364,
        max_receive_size: 1364,
        max_fragmented_size: 1 << 20,
        max_read_write_size: 1 << 20,
        keepalive: Duration::ZERO,
    }
}

fn limits() -> QpLimits {
    QpLimits {
        receive_depth: 33,
        initiator_depth: 40,
        receive_sge: 1,
        initiator_sge: 1,
        inline_size: 0,
    }
}

#[test]
fn smb3_session_over_smb_direct_on_the_memory_fabric() {
    let Ok(Cli {
        command: Command::Smbd(args),
        ..
    }) = Cli::try_parse_from(["ndkperf", "smbd", "--port", &PORT.to_string()])
    else {
        panic!("ndkperf smbd's arguments no longer parse");
    };
    let fabric = args.fabric;
    let pair = Pair::open(&fabric).expect("two adapters on the memory fabric");
    let listener = listen(&pair.server, fabric.server_addr, PORT).expect("listen");
    let payload: Vec<u8> = (0..65_536u32).map(|i| (i ^ (i >> 8)) as u8).collect();
    let (client, served) = std::thread::scope(|s| {
        let serving = s.spawn(|| -> Result<Vec<u8>> {
            let connector = listener
                .next(Duration::from_secs(20))?
                .ok_or_else(|| Error::msg("no client connected"))?;
            let mut conn = SmbdConn::new(Link::new(&pair.server, limits())?, smbd_config())?;
            conn.link.accept(connector, &[], Duration::from_secs(10))?;
            conn.negotiate_server()?;
            let memory: Memory = Memory::default();
            let srv = server(DIALECT_311, "s3cret", &memory);
            let mut logged_off = false;
            while !logged_off {
                conn.poll()?;
                while let Some(m) = conn.take_message() {
                    logged_off |= m.data.get(12) == Some(&2); // LOGOFF
                    srv.borrow_mut().handle(&m.data)?;
                    let out: Vec<Vec<u8>> = srv.borrow_mut().outbox.drain(..).collect();
                    for r in out {
                        conn.queue(&r, None, None)?;
                    }
                }
            }
            while !conn.idle() {
                conn.poll()?;
            }
            let _ = conn.link.disconnect();
            let file = srv.borrow().file.clone();
            Ok(file)
        });
        let client = (|| -> Result<Vec<u8>> {
            let mut conn = SmbdConn::new(Link::new(&pair.client, limits())?, smbd_config())?;
            let server_addr = std::net::SocketAddrV4::new(fabric.server_addr, PORT);
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
            assert_eq!(c.write(&tree, file, 0, &Data::Inline(&payload))?, 65_536);
            let back = c.read(&tree, file, 0, 65_536, None)?.data;
            c.close(&tree, file)?;
            let mut transport = c.logoff()?;
            assert!(
                transport.take_invalidated().is_empty(),
                "inline I/O invalidates nothing"
            );
            while !transport.conn().idle() {
                transport.conn().poll()?;
            }
            Ok(back)
        })();
        if client.is_err() {
            listener.cancel_waits();
        }
        (client, serving.join().expect("server thread"))
    });
    let back = client.expect("the client's session");
    let file = served.expect("the scripted server over SMB Direct");
    assert_eq!(back, payload, "READ returned what WRITE stored");
    assert_eq!(file, payload);
}
