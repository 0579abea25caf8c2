//! The adapter configuration string of `RsNdkOpenAdapter`.
//!
//! ```text
//! config    = transport *( "," option )
//! transport = ADDR                    ; UDP: the adapter owns ADDR's port 4791
//!           | "udp:" ADDR             ; the same, spelled out
//!           | "mem:" NAME "/" ADDR    ; node ADDR on in-memory fabric NAME
//! ADDR      = IPV4                    ; a.b.c.d
//!           | "[" IPV6 "]"            ; an IPv6 address, in brackets
//! option    = "pmtu=" 256 | 512 | 1024 | 2048 | 4096   ; path MTU, default 1024
//!           | "pcap=" PATH            ; capture every packet to PATH
//!           | "loss=" P | "reorder=" P | "duplicate=" P   ; mem only, 0 <= P <= 1
//!           | "delay_us=" N           ; mem only, extra delivery delay
//!           | "seed=" N               ; mem only, fault-injection seed
//!           | "busy_poll=" "on" | "off"  ; consumers polling an empty CQ run
//!                                      ; the device themselves (default on)
//!           | "ack_timeout=" 0..31     ; the QPs' retransmit timeout, 4.096 us
//!                                      ; x 2^N within 1 ms..2.1 s, in place of
//!                                      ; the one connection management
//!                                      ; negotiates (librdmacm's
//!                                      ; rdma_set_ack_timeout); default: the
//!                                      ; negotiated one
//!           | "peer_sockets=" "on" | "off" ; UDP over IPv6: send from a socket
//!                                      ; connected to each peer, an ephemeral
//!                                      ; source port (default off; off with
//!                                      ; pcap; IPv4 sends through its raw
//!                                      ; socket either way)
//! ```
//!
//! Examples: `127.0.0.2`, `udp:127.0.0.3,pmtu=4096`,
//! `mem:lab/192.0.2.1,loss=0.05,reorder=0.01,seed=7`, `mem:lab/[fd00::1]`,
//! `udp:[::1]`. Fabric names are 1 to 32 characters from `[A-Za-z0-9_-]`.
//! Addresses must be unicast: not 0.0.0.0, broadcast or multicast for IPv4;
//! not `::`, multicast or IPv4-mapped (`::ffff:a.b.c.d`: write the IPv4
//! form) for IPv6. The address's family is the adapter's: an IPv6 adapter
//! speaks RoCEv2 over IPv6 and takes IPv6 socket addresses only. Every
//! error names what is wrong.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::PathBuf;
use std::str::FromStr;

/// UDP port of RoCEv2.
pub const ROCEV2_UDP_PORT: u16 = 4791;

/// How an adapter reaches its peers.
#[derive(Clone, Debug, PartialEq)]
pub enum Transport {
    /// RoCEv2 over UDP, bound to `addr`:4791.
    Udp {
        /// The adapter's address.
        addr: IpAddr,
    },
    /// An in-memory fabric shared by adapters of this process.
    Memory {
        /// The fabric's name.
        fabric: String,
        /// The adapter's address on it.
        addr: IpAddr,
        /// Fault injection on delivery.
        faults: FaultConfig,
    },
}

/// Fault injection on an in-memory fabric.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FaultConfig {
    /// Probability that a packet is dropped.
    pub loss: f64,
    /// Probability that a packet is delivered after later ones.
    pub reorder: f64,
    /// Probability that a packet is delivered twice.
    pub duplicate: f64,
    /// Extra delivery delay, microseconds.
    pub delay_us: u64,
    /// Seed of the fault generator (deterministic runs).
    pub seed: u64,
}

/// A parsed adapter configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct AdapterConfig {
    /// The transport and the adapter's address.
    pub transport: Transport,
    /// Path MTU in bytes.
    pub pmtu: u32,
    /// Where to write a packet capture, if anywhere.
    pub pcap: Option<PathBuf>,
    /// Whether a consumer polling an empty CQ runs the device's work on
    /// its own thread (busy polling; see [`crate::busy`]).
    pub busy_poll: bool,
    /// Whether an IPv6 UDP adapter sends the engine's packets from a
    /// socket connected to each peer (see
    /// [`crate::udp::UdpPort::with_peer_sockets`]) instead of from its port
    /// 4791; not while capturing (the capture shows port 4791). An IPv4
    /// adapter sends through its raw socket either way, and a fabric has no
    /// sockets: both ignore it.
    pub peer_sockets: bool,
    /// The QPs' retransmit timeout exponent (4.096 µs × 2^N), in place of
    /// the negotiated one, as librdmacm's `rdma_set_ack_timeout` sets a
    /// QP's; `None`: what connection management negotiates.
    pub ack_timeout: Option<u8>,
}

