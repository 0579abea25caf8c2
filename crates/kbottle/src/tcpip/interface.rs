//! One IP interface over a bound V: what it does with a received frame,
//! an address added or removed, a link state change, an echo request to
//! send, and time passing. Each step returns an [`Output`] (frames to
//! send through V, address changes to notify, echo replies seen); the
//! stack ([`super::stack`]) carries them out outside its lock, so this
//! file is plain computation.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::{Duration, Instant};

use ndis::{NDIS_PACKET_TYPE_BROADCAST, NDIS_PACKET_TYPE_DIRECTED, NDIS_PACKET_TYPE_MULTICAST};

use super::addresses::{Address, AddressTable, DadState, PrefixOrigin, SuffixOrigin, check_new};
use super::ethernet::{self, BROADCAST, ETHERTYPE_ARP, ETHERTYPE_IPV4, ETHERTYPE_IPV6};
use super::neighbours::NeighbourCache;
use super::{arp, checksum, ipv4, ipv6, udp};

/// How long an IPv6 address stays tentative after its DAD solicitation
/// (Windows waits `RetransTimer`, 1 s, per `DupAddrDetectTransmits`): a
/// short wait keeps tests quick while a duplicate answering on the
/// emulated segment is still seen.
pub const DAD_WAIT: Duration = Duration::from_millis(20);

/// What the stack knows of a bound V.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InterfaceInfo {
    /// The bottle's number of V.
    pub adapter: u32,
    /// V's `NET_LUID` value.
    pub luid: u64,
    /// V's `IfIndex`.
    pub if_index: u32,
    /// V's MAC address.
    pub mac: [u8; 6],
    /// V's MTU (IP payload of a frame).
    pub mtu: u32,
}

/// `MIB_NOTIFICATION_TYPE` of an address change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChangeKind {
    /// `MibParameterNotification`: a field (here the DAD state) changed.
    Parameter,
    /// `MibAddInstance`.
    Added,
    /// `MibDeleteInstance`.
    Deleted,
}

/// One row of the unicast address table: an address and its interface.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AddressRow {
    /// The address and its state.
    pub address: Address,
    /// `InterfaceLuid`.
    pub luid: u64,
    /// `InterfaceIndex`.
    pub if_index: u32,
}

/// An address change, as `NotifyUnicastIpAddressChange` reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AddressChange {
    /// What happened.
    pub kind: ChangeKind,
    /// The row after the change (before it, for a deletion).
    pub row: AddressRow,
}

/// An echo reply that reached the interface.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EchoReply {
    /// Who answered.
    pub from: IpAddr,
    /// Identifier.
    pub id: u16,
    /// Sequence number.
    pub seq: u16,
}

/// What one step of an interface produced.
#[derive(Debug, Default)]
pub struct Output {
    /// Ethernet frames to send through V, in order.
    pub frames: Vec<Vec<u8>>,
    /// Address changes, in order.
    pub changes: Vec<AddressChange>,
    /// Echo replies received.
    pub echo_replies: Vec<EchoReply>,
}

/// The packet filter TCP/IP sets on an Ethernet interface: directed,
/// multicast (the groups of the list) and broadcast.
pub const PACKET_FILTER: u32 =
    NDIS_PACKET_TYPE_DIRECTED | NDIS_PACKET_TYPE_MULTICAST | NDIS_PACKET_TYPE_BROADCAST;
/// The IPv4 all-hosts group's MAC (224.0.0.1, RFC 1112 6.4).
const ALL_HOSTS_MAC: [u8; 6] = [0x01, 0x00, 0x5e, 0x00, 0x00, 0x01];

/// What the interface wants V to deliver: the packet filter and the
/// multicast MAC addresses of the groups it listens to, as TCP/IP sets
/// them with `OID_GEN_CURRENT_PACKET_FILTER` and
/// `OID_802_3_MULTICAST_LIST`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReceiveFilter {
    /// `NDIS_PACKET_TYPE_*` bits.
    pub packet_filter: u32,
    /// Multicast MACs, sorted, each once.
    pub multicast: Vec<[u8; 6]>,
}

