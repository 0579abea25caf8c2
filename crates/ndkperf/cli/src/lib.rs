//! The command line of ndkperf: subcommands and their flags (clap
//! derive), and the parsing of sizes, durations and probabilities.

pub mod ping;
pub mod units;

use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

pub use ping::PingArgs;
use units::{parse_duration, parse_probability, parse_size};

/// ND port the server listens on unless told otherwise (SMB Direct's
/// iWARP port).
pub const DEFAULT_PORT: u16 = 5445;

/// Bandwidth, latency and SMB Direct workloads over rsndk NDK adapters
/// (software RoCEv2 RNICs), driven through the NDK dispatch tables.
#[derive(Debug, Parser)]
#[command(name = "ndkperf", version, propagate_version = true)]
pub struct Cli {
    /// What to run.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Bandwidth: a window of --depth operations of --size bytes in flight
    /// (like ib_send_bw / ib_read_bw / ib_write_bw).
    Bw(BwArgs),
    /// Latency: one operation at a time (send: ping-pong, reported as half
    /// the round trip; read/write: post to completion).
    Lat(PerfArgs),
    /// Bandwidth and latency for every power of two from --min-size to
    /// --max-size (64 B to 4 MiB by default), one row per size.
    Sweep(SweepArgs),
    /// SMB Direct ([MS-SMBD]) transport with SMB2-style 1 MiB READ/WRITE
    /// I/O over RDMA, between two adapters.
    Smbd(SmbdArgs),
    /// The same transfer patterns over a TCP loopback connection, as the
    /// baseline of SMB over TCP.
    Tcp(TcpArgs),
    /// A ping-pong over two bare UDP sockets on loopback, each side waiting
    /// as a busy-polling RNIC does (non-blocking receive, yielding between
    /// tries): the kernel's part of a UDP transport's round trip, reported
    /// as half the round trip.
    Udp(UdpArgs),
    /// Single-thread memcpy bandwidth of this machine, for comparison.
    Memcpy(MemcpyArgs),
    /// Open an adapter and print what it reports (NDK_ADAPTER_INFO).
    Info(InfoArgs),
    /// librdmacm's rping over rsndk: its rdma_cm port, 16-byte
    /// {addr, rkey, size} messages and READ/SEND/WRITE sequence, so a ping
    /// reaches any rping peer (rping -s / -c) or another ndkperf.
    Ping(PingArgs),
}

/// RDMA operation measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Op {
    /// SEND to a posted receive.
    Send,
    /// RDMA READ from the peer's buffer.
    Read,
    /// RDMA WRITE into the peer's buffer.
    Write,
}

impl Op {
    /// The lowercase name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Send => "send",
            Self::Read => "read",
            Self::Write => "write",
        }
    }
}

/// How the two adapters reach each other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TransportKind {
    /// In-memory fabric inside this process.
    Mem,
    /// RoCEv2 over UDP port 4791 on this machine's addresses (loopback,
    /// or a real interface's for two machines).
    Udp,
}

impl TransportKind {
    /// The lowercase name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Mem => "mem",
            Self::Udp => "udp",
        }
    }
}

/// `--format` of `--output`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// One JSON document: `metadata` and `results`.
    Json,
    /// A header line, then one line per result; every line carries the
    /// run's metadata columns.
    Csv,
}

/// `--port`: 1 to 65535 (0 would ask for a port nobody can connect to).
fn parse_port(text: &str) -> Result<u16, String> {
    match text.trim().parse::<u16>() {
        Ok(0) => Err("port 0 is not a port a client can reach (use 1 to 65535)".into()),
        Ok(v) => Ok(v),
        Err(_) => Err(format!("'{text}' is not a port from 1 to 65535")),
    }
}

fn parse_connections(text: &str) -> Result<u32, String> {
    match text.trim().parse::<u32>() {
        Ok(v @ 1..=64) => Ok(v),
        _ => Err(format!("'{text}' is not a count from 1 to 64")),
    }
}

