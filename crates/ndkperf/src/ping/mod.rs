//! `ndkperf ping`: librdmacm's rping (rdma-core
//! `librdmacm/examples/rping.c`) over rsndk adapters, so a user can check
//! rsndk against any rdma_cm peer (rxe, a hardware RNIC, another
//! ndkperf), as NDKPing does on Windows.
//!
//! What is rping's, with the function that does it there:
//! - the connection: an RC QP through the CM on the rdma_cm port (7174
//!   by default; rsndk's CM maps an ND port to the IB CM service ID
//!   `0x0000_0000_0106_0000 | port`, RDMA_PS_TCP, as rdma_cm does: see
//!   `softrnic::wire::ip_service_id`), no user private data (the REQ's
//!   private data is the 36-byte RDMA CM header alone), responder
//!   resources = initiator depth = 1 (`rping_init_conn_param`);
//! - the QP (`rping_create_qp`: 16 sends, 2 receives, one SGE) and one
//!   receive posted before connecting and reposted on each completion
//!   (`rping_run_client`/`rping_run_server`, `rping_cq_event_handler`);
//! - the buffers (`rping_setup_buffers`): `rdma_buf` of the side's own
//!   -S, and the client's `start_buf`, both remotely readable and
//!   writable; each is advertised as {its virtual address, the MR's
//!   remote token, -S} (`rping_format_send`). An rsndk token addresses
//!   the registered region by the virtual address its MDL describes, as
//!   rxe's MR does by the iova given at registration (the virtual
//!   address for `ibv_reg_mr`), so the peer reads and writes at exactly
//!   the address advertised;
//! - the ping (`rping_test_client` / `rping_test_server`): the client
//!   SENDs start_buf's {addr, rkey, size}; the server RDMA READs `size`
//!   bytes of it into its rdma_buf, SENDs a go-ahead (16 zero bytes),
//!   the client SENDs rdma_buf's {addr, rkey, size}, the server RDMA
//!   WRITEs `strlen + 1` bytes of what it read there and SENDs a
//!   go-ahead; the client compares the two buffers (-V: `data
//!   mismatch!`) and prints `ping data: ...` (-v); the server prints
//!   `server ping data: ...` (-v);
//! - the text ([`rping::PingText`]), the size range (23 to 65535) and
//!   default (64), the count (0: forever), the port (7174);
//! - the end: the client disconnects after its last ping; the server
//!   answers until the client disconnects, then disconnects and exits 0.
//!
//! Where ndkperf differs: exit codes follow the tool (1 for a data
//! mismatch, 2 for every other error; rping exits with -1 or an errno);
//! a client whose server disconnects before -C pings is an error (rping
//! exits 0 on any disconnect); the client waits for each SEND's
//! completion before reusing the message buffer; a server whose -S is
//! smaller than the client's ping says so instead of failing its READ;
//! `--timeout` bounds the client's connect (rping waits 2 s for address
//! and route resolution, then as long as the CM retries).

mod session;

use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, UdpSocket};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use ndkperf_cli::{PingArgs, TransportKind};
use serde::Serialize;

use crate::error::{Context, Error, Result};
use crate::link::{Link, listen_at};
use crate::ndk::{Adapter, Listener};
use crate::setup::{self, AdapterOptions, check_local, check_pcap_path};
use session::{Buffers, LIMITS, Mismatch, Outcome, READ_LIMITS, Session};

/// The client's connect wait unless --timeout says otherwise.
const CONNECT_WAIT: Duration = Duration::from_secs(10);

/// What `ndkperf ping` prints at the end.
#[derive(Debug, Serialize)]
struct Report {
    role: &'static str,
    transport: &'static str,
    local: String,
    peer: String,
    size: u32,
    rounds: u64,
    bytes: u64,
    seconds: f64,
    us_per_round: f64,
    validated: bool,
}

/// Which sides run in this process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Server,
    Client,
    Both,
}