/// What an interface counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Frames V indicated to the interface.
    pub frames_received: u64,
    /// Frames the interface handed to V.
    pub frames_sent: u64,
    /// ICMP / ICMPv6 port unreachable errors sent (UDP to a port no one
    /// holds: every port, the stack has no sockets).
    pub port_unreachable_sent: u64,
    /// Echo requests answered.
    pub echo_requests_answered: u64,
}

/// One interface.
#[derive(Debug)]
pub struct Interface {
    info: InterfaceInfo,
    link_up: bool,
    addresses: AddressTable,
    neighbours: NeighbourCache,
    next_ip_id: u16,
    counters: Counters,
}

impl Interface {
    /// A new interface over V, with its link-local IPv6 address from the
    /// MAC (tentative, DAD started if the link is up), as Windows gives
    /// every Ethernet interface. `created` is the system time.
    pub fn new(info: InterfaceInfo, link_up: bool, now: Instant, created: i64) -> (Self, Output) {
        let mut interface = Self {
            info,
            link_up,
            addresses: AddressTable::default(),
            neighbours: NeighbourCache::default(),
            next_ip_id: 1,
            counters: Counters::default(),
        };
        let mut out = Output::default();
        let link_local = IpAddr::V6(ipv6::link_local_of(info.mac));
        interface.insert(
            link_local,
            64,
            (PrefixOrigin::WellKnown, SuffixOrigin::LinkLayerAddress),
            now,
            created,
            &mut out,
        );
        (interface, out)
    }

    /// Its V.
    pub fn info(&self) -> InterfaceInfo {
        self.info
    }

    /// Whether V's link is up.
    pub fn link_up(&self) -> bool {
        self.link_up
    }

    /// Its counters.
    pub fn counters(&self) -> Counters {
        self.counters
    }

    /// Counts `n` frames handed to V.
    pub fn count_sent(&mut self, n: usize) {
        self.counters.frames_sent += n as u64;
    }

    /// Its addresses as rows.
    pub fn rows(&self) -> Vec<AddressRow> {
        self.addresses.iter().map(|a| self.row(*a)).collect()
    }

    /// Resolved neighbours.
    pub fn neighbours(&self) -> Vec<(IpAddr, [u8; 6])> {
        self.neighbours.resolved()
    }

    /// What V must deliver to the interface: IPv4 all-hosts, IPv6
    /// all-nodes and the solicited-node group of each IPv6 address
    /// (joined before its DAD solicitation goes out, RFC 4862 5.4.2).
    pub fn receive_filter(&self) -> ReceiveFilter {
        let mut multicast = vec![ALL_HOSTS_MAC, ethernet::ipv6_multicast_mac(ipv6::ALL_NODES)];
        for a in self.addresses.iter() {
            if let IpAddr::V6(v6) = a.ip {
                multicast.push(ethernet::ipv6_multicast_mac(ipv6::solicited_node(v6)));
            }
        }
        multicast.sort_unstable();
        multicast.dedup();
        ReceiveFilter {
            packet_filter: PACKET_FILTER,
            multicast,
        }
    }

    /// The link-local IPv6 address from the MAC, while the interface has it.
    pub fn link_local_v6(&self) -> Option<Ipv6Addr> {
        let ll = ipv6::link_local_of(self.info.mac);
        self.addresses.get(IpAddr::V6(ll)).map(|_| ll)
    }

    fn row(&self, address: Address) -> AddressRow {
        AddressRow {
            address,
            luid: self.info.luid,
            if_index: self.info.if_index,
        }
    }

    fn change(&self, kind: ChangeKind, address: Address, out: &mut Output) {
        out.changes.push(AddressChange {
            kind,
            row: self.row(address),
        });
    }

    /// Adds a manual address (`prefix_len` its on-link prefix): IPv4 is
    /// preferred at once (a gratuitous ARP announces it), IPv6 tentative
    /// until its DAD ends; tentative while the link is down.
    pub fn add_address(
        &mut self,
        ip: IpAddr,
        prefix_len: u8,
        now: Instant,
        created: i64,
    ) -> Result<Output, String> {
        check_new(ip, prefix_len)?;
        if self.addresses.get(ip).is_some() {
            return Err(format!(
                "{ip} is already an address of adapter {}",
                self.info.adapter
            ));
        }
        let mut out = Output::default();
        let origins = (PrefixOrigin::Manual, SuffixOrigin::Manual);
        self.insert(ip, prefix_len, origins, now, created, &mut out);
        Ok(out)
    }