fn parse_rounds(text: &str) -> Result<u32, String> {
    match text.trim().parse::<u32>() {
        Ok(v @ 1..=1000) => Ok(v),
        _ => Err(format!("'{text}' is not a round count from 1 to 1000")),
    }
}

/// `--duration`: a positive time (a bare number is seconds).
fn parse_seconds(text: &str) -> Result<Duration, String> {
    let d = match text.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v <= 86_400.0 => Duration::from_secs_f64(v),
        Ok(_) => return Err(format!("'{text}' is not a duration from 0 to 86400 s")),
        Err(_) => parse_duration(text)?,
    };
    if d.is_zero() {
        return Err("must be longer than 0".into());
    }
    Ok(d)
}

/// `--pmtu`: one of the five IB MTUs.
pub(crate) fn parse_pmtu_value(text: &str) -> Result<u32, String> {
    match text.trim().parse::<u32>() {
        Ok(v @ (256 | 512 | 1024 | 2048 | 4096)) => Ok(v),
        _ => Err(format!(
            "'{text}' is not a path MTU (use 256, 512, 1024, 2048 or 4096)"
        )),
    }
}

fn parse_count(text: &str) -> Result<u64, String> {
    match text.trim().parse::<u64>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(v) if v <= 1 << 40 => Ok(v),
        Ok(_) => Err(format!("'{text}' is too large")),
        Err(_) => Err(format!("'{text}' is not a positive whole number")),
    }
}

fn parse_depth(text: &str) -> Result<u32, String> {
    match text.trim().parse::<u32>() {
        Ok(v @ 1..=4096) => Ok(v),
        _ => Err(format!("'{text}' is not a depth from 1 to 4096")),
    }
}

fn parse_sge(text: &str) -> Result<u32, String> {
    match text.trim().parse::<u32>() {
        Ok(v @ 1..=16) => Ok(v),
        _ => Err(format!("'{text}' is not an SGE count from 1 to 16")),
    }
}

/// Where the adapters are and how they talk.
#[derive(Debug, Clone, Args)]
pub struct FabricArgs {
    /// mem: an in-memory fabric in this process; udp: RoCEv2 over UDP
    /// (default: mem, or udp when the sides are two processes).
    #[arg(long, value_enum)]
    pub transport: Option<TransportKind>,
    /// Path MTU in bytes: 256, 512, 1024, 2048 or 4096.
    #[arg(long, default_value = "4096", value_parser = parse_pmtu_value)]
    pub pmtu: u32,
    /// Packet loss probability on the in-memory fabric (0 to 1; mem only).
    #[arg(long, value_parser = parse_probability)]
    pub loss: Option<f64>,
    /// Write every packet of the client's adapter to this pcap file.
    #[arg(long, value_name = "FILE")]
    pub pcap: Option<PathBuf>,
    /// Leave all device work to the adapters' engine threads, even while
    /// a CQ is polled (by default a thread polling an empty CQ runs the
    /// device itself: busy polling).
    #[arg(long)]
    pub no_busy_poll: bool,
    /// Send the engine's packets from a socket connected to the peer, an
    /// ephemeral source port (the adapters' `peer_sockets=on`: no route
    /// lookup per send; udp only). By default they leave from port 4791.
    #[arg(long)]
    pub peer_sockets: bool,
    /// The server adapter's address (udp: one of this machine's; mem: a
    /// loopback one).
    #[arg(long, default_value = "127.0.0.1", value_name = "IPV4")]
    pub server_addr: Ipv4Addr,
    /// The client adapter's address (udp: one of this machine's; mem: a
    /// loopback one).
    #[arg(long, default_value = "127.0.0.2", value_name = "IPV4")]
    pub client_addr: Ipv4Addr,
    /// ND port the server listens on, 1 to 65535 [default: 5445; 445 for
    /// a real SMB 3 server].
    #[arg(long, value_parser = parse_port)]
    pub port: Option<u16>,
    /// How long to wait for the peer when connecting (e.g. 500ms, 5s).
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    pub timeout: Duration,
}