impl AdapterConfig {
    /// The adapter's address (IPv4 or IPv6).
    pub fn addr(&self) -> IpAddr {
        match &self.transport {
            Transport::Udp { addr } | Transport::Memory { addr, .. } => *addr,
        }
    }
}

/// Why a configuration string was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConfigError {
    /// The string is empty.
    Empty,
    /// The string is not UTF-8.
    NotUtf8,
    /// The transport part is not an address, `udp:` or `mem:` form.
    Transport(String),
    /// The address does not parse as IPv4 or as a bracketed IPv6 address.
    Address(String),
    /// The address is not a unicast address.
    NotUnicast(IpAddr),
    /// An IPv4-mapped IPv6 address: the adapter is an IPv4 one, written
    /// in the IPv4 form.
    MappedIpv4(Ipv6Addr),
    /// The fabric name is empty, too long or has a bad character.
    FabricName(String),
    /// An option is not `key=value`, or the key is unknown.
    UnknownOption(String),
    /// An option's value is out of range or malformed.
    BadValue {
        /// The option.
        key: String,
        /// Its value.
        value: String,
        /// What is allowed.
        expected: &'static str,
    },
    /// A fault-injection option on a UDP adapter.
    MemoryOnly(String),
    /// An option given twice.
    Duplicate(String),
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Empty => f.write_str("empty adapter configuration"),
            Self::NotUtf8 => f.write_str("adapter configuration is not UTF-8"),
            Self::Transport(t) => {
                write!(
                    f,
                    "'{t}' is not a transport: use ADDR, udp:ADDR or mem:NAME/ADDR \
                     (ADDR: an IPv4 address or an IPv6 address in brackets)"
                )
            }
            Self::Address(a) if a.contains(':') && !a.starts_with('[') => write!(
                f,
                "'{a}' is not an address: write an IPv6 address in brackets, [{a}]"
            ),
            Self::Address(a) => write!(
                f,
                "'{a}' is not an IPv4 address or a bracketed IPv6 address"
            ),
            Self::NotUnicast(a) => write!(f, "{a} is not a unicast address"),
            Self::MappedIpv4(a) => write!(
                f,
                "[{a}] is an IPv4-mapped IPv6 address: write the IPv4 address itself"
            ),
            Self::FabricName(n) => {
                write!(
                    f,
                    "fabric name '{n}' must be 1 to 32 characters of A-Z a-z 0-9 _ -"
                )
            }
            Self::UnknownOption(o) => write!(
                f,
                "unknown option '{o}' (known: pmtu, pcap, busy_poll, peer_sockets, ack_timeout, loss, reorder, duplicate, delay_us, seed)"
            ),
            Self::BadValue {
                key,
                value,
                expected,
            } => {
                write!(f, "{key}={value}: expected {expected}")
            }
            Self::MemoryOnly(k) => write!(f, "option '{k}' applies to mem: fabrics only"),
            Self::Duplicate(k) => write!(f, "option '{k}' given twice"),
        }
    }
}

impl std::error::Error for ConfigError {}

fn parse_addr(text: &str) -> Result<IpAddr, ConfigError> {
    let bad = || ConfigError::Address(text.to_owned());
    if let Some(inner) = text.strip_prefix('[') {
        let v6 = inner
            .strip_suffix(']')
            .and_then(|a| Ipv6Addr::from_str(a).ok())
            .ok_or_else(bad)?;
        if v6.is_unspecified() || v6.is_multicast() {
            return Err(ConfigError::NotUnicast(v6.into()));
        }
        if v6.to_ipv4_mapped().is_some() {
            return Err(ConfigError::MappedIpv4(v6));
        }
        return Ok(v6.into());
    }
    let addr = Ipv4Addr::from_str(text).map_err(|_| bad())?;
    if addr.is_unspecified() || addr.is_broadcast() || addr.is_multicast() {
        return Err(ConfigError::NotUnicast(addr.into()));
    }
    Ok(addr.into())
}

