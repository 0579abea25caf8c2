//! The capturing link wrapper ([`CaptureLink`]): a [`Link`] around
//! another that shows every datagram passing through it, either way, to
//! an installed [`Capture`] (smoltcp's `phy::Tracer`, with a slot that is
//! filled and emptied at run time).

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, Ordering};

use hwq::lock::LockClass;

use softrnic::sync::{Mutex, RwLock};
/// The installed capture's slot.
static CAPTURE_LOCK: LockClass = LockClass::new("links capture");
/// The capture's scratch buffer.
static CAPTURE_SCRATCH_LOCK: LockClass = LockClass::new("links capture scratch");

use crate::link::{Link, Outgoing, Received};
use softrnic::arrival::Arrival;

use softrnic::train::Train;
use softrnic::wire::IpUdpFields;

/// Which way a captured datagram went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Sent by this device.
    Transmit,
    /// Received by this device (before any check: bad packets are captured too).
    Receive,
}

/// A packet tap: sees every datagram the device sends and receives, as a
/// whole IPv4 or IPv6 datagram (IP header through ICRC), so the host can
/// write a pcap. Datagrams that arrived as a bare UDP payload
/// ([`softrnic::arrival::Arrival::UdpPayload`]) are shown with the
/// IP and UDP headers the ICRC convention assumes (IPv4: identification 0,
/// DF, TTL 64; IPv6: traffic class and flow label 0, hop limit 64; the
/// socket's addresses and ports).
///
/// Called by the [`CaptureLink`] a runtime wrapped the
/// device's link in, from a runtime's pump (holding the device's transmit turn) and its
/// receive path: must not block for long and must not call back into the
/// device.
pub trait Capture: Send + Sync {
    /// Records one datagram.
    fn capture(&self, direction: Direction, datagram: &[u8]);
}

/// A link that shows what passes through it to a [`Capture`], if one is
/// installed ([`CaptureLink::set_capture`]): each datagram transmitted,
/// each train cut into the datagrams it stands for, and each arrival its
/// [`Link::receive`] hands out (a UDP payload with the IP and UDP headers
/// the ICRC convention assumes, as [`Capture`] says). While a capture is
/// installed ([`CaptureLink::is_capturing`]) a runtime that takes UDP
/// payloads takes whole datagrams instead, which the capture sees as they
/// are. With none installed,
/// every call goes straight to the wrapped link. It delays nothing itself
/// (a [`super::FaultLink`] around it holds back what it delays and hands
/// it through, to be shown, when due).
///
/// It is the runtime's: a runtime that captures wraps the link it gives a
/// device in one (outside any fault injection, so it sees what the device
/// sends), keeps a handle to fill the slot, and shows what it pushes into
/// the device's receive itself ([`CaptureLink::show_arrival`]); the device
/// holds no capture of its own.
pub struct CaptureLink<L> {
    inner: L,
    capture: RwLock<Option<Box<dyn Capture>>>,
    /// A capture is installed: read before the slot's lock, so a link
    /// without one (the common case) costs each packet one load, not a
    /// lock round.
    installed: AtomicBool,
    /// Rebuilds received UDP payloads and train segments into datagrams.
    scratch: Mutex<Vec<u8>>,
}

impl<L> core::fmt::Debug for CaptureLink<L> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("CaptureLink")
            .field("capturing", &self.is_capturing())
            .finish_non_exhaustive()
    }
}

impl<L> CaptureLink<L> {
    /// Wraps `inner`, capturing nothing until a capture is installed.
    pub fn new(inner: L) -> Self {
        Self {
            inner,
            capture: RwLock::new(&CAPTURE_LOCK, None),
            installed: AtomicBool::new(false),
            scratch: Mutex::new(&CAPTURE_SCRATCH_LOCK, Vec::new()),
        }
    }

    /// The wrapped link.
    pub fn inner(&self) -> &L {
        &self.inner
    }