impl FabricArgs {
    /// `--port`, or ndkperf's own default.
    pub fn port(&self) -> u16 {
        self.port.unwrap_or(DEFAULT_PORT)
    }
}

/// Flags of `bw`: those of `lat` and the window's depth.
#[derive(Debug, Clone, Args)]
pub struct BwArgs {
    /// Operations in flight [default: 16].
    #[arg(long, value_parser = parse_depth)]
    pub depth: Option<u32>,
    /// The rest, shared with `lat`.
    #[command(flatten)]
    pub perf: PerfArgs,
}

/// Flags of `bw` and `lat`.
// Each bool is an independent command-line switch, not a state.
#[allow(clippy::struct_excessive_bools)]
#[derive(Debug, Clone, Args)]
pub struct PerfArgs {
    /// Operation to measure.
    #[arg(long, value_enum, default_value = "send")]
    pub op: Op,
    /// Message size, with an optional unit: 64, 4K, 1M (max 1G) [default:
    /// 64K for bw, 64 for lat].
    #[arg(long, value_parser = parse_size)]
    pub size: Option<u64>,
    /// Number of operations (lat: round trips) per connection [default:
    /// 1000].
    #[arg(long, value_parser = parse_count, conflicts_with = "duration")]
    pub iters: Option<u64>,
    /// Run for this long instead of --iters (a number of seconds, or 500ms,
    /// 2m), printing a line per --interval (perftest -D).
    #[arg(long, value_name = "SECS", value_parser = parse_seconds)]
    pub duration: Option<Duration>,
    /// The interval of --duration's lines.
    #[arg(long, default_value = "1s", value_parser = parse_duration, requires = "duration")]
    pub interval: Duration,
    /// Repeat the measurement N times (each a fresh connection) and report
    /// the median, min and max of the rounds.
    #[arg(long, value_name = "N", default_value = "1", value_parser = parse_rounds)]
    pub rounds: u32,
    /// N connections (queue pairs) between the one adapter pair, each run by
    /// its own client thread (perftest -q); results are their sum.
    #[arg(long, value_name = "N", default_value = "1", value_parser = parse_connections)]
    pub qps: u32,
    /// N client adapters (at --client-addr and the N-1 addresses after
    /// it), each run by its own thread, towards the one server adapter
    /// (N:1, as Test-NetStack's NDKPerf stage); combines with --qps.
    #[arg(long, value_name = "N", default_value = "1", value_parser = parse_connections)]
    pub threads: u32,
    /// Scatter/gather entries per operation (the message is split evenly).
    #[arg(long, default_value = "1", value_parser = parse_sge)]
    pub sge: u32,
    /// Fill the source with a pattern and check it at the target: each
    /// SEND on arrival and each READ on completion, byte for byte; WRITEs
    /// land without telling the target, so the server checks the last
    /// WRITE into each slot (one per operation in flight) once, at the end.
    #[arg(long)]
    pub verify: bool,
    /// One JSON object per result instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Bandwidth in Gb/s (10^9 bits per second) instead of GB/s.
    #[arg(long)]
    pub gbits: bool,
    /// After each measurement, the same pattern over TCP loopback (as
    /// `ndkperf tcp`: the same message size, count, window and
    /// verification), its row in the same table: bandwidth and CPU in the
    /// same conditions.
    #[arg(long)]
    pub tcp_baseline: bool,
    /// Print a latency histogram (power-of-two buckets) below the table.
    #[arg(long)]
    pub histogram: bool,
    /// Also write the results with the run's metadata (version, commit,
    /// transport, options, host) to FILE.
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// The format of --output.
    #[arg(long, value_enum, default_value = "json", requires = "output")]
    pub format: OutputFormat,
    /// --server: stop after this long without a client (default: wait
    /// for clients until stopped).
    #[arg(long, value_parser = parse_duration, requires = "server")]
    pub server_timeout: Option<Duration>,
    /// Run only the server side, listening on ADDR (default
    /// --server-addr) over UDP: it serves every --client process that
    /// connects, several at once, until stopped (or --server-timeout).
    #[arg(long, value_name = "ADDR", num_args = 0..=1, conflicts_with = "client")]
    pub server: Option<Option<Ipv4Addr>>,
    /// Run only the client side, connecting over UDP to a --server
    /// process at ADDR (from --client-addr).
    #[arg(long, value_name = "ADDR")]
    pub client: Option<Ipv4Addr>,
    /// Adapters and transport.
    #[command(flatten)]
    pub fabric: FabricArgs,
}

