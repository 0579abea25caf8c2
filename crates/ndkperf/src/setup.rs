//! Turning the fabric flags into adapter configurations and opening the
//! adapters.

use std::fmt::Write;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, UdpSocket};
use std::path::Path;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::ndk::Adapter;
use ndkperf_cli::{FabricArgs, TransportKind};

/// Refuses anything outside 127.0.0.0/8: the tool only ever talks to
/// this machine.
pub fn check_loopback(addr: Ipv4Addr, flag: &str) -> Result<()> {
    if addr.is_loopback() {
        Ok(())
    } else {
        Err(Error::msg(format!(
            "{flag} {addr} is not a loopback address (ndkperf only uses 127.0.0.0/8)"
        )))
    }
}

/// Refuses an address that is not this machine's own: an adapter over
/// UDP binds its port 4791 there. Tried by binding a UDP socket to it
/// (port 0, nothing sent), which fails exactly when no interface has
/// the address.
pub fn check_local(ip: IpAddr, flag: &str) -> Result<()> {
    if ip.is_unspecified() || ip.is_multicast() || ip == IpAddr::V4(Ipv4Addr::BROADCAST) {
        return Err(Error::msg(format!(
            "{flag} {ip} is not a unicast address (an adapter needs one of this machine's addresses)"
        )));
    }
    UdpSocket::bind(SocketAddr::new(ip, 0)).map(drop).map_err(|e| {
        Error::msg(format!(
            "{flag} {ip} is not an address of this machine (no interface has it: a socket cannot bind it: {e})"
        ))
    })
}

/// Refuses an adapter address the transport cannot have: over UDP one
/// of this machine's ([`check_local`]: two-machine runs use real
/// addresses), on the in-memory fabric a loopback one.
pub fn check_adapter_addr(transport: TransportKind, ip: Ipv4Addr, flag: &str) -> Result<()> {
    match transport {
        TransportKind::Udp => check_local(ip.into(), flag),
        TransportKind::Mem => check_loopback(ip, flag),
    }
}

/// How an adapter is configured besides its transport and address.
#[derive(Debug, Clone, Copy, Default)]
pub struct AdapterOptions<'a> {
    /// Path MTU offered.
    pub pmtu: u32,
    /// In-memory fabric loss probability.
    pub loss: Option<f64>,
    /// `busy_poll=off`.
    pub no_busy_poll: bool,
    /// `peer_sockets=on` (udp).
    pub peer_sockets: bool,
    /// Capture file.
    pub pcap: Option<&'a Path>,
}

/// The configuration string (see `rsndk_host.h`) of an adapter at `ip`
/// (IPv6 addresses bracketed).
pub fn config_string(transport: TransportKind, ip: IpAddr, o: &AdapterOptions<'_>) -> String {
    let addr = match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => format!("[{v6}]"),
    };
    let mut c = match transport {
        TransportKind::Udp if o.peer_sockets => format!("udp:{addr},peer_sockets=on"),
        TransportKind::Udp => format!("udp:{addr}"),
        TransportKind::Mem => format!("mem:ndkperf-{}/{addr}", std::process::id()),
    };
    let _ = write!(c, ",pmtu={}", o.pmtu);
    if let (TransportKind::Mem, Some(p)) = (transport, o.loss) {
        let _ = write!(c, ",loss={p},seed=1");
    }
    if o.no_busy_poll {
        c.push_str(",busy_poll=off");
    }
    if let Some(path) = o.pcap {
        let _ = write!(c, ",pcap={}", path.display());
    }
    c
}

/// The transport the flags select (`--server`/`--client` imply UDP).
pub fn transport(fabric: &FabricArgs, two_process: bool) -> Result<TransportKind> {
    let t = match (fabric.transport, two_process) {
        (Some(TransportKind::Mem), true) => {
            return Err(Error::msg(
                "--server/--client run the two sides in two processes, which needs --transport udp",
            ));
        }
        (Some(t), _) => t,
        (None, true) => TransportKind::Udp,
        (None, false) => TransportKind::Mem,
    };
    if fabric.loss.is_some() && t != TransportKind::Mem {
        return Err(Error::msg(
            "--loss applies to --transport mem only (UDP loopback does not drop packets on purpose)",
        ));
    }
    Ok(t)
}

/// Which side an adapter serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The listening side.
    Server,
    /// The connecting side.
    Client,
}

/// The configuration string of one side's adapter.
pub fn config(fabric: &FabricArgs, transport: TransportKind, role: Role, addr: Ipv4Addr) -> String {
    let options = AdapterOptions {
        pmtu: fabric.pmtu,
        loss: fabric.loss,
        no_busy_poll: fabric.no_busy_poll,
        peer_sockets: fabric.peer_sockets,
        pcap: match role {
            Role::Client => fabric.pcap.as_deref(),
            Role::Server => None,
        },
    };
    config_string(transport, addr.into(), &options)
}

/// The two adapters of a one-process run.
#[derive(Debug, Clone)]
pub struct Pair {
    /// The server's adapter.
    pub server: Arc<Adapter>,
    /// The client's adapter.
    pub client: Arc<Adapter>,
}

