//! A bottled `rsndk.sys` adapter on a real Ethernet: the driver's virtual
//! miniport V over an emulated NIC whose segment is joined to a Linux tap
//! ([`kbottle::tap`]), its interface given the addresses the test names,
//! so the driver's own ARP/ND, RoCEv2 framing, ICRC and CM meet whatever
//! is behind the tap (a Linux bridge, rdma_rxe in a guest).
//!
//! From another test binary of the root crate (`tests/interop.rs`):
//!
//! ```text
//! use testkit::adapter::bottle::tap::TapV;
//! let v = TapV::join(tap_fd, &[("10.77.0.3".parse()?, 24), ("fd77::3".parse()?, 64)]);
//! let adapter: *mut NDK_ADAPTER = v.open_ndk();   // NDK 1.2, as often as wanted
//! // memory: testkit::adapter::bottle::mdl(va, len) for NdkRegisterMr;
//! // NDK_SGEs address it by virtual address.
//! v.close_ndk(adapter);
//! let stats = v.leave();                          // V halted, the tap closed
//! ```
//!
//! The machine is the process's one ([`kbottle::shared::machine`], booted
//! on first use); `tests/bottle/conn.rs`'s `Nic::open(v.machine(), v.id)`
//! and `Connection` drive a connection on it. MACs of bottled NICs are
//! `02:52:53:4e:00:NN` by the NIC's number in its process: two processes'
//! bottled adapters on one bridge would collide.

use std::net::IpAddr;
use std::os::fd::OwnedFd;

use kbottle::Machine;
use kbottle::machine::{AdapterId, Keyword};
use kbottle::ndis::types::{
    NDIS_NDK_PERFORMANCE_COUNTERS, NDIS_NDK_STATISTICS_INFO, OID_NDK_STATISTICS,
};
use kbottle::segment::SegmentId;
use kbottle::tap::{TapPort, TapStats};
use ndkpi::{NDK_ADAPTER, NDK_VERSION, NDK_VERSION_1_2, NTSTATUS};

use super::{PMTU, add_v_on, give_address_on_link};

/// The keywords a V on a tap is given: NDK on, the RoCE path MTU 1024
/// (what rdma_rxe picks on a 1500-byte Ethernet).
pub fn default_keywords() -> Vec<(&'static str, Keyword)> {
    vec![
        ("*NetworkDirect", Keyword::Int(1)),
        ("*NetworkDirectRoCEFrameSize", Keyword::Int(PMTU)),
    ]
}

/// A bottled V whose segment is joined to a tap, with its addresses
/// served. Dropping it closes the tap and leaves V on a segment of its
/// own; [`TapV::leave`] also halts V.
#[derive(Debug)]
pub struct TapV {
    /// V, the miniport adapter.
    pub id: AdapterId,
    /// The emulated segment V's NIC and the tap share (1500 MTU).
    pub segment: SegmentId,
    /// V's interface addresses and their on-link prefix lengths.
    pub addresses: Vec<(IpAddr, u8)>,
    tap: TapPort,
}

impl TapV {
    /// A new V of the process's machine on a new segment joined to the
    /// tap `fd` (`IFF_TAP | IFF_NO_PI`, up, on the peer's Ethernet), given
    /// `addresses` (each with its on-link prefix length) and serving
    /// them when this returns.
    ///
    /// # Panics
    /// When the machine cannot boot, the tap cannot be joined, V does
    /// not come up with NDK enabled, or an address is refused, not
    /// preferred (IPv6: a duplicate answered) or not served in time.
    pub fn join(fd: OwnedFd, addresses: &[(IpAddr, u8)]) -> Self {
        Self::join_with(fd, addresses, &default_keywords())
    }

    /// [`TapV::join`] with V's `keywords`.
    pub fn join_with(
        fd: OwnedFd,
        addresses: &[(IpAddr, u8)],
        keywords: &[(&str, Keyword)],
    ) -> Self {
        let machine = kbottle::shared::machine();
        let segment = machine.add_segment();
        let tap = machine
            .join_tap(segment, fd)
            .unwrap_or_else(|e| panic!("joining the tap to segment {}: {e}", segment.0));
        let id = add_v_on(machine, segment, keywords);
        for &(ip, prefix_len) in addresses {
            give_address_on_link(machine, id, ip, prefix_len);
        }
        Self {
            id,
            segment,
            addresses: addresses.to_vec(),
            tap,
        }
    }

    /// The process's machine V belongs to.
    pub fn machine(&self) -> &'static Machine {
        kbottle::shared::machine()
    }

    /// V's MAC (its NIC's), the source of every frame it sends.
    pub fn mac(&self) -> [u8; 6] {
        self.machine()
            .adapter_mac(self.id)
            .expect("a bound V has a MAC")
    }

    /// A new `NDK_ADAPTER` on V at NDK 1.2.
    ///
    /// # Panics
    /// When the driver refuses to open one.
    pub fn open_ndk(&self) -> *mut NDK_ADAPTER {
        self.open_ndk_at(NDK_VERSION_1_2)
            .unwrap_or_else(|s| panic!("OpenNDKAdapter on {:?}: {:#010x}", self.id, s as u32))
    }

    /// A new `NDK_ADAPTER` on V at `version`, or the driver's status.
    pub fn open_ndk_at(&self, version: NDK_VERSION) -> Result<*mut NDK_ADAPTER, NTSTATUS> {
        self.machine().open_ndk(self.id, version)
    }

    /// Closes an adapter [`TapV::open_ndk`] opened (its objects closed).
    pub fn close_ndk(&self, adapter: *mut NDK_ADAPTER) {
        self.machine().close_ndk(self.id, adapter);
    }

    /// The driver's NDK counters of V (`OID_NDK_STATISTICS`).
    ///
    /// # Panics
    /// When the driver fails the query or answers short.
    pub fn ndk_counters(&self) -> NDIS_NDK_PERFORMANCE_COUNTERS {
        ndk_counters(self.machine(), self.id)
    }

    /// What crossed the tap so far.
    pub fn tap_stats(&self) -> TapStats {
        self.tap.stats()
    }

    /// Halts V (every `NDK_ADAPTER` of it closed before) and closes the
    /// tap; what crossed it.
    pub fn leave(self) -> TapStats {
        self.machine().halt(self.id);
        let stats = self.tap.stats();
        drop(self.tap);
        stats
    }
}

/// `OID_NDK_STATISTICS` of adapter `id`: the driver's NDK counters.
///
/// # Panics
/// When the driver fails the query or answers short.
pub fn ndk_counters(machine: &Machine, id: AdapterId) -> NDIS_NDK_PERFORMANCE_COUNTERS {
    let mut buf = vec![0u8; 512];
    let n = machine
        .oid_query(id, OID_NDK_STATISTICS, &mut buf)
        .unwrap_or_else(|s| panic!("OID_NDK_STATISTICS: {:#010x}", s as u32));
    assert!(n >= size_of::<NDIS_NDK_STATISTICS_INFO>(), "short answer");
    // SAFETY: the buffer holds at least one NDIS_NDK_STATISTICS_INFO,
    // plain integers valid for any bytes.
    let info = unsafe {
        buf.as_ptr()
            .cast::<NDIS_NDK_STATISTICS_INFO>()
            .read_unaligned()
    };
    info.CounterSet
}