/// Flags of `sweep`.
#[derive(Debug, Clone, Args)]
pub struct SweepArgs {
    /// Operation to measure.
    #[arg(long, value_enum, default_value = "send")]
    pub op: Op,
    /// Smallest size.
    #[arg(long, default_value = "64", value_parser = parse_size)]
    pub min_size: u64,
    /// Largest size.
    #[arg(long, default_value = "4M", value_parser = parse_size)]
    pub max_size: u64,
    /// Operations per size for bandwidth (fewer for large sizes, so that
    /// each size moves at most --max-bytes) and round trips for latency.
    #[arg(long, default_value = "1000", value_parser = parse_count)]
    pub iters: u64,
    /// Byte budget per size of the bandwidth runs.
    #[arg(long, default_value = "256M", value_parser = parse_size)]
    pub max_bytes: u64,
    /// Measure each size N times (bandwidth and latency runs alike) and
    /// report the median of each figure (min and max in the JSON).
    #[arg(long, value_name = "N", default_value = "1", value_parser = parse_rounds)]
    pub rounds: u32,
    /// Operations in flight for the bandwidth runs.
    #[arg(long, default_value = "16", value_parser = parse_depth)]
    pub depth: u32,
    /// Scatter/gather entries per operation.
    #[arg(long, default_value = "1", value_parser = parse_sge)]
    pub sge: u32,
    /// Check the data at the target (as bw/lat --verify).
    #[arg(long)]
    pub verify: bool,
    /// One JSON object per size.
    #[arg(long)]
    pub json: bool,
    /// Bandwidth in Gb/s (10^9 bits per second) instead of GB/s.
    #[arg(long)]
    pub gbits: bool,
    /// Draw bandwidth and p50 latency against size into this SVG file.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// Adapters and transport.
    #[command(flatten)]
    pub fabric: FabricArgs,
}

/// Which SMB2 I/Os the smbd workload issues.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Mix {
    /// Only READs (server RDMA-WRITEs into the client's buffer).
    Read,
    /// Only WRITEs (server RDMA-READs the client's buffer).
    Write,
    /// Alternating READs and WRITEs.
    Mixed,
}

