//! What a device on a UDP port sends, taken onto the port
//! ([`UdpPort::pump`]), and the device's whole pass over it ([`UdpPass`]).
//!
//! The device owns no link: its runtime takes each packet it sends
//! (`SoftRnic::transmit_turn`) into a buffer of the runtime's own. Here
//! that buffer is the port's send batch itself, so a packet is built where
//! it leaves from, with no copy: for IPv6 the next segment of the
//! segmentation-offload batch (the UDP payload only: the socket writes the
//! headers), for IPv4 the next `sendmmsg` slot of the raw socket (the
//! whole datagram: its ICRC covers the header the device built).

use std::sync::Arc;

use links::{CaptureLink, Link, LinkPump, Pass, PassPlan, run_pass};
use softrnic::device::SoftRnic;
use softrnic::transmit::{Carriage, MAX_DATAGRAM, Transmit};
use softrnic::transmit_turn::TransmitTurn;

use super::raw4::Raw4;
use super::{Batch, MAX_SEGMENT, UdpLink, UdpPort, udp_payload_of};

const _: () = assert!(MAX_SEGMENT >= MAX_DATAGRAM);

impl UdpPort {
    /// Takes what `rnic` sends (unless another taker holds its transmit
    /// turn: that one takes it), each packet built into this port's send
    /// batch, flushes, then gives the datagrams that could never leave
    /// back to the device at `now`. Returns how many packets it took. No
    /// allocation; one batch lock for the whole turn, and none when
    /// nothing waits (most busy-polling passes).
    pub fn pump(&self, rnic: &SoftRnic, now: u64) -> usize {
        let mut moved = 0;
        if rnic.has_transmits()
            && let Some(mut turn) = rnic.transmit_turn()
        {
            moved = match &self.raw {
                Some(raw) => self.pump_raw(raw, &mut turn),
                None => self.pump_udp(&mut turn),
            };
            // Under the turn: nobody's later packets pass these.
            self.flush();
        }
        // With the turn given back: the device runs the failed QP.
        self.failures
            .take(&mut |failure| rnic.send_failed(now, failure));
        moved
    }

    /// IPv6: UDP payloads, each the next segment of the batch.
    fn pump_udp(&self, turn: &mut TransmitTurn<'_>) -> usize {
        let carriage = Carriage {
            ipv6_udp_payloads: true,
            trains: false,
        };
        let mut batch = self.lock_batch();
        let mut moved = 0;
        loop {
            let slot = self.slot(&mut batch);
            match turn.poll_transmit(slot, carriage) {
                Some(Transmit::UdpPayload { dest, len }) => {
                    self.commit(&mut batch, dest, len, true);
                }
                Some(Transmit::Datagram(len)) => self.commit_datagram(&mut batch, len),
                // Not asked for.
                Some(Transmit::Train(_)) => {}
                None => break,
            }
            moved += 1;
        }
        moved
    }

    /// A whole datagram built in the slot last lent (the carriage asks
    /// UDP payloads of IPv6 packets only): its UDP payload is moved to the
    /// slot's start and queued, as [`UdpPort::queue_datagram`] would.
    fn commit_datagram(&self, batch: &mut Batch, len: usize) {
        let at = batch.used;
        let Some((dest, payload, engine_built)) =
            batch.buf.get(at..at + len).and_then(udp_payload_of)
        else {
            return;
        };
        let n = payload.len();
        batch
            .buf
            .copy_within(at + payload.start..at + payload.end, at);
        self.commit(batch, dest, n, engine_built);
    }

    /// IPv4: whole datagrams, each in the next slot of the raw socket's
    /// batch.
    fn pump_raw(&self, raw: &Raw4, turn: &mut TransmitTurn<'_>) -> usize {
        let mut batch = raw.lock();
        let mut moved = 0;
        loop {
            let slot = raw.slot(&mut batch, &self.stats, &self.failures);
            match turn.poll_transmit(slot, Carriage::default()) {
                Some(Transmit::Datagram(len)) => raw.commit(&mut batch, len),
                // Not asked for.
                Some(Transmit::UdpPayload { .. } | Transmit::Train(_)) => {}
                None => break,
            }
            moved += 1;
        }
        moved
    }
}

/// The passes of a device on a [`UdpPort`]: what the port received handed
/// to the device, the device's work, and what it sends taken onto the port
/// ([`UdpPort::pump`]). Its link ([`UdpPass::tap`]) wraps the port in the
/// device's capture: while a capture is installed, the device's packets
/// are taken whole through it instead (the capture shows each datagram as
/// it goes; an IPv6 one is then queued as its UDP payload), at the cost of
/// a copy each.
#[derive(Debug)]
pub struct UdpPass {
    port: Arc<UdpPort>,
    tap: Arc<CaptureLink<Box<dyn Link>>>,
    /// Takes the packets through `tap` while it captures.
    captured: LinkPump,
}

