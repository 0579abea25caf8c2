//! The IP side of a [`Machine`]: the addresses of each adapter's
//! interface in the bottle's TCP/IP ([`crate::tcpip`]), ping, its
//! neighbours and counters. An adapter here is V (what
//! [`Machine::add_adapter`] returns); its interface exists while V is
//! bound.

use std::net::{IpAddr, Ipv6Addr};
use std::time::Duration;

use crate::ids::AdapterId;
use crate::machine::Machine;
use crate::ndis::datapath::{self, UpperSendCounters};
use crate::ndis::miniport;
use crate::tcpip;

impl Machine {
    /// Adds `ip` with on-link prefix `prefix_len` to `adapter`'s
    /// interface (IPv4 preferred at once, IPv6 after its duplicate
    /// address detection); an error if V is not bound, the address is not
    /// one an interface can hold, or the interface has it already.
    pub fn add_address(
        &self,
        adapter: AdapterId,
        ip: IpAddr,
        prefix_len: u8,
    ) -> Result<(), String> {
        tcpip::global().add_address(adapter.0, ip, prefix_len)
    }

    /// Removes `ip` from `adapter`'s interface.
    pub fn remove_address(&self, adapter: AdapterId, ip: IpAddr) -> Result<(), String> {
        tcpip::global().remove_address(adapter.0, ip)
    }

    /// `adapter`'s addresses and prefix lengths, in every DAD state (the
    /// link-local one included).
    pub fn addresses(&self, adapter: AdapterId) -> Vec<(IpAddr, u8)> {
        tcpip::global().addresses(adapter.0)
    }

    /// `adapter`'s addresses with their DAD state.
    pub fn address_states(&self, adapter: AdapterId) -> Vec<(IpAddr, tcpip::DadState)> {
        tcpip::global()
            .rows_of(adapter.0)
            .iter()
            .map(|r| (r.address.ip, r.address.dad))
            .collect()
    }

    /// Waits until `ip` is a preferred address of `adapter`; whether it
    /// became one within `timeout`.
    pub fn wait_address_preferred(
        &self,
        adapter: AdapterId,
        ip: IpAddr,
        timeout: Duration,
    ) -> bool {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            let preferred = self
                .address_states(adapter)
                .contains(&(ip, tcpip::DadState::Preferred));
            if preferred {
                return true;
            }
            if std::time::Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Pings `dst` from `adapter` (an echo request a second); whether an
    /// answer came within `timeout`.
    pub fn ping(&self, adapter: AdapterId, dst: IpAddr, timeout: Duration) -> bool {
        tcpip::global().ping(adapter.0, dst, timeout)
    }

    /// `adapter`'s resolved neighbours (ARP and IPv6 ND).
    pub fn neighbours(&self, adapter: AdapterId) -> Vec<(IpAddr, [u8; 6])> {
        tcpip::global().neighbours(adapter.0)
    }

    /// ICMP / ICMPv6 port unreachable errors `adapter`'s interface sent:
    /// UDP datagrams that reached the stack instead of the RNIC.
    pub fn port_unreachable_sent(&self, adapter: AdapterId) -> u64 {
        tcpip::global().counters(adapter.0).port_unreachable_sent
    }

    /// `adapter`'s interface counters.
    pub fn ip_counters(&self, adapter: AdapterId) -> tcpip::Counters {
        tcpip::global().counters(adapter.0)
    }

    /// What the stack's sends into `adapter` (V) came to: lists V has not
    /// completed, completed, completed with a failure status (discarded),
    /// and frames never handed to V. Zero for an adapter that is gone.
    pub fn upper_sends(&self, adapter: AdapterId) -> UpperSendCounters {
        miniport::adapter(adapter.0).map_or_else(UpperSendCounters::default, |(handle, _)| {
            datapath::upper_send_counters(handle)
        })
    }

    /// `adapter`'s EUI-64 link-local IPv6 address, while bound.
    pub fn link_local_v6(&self, adapter: AdapterId) -> Option<Ipv6Addr> {
        tcpip::global().link_local_v6(adapter.0)
    }
}