/// `ndkperf ping`.
pub fn run(a: &PingArgs) -> Result<ExitCode> {
    let mode = match (a.server, a.client) {
        (true, _) => Mode::Server,
        (_, true) => Mode::Client,
        _ => Mode::Both,
    };
    let transport = match (a.transport, mode) {
        (Some(TransportKind::Mem), Mode::Server | Mode::Client) => {
            return Err(Error::msg(
                "--transport mem runs both sides in this process: drop --server/--client",
            ));
        }
        (Some(t), _) => t,
        (None, Mode::Both) => TransportKind::Mem,
        (None, _) => TransportKind::Udp,
    };
    if let Some(path) = &a.pcap {
        check_pcap_path(path)?;
    }
    match mode {
        Mode::Server => {
            let ip = a.addr.unwrap_or(Ipv4Addr::LOCALHOST.into());
            check_local(ip, "--addr")?;
            let adapter = open(a, transport, ip, true)?;
            let at = SocketAddr::new(ip, a.port);
            let listener = listen_at(&adapter, at)?;
            println!(
                "ndkperf ping: server listening on {at} ({})",
                transport.name()
            );
            let _ = std::io::stdout().flush();
            let (out, peer) = serve(&adapter, &listener, a, a.timeout)?;
            report(a, "server", transport, at, &peer, &out);
            Ok(ExitCode::SUCCESS)
        }
        Mode::Client => {
            let peer_ip = a
                .addr
                .ok_or_else(|| Error::msg("--client needs --addr, the server's address"))?;
            let local = match a.local {
                Some(ip) => ip,
                None => default_local(peer_ip)?,
            };
            check_local(local, "--local")?;
            if local.is_ipv4() != peer_ip.is_ipv4() {
                return Err(Error::msg(format!(
                    "--local {local} and --addr {peer_ip} are of different families"
                )));
            }
            let adapter = open(a, transport, local, true)?;
            let peer = SocketAddr::new(peer_ip, a.port);
            client(a, &adapter, transport, local, peer)
        }
        Mode::Both => both(a, transport),
    }
}

/// Opens one side's adapter at `ip` (`capture`: with --pcap).
fn open(a: &PingArgs, transport: TransportKind, ip: IpAddr, capture: bool) -> Result<Arc<Adapter>> {
    let options = AdapterOptions {
        pmtu: a.pmtu,
        loss: None,
        no_busy_poll: a.no_busy_poll,
        peer_sockets: a.peer_sockets,
        pcap: if capture { a.pcap.as_deref() } else { None },
    };
    Ok(Arc::new(Adapter::open(&setup::config_string(
        transport, ip, &options,
    ))?))
}

/// The client's address when --local is not given: another loopback
/// address for a loopback server (its adapter holds the server's port
/// 4791), else the source address of the route to the server (found by
/// connecting a UDP socket, which sends nothing), as rdma_cm's address
/// resolution picks it.
pub(crate) fn default_local(peer: IpAddr) -> Result<IpAddr> {
    match peer {
        IpAddr::V4(v4) if v4.is_loopback() => Ok(if v4 == Ipv4Addr::new(127, 0, 0, 2) {
            Ipv4Addr::LOCALHOST.into()
        } else {
            Ipv4Addr::new(127, 0, 0, 2).into()
        }),
        IpAddr::V6(v6) if v6.is_loopback() => Err(Error::msg(
            "--addr ::1 needs --local: [::1] is the only IPv6 loopback address and the \
             server's adapter holds its port 4791",
        )),
        _ => {
            let any: IpAddr = if peer.is_ipv4() {
                Ipv4Addr::UNSPECIFIED.into()
            } else {
                std::net::Ipv6Addr::UNSPECIFIED.into()
            };
            let socket = UdpSocket::bind(SocketAddr::new(any, 0))?;
            socket
                .connect(SocketAddr::new(peer, 4791))
                .with_context(|| format!("no route to {peer} (give --local)"))?;
            Ok(socket.local_addr()?.ip())
        }
    }
}

/// Waits for one client (at most `timeout`, else for ever), then
/// serves it (`rping_run_server`). The outcome and the client's address.
fn serve(
    adapter: &Arc<Adapter>,
    listener: &Listener,
    a: &PingArgs,
    timeout: Option<Duration>,
) -> Result<(Outcome, String)> {
    let deadline = timeout.map(|t| std::time::Instant::now() + t);
    let connector = loop {
        if let Some(c) = listener.next(Duration::from_secs(1))? {
            break c;
        }
        if listener.cancelled() {
            return Err(Error::msg("the client side gave up"));
        }
        if deadline.is_some_and(|d| std::time::Instant::now() >= d) {
            return Err(Error::msg(format!(
                "no client connected within {}",
                crate::ndk::show_duration(timeout.unwrap_or_default())
            )));
        }
    };
    let peer = connector
        .peer_address()
        .map(|p| p.to_string())
        .unwrap_or_default();
    let mut link = Link::new(adapter, LIMITS)?;
    let buffers = Buffers::new(&link, a.size as usize, false)?;
    buffers.post_receive(&link)?;
    link.accept_with(connector, READ_LIMITS, &[], Duration::from_secs(10))
        .context("cannot accept the client")?;
    let mut session = Session::new(link, buffers);
    let out = session.server(a.verbose)?;
    // rping_disconnect: the server ends its side too.
    let _ = session.link.disconnect();
    Ok((out, peer))
}

