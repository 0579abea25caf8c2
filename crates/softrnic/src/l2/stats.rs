//! The port's counters: live atomics, and the snapshot
//! [`super::EthernetPort::stats`] reports.

use core::sync::atomic::{AtomicU64, Ordering};

macro_rules! counters {
    ($($(#[doc = $doc:literal])* $name:ident,)*) => {
        /// The port's live counters.
        #[derive(Debug, Default)]
        pub(super) struct Counters {
            $(pub(super) $name: AtomicU64,)*
        }

        /// A snapshot of an [`super::EthernetPort`]'s counters.
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub struct PortStats {
            $($(#[doc = $doc])* pub $name: u64,)*
        }

        impl Counters {
            pub(super) fn snapshot(&self) -> PortStats {
                PortStats { $($name: self.$name.load(Ordering::Relaxed),)* }
            }
        }
    };
}

counters! {
    /// Frames the sink took (RoCEv2, held ones sent later, ARP requests
    /// and Neighbor Solicitations).
    frames_sent,
    /// Frames the sink refused.
    sink_refused,
    /// Datagrams dropped because their neighbour is not known (and none
    /// was held).
    dropped_no_neighbour,
    /// Datagrams dropped because the link is down.
    dropped_link_down,
    /// Datagrams dropped because they exceed the link MTU.
    dropped_too_big,
    /// Datagrams dropped because they have no IPv4 or IPv6 destination.
    dropped_malformed,
    /// Datagrams held for a neighbour being asked for.
    held,
    /// Held datagrams sent once their neighbour answered.
    held_sent,
    /// Held datagrams dropped unanswered (or evicted).
    held_dropped,
    /// ARP requests sent.
    arp_sent,
    /// Neighbor Solicitations sent.
    ns_sent,
    /// Requests that could not be sent: no own address of the family.
    solicit_no_source,
    /// Neighbour addresses learnt or updated from ARP or Neighbor
    /// Discovery.
    neighbours_learnt,
    /// Received frames handed to the RNIC.
    steered,
    /// UDP payload bytes (BTH through ICRC) of those frames: a NIC's RDMA
    /// octets in, counted before the RNIC has them.
    steered_bytes,
    /// Received frames passed up.
    passed_up,
    /// Datagrams to an own address queued for loopback.
    loopback,
    /// Loopback datagrams dropped (queue full).
    loopback_dropped,
}

/// Adds one to `counter`.
pub(super) fn inc(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}
