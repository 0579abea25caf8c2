//! Send errors: which ones a retransmission can get past, and the
//! datagrams that can never leave, kept for the device
//! (handed back through `softrnic::device::SoftRnic::send_failed`).

use std::io;
use std::net::IpAddr;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use softrnic::transmit::SendFailure;

use super::UdpStats;

/// Failures kept between two looks of the device (more in one pass are
/// counted but not kept: the QPs they name have failed already, or fail
/// on their next packet).
const KEPT: usize = 64;

/// What a send error means for the datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum SendOutcome {
    /// The socket buffer or the device queue is full: wait and try again.
    Full,
    /// The datagram is lost this time (no route or neighbour now, a
    /// refusal reported by the peer): the RC transport retransmits, as
    /// after a loss on the wire.
    Lost,
    /// It can never be sent (larger than the path's MTU, refused by the
    /// host's policy, invalid): sending it again fails the same way.
    Permanent,
}

/// What a send error `e` means.
pub(super) fn classify(e: &io::Error) -> SendOutcome {
    if e.kind() == io::ErrorKind::WouldBlock {
        return SendOutcome::Full;
    }
    match e.raw_os_error() {
        Some(libc::ENOBUFS | libc::EINTR) => SendOutcome::Full,
        // EINVAL: a segmentation-offload batch whose segments exceed the
        // path's MTU.
        Some(
            libc::EMSGSIZE
            | libc::EINVAL
            | libc::EPERM
            | libc::EACCES
            | libc::EAFNOSUPPORT
            | libc::EDESTADDRREQ,
        ) => SendOutcome::Permanent,
        _ => SendOutcome::Lost,
    }
}

/// The datagrams that could not be sent, until the device takes them.
#[derive(Debug, Default)]
pub(super) struct Failures {
    kept: Mutex<Vec<SendFailure>>,
    /// `kept` holds something: the device's look after each flush takes
    /// no lock while nothing failed.
    any: AtomicBool,
}

impl Failures {
    /// Records the whole datagram `datagram` as never sent.
    pub(super) fn datagram(&self, datagram: &[u8], stats: &UdpStats) {
        self.record(SendFailure::of_datagram(datagram), stats);
    }

    /// Records the UDP payload `payload` to `dst` as never sent.
    pub(super) fn udp_payload(&self, dst: IpAddr, payload: &[u8], stats: &UdpStats) {
        self.record(SendFailure::of_udp_payload(dst, payload), stats);
    }

    fn record(&self, failure: Option<SendFailure>, stats: &UdpStats) {
        stats.send_failures.fetch_add(1, Ordering::Relaxed);
        let Some(failure) = failure else { return };
        let mut kept = self
            .kept
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if kept.len() < KEPT && !kept.contains(&failure) {
            kept.push(failure);
            self.any.store(true, Ordering::Release);
        }
    }

    /// Hands each kept failure to `each`, once, holding no lock while it
    /// runs (it may send).
    pub(super) fn take(&self, each: &mut dyn FnMut(SendFailure)) {
        if !self.any.swap(false, Ordering::AcqRel) {
            return;
        }
        let taken = std::mem::take(
            &mut *self
                .kept
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        for failure in taken {
            each(failure);
        }
    }
}