fn valid_fabric_name(name: &str) -> bool {
    (1..=32).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn parse_transport(text: &str) -> Result<Transport, ConfigError> {
    if let Some(rest) = text.strip_prefix("udp:") {
        return Ok(Transport::Udp {
            addr: parse_addr(rest)?,
        });
    }
    if let Some(rest) = text.strip_prefix("mem:") {
        let (fabric, addr) = rest
            .split_once('/')
            .ok_or_else(|| ConfigError::Transport(text.to_owned()))?;
        if !valid_fabric_name(fabric) {
            return Err(ConfigError::FabricName(fabric.to_owned()));
        }
        return Ok(Transport::Memory {
            fabric: fabric.to_owned(),
            addr: parse_addr(addr)?,
            faults: FaultConfig::default(),
        });
    }
    if text.starts_with('[') {
        return Ok(Transport::Udp {
            addr: parse_addr(text)?,
        });
    }
    if text.contains('/') {
        return Err(ConfigError::Transport(text.to_owned()));
    }
    if text.contains(':') {
        // An IPv6 address without brackets, or an unknown `kind:`.
        return Err(if Ipv6Addr::from_str(text).is_ok() {
            ConfigError::Address(text.to_owned())
        } else {
            ConfigError::Transport(text.to_owned())
        });
    }
    Ok(Transport::Udp {
        addr: parse_addr(text)?,
    })
}

fn bad(key: &str, value: &str, expected: &'static str) -> ConfigError {
    ConfigError::BadValue {
        key: key.to_owned(),
        value: value.to_owned(),
        expected,
    }
}

fn parse_probability(key: &str, value: &str) -> Result<f64, ConfigError> {
    match value.parse::<f64>() {
        Ok(p) if (0.0..=1.0).contains(&p) => Ok(p),
        _ => Err(bad(key, value, "a probability from 0 to 1")),
    }
}

fn parse_u64(key: &str, value: &str) -> Result<u64, ConfigError> {
    value
        .parse::<u64>()
        .map_err(|_| bad(key, value, "a non-negative integer"))
}

impl FromStr for AdapterConfig {
    type Err = ConfigError;

    fn from_str(text: &str) -> Result<Self, ConfigError> {
        let mut parts = text.split(',');
        let transport_text = parts.next().unwrap_or_default().trim();
        if transport_text.is_empty() {
            return Err(ConfigError::Empty);
        }
        let mut transport = parse_transport(transport_text)?;
        let mut pmtu = None;
        let mut pcap = None;
        let mut busy_poll = true;
        let mut peer_sockets = false;
        let mut ack_timeout = None;
        let mut seen: Vec<&str> = Vec::new();
        for option in parts {
            let option = option.trim();
            let (key, value) = option
                .split_once('=')
                .ok_or_else(|| ConfigError::UnknownOption(option.to_owned()))?;
            if seen.contains(&key) {
                return Err(ConfigError::Duplicate(key.to_owned()));
            }
            seen.push(key);
            match key {
                "pmtu" => match value.parse::<u32>() {
                    Ok(m @ (256 | 512 | 1024 | 2048 | 4096)) => pmtu = Some(m),
                    _ => return Err(bad(key, value, "256, 512, 1024, 2048 or 4096")),
                },
                "ack_timeout" => match value.parse::<u8>() {
                    Ok(n @ 0..=31) => ack_timeout = Some(n),
                    _ => return Err(bad(key, value, "an exponent from 0 to 31")),
                },
                "pcap" if !value.is_empty() => pcap = Some(PathBuf::from(value)),
                "pcap" => return Err(bad(key, value, "a file path")),
                "busy_poll" | "peer_sockets" => {
                    let on = match value {
                        "on" => true,
                        "off" => false,
                        _ => return Err(bad(key, value, "on or off")),
                    };
                    if key == "busy_poll" {
                        busy_poll = on;
                    } else {
                        peer_sockets = on;
                    }
                }
                "loss" | "reorder" | "duplicate" | "delay_us" | "seed" => {
                    let Transport::Memory { faults, .. } = &mut transport else {
                        return Err(ConfigError::MemoryOnly(key.to_owned()));
                    };
                    match key {
                        "loss" => faults.loss = parse_probability(key, value)?,
                        "reorder" => faults.reorder = parse_probability(key, value)?,
                        "duplicate" => faults.duplicate = parse_probability(key, value)?,
                        "delay_us" => faults.delay_us = parse_u64(key, value)?,
                        _ => faults.seed = parse_u64(key, value)?,
                    }
                }
                _ => return Err(ConfigError::UnknownOption(option.to_owned())),
            }
        }
        Ok(Self {
            transport,
            pmtu: pmtu.unwrap_or(1024),
            pcap,
            busy_poll,
            peer_sockets,
            ack_timeout,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<AdapterConfig, ConfigError> {
        s.parse()
    }

    #[test]
    fn bare_address_is_udp_with_defaults() {
        let c = parse("127.0.0.2").unwrap();
        assert_eq!(
            c.transport,
            Transport::Udp {
                addr: Ipv4Addr::new(127, 0, 0, 2).into()
            }
        );
        assert_eq!((c.pmtu, c.pcap, c.busy_poll), (1024, None, true));
        assert!(!c.peer_sockets);
    }

    #[test]
    fn ack_timeout_is_an_exponent() {
        assert_eq!(parse("127.0.0.2").unwrap().ack_timeout, None);
        assert_eq!(
            parse("127.0.0.2,ack_timeout=11").unwrap().ack_timeout,
            Some(11)
        );
        assert_eq!(
            parse("mem:f/10.0.0.1,ack_timeout=0").unwrap().ack_timeout,
            Some(0)
        );
        for v in ["32", "-1", "x", ""] {
            assert!(
                matches!(
                    parse(&format!("127.0.0.2,ack_timeout={v}")),
                    Err(ConfigError::BadValue { .. })
                ),
                "ack_timeout={v}"
            );
        }
    }

    #[test]
    fn busy_poll_is_on_or_off() {
        assert!(!parse("127.0.0.2,busy_poll=off").unwrap().busy_poll);
        assert!(parse("127.0.0.2,peer_sockets=on").unwrap().peer_sockets);
        assert!(parse("127.0.0.2,peer_sockets=2").is_err());
        assert!(parse("mem:f/10.0.0.1,busy_poll=on").unwrap().busy_poll);
        assert_eq!(
            parse("127.0.0.2,busy_poll=1"),
            Err(ConfigError::BadValue {
                key: "busy_poll".into(),
                value: "1".into(),
                expected: "on or off",
            })
        );
    }

    #[test]
    fn udp_with_options() {
        let c = parse("udp:127.0.0.3,pmtu=4096,pcap=/tmp/x.pcap").unwrap();
        assert_eq!(c.addr(), Ipv4Addr::new(127, 0, 0, 3));
        assert_eq!(c.pmtu, 4096);
        assert_eq!(c.pcap.as_deref(), Some(std::path::Path::new("/tmp/x.pcap")));
    }

    #[test]
    fn memory_fabric_with_faults() {
        let c =
            parse("mem:lab-1/192.0.2.1,loss=0.05,reorder=0.01,duplicate=0.02,seed=7,delay_us=3")
                .unwrap();
        let Transport::Memory {
            fabric,
            addr,
            faults,
        } = c.transport
        else {
            panic!("not mem")
        };
        assert_eq!(fabric, "lab-1");
        assert_eq!(addr, Ipv4Addr::new(192, 0, 2, 1));
        assert_eq!(
            faults,
            FaultConfig {
                loss: 0.05,
                reorder: 0.01,
                duplicate: 0.02,
                delay_us: 3,
                seed: 7
            }
        );
    }

    #[test]
    fn bracketed_ipv6_addresses() {
        let lab: IpAddr = "fd00::1".parse().unwrap();
        let c = parse("mem:lab/[fd00::1],pmtu=4096").unwrap();
        assert_eq!(
            (c.transport.clone(), c.pmtu),
            (
                Transport::Memory {
                    fabric: "lab".into(),
                    addr: lab,
                    faults: FaultConfig::default()
                },
                4096
            )
        );
        assert_eq!(c.addr(), lab);
        let loopback = IpAddr::V6(Ipv6Addr::LOCALHOST);
        for text in ["udp:[::1]", "[::1]", "udp:[0:0:0:0:0:0:0:1],busy_poll=off"] {
            assert_eq!(
                parse(text).unwrap().transport,
                Transport::Udp { addr: loopback },
                "{text}"
            );
        }
        assert!(matches!(
            parse("mem:lab/[fd00::2],seed=3").unwrap().transport,
            Transport::Memory { faults, .. } if faults.seed == 3
        ));
        // The error for an unbracketed IPv6 address says what to write.
        let e = parse("mem:lab/fd00::1").unwrap_err();
        assert!(e.to_string().contains("[fd00::1]"), "{e}");
    }

    #[test]
    fn errors_name_the_problem() {
        let cases: &[(&str, ConfigError)] = &[
            ("", ConfigError::Empty),
            ("tcp:1.2.3.4", ConfigError::Transport("tcp:1.2.3.4".into())),
            ("127.0.0", ConfigError::Address("127.0.0".into())),
            (
                "0.0.0.0",
                ConfigError::NotUnicast(Ipv4Addr::UNSPECIFIED.into()),
            ),
            (
                "224.0.0.1",
                ConfigError::NotUnicast(Ipv4Addr::new(224, 0, 0, 1).into()),
            ),
            (
                "255.255.255.255",
                ConfigError::NotUnicast(Ipv4Addr::BROADCAST.into()),
            ),
            ("udp:::1", ConfigError::Address("::1".into())),
            ("fd00::1", ConfigError::Address("fd00::1".into())),
            ("udp:[::1", ConfigError::Address("[::1".into())),
            ("udp:[1.2.3.4]", ConfigError::Address("[1.2.3.4]".into())),
            (
                "mem:lab/[fd00::zz]",
                ConfigError::Address("[fd00::zz]".into()),
            ),
            (
                "udp:[::]",
                ConfigError::NotUnicast(Ipv6Addr::UNSPECIFIED.into()),
            ),
            (
                "mem:lab/[ff02::1]",
                ConfigError::NotUnicast(Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 1).into()),
            ),
            (
                "[::ffff:127.0.0.2]",
                ConfigError::MappedIpv4(Ipv4Addr::new(127, 0, 0, 2).to_ipv6_mapped()),
            ),
            ("mem:/127.0.0.1", ConfigError::FabricName(String::new())),
            ("mem:a b/127.0.0.1", ConfigError::FabricName("a b".into())),
            ("mem:abc", ConfigError::Transport("mem:abc".into())),
            (
                "127.0.0.1,mtu=1",
                ConfigError::UnknownOption("mtu=1".into()),
            ),
            ("127.0.0.1,pmtu", ConfigError::UnknownOption("pmtu".into())),
            ("127.0.0.1,loss=0.1", ConfigError::MemoryOnly("loss".into())),
            (
                "127.0.0.1,pmtu=1024,pmtu=4096",
                ConfigError::Duplicate("pmtu".into()),
            ),
        ];
        for (text, want) in cases {
            assert_eq!(parse(text).as_ref().err(), Some(want), "{text}");
            assert!(!want.to_string().is_empty());
        }
        assert!(matches!(
            parse("127.0.0.1,pmtu=1000"),
            Err(ConfigError::BadValue { .. })
        ));
        assert!(matches!(
            parse("mem:x/127.0.0.1,loss=1.5"),
            Err(ConfigError::BadValue { .. })
        ));
        assert!(matches!(
            parse("mem:x/127.0.0.1,loss=nan"),
            Err(ConfigError::BadValue { .. })
        ));
        assert!(matches!(
            parse("mem:x/127.0.0.1,seed=-1"),
            Err(ConfigError::BadValue { .. })
        ));
        assert!(matches!(
            parse("127.0.0.1,pcap="),
            Err(ConfigError::BadValue { .. })
        ));
    }
}
