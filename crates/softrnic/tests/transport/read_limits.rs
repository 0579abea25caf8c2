//! IRD as Linux's rxe applies it: rxe rounds a QP's ORD up to a power of
//! two (`rxe_qp_from_attr`: `max_rd_atomic = roundup_pow_of_two(..)`), so
//! a peer whose IRD we announced as 3 may keep 4 READs outstanding. Our
//! responder keeps room for the rounded-up number: those READs are
//! served, not refused with the fatal NAK an ORD breach gets; one more
//! than that still is refused.

use crate::common;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use common::*;
use hwq::wqe::Access;
use links::Link;
use links::Outgoing;
use softrnic::qp::{Path, QpState};
use softrnic::wire::{Bth, ExtHeaders, Headers, IpUdpFields, Opcode, Reth, build};

const US: Ipv4Addr = Ipv4Addr::new(10, 9, 0, 1);
const PEER: Ipv4Addr = Ipv4Addr::new(10, 9, 0, 2);
const PEER_QPN: u32 = 0x30;
const FIRST_PSN: u32 = 500;
/// More responses than an outbox holds: the first READ's fill it.
const READ_LEN: u32 = 256 * 1024;

/// A link with no room: the runtime takes nothing, READ responses stay in
/// the device's outbox (the first READ's fill it, and the responder stops
/// there), so the READs they answer stay outstanding.
struct Full;

impl Link for Full {
    fn transmit(&self, _: Outgoing<'_>) {}

    fn can_transmit(&self) -> bool {
        false
    }
}

/// Delivers `reads` READ requests (256 KiB each, PMTU 1024: 256 PSNs
/// each) at once to a QP connected with IRD `ird` whose responses cannot
/// leave; returns the QP's state and the fatal NAKs sent.
fn outstanding_reads(ird: u32, reads: u32) -> (QpState, u64) {
    let clock = std::sync::Arc::new(SimClock::default());
    clock.set(1_000);
    let node = Node::custom(US, 1024, &clock, 1 << 20, Box::new(Full), Box::new(NoWake));
    let qp = node.qp(8);
    let path = Path {
        remote: SocketAddr::new(PEER.into(), 4791),
        remote_qpn: PEER_QPN,
        pmtu: 1024,
        send_psn: 1,
        recv_psn: FIRST_PSN,
        outbound_reads: 1,
        inbound_reads: ird,
    };
    node.dev.connect_qp(qp.qpn.raw(), path).unwrap();
    let buf = node.register(
        u64::from(READ_LEN),
        Access::LOCAL_WRITE.union(Access::REMOTE_READ),
    );
    let ip = IpUdpFields::new(IpAddr::V4(PEER), IpAddr::V4(US), 4791).unwrap();
    for i in 0..reads {
        let psn = FIRST_PSN + i * READ_LEN.div_ceil(1024);
        let headers = Headers {
            ip: ip.for_packet(psn),
            bth: Bth::new(Opcode::RDMA_READ_REQUEST, qp.qpn.raw(), psn),
            ext: ExtHeaders {
                reth: Some(Reth {
                    va: buf.va,
                    rkey: buf.key.0,
                    dma_len: READ_LEN,
                }),
                ..ExtHeaders::NONE
            },
        };
        let mut out = vec![0u8; 128];
        let n = build(&headers, &[], &mut out).unwrap();
        node.receive(&out[..n]);
    }
    node.poll();
    let stats = node.dev.stats();
    assert_eq!(stats.tx_packets, 0, "nothing left: the link had no room");
    assert!(
        stats.read_responses_sent < u64::from(READ_LEN.div_ceil(1024)),
        "the first READ is still being answered: {stats:?}"
    );
    (node.state(&qp), stats.fatal_naks_sent)
}

#[test]
fn a_peer_rounding_our_ird_up_to_a_power_of_two_is_served() {
    assert_eq!(outstanding_reads(3, 4), (QpState::Connected, 0));
    assert_eq!(outstanding_reads(5, 8), (QpState::Connected, 0));
    assert_eq!(outstanding_reads(1, 1), (QpState::Connected, 0));
}

#[test]
fn reads_beyond_the_rounded_ird_break_the_connection() {
    let (state, naks) = outstanding_reads(3, 5);
    assert_eq!((state, naks), (QpState::Error, 1));
}
