//! V's traffic counters: frames and octets by destination class
//! (unicast, multicast, broadcast) in each direction, errors and
//! discards. They answer `OID_GEN_STATISTICS`, which an NDIS 6 miniport
//! must fill completely ("must support all statistics"), and the
//! `OID_GEN_*` counter OIDs, which are the same numbers; V's general
//! attributes advertise exactly these ([`SUPPORTED_STATISTICS`]).
//!
//! Every frame through V counts: TCP/IP's passed to P, P's indicated up,
//! and the RNIC's RoCEv2 frames (the general statistics include NDK
//! traffic; `OID_NDK_STATISTICS` counts it apart).

use core::sync::atomic::AtomicU64;
use core::sync::atomic::Ordering::Relaxed;

use ndis::{
    NDIS_STATISTICS_BROADCAST_BYTES_RCV_SUPPORTED, NDIS_STATISTICS_BROADCAST_BYTES_XMIT_SUPPORTED,
    NDIS_STATISTICS_BROADCAST_FRAMES_RCV_SUPPORTED,
    NDIS_STATISTICS_BROADCAST_FRAMES_XMIT_SUPPORTED, NDIS_STATISTICS_BYTES_RCV_SUPPORTED,
    NDIS_STATISTICS_BYTES_XMIT_SUPPORTED, NDIS_STATISTICS_DIRECTED_BYTES_RCV_SUPPORTED,
    NDIS_STATISTICS_DIRECTED_BYTES_XMIT_SUPPORTED, NDIS_STATISTICS_DIRECTED_FRAMES_RCV_SUPPORTED,
    NDIS_STATISTICS_DIRECTED_FRAMES_XMIT_SUPPORTED, NDIS_STATISTICS_GEN_STATISTICS_SUPPORTED,
    NDIS_STATISTICS_INFO, NDIS_STATISTICS_MULTICAST_BYTES_RCV_SUPPORTED,
    NDIS_STATISTICS_MULTICAST_BYTES_XMIT_SUPPORTED, NDIS_STATISTICS_MULTICAST_FRAMES_RCV_SUPPORTED,
    NDIS_STATISTICS_MULTICAST_FRAMES_XMIT_SUPPORTED, NDIS_STATISTICS_RCV_DISCARDS_SUPPORTED,
    NDIS_STATISTICS_RCV_ERROR_SUPPORTED, NDIS_STATISTICS_RCV_NO_BUFFER_SUPPORTED,
    NDIS_STATISTICS_RCV_OK_SUPPORTED, NDIS_STATISTICS_XMIT_DISCARDS_SUPPORTED,
    NDIS_STATISTICS_XMIT_ERROR_SUPPORTED, NDIS_STATISTICS_XMIT_OK_SUPPORTED,
};

use crate::driver::kit::nbl::Nbl;

/// The `NDIS_STATISTICS_*_SUPPORTED` flags of V's general attributes: the
/// counter OIDs V answers and every counter of `OID_GEN_STATISTICS`
/// ([`TrafficStats::statistics_info`] marks all of them valid).
pub const SUPPORTED_STATISTICS: u32 = NDIS_STATISTICS_GEN_STATISTICS_SUPPORTED
    | NDIS_STATISTICS_XMIT_OK_SUPPORTED
    | NDIS_STATISTICS_RCV_OK_SUPPORTED
    | NDIS_STATISTICS_XMIT_ERROR_SUPPORTED
    | NDIS_STATISTICS_RCV_ERROR_SUPPORTED
    | NDIS_STATISTICS_RCV_NO_BUFFER_SUPPORTED
    | NDIS_STATISTICS_DIRECTED_BYTES_XMIT_SUPPORTED
    | NDIS_STATISTICS_DIRECTED_FRAMES_XMIT_SUPPORTED
    | NDIS_STATISTICS_MULTICAST_BYTES_XMIT_SUPPORTED
    | NDIS_STATISTICS_MULTICAST_FRAMES_XMIT_SUPPORTED
    | NDIS_STATISTICS_BROADCAST_BYTES_XMIT_SUPPORTED
    | NDIS_STATISTICS_BROADCAST_FRAMES_XMIT_SUPPORTED
    | NDIS_STATISTICS_DIRECTED_BYTES_RCV_SUPPORTED
    | NDIS_STATISTICS_DIRECTED_FRAMES_RCV_SUPPORTED
    | NDIS_STATISTICS_MULTICAST_BYTES_RCV_SUPPORTED
    | NDIS_STATISTICS_MULTICAST_FRAMES_RCV_SUPPORTED
    | NDIS_STATISTICS_BROADCAST_BYTES_RCV_SUPPORTED
    | NDIS_STATISTICS_BROADCAST_FRAMES_RCV_SUPPORTED
    | NDIS_STATISTICS_BYTES_RCV_SUPPORTED
    | NDIS_STATISTICS_BYTES_XMIT_SUPPORTED
    | NDIS_STATISTICS_RCV_DISCARDS_SUPPORTED
    | NDIS_STATISTICS_XMIT_DISCARDS_SUPPORTED;

/// Which way a frame went through V.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Sent down to P.
    Out,
    /// Received from P.
    In,
}

/// A destination class, by the frame's destination MAC address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    Unicast = 0,
    Multicast = 1,
    Broadcast = 2,
}