impl UdpPass {
    /// The passes of a device on `port`; `None` if memory ran out.
    pub fn new(port: Arc<UdpPort>) -> Option<Self> {
        let link: Box<dyn Link> = Box::new(UdpLink(port.clone()));
        Some(Self {
            port,
            tap: Arc::new(CaptureLink::new(link)),
            captured: LinkPump::new()?,
        })
    }

    /// The port.
    pub fn port(&self) -> &Arc<UdpPort> {
        &self.port
    }

    /// The capture wrapper around the port, for the runtime to fill
    /// ([`CaptureLink::set_capture`]).
    pub fn tap(&self) -> &Arc<CaptureLink<Box<dyn Link>>> {
        &self.tap
    }

    /// Runs one pass of `rnic` at `now` as `plan` says, unless another
    /// pass of it runs (`None`: the caller does not wait for it). When
    /// `plan` says send first and send doorbells rang, the pass runs the
    /// work and takes what it sent, leaving arrivals to the next pass (as
    /// `links::LinkPass` does).
    pub fn try_pass(&self, rnic: &SoftRnic, now: u64, plan: PassPlan) -> Option<Pass> {
        run_pass(
            rnic,
            now,
            plan,
            &mut |deliver| self.tap.receive(deliver),
            &mut || {
                self.pump(rnic, now);
            },
        )
    }

    /// Takes what `rnic` sends onto the port: built in its batch, or
    /// whole through the capture while one is installed.
    pub fn pump(&self, rnic: &SoftRnic, now: u64) -> usize {
        if self.tap.is_capturing() {
            return self.captured.pump(rnic, &*self.tap, now);
        }
        self.port.pump(rnic, now)
    }
}

#[cfg(test)]
mod tests {
    use std::net::{IpAddr, Ipv6Addr, SocketAddr, UdpSocket};
    use std::sync::atomic::Ordering;
    use std::time::Duration;

    use crate::config::ROCEV2_UDP_PORT;

    /// Payloads committed in the batch for one peer, then one for another
    /// (it begins the next batch where it was built, with no copy), leave
    /// each to its destination with its contents.
    #[test]
    fn a_payload_that_cannot_join_the_batch_begins_the_next_where_it_was_built() {
        let port = super::super::tests::bind_ipv6_loopback();
        let peers: Vec<UdpSocket> = (0..2)
            .map(|_| {
                let s = UdpSocket::bind("[::1]:0").unwrap();
                s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
                s
            })
            .collect();
        let to = |i: usize| peers[i].local_addr().unwrap();
        {
            let mut batch = port.lock_batch();
            for (peer, byte, len) in [(0, 1u8, 100), (0, 2, 100), (1, 3, 50), (0, 4, 70)] {
                let slot = port.slot(&mut batch);
                slot[..len].fill(byte);
                port.commit(&mut batch, to(peer), len, false);
            }
            assert_eq!(batch.count, 1, "the last one began a batch of its own");
            assert!(batch.start > 0, "where it was built");
        }
        port.flush();
        let mut got = [Vec::new(), Vec::new()];
        let mut buf = [0u8; 256];
        for (i, want) in [(0, 3), (1, 1)] {
            for _ in 0..want {
                let (n, from) = peers[i].recv_from(&mut buf).unwrap();
                assert_eq!(from, port.local());
                got[i].push(buf[..n].to_vec());
            }
        }
        assert_eq!(got[0], [vec![1; 100], vec![2; 100], vec![4; 70]]);
        assert_eq!(got[1], [vec![3; 50]]);
        assert_eq!(port.stats.sent.load(Ordering::Relaxed), 4);
    }

    /// A whole IPv6 datagram built in a slot leaves as its UDP payload.
    #[test]
    fn a_whole_datagram_in_a_slot_leaves_as_its_payload() {
        let port = super::super::tests::bind_ipv6_loopback();
        let peer = UdpSocket::bind("[::1]:0").unwrap();
        peer.set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        {
            let mut batch = port.lock_batch();
            let slot = port.slot(&mut batch);
            slot[..48].fill(0);
            slot[0] = 0x60;
            slot[24..40].copy_from_slice(&Ipv6Addr::LOCALHOST.octets());
            slot[40..42].copy_from_slice(&1234u16.to_be_bytes());
            slot[42..44].copy_from_slice(&peer.local_addr().unwrap().port().to_be_bytes());
            slot[48..53].copy_from_slice(b"whole");
            port.commit_datagram(&mut batch, 53);
        }
        port.flush();
        let mut buf = [0u8; 16];
        let (n, from) = peer.recv_from(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"whole");
        assert_eq!(
            from,
            SocketAddr::new(IpAddr::from(Ipv6Addr::LOCALHOST), ROCEV2_UDP_PORT)
        );
    }
}