/// Flags of `smbd`.
// Each bool is an independent command-line switch, not a state.
#[allow(clippy::struct_excessive_bools)]
#[derive(Debug, Clone, Args)]
pub struct SmbdArgs {
    /// Number of I/Os (--server: per direction).
    #[arg(long, visible_alias = "count", default_value = "2000", value_parser = parse_count)]
    pub ops: u64,
    /// Bytes per I/O.
    #[arg(long, visible_alias = "size", default_value = "1M", value_parser = parse_size)]
    pub io_size: u64,
    /// READs, WRITEs or both.
    #[arg(long, value_enum, default_value = "mixed")]
    pub mix: Mix,
    /// A real SMB 3 server over SMB Direct (ksmbd, Windows) at ADDR
    /// (IPv4 or IPv6), port --port (default 445), instead of ndkperf's
    /// own: sign in, write --count I/Os of --size (up to what the server
    /// grants, 16M at most) to --file on --share, read them back and
    /// check every byte.
    #[arg(
        long,
        value_name = "ADDR",
        requires_all = ["share", "user", "password_file"],
        conflicts_with_all = ["mix", "inline_threshold", "fr_pages", "no_verify", "server_addr", "client_addr"]
    )]
    pub server: Option<IpAddr>,
    /// --server: the share to connect (TREE_CONNECT \\ADDR\NAME).
    #[arg(long, value_name = "NAME", requires = "server")]
    pub share: Option<String>,
    /// --server: the user to sign in as (NTLMv2).
    #[arg(long, value_name = "USER", requires = "server")]
    pub user: Option<String>,
    /// --server: the file holding the user's password (its first line).
    #[arg(long, value_name = "FILE", requires = "server")]
    pub password_file: Option<PathBuf>,
    /// --server: this machine's address for the adapter, of the
    /// server's family (default: the source address of the route to the
    /// server).
    #[arg(long, value_name = "ADDR", requires = "server")]
    pub local: Option<IpAddr>,
    /// --server: the file on the share, created or overwritten.
    #[arg(
        long,
        value_name = "NAME",
        default_value = "ndkperf.dat",
        requires = "server"
    )]
    pub file: String,
    /// Outstanding I/Os.
    #[arg(long, default_value = "8", value_parser = parse_depth)]
    pub depth: u32,
    /// Check every byte of every I/O (default: on).
    #[arg(long, overrides_with = "no_verify")]
    pub verify: bool,
    /// Do not check the data.
    #[arg(long)]
    pub no_verify: bool,
    /// Send credits requested and receives posted (ReceiveCreditMax).
    #[arg(long, default_value = "255", value_parser = clap::value_parser!(u16).range(2..=255))]
    pub credits: u16,
    /// Largest SMB Direct message sent (PreferredSendSize).
    #[arg(long, default_value = "1364", value_parser = parse_size)]
    pub max_send_size: u64,
    /// Largest SMB Direct message received (MaxReceiveSize).
    #[arg(long, default_value = "8192", value_parser = parse_size)]
    pub max_receive_size: u64,
    /// I/Os smaller than this go inline in the SMB2 message (fragmented
    /// by SMB Direct) instead of over RDMA.
    #[arg(long, default_value = "4K", value_parser = parse_size)]
    pub inline_threshold: u64,
    /// Pages per fast-register MR (default: the adapter's FRMRPageCount);
    /// I/Os larger than one MR go out as several buffer descriptors.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=65_536))]
    pub fr_pages: Option<u32>,
    /// Send a keepalive (RESPONSE_REQUESTED) after this much idle time.
    #[arg(long, default_value = "1s", value_parser = parse_duration)]
    pub keepalive: Duration,
    /// One JSON object per result.
    #[arg(long)]
    pub json: bool,
    /// Bandwidth in Gb/s (10^9 bits per second) instead of GB/s.
    #[arg(long)]
    pub gbits: bool,
    /// Adapters and transport.
    #[command(flatten)]
    pub fabric: FabricArgs,
}

/// TCP transfer pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TcpMode {
    /// Window of --depth messages in flight.
    Bw,
    /// Ping-pong, reported as half the round trip.
    Lat,
}

/// Flags of `tcp`.
#[derive(Debug, Clone, Args)]
pub struct TcpArgs {
    /// Bandwidth or latency.
    #[arg(long, value_enum, default_value = "bw")]
    pub mode: TcpMode,
    /// Message size [default: 64K for bw, 64 for lat].
    #[arg(long, value_parser = parse_size)]
    pub size: Option<u64>,
    /// Messages (lat: round trips) [default: 1000].
    #[arg(long, value_parser = parse_count, conflicts_with = "duration")]
    pub iters: Option<u64>,
    /// Run for this long instead of --iters (a number of seconds, or 500ms,
    /// 2m), printing a line per --interval.
    #[arg(long, value_name = "SECS", value_parser = parse_seconds)]
    pub duration: Option<Duration>,
    /// The interval of --duration's lines.
    #[arg(long, default_value = "1s", value_parser = parse_duration, requires = "duration")]
    pub interval: Duration,
    /// Repeat the measurement N times (each a fresh connection) and report
    /// the median, min and max of the rounds.
    #[arg(long, value_name = "N", default_value = "1", value_parser = parse_rounds)]
    pub rounds: u32,
    /// Messages in flight before waiting for acknowledgements (bw).
    #[arg(long, default_value = "16", value_parser = parse_depth)]
    pub depth: u32,
    /// Check every byte at the receiver.
    #[arg(long)]
    pub verify: bool,
    /// One JSON object per result.
    #[arg(long)]
    pub json: bool,
    /// Bandwidth in Gb/s (10^9 bits per second) instead of GB/s.
    #[arg(long)]
    pub gbits: bool,
    /// The listening side's loopback address.
    #[arg(long, default_value = "127.0.0.1", value_name = "IPV4")]
    pub server_addr: Ipv4Addr,
}

