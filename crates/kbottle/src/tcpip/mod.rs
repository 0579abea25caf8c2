//! TCP/IP above each bound virtual miniport V, reduced to what an NDK
//! provider's interface needs from it on Windows: the interface's unicast
//! addresses (IPv4 and IPv6, with duplicate address detection and the
//! EUI-64 link-local address Windows gives every Ethernet interface),
//! ARP and IPv6 Neighbor Discovery answering for them and resolving
//! peers, ICMP/ICMPv6 echo (answering, and [`Stack::ping`]), and ICMP /
//! ICMPv6 port unreachable for UDP (the stack holds no sockets: a UDP
//! datagram that reaches it was not taken by the RNIC, which the counter
//! [`Counters::port_unreachable_sent`] shows).
//!
//! - [`stack`] holds the interfaces, keyed by the bottle's adapter
//!   number, and the thread (processor "tcpip") that processes received
//!   frames, runs the timers, and hands frames and receive filters to
//!   what is [`Below`] it: for the process's stack ([`global`]) that is
//!   each V ([`below`]: its send path in [`crate::ndis::datapath`], its
//!   OID requests). Address changes go to observers in order
//!   ([`Stack::subscribe`]): NETIO's IP Helper
//!   (`NotifyUnicastIpAddressChange`) is one.
//! - [`interface`] is one interface's behaviour as plain computation;
//!   [`addresses`] its address table, [`neighbours`] its neighbour cache.
//! - The wire formats: [`ethernet`], [`arp`], [`ipv4`] (with ICMP),
//!   [`ipv6`] (with ICMPv6 and Neighbor Discovery), [`udp`], and the
//!   Internet [`checksum`].
//!
//! Not modelled: TCP (segments are dropped unanswered), fragments (dropped;
//! the stack sends none), IPv6 extension headers, routers, DHCP, router
//! advertisements and SLAAC, MLD reports, ICMP error rate limiting,
//! neighbour unreachability detection (a resolved neighbour stays until
//! the link goes down). The loopback interface's addresses (127.0.0.1,
//! ::1) are reported in the table, as Windows does, but carry nothing.
//!
//! Rule: tcpip.sys sits above NDIS: it imports ndis (a V's data path and
//! OIDs), the kernel and [`crate::ids`]; NETIO and the machine are above
//! it.

pub mod addresses;
pub mod arp;
pub mod below;
pub mod checksum;
pub mod ethernet;
pub mod interface;
pub mod ipv4;
pub mod ipv6;
pub mod neighbours;
pub mod stack;
pub mod udp;

#[cfg(test)]
mod tests;

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::OnceLock;

pub use addresses::{Address, DadState, PrefixOrigin, SuffixOrigin};
pub use interface::{
    AddressChange, AddressRow, ChangeKind, Counters, InterfaceInfo, ReceiveFilter,
};
pub use stack::{Below, Observer, Stack};

/// `IF_TYPE_SOFTWARE_LOOPBACK` (ipifcons.h).
const IF_TYPE_SOFTWARE_LOOPBACK: u64 = 24;
/// The loopback interface's `NET_LUID` (IfType 24, NetLuidIndex 0).
pub const LOOPBACK_LUID: u64 = IF_TYPE_SOFTWARE_LOOPBACK << 48;
/// The loopback interface's index ("Loopback Pseudo-Interface 1").
pub const LOOPBACK_IF_INDEX: u32 = 1;

/// The loopback interface's rows (127.0.0.1/8 and ::1/128, well-known,
/// preferred), created when the process's stack was.
pub fn loopback_rows(created: i64) -> Vec<AddressRow> {
    [
        (IpAddr::V4(Ipv4Addr::LOCALHOST), 8),
        (IpAddr::V6(Ipv6Addr::LOCALHOST), 128),
    ]
    .into_iter()
    .map(|(ip, prefix_len)| AddressRow {
        address: Address {
            ip,
            prefix_len,
            dad: DadState::Preferred,
            prefix_origin: PrefixOrigin::WellKnown,
            suffix_origin: SuffixOrigin::WellKnown,
            created,
            dad_ends: None,
        },
        luid: LOOPBACK_LUID,
        if_index: LOOPBACK_IF_INDEX,
    })
    .collect()
}

/// The process's stack and when it was created (system time).
struct Global {
    stack: Stack,
    created: i64,
}

static GLOBAL: OnceLock<Global> = OnceLock::new();

fn global_entry() -> &'static Global {
    GLOBAL.get_or_init(|| Global {
        stack: Stack::new("tcpip", std::sync::Arc::new(below::V)),
        created: crate::kernel::ke::system_time(),
    })
}

/// The process's stack, above every V (created on first use).
pub fn global() -> &'static Stack {
    &global_entry().stack
}

/// Every row of the process's unicast address table: the loopback
/// interface's, then each V's by adapter number.
pub fn all_rows() -> Vec<AddressRow> {
    let g = global_entry();
    let mut rows = loopback_rows(g.created);
    rows.extend(g.stack.rows());
    rows
}

/// The process's stack as the protocol above every V.
#[derive(Clone, Copy, Debug)]
struct Upper;

impl crate::ndis::upper::UpperProtocol for Upper {
    fn bound(&self, info: crate::ndis::upper::VInfo) {
        let id = info.adapter.0;
        // The link as V reported it at initialisation; later changes come
        // through `link_state`.
        let link_up = crate::ndis::state::with(|n| {
            n.adapter_by_id(id)
                .and_then(|a| a.general.as_ref().map(|g| g.media_connect_state))
        })
        .is_none_or(|s| s == ndis::MediaConnectStateConnected);
        let interface = InterfaceInfo {
            adapter: id,
            luid: info.luid,
            if_index: info.if_index,
            mac: info.mac,
            mtu: info.mtu,
        };
        if let Err(e) = global().bind(interface, link_up) {
            eprintln!("[kbottle tcpip] {e}");
        }
    }

    fn unbound(&self, adapter: crate::ids::AdapterId) {
        global().unbind(adapter.0);
    }

    fn receive(&self, adapter: crate::ids::AdapterId, frame: &[u8]) {
        global().receive(adapter.0, frame);
    }

    fn link_state(&self, adapter: crate::ids::AdapterId, up: bool) {
        global().set_link(adapter.0, up);
    }
}

/// Makes the process's stack the protocol above every V (idempotent).
pub fn install() {
    crate::ndis::upper::set_upper(Some(std::sync::Arc::new(Upper)));
}