    /// Installs (or, with `None`, removes) the capture. May allocate.
    pub fn set_capture(&self, capture: Option<Box<dyn Capture>>) {
        if capture.is_some() {
            let mut s = self.scratch.lock();
            let want = usize::from(u16::MAX);
            if s.capacity() < want {
                let _ = s.try_reserve_exact(want);
            }
        }
        let installed = capture.is_some();
        *self.capture.write() = capture;
        self.installed.store(installed, Ordering::Release);
    }

    /// Whether a capture is installed.
    pub fn is_capturing(&self) -> bool {
        self.installed.load(Ordering::Acquire)
    }

    /// Shows one arrival to the capture as the datagram(s) it carries:
    /// what [`Link::receive`] hands out passes here, and so must what a
    /// push runtime hands the device's receive directly. A UDP payload
    /// from a mixed pair of families is no datagram: it is not shown.
    pub fn show_arrival(&self, arrival: &Arrival<'_>) {
        self.with_capture(|cap| match arrival {
            Arrival::Datagram(d) => cap.capture(Direction::Receive, d),
            Arrival::Checked(d) => cap.capture(Direction::Receive, d.bytes()),
            Arrival::UdpPayload { src, dst, payload } => {
                if let Some(fields) = IpUdpFields::between(*src, *dst) {
                    self.udp_payload(cap, &fields, payload);
                }
            }
            Arrival::Train(t) => self.train(cap, Direction::Receive, t),
        });
    }

    /// Runs `show` with the installed capture, if there is one; without
    /// one it costs a load of the installed-flag, no lock round.
    fn with_capture(&self, show: impl FnOnce(&dyn Capture)) {
        if !self.is_capturing() {
            return;
        }
        if let Some(cap) = &*self.capture.read() {
            show(&**cap);
        }
    }

    /// Shows one datagram to the capture.
    fn datagram(&self, direction: Direction, datagram: &[u8]) {
        self.with_capture(|cap| cap.capture(direction, datagram));
    }

    /// Shows a received UDP payload to `cap`, as the datagram `fields`
    /// make of it.
    fn udp_payload(&self, cap: &dyn Capture, fields: &IpUdpFields, payload: &[u8]) {
        if let Some((head, n)) = fields.header_bytes(payload.len())
            && let Some(head) = head.get(..n)
        {
            let mut buf = self.scratch.lock();
            buf.clear();
            buf.extend_from_slice(head);
            buf.extend_from_slice(payload);
            cap.capture(Direction::Receive, &buf);
        }
    }

    /// Shows each segment of `train` to `cap` as the datagram it stands
    /// for. A segment whose source key died is not shown: it is lost, and
    /// nothing of it is placed either.
    fn train(&self, cap: &dyn Capture, direction: Direction, train: &Train) {
        let mut buf = self.scratch.lock();
        for i in 0..train.segments() {
            if let Some(n) = train.build(i, &mut buf)
                && let Some(datagram) = buf.get(..n)
            {
                cap.capture(direction, datagram);
            }
        }
    }
}

impl<L: Link> Link for CaptureLink<L> {
    fn transmit(&self, packet: Outgoing<'_>) {
        match &packet {
            Outgoing::Datagram { .. } => {
                if let Some(datagram) = packet.datagram() {
                    self.datagram(Direction::Transmit, datagram);
                }
            }
            Outgoing::Train(train) => {
                self.with_capture(|cap| self.train(cap, Direction::Transmit, train));
            }
        }
        self.inner.transmit(packet);
    }

    fn flush(&self) {
        self.inner.flush();
    }

    fn can_transmit(&self) -> bool {
        self.inner.can_transmit()
    }

    fn carries_trains(&self) -> bool {
        self.inner.carries_trains()
    }

    fn take_send_failures(&self, each: &mut dyn FnMut(softrnic::transmit::SendFailure)) {
        self.inner.take_send_failures(each);
    }