/// Flags of `udp`.
#[derive(Debug, Clone, Args)]
pub struct UdpArgs {
    /// Datagram payload bytes (84: the UDP payload of a 64-byte RoCEv2
    /// SEND, BTH and ICRC included).
    #[arg(long, default_value = "84", value_parser = parse_size)]
    pub size: u64,
    /// Round trips.
    #[arg(long, default_value = "1000", value_parser = parse_count)]
    pub iters: u64,
    /// One JSON object per result.
    #[arg(long)]
    pub json: bool,
    /// The loopback address both sockets bind.
    #[arg(long, default_value = "127.0.0.1", value_name = "IPV4")]
    pub server_addr: Ipv4Addr,
}

/// Flags of `memcpy`.
#[derive(Debug, Clone, Args)]
pub struct MemcpyArgs {
    /// Bytes per copy.
    #[arg(long, default_value = "1M", value_parser = parse_size)]
    pub size: u64,
    /// Copies.
    #[arg(long, default_value = "2000", value_parser = parse_count)]
    pub iters: u64,
    /// One JSON object per result.
    #[arg(long)]
    pub json: bool,
}

/// Flags of `info`.
#[derive(Debug, Clone, Args)]
pub struct InfoArgs {
    /// Adapter configuration (see rsndk_host.h), e.g. 127.0.0.1 or
    /// mem:lab/127.0.0.1.
    #[arg(long, default_value = "mem:ndkperf-info/127.0.0.1")]
    pub config: String,
    /// JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cli_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }

    #[test]
    fn server_flag_takes_an_optional_address() {
        let cli = Cli::try_parse_from(["ndkperf", "bw", "--server"]).unwrap();
        let Command::Bw(a) = cli.command else {
            panic!()
        };
        assert_eq!(a.perf.server, Some(None));
        let cli = Cli::try_parse_from(["ndkperf", "bw", "--server", "127.0.0.9"]).unwrap();
        let Command::Bw(a) = cli.command else {
            panic!()
        };
        assert_eq!(a.perf.server, Some(Some(Ipv4Addr::new(127, 0, 0, 9))));
        assert!(Cli::try_parse_from(["ndkperf", "bw", "--port", "0"]).is_err());
        assert!(Cli::try_parse_from(["ndkperf", "lat", "--depth", "4"]).is_err());
        assert!(Cli::try_parse_from(["ndkperf", "bw", "--duration", "2", "--iters", "5"]).is_err());
        assert!(Cli::try_parse_from(["ndkperf", "bw", "--duration", "0"]).is_err());
        let cli = Cli::try_parse_from(["ndkperf", "lat", "--duration", "1.5"]).unwrap();
        let Command::Lat(a) = cli.command else {
            panic!()
        };
        assert_eq!(a.duration, Some(Duration::from_millis(1500)));
        assert!(
            Cli::try_parse_from(["ndkperf", "bw", "--server", "--client", "127.0.0.1"]).is_err()
        );
        assert!(Cli::try_parse_from(["ndkperf", "bw", "--pmtu", "1000"]).is_err());
        assert!(Cli::try_parse_from(["ndkperf", "bw", "--op", "atomic"]).is_err());
    }
}