impl Class {
    fn of(destination: [u8; 6]) -> Self {
        if destination.iter().all(|b| *b == 0xFF) {
            Self::Broadcast
        } else if destination[0] & 1 != 0 {
            Self::Multicast
        } else {
            Self::Unicast
        }
    }
}

/// Frames and octets of one class in one direction.
#[derive(Debug, Default)]
struct Counter {
    frames: AtomicU64,
    octets: AtomicU64,
}

/// V's counters, updated by the data path (`<= DISPATCH_LEVEL`).
#[derive(Debug, Default)]
pub struct TrafficStats {
    /// By [`Class`]: sent, and completed by P with success.
    out: [Counter; 3],
    /// By [`Class`]: received and indicated up, or taken by the RNIC.
    input: [Counter; 3],
    /// Frames P failed to send, or that could not be sent.
    out_errors: AtomicU64,
    /// Frames refused because V or the binding was paused.
    out_discards: AtomicU64,
    /// Frames not indicated because V was paused or in low power.
    in_discards: AtomicU64,
}

/// The frames (`NET_BUFFER`s) of `nbl`.
fn frames_of(nbl: &Nbl) -> u64 {
    nbl.frames().count() as u64
}

impl TrafficStats {
    /// Counts each frame of `nbl`, which the caller holds, by its
    /// destination address and length (`<= DISPATCH_LEVEL`).
    pub fn count(&self, direction: Direction, nbl: &Nbl) {
        let counters = match direction {
            Direction::Out => &self.out,
            Direction::In => &self.input,
        };
        for frame in nbl.frames() {
            let length = frame.len();
            // Not mappable now (or shorter): still a frame, counted as
            // unicast.
            let class = frame.first_bytes::<6>().map_or(Class::Unicast, Class::of);
            let counter = &counters[class as usize];
            counter.frames.fetch_add(1, Relaxed);
            counter.octets.fetch_add(u64::from(length), Relaxed);
        }
    }

    /// Counts the frames of `nbl` as not sent (P failed them, or no
    /// context could be allocated).
    pub fn out_error(&self, nbl: &Nbl) {
        self.out_errors.fetch_add(frames_of(nbl), Relaxed);
    }

    /// Counts the frames of `nbl` as discarded on the way out (V or the
    /// binding paused).
    pub fn out_discard(&self, nbl: &Nbl) {
        self.out_discards.fetch_add(frames_of(nbl), Relaxed);
    }

    /// Counts the frames of `nbl` as discarded on the way in.
    pub fn in_discard(&self, nbl: &Nbl) {
        self.in_discards.fetch_add(frames_of(nbl), Relaxed);
    }

    fn sum(counters: &[Counter; 3], f: impl Fn(&Counter) -> &AtomicU64) -> u64 {
        counters.iter().map(|c| f(c).load(Relaxed)).sum()
    }

    /// `OID_GEN_XMIT_OK`: frames sent.
    pub fn frames_out(&self) -> u64 {
        Self::sum(&self.out, |c| &c.frames)
    }

    /// `OID_GEN_RCV_OK`: frames received.
    pub fn frames_in(&self) -> u64 {
        Self::sum(&self.input, |c| &c.frames)
    }

    /// `OID_GEN_XMIT_ERROR`.
    pub fn out_errors(&self) -> u64 {
        self.out_errors.load(Relaxed)
    }

    /// `OID_GEN_RCV_NO_BUFFER`: frames not indicated.
    pub fn in_discards(&self) -> u64 {
        self.in_discards.load(Relaxed)
    }

    /// `OID_GEN_STATISTICS`: every counter, all valid. V never sees a
    /// received frame in error (P indicates only good ones).
    pub fn statistics_info(&self) -> NDIS_STATISTICS_INFO {
        let [out_u, out_m, out_b] = &self.out;
        let [in_u, in_m, in_b] = &self.input;
        let get = |x: &AtomicU64| x.load(Relaxed);
        let mut info = NDIS_STATISTICS_INFO::new();
        info.ifInDiscards = get(&self.in_discards);
        info.ifInErrors = 0;
        info.ifHCInOctets = Self::sum(&self.input, |c| &c.octets);
        info.ifHCInUcastPkts = get(&in_u.frames);
        info.ifHCInMulticastPkts = get(&in_m.frames);
        info.ifHCInBroadcastPkts = get(&in_b.frames);
        info.ifHCOutOctets = Self::sum(&self.out, |c| &c.octets);
        info.ifHCOutUcastPkts = get(&out_u.frames);
        info.ifHCOutMulticastPkts = get(&out_m.frames);
        info.ifHCOutBroadcastPkts = get(&out_b.frames);
        info.ifOutErrors = get(&self.out_errors);
        info.ifOutDiscards = get(&self.out_discards);
        info.ifHCInUcastOctets = get(&in_u.octets);
        info.ifHCInMulticastOctets = get(&in_m.octets);
        info.ifHCInBroadcastOctets = get(&in_b.octets);
        info.ifHCOutUcastOctets = get(&out_u.octets);
        info.ifHCOutMulticastOctets = get(&out_m.octets);
        info.ifHCOutBroadcastOctets = get(&out_b.octets);
        info
    }
}