    fn receive(&self, deliver: &mut dyn FnMut(Arrival<'_>)) -> Received {
        self.inner.receive(&mut |arrival| {
            self.show_arrival(&arrival);
            deliver(arrival);
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::transmit_copy;
    use spin::Mutex;

    use super::*;
    use alloc::sync::Arc;
    use alloc::vec;
    use core::net::{Ipv4Addr, SocketAddr};

    /// What a capture saw.
    #[derive(Default)]
    struct Seen(Mutex<Vec<(Direction, Vec<u8>)>>);

    impl Capture for Arc<Seen> {
        fn capture(&self, direction: Direction, datagram: &[u8]) {
            self.0.lock().push((direction, datagram.to_vec()));
        }
    }

    /// A link that records what it is given, carries trains, has room
    /// for ten datagrams, and hands out two arrivals per receive.
    #[derive(Default)]
    struct Recorder {
        sent: Mutex<Vec<Vec<u8>>>,
    }

    const SRC: SocketAddr =
        SocketAddr::new(core::net::IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2)), 4791);
    const DST: SocketAddr = SocketAddr::new(core::net::IpAddr::V4(Ipv4Addr::LOCALHOST), 4791);

    impl Link for Recorder {
        fn transmit(&self, packet: Outgoing<'_>) {
            self.sent
                .lock()
                .extend(packet.datagram().map(<[u8]>::to_vec));
        }
        fn carries_trains(&self) -> bool {
            true
        }
        fn can_transmit(&self) -> bool {
            self.sent.lock().len() < 10
        }
        fn receive(&self, deliver: &mut dyn FnMut(Arrival<'_>)) -> Received {
            deliver(Arrival::Datagram(&[0x45, 1, 2, 3]));
            deliver(Arrival::UdpPayload {
                src: SRC,
                dst: DST,
                payload: &[9, 8, 7],
            });
            Received {
                count: 2,
                ..Received::default()
            }
        }
    }

    #[test]
    fn shows_what_passes_either_way_only_while_a_capture_is_installed() {
        let link = CaptureLink::new(Recorder::default());
        let seen = Arc::new(Seen::default());
        // Nothing installed: nothing is shown.
        assert!(!link.is_capturing());
        transmit_copy(&link, &[0x45, 0]);
        assert_eq!(link.receive(&mut |_| {}).count, 2);
        // What the runtime asks of the link is the link's answer.
        assert!(link.carries_trains());
        assert!(link.can_transmit());

        link.set_capture(Some(Box::new(seen.clone())));
        assert!(link.is_capturing());
        assert!(seen.0.lock().is_empty(), "nothing shown before installed");
        transmit_copy(&link, &[0x45, 1]);
        let mut buf = vec![0x45, 2, 0xAA];
        link.transmit(Outgoing::Datagram {
            buf: &mut buf,
            len: 2,
        });
        let mut delivered = 0;
        assert_eq!(link.receive(&mut |_| delivered += 1).count, 2);
        assert_eq!(delivered, 2, "every arrival still reaches the device");

        let fields = IpUdpFields::between(SRC, DST).unwrap();
        let (head, n) = fields.header_bytes(3).unwrap();
        let mut rebuilt = head[..n].to_vec();
        rebuilt.extend_from_slice(&[9, 8, 7]);
        assert_eq!(
            *seen.0.lock(),
            [
                (Direction::Transmit, vec![0x45, 1]),
                (Direction::Transmit, vec![0x45, 2]),
                (Direction::Receive, vec![0x45, 1, 2, 3]),
                (Direction::Receive, rebuilt),
            ]
        );
        assert_eq!(
            *link.inner().sent.lock(),
            [vec![0x45, 0], vec![0x45, 1], vec![0x45, 2]],
            "the wrapped link got every datagram"
        );

        link.set_capture(None);
        assert!(!link.is_capturing());
        transmit_copy(&link, &[0x45, 3]);
        assert_eq!(seen.0.lock().len(), 4, "removed: nothing more shown");
        assert_eq!(link.inner().sent.lock().len(), 4);
        for _ in 0..6 {
            transmit_copy(&link, &[0x45, 4]);
        }
        assert!(!link.can_transmit(), "the wrapped link's room");
    }
}