/// Connects to `peer` and pings it (`rping_run_client`).
fn client(
    a: &PingArgs,
    adapter: &Arc<Adapter>,
    transport: TransportKind,
    local: IpAddr,
    peer: SocketAddr,
) -> Result<ExitCode> {
    let mut link = Link::new(adapter, LIMITS)?;
    let buffers = Buffers::new(&link, a.size as usize, true)?;
    buffers.post_receive(&link)?;
    link.connect_with(
        SocketAddr::new(local, 0),
        peer,
        READ_LIMITS,
        &[],
        a.timeout.unwrap_or(CONNECT_WAIT),
    )
    .map_err(|e| {
        let refused = e.status() == Some(ndkpi::STATUS_CONNECTION_REFUSED);
        let e = if refused {
            e.context(format!("nobody listens on port {}", peer.port()))
        } else {
            e
        };
        e.context(format!("cannot connect to {peer}"))
    })?;
    let mut session = Session::new(link, buffers);
    let outcome = session.client(a.count, a.validate, a.verbose)?;
    let _ = session.link.disconnect();
    match outcome {
        Ok(out) => {
            if out.peer_disconnected && a.count != 0 {
                return Err(Error::msg(format!(
                    "the server disconnected after {} of {} pings",
                    out.rounds, a.count
                )));
            }
            report(
                a,
                "client",
                transport,
                SocketAddr::new(local, 0),
                &peer.to_string(),
                &out,
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(Mismatch { ping, at }) => {
            eprintln!("ndkperf: ping {ping}: data mismatch! (first difference at byte {at})");
            Ok(ExitCode::from(1))
        }
    }
}

/// Both sides in this process: the server on a thread, the client here.
fn both(a: &PingArgs, transport: TransportKind) -> Result<ExitCode> {
    let server_ip = a.addr.unwrap_or(Ipv4Addr::LOCALHOST.into());
    let client_ip = match (a.local, server_ip) {
        (Some(ip), _) => ip,
        (None, IpAddr::V4(_)) => default_local(server_ip)?,
        (None, IpAddr::V6(_)) => {
            return Err(Error::msg(
                "an IPv6 --addr needs --local, the client adapter's IPv6 address",
            ));
        }
    };
    if server_ip == client_ip || server_ip.is_ipv4() != client_ip.is_ipv4() {
        return Err(Error::msg(format!(
            "--addr {server_ip} and --local {client_ip}: the two adapters need two addresses of one family"
        )));
    }
    if transport == TransportKind::Udp {
        check_local(server_ip, "--addr")?;
        check_local(client_ip, "--local")?;
    }
    let server = open(a, transport, server_ip, false)?;
    let client_adapter = open(a, transport, client_ip, true)?;
    let at = SocketAddr::new(server_ip, a.port);
    let listener = listen_at(&server, at)?;
    std::thread::scope(|s| {
        let serving = s.spawn(|| serve(&server, &listener, a, Some(CONNECT_WAIT)));
        let code = client(a, &client_adapter, transport, client_ip, at);
        if code.is_err() {
            listener.cancel_waits();
        }
        let served = serving
            .join()
            .unwrap_or_else(|_| Err(Error::msg("the server thread panicked")));
        match (code, served) {
            (Err(e), _) => Err(e),
            (Ok(_), Err(e)) => Err(e.context("server")),
            (Ok(code), Ok((out, peer))) => {
                if !a.json {
                    report(a, "server", transport, at, &peer, &out);
                }
                Ok(code)
            }
        }
    })
}

/// Prints the end of a run: text, or one JSON object.
fn report(
    a: &PingArgs,
    role: &'static str,
    transport: TransportKind,
    local: SocketAddr,
    peer: &str,
    out: &Outcome,
) {
    let seconds = out.elapsed.as_secs_f64();
    let per_round = if out.rounds == 0 {
        0.0
    } else {
        seconds * 1e6 / out.rounds as f64
    };
    let r = Report {
        role,
        transport: transport.name(),
        local: if local.port() == 0 {
            local.ip().to_string()
        } else {
            local.to_string()
        },
        peer: peer.to_owned(),
        size: a.size,
        rounds: out.rounds,
        bytes: out.bytes,
        seconds,
        us_per_round: per_round,
        validated: out.validated,
    };
    if a.json {
        println!("{}", serde_json::to_string(&r).unwrap_or_default());
    } else {
        println!(
            "ndkperf ping: {role} {} - {}: {} pings of {} bytes{}, {} bytes by RDMA in {:.6} s ({:.1} us per ping)",
            r.local,
            r.peer,
            r.rounds,
            r.size,
            if r.validated { ", validated" } else { "" },
            r.bytes,
            seconds,
            per_round
        );
    }
}
