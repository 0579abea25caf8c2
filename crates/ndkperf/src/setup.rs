//! Turning the fabric flags into adapter configurations and opening the
//! adapters.

use std::fmt::Write;
use std::net::Ipv4Addr;
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
    let mut c = match transport {
        TransportKind::Udp if fabric.peer_sockets => format!("udp:{addr},peer_sockets=on"),
        TransportKind::Udp => format!("udp:{addr}"),
        TransportKind::Mem => format!("mem:ndkperf-{}/{addr}", std::process::id()),
    };
    let _ = write!(c, ",pmtu={}", fabric.pmtu);
    if let (TransportKind::Mem, Some(p)) = (transport, fabric.loss) {
        let _ = write!(c, ",loss={p},seed=1");
    }
    if fabric.no_busy_poll {
        c.push_str(",busy_poll=off");
    }
    if let (Role::Client, Some(path)) = (role, &fabric.pcap) {
        let _ = write!(c, ",pcap={}", path.display());
    }
    c
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
        check_loopback(fabric.server_addr, "--server-addr")?;
        check_loopback(fabric.client_addr, "--client-addr")?;
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
            Command::Bw(a) => a.fabric,
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
}