    fn insert(
        &mut self,
        ip: IpAddr,
        prefix_len: u8,
        (prefix_origin, suffix_origin): (PrefixOrigin, SuffixOrigin),
        now: Instant,
        created: i64,
        out: &mut Output,
    ) {
        let address = Address {
            ip,
            prefix_len,
            dad: DadState::Tentative,
            prefix_origin,
            suffix_origin,
            created,
            dad_ends: None,
        };
        if self.addresses.add(address).is_err() {
            return;
        }
        let first = self.start_dad(ip, now, out);
        self.change(ChangeKind::Added, first, out);
    }

    /// Starts using `ip` (added, or the link came up): IPv4 becomes
    /// preferred and is announced; IPv6 sends its DAD solicitation and
    /// stays tentative for [`DAD_WAIT`]. Down links leave it tentative.
    /// The entry after the step.
    fn start_dad(&mut self, ip: IpAddr, now: Instant, out: &mut Output) -> Address {
        let link_up = self.link_up;
        let mac = self.info.mac;
        let Some(entry) = self.addresses.get_mut(ip) else {
            unreachable!("start_dad of an address the table holds");
        };
        entry.dad = DadState::Tentative;
        entry.dad_ends = None;
        if link_up {
            match ip {
                IpAddr::V4(v4) => {
                    entry.dad = DadState::Preferred;
                    let announce = arp::Packet {
                        op: arp::REQUEST,
                        sha: mac,
                        spa: v4,
                        tha: [0; 6],
                        tpa: v4,
                    };
                    out.frames.push(ethernet::build(
                        BROADCAST,
                        mac,
                        ETHERTYPE_ARP,
                        &announce.to_bytes(),
                    ));
                }
                IpAddr::V6(v6) => {
                    entry.dad_ends = Some(now + DAD_WAIT);
                    let group = ipv6::solicited_node(v6);
                    let ns = ipv6::neighbor_solicit(Ipv6Addr::UNSPECIFIED, group, v6, mac);
                    let datagram = ipv6::build(
                        Ipv6Addr::UNSPECIFIED,
                        group,
                        ipv6::NEXT_ICMPV6,
                        ipv6::ND_HOP_LIMIT,
                        &ns,
                    );
                    out.frames.push(ethernet::build(
                        ethernet::ipv6_multicast_mac(group),
                        mac,
                        ETHERTYPE_IPV6,
                        &datagram,
                    ));
                }
            }
        }
        *entry
    }

    /// Removes an address (the link-local one too, if asked).
    pub fn remove_address(&mut self, ip: IpAddr) -> Result<Output, String> {
        let Some(gone) = self.addresses.remove(ip) else {
            return Err(format!(
                "{ip} is not an address of adapter {}",
                self.info.adapter
            ));
        };
        let mut out = Output::default();
        self.change(ChangeKind::Deleted, gone, &mut out);
        Ok(out)
    }

    /// Every address deleted (V unbound).
    pub fn teardown(&mut self) -> Output {
        let mut out = Output::default();
        let all: Vec<IpAddr> = self.addresses.iter().map(|a| a.ip).collect();
        for ip in all {
            if let Some(gone) = self.addresses.remove(ip) {
                self.change(ChangeKind::Deleted, gone, &mut out);
            }
        }
        self.neighbours.flush();
        out
    }

    /// V's link went up or down. Down: every address becomes tentative
    /// (as Windows shows the addresses of a disconnected interface) and
    /// the neighbour cache is flushed; up: duplicate address detection
    /// runs again.
    pub fn set_link(&mut self, up: bool, now: Instant) -> Output {
        let mut out = Output::default();
        if up == self.link_up {
            return out;
        }
        self.link_up = up;
        self.neighbours.flush();
        let all: Vec<IpAddr> = self.addresses.iter().map(|a| a.ip).collect();
        for ip in all {
            let before = self.addresses.get(ip).map(|a| a.dad);
            let after = self.start_dad(ip, now, &mut out);
            if before != Some(after.dad) {
                self.change(ChangeKind::Parameter, after, &mut out);
            }
        }
        out
    }