impl Pair {
    /// Opens both adapters.
    pub fn open(fabric: &FabricArgs) -> Result<Self> {
        let transport = transport(fabric, false)?;
        check_adapter_addr(transport, fabric.server_addr, "--server-addr")?;
        check_adapter_addr(transport, fabric.client_addr, "--client-addr")?;
        if fabric.server_addr == fabric.client_addr {
            return Err(Error::msg(format!(
                "--server-addr and --client-addr are both {}: the two adapters need two addresses",
                fabric.server_addr
            )));
        }
        if let Some(path) = &fabric.pcap {
            check_pcap_path(path)?;
        }
        let server = Adapter::open(&config(fabric, transport, Role::Server, fabric.server_addr))?;
        let client = Adapter::open(&config(fabric, transport, Role::Client, fabric.client_addr))?;
        Ok(Self {
            server: Arc::new(server),
            client: Arc::new(client),
        })
    }
}

/// A pcap path the adapter can create (checked first for a clear error).
pub fn check_pcap_path(path: &std::path::Path) -> Result<()> {
    if path.to_str().is_none_or(|p| p.contains(',')) {
        return Err(Error::msg(format!(
            "--pcap {}: the path must be UTF-8 without commas",
            path.display()
        )));
    }
    std::fs::File::create(path)
        .map(drop)
        .map_err(|e| Error::msg(format!("--pcap {}: {e}", path.display())))
}

/// Engine counters of an adapter's software RNIC worth reporting.
pub fn device_counters(adapter: &Adapter) -> serde_json::Map<String, serde_json::Value> {
    use std::sync::atomic::Ordering::Relaxed;
    let mut m = serde_json::Map::new();
    if let Some(rnic) = host::adapters::device_of(adapter.raw()) {
        let s = rnic.stats();
        m.insert("tx_packets".into(), s.tx_packets.into());
        m.insert("rx_packets".into(), s.rx_packets.into());
        m.insert("retransmitted".into(), s.retransmitted.into());
        m.insert("timeouts".into(), s.timeouts.into());
        m.insert("rnr_naks_received".into(), s.rnr_naks_received.into());
        m.insert("seq_naks_received".into(), s.seq_naks_received.into());
        m.insert("acks_held".into(), s.acks_held.into());
        m.insert("acks_joined".into(), s.acks_joined.into());
    }
    if let Some(busy) = host::adapters::busy_poll_of(adapter.raw()) {
        let s = &busy.stats;
        m.insert("busy_passes".into(), s.passes.load(Relaxed).into());
        m.insert(
            "busy_bulk_backoffs".into(),
            s.bulk_backoffs.load(Relaxed).into(),
        );
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use ndkperf_cli::{Cli, Command};

    fn fabric(args: &[&str]) -> FabricArgs {
        let mut v = vec!["ndkperf", "bw"];
        v.extend_from_slice(args);
        match Cli::parse_from(v).command {
            Command::Bw(a) => a.perf.fabric,
            _ => unreachable!(),
        }
    }

    #[test]
    fn configs() {
        let f = fabric(&["--loss", "0.01", "--pcap", "/tmp/x.pcap"]);
        let t = transport(&f, false).unwrap();
        assert_eq!(t, TransportKind::Mem);
        let c = config(&f, t, Role::Client, Ipv4Addr::new(127, 0, 0, 2));
        assert!(c.starts_with("mem:ndkperf-"));
        assert!(
            c.ends_with("/127.0.0.2,pmtu=4096,loss=0.01,seed=1,pcap=/tmp/x.pcap"),
            "{c}"
        );
        let s = config(&f, t, Role::Server, Ipv4Addr::LOCALHOST);
        assert!(!s.contains("pcap"));
        let f = fabric(&["--transport", "udp", "--loss", "0.1"]);
        assert!(transport(&f, false).is_err());
        let f = fabric(&["--transport", "mem"]);
        assert!(transport(&f, true).is_err());
        assert_eq!(transport(&fabric(&[]), true).unwrap(), TransportKind::Udp);
        assert!(check_loopback(Ipv4Addr::new(10, 0, 0, 1), "--x").is_err());
        assert!(
            host::parse_config(&config(
                &fabric(&[]),
                TransportKind::Udp,
                Role::Server,
                Ipv4Addr::LOCALHOST
            ))
            .is_ok()
        );
    }

    /// Loopback addresses are this machine's, others are refused; IPv6
    /// configuration strings bracket the address.
    #[test]
    fn local_addresses_and_ipv6_configs() {
        assert!(check_local(Ipv4Addr::new(127, 0, 3, 1).into(), "--x").is_ok());
        // A documentation address (RFC 5737) this machine does not have
        // (a test machine may have one of them).
        let foreign = [[198, 51, 100, 77], [203, 0, 113, 77], [192, 0, 2, 177]]
            .map(Ipv4Addr::from)
            .into_iter()
            .find(|ip| UdpSocket::bind((*ip, 0)).is_err())
            .expect("an address that is not this machine's");
        let e = check_local(foreign.into(), "--addr").unwrap_err();
        assert!(
            e.to_string().contains("not an address of this machine"),
            "{e}"
        );
        assert!(check_local(Ipv4Addr::UNSPECIFIED.into(), "--addr").is_err());
        let v6 = config_string(
            TransportKind::Udp,
            "fd00::1".parse().unwrap(),
            &AdapterOptions {
                pmtu: 1024,
                ..AdapterOptions::default()
            },
        );
        assert_eq!(v6, "udp:[fd00::1],pmtu=1024");
        assert!(host::parse_config(&v6).is_ok());
    }
}