    /// Time passed: DADs that ended make their addresses preferred, due
    /// resolutions solicit again (or give up).
    pub fn poll(&mut self, now: Instant) -> Output {
        let mut out = Output::default();
        let mut done = Vec::new();
        for a in self.addresses.iter_mut() {
            if a.dad == DadState::Tentative && a.dad_ends.is_some_and(|t| t <= now) {
                a.dad = DadState::Preferred;
                a.dad_ends = None;
                done.push(*a);
            }
        }
        for a in done {
            self.change(ChangeKind::Parameter, a, &mut out);
        }
        for ip in self.neighbours.due(now) {
            self.solicit(ip, &mut out);
        }
        out
    }

    /// When [`Interface::poll`] has work next.
    pub fn next_deadline(&self) -> Option<Instant> {
        let dad = self.addresses.iter().filter_map(|a| a.dad_ends).min();
        match (dad, self.neighbours.next_deadline()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Sends an echo request to `dst` (identifier `id`, sequence `seq`).
    pub fn echo(&mut self, dst: IpAddr, id: u16, seq: u16, now: Instant) -> Result<Output, String> {
        if !self.link_up {
            return Err(format!("adapter {}: the link is down", self.info.adapter));
        }
        if !self.addresses.on_link(dst) {
            return Err(format!(
                "adapter {}: no route to {dst} (not on a prefix of the interface)",
                self.info.adapter
            ));
        }
        let Some(src) = self.addresses.source_for(dst) else {
            return Err(format!(
                "adapter {}: no preferred address of {dst}'s family",
                self.info.adapter
            ));
        };
        let mut payload = [0u8; 32];
        for (i, b) in payload.iter_mut().enumerate() {
            // Windows ping's payload: the alphabet from 'a'.
            *b = b'a' + (i % 23) as u8;
        }
        let rest = {
            let [a, b] = id.to_be_bytes();
            let [c, d] = seq.to_be_bytes();
            [a, b, c, d]
        };
        let mut out = Output::default();
        match (src, dst) {
            (IpAddr::V4(s), IpAddr::V4(d)) => {
                let m = ipv4::icmp(ipv4::ICMP_ECHO_REQUEST, 0, rest, &payload);
                self.send_v4(s, d, ipv4::PROTO_ICMP, &m, now, &mut out);
            }
            (IpAddr::V6(s), IpAddr::V6(d)) => {
                let m = ipv6::icmp(s, d, ipv6::ICMP_ECHO_REQUEST, 0, rest, &payload);
                self.send_v6(s, d, ipv6::DEFAULT_HOP_LIMIT, &m, now, &mut out);
            }
            _ => unreachable!("source_for picks the destination's family"),
        }
        Ok(out)
    }

    fn send_v4(
        &mut self,
        src: Ipv4Addr,
        dst: Ipv4Addr,
        proto: u8,
        body: &[u8],
        now: Instant,
        out: &mut Output,
    ) {
        let id = self.next_ip_id;
        self.next_ip_id = self.next_ip_id.wrapping_add(1);
        let datagram = ipv4::build(src, dst, proto, id, body);
        self.send_ip(IpAddr::V4(dst), datagram, now, out);
    }

    fn send_v6(
        &mut self,
        src: Ipv6Addr,
        dst: Ipv6Addr,
        hops: u8,
        icmp: &[u8],
        now: Instant,
        out: &mut Output,
    ) {
        let datagram = ipv6::build(src, dst, ipv6::NEXT_ICMPV6, hops, icmp);
        self.send_ip(IpAddr::V6(dst), datagram, now, out);
    }

    fn ethertype_of(dst: IpAddr) -> u16 {
        if dst.is_ipv4() {
            ETHERTYPE_IPV4
        } else {
            ETHERTYPE_IPV6
        }
    }

    /// Frames `datagram` to `dst`: multicast and broadcast map to their
    /// MACs, unicast goes through the neighbour cache (held and resolved
    /// on a miss).
    fn send_ip(&mut self, dst: IpAddr, datagram: Vec<u8>, now: Instant, out: &mut Output) {
        if !self.link_up {
            return;
        }
        let mac = match dst {
            IpAddr::V6(g) if g.is_multicast() => Some(ethernet::ipv6_multicast_mac(g)),
            IpAddr::V4(b) if b.is_broadcast() => Some(BROADCAST),
            _ => self.neighbours.lookup(dst),
        };
        if let Some(mac) = mac {
            out.frames.push(ethernet::build(
                mac,
                self.info.mac,
                Self::ethertype_of(dst),
                &datagram,
            ));
        } else if self.neighbours.hold(dst, datagram, now) {
            self.solicit(dst, out);
        }
    }

    /// Sends an ARP request or a neighbor solicitation for `target`.
    fn solicit(&mut self, target: IpAddr, out: &mut Output) {
        let mac = self.info.mac;
        let Some(src) = self.addresses.source_for(target) else {
            return;
        };
        match (src, target) {
            (IpAddr::V4(spa), IpAddr::V4(tpa)) => {
                let request = arp::Packet {
                    op: arp::REQUEST,
                    sha: mac,
                    spa,
                    tha: [0; 6],
                    tpa,
                };
                out.frames.push(ethernet::build(
                    BROADCAST,
                    mac,
                    ETHERTYPE_ARP,
                    &request.to_bytes(),
                ));
            }
            (IpAddr::V6(s), IpAddr::V6(t)) => {
                let group = ipv6::solicited_node(t);
                let ns = ipv6::neighbor_solicit(s, group, t, mac);
                let datagram = ipv6::build(s, group, ipv6::NEXT_ICMPV6, ipv6::ND_HOP_LIMIT, &ns);
                out.frames.push(ethernet::build(
                    ethernet::ipv6_multicast_mac(group),
                    mac,
                    ETHERTYPE_IPV6,
                    &datagram,
                ));
            }
            _ => {}
        }
    }

    /// Learns `ip` at `mac` and sends what waited for it.
    fn learn(&mut self, ip: IpAddr, mac: [u8; 6], out: &mut Output) {
        for datagram in self.neighbours.learn(ip, mac) {
            out.frames.push(ethernet::build(
                mac,
                self.info.mac,
                Self::ethertype_of(ip),
                &datagram,
            ));
        }
    }

    /// Whether a frame to `dst` is for this interface: its MAC,
    /// broadcast, or an IPv6 group it listens to (all-nodes, the
    /// solicited-node group of any of its addresses, tentative ones too).
    fn accepts(&self, dst: [u8; 6]) -> bool {
        if dst == self.info.mac || dst == BROADCAST {
            return true;
        }
        dst == ethernet::ipv6_multicast_mac(ipv6::ALL_NODES)
            || self.addresses.iter().any(|a| match a.ip {
                IpAddr::V6(v6) => dst == ethernet::ipv6_multicast_mac(ipv6::solicited_node(v6)),
                IpAddr::V4(_) => false,
            })
    }

    /// A frame V indicated.
    pub fn input(&mut self, frame: &[u8], now: Instant) -> Output {
        let mut out = Output::default();
        self.counters.frames_received += 1;
        if !self.link_up {
            return out;
        }
        let Some(f) = ethernet::parse(frame) else {
            return out;
        };
        if !self.accepts(f.dst) || f.src == self.info.mac {
            return out;
        }
        match f.ethertype {
            ETHERTYPE_ARP => self.input_arp(f.payload, &mut out),
            ETHERTYPE_IPV4 => self.input_v4(f.payload, now, &mut out),
            ETHERTYPE_IPV6 => self.input_v6(f.src, f.payload, now, &mut out),
            _ => {}
        }
        out
    }

    fn input_arp(&mut self, payload: &[u8], out: &mut Output) {
        let Some(p) = arp::parse(payload) else {
            return;
        };
        if p.spa.is_unspecified() || ethernet::is_group(p.sha) {
            return;
        }
        let for_us = self.addresses.is_assigned(IpAddr::V4(p.tpa));
        let sender = IpAddr::V4(p.spa);
        if for_us || self.neighbours.knows(sender) {
            self.learn(sender, p.sha, out);
        }
        if p.op == arp::REQUEST && for_us && p.spa != p.tpa {
            let reply = arp::Packet {
                op: arp::REPLY,
                sha: self.info.mac,
                spa: p.tpa,
                tha: p.sha,
                tpa: p.spa,
            };
            out.frames.push(ethernet::build(
                p.sha,
                self.info.mac,
                ETHERTYPE_ARP,
                &reply.to_bytes(),
            ));
        }
    }

    fn input_v4(&mut self, payload: &[u8], now: Instant, out: &mut Output) {
        let Ok(d) = ipv4::parse(payload) else {
            return;
        };
        let local = self.addresses.is_assigned(IpAddr::V4(d.dst));
        if !local {
            // Broadcasts and other hosts' datagrams: nothing to answer
            // (no sockets, no forwarding).
            return;
        }
        match d.protocol {
            ipv4::PROTO_ICMP => {
                let Some((kind, _code, rest, body)) = ipv4::parse_icmp(d.payload) else {
                    return;
                };
                match kind {
                    ipv4::ICMP_ECHO_REQUEST if ipv4::is_unicast_source(d.src) => {
                        let reply = ipv4::icmp(ipv4::ICMP_ECHO_REPLY, 0, rest, body);
                        self.counters.echo_requests_answered += 1;
                        self.send_v4(d.dst, d.src, ipv4::PROTO_ICMP, &reply, now, out);
                    }
                    ipv4::ICMP_ECHO_REPLY => out.echo_replies.push(EchoReply {
                        from: IpAddr::V4(d.src),
                        id: u16::from_be_bytes([rest[0], rest[1]]),
                        seq: u16::from_be_bytes([rest[2], rest[3]]),
                    }),
                    _ => {}
                }
            }
            ipv4::PROTO_UDP => {
                let pseudo = checksum::pseudo_v4(d.src, d.dst, ipv4::PROTO_UDP, d.payload.len());
                if udp::parse(d.payload, pseudo, true).is_none() || !ipv4::is_unicast_source(d.src)
                {
                    return;
                }
                // RFC 792: the invoking header and the first 8 data bytes.
                let mut quoted = d.header.to_vec();
                quoted.extend_from_slice(d.payload.get(..8).unwrap_or(d.payload));
                let error = ipv4::icmp(
                    ipv4::ICMP_UNREACHABLE,
                    ipv4::ICMP_PORT_UNREACHABLE,
                    [0; 4],
                    &quoted,
                );
                self.counters.port_unreachable_sent += 1;
                self.send_v4(d.dst, d.src, ipv4::PROTO_ICMP, &error, now, out);
            }
            _ => {}
        }
    }

    fn input_v6(&mut self, src_mac: [u8; 6], payload: &[u8], now: Instant, out: &mut Output) {
        let Some(d) = ipv6::parse(payload) else {
            return;
        };
        let local = self.addresses.is_assigned(IpAddr::V6(d.dst));
        let group = d.dst == ipv6::ALL_NODES
            || self.addresses.iter().any(|a| match a.ip {
                IpAddr::V6(v6) => ipv6::solicited_node(v6) == d.dst,
                IpAddr::V4(_) => false,
            });
        let tentative = self
            .addresses
            .get(IpAddr::V6(d.dst))
            .is_some_and(|a| a.dad == DadState::Tentative);
        if !(local || group || tentative) {
            return;
        }
        match d.next_header {
            ipv6::NEXT_ICMPV6 => {
                let Some((kind, code, rest, body)) = ipv6::parse_icmp(&d) else {
                    return;
                };
                match kind {
                    ipv6::ICMP_ECHO_REQUEST
                        if local && !d.src.is_unspecified() && !d.src.is_multicast() =>
                    {
                        let reply = ipv6::icmp(d.dst, d.src, ipv6::ICMP_ECHO_REPLY, 0, rest, body);
                        self.counters.echo_requests_answered += 1;
                        self.send_v6(d.dst, d.src, ipv6::DEFAULT_HOP_LIMIT, &reply, now, out);
                    }
                    ipv6::ICMP_ECHO_REPLY if local => out.echo_replies.push(EchoReply {
                        from: IpAddr::V6(d.src),
                        id: u16::from_be_bytes([rest[0], rest[1]]),
                        seq: u16::from_be_bytes([rest[2], rest[3]]),
                    }),
                    ipv6::ND_NEIGHBOR_SOLICIT | ipv6::ND_NEIGHBOR_ADVERT => {
                        if let Some(nd) = ipv6::parse_nd(&d, kind, code, rest, body) {
                            self.input_nd(&d, src_mac, nd, out);
                        }
                    }
                    _ => {}
                }
            }
            ipv6::NEXT_UDP if local => {
                let pseudo = checksum::pseudo_v6(d.src, d.dst, ipv6::NEXT_UDP, d.payload.len());
                if udp::parse(d.payload, pseudo, false).is_none()
                    || d.src.is_unspecified()
                    || d.src.is_multicast()
                {
                    return;
                }
                // RFC 4443 2.4(c): as much of the invoking packet as fits
                // in the minimum MTU.
                let room = ipv6::MIN_MTU - ipv6::HEADER_LEN - 8;
                let mut invoking = ipv6::build(d.src, d.dst, d.next_header, d.hop_limit, d.payload);
                invoking.truncate(room);
                let error = ipv6::icmp(
                    d.dst,
                    d.src,
                    ipv6::ICMP_UNREACHABLE,
                    ipv6::ICMP_PORT_UNREACHABLE,
                    [0; 4],
                    &invoking,
                );
                self.counters.port_unreachable_sent += 1;
                self.send_v6(d.dst, d.src, ipv6::DEFAULT_HOP_LIMIT, &error, now, out);
            }
            _ => {}
        }
    }

    fn input_nd(
        &mut self,
        d: &ipv6::Datagram<'_>,
        src_mac: [u8; 6],
        nd: ipv6::Nd,
        out: &mut Output,
    ) {
        let target = IpAddr::V6(nd.target);
        let ours = self.addresses.get(target).copied();
        if let Some(entry) = ours {
            if entry.dad == DadState::Tentative {
                // RFC 4862 5.4.3 / 5.4.4: someone else does DAD for it,
                // or already has it.
                let duplicate = if nd.kind == ipv6::ND_NEIGHBOR_SOLICIT {
                    d.src.is_unspecified()
                } else {
                    true
                };
                if duplicate && self.link_up {
                    if let Some(a) = self.addresses.get_mut(target) {
                        a.dad = DadState::Duplicate;
                        a.dad_ends = None;
                        let changed = *a;
                        self.change(ChangeKind::Parameter, changed, out);
                    }
                }
                return;
            }
            if nd.kind != ipv6::ND_NEIGHBOR_SOLICIT || !entry.is_assigned() {
                return;
            }
            let (dst, flags) = if d.src.is_unspecified() {
                (ipv6::ALL_NODES, ipv6::NA_OVERRIDE)
            } else {
                if let Some(mac) = nd.link_layer {
                    self.learn(IpAddr::V6(d.src), mac, out);
                }
                (d.src, ipv6::NA_SOLICITED | ipv6::NA_OVERRIDE)
            };
            let na = ipv6::neighbor_advert(nd.target, dst, nd.target, flags, self.info.mac);
            let datagram = ipv6::build(nd.target, dst, ipv6::NEXT_ICMPV6, ipv6::ND_HOP_LIMIT, &na);
            let mac = if dst.is_multicast() {
                ethernet::ipv6_multicast_mac(dst)
            } else {
                // The solicitation's source option, or its frame's source
                // when it had none.
                self.neighbours.lookup(IpAddr::V6(d.src)).unwrap_or(src_mac)
            };
            out.frames.push(ethernet::build(
                mac,
                self.info.mac,
                ETHERTYPE_IPV6,
                &datagram,
            ));
        } else if nd.kind == ipv6::ND_NEIGHBOR_ADVERT && self.neighbours.knows(target) {
            if let Some(mac) = nd.link_layer {
                if self.neighbours.lookup(target).is_none() || nd.flags & ipv6::NA_OVERRIDE != 0 {
                    self.learn(target, mac, out);
                }
            }
        }
    }
}
