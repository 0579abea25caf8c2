//! CM messages: field offsets as IBA Vol. 1 ch. 12 lays them out, encode →
//! MAD → parse round trips, packing of shared bytes, and MAD header checks.

use std::net::Ipv4Addr;

use softrnic::wire::cm::{
    ATTR_DREP, ATTR_DREQ, ATTR_MRA, ATTR_REJ, ATTR_REP, ATTR_REQ, ATTR_RTU, TRANSPORT_RC,
};
use softrnic::wire::cma::{PORT_SPACE_TCP, REQ_CONSUMER_PRIVATE_LEN};
use softrnic::wire::*;
use zerocopy::{FromZeros, IntoBytes};

/// Offset in the MAD of a byte at `off` in the CM message data.
const fn at(off: usize) -> usize {
    24 + off
}

fn sample_req() -> ReqMsg {
    let mut r = ReqMsg::new_zeroed();
    r.set_local_comm_id(0x1122_3344);
    r.set_service_id(ip_service_id(PORT_SPACE_TCP, 445));
    r.set_local_ca_guid(0x0002_C903_00AB_CDEF);
    r.set_local_qkey(0);
    r.set_local_qpn(0x00AB_CDEF);
    r.set_responder_resources(16);
    r.set_local_eecn(0);
    r.set_initiator_depth(8);
    r.set_remote_eecn(0);
    r.set_remote_cm_response_timeout(20);
    r.set_transport_service_type(TRANSPORT_RC);
    r.set_end_to_end_flow_control(true);
    r.set_starting_psn(0x00FE_DCBA);
    r.set_local_cm_response_timeout(19);
    r.set_retry_count(7);
    r.set_partition_key(0xFFFF);
    r.set_path_mtu(Pmtu::Mtu1024.code());
    r.set_rdc_exists(false);
    r.set_rnr_retry_count(6);
    r.set_max_cm_retries(15);
    r.set_srq(true);
    r.set_extended_transport_type(0);
    let p = r.primary_path_mut();
    p.set_local_lid(0xFFFF);
    p.set_remote_lid(0xFFFF);
    p.set_local_gid(gid_from_ipv4(Ipv4Addr::new(10, 0, 0, 1)));
    p.set_remote_gid(gid_from_ipv4(Ipv4Addr::new(10, 0, 0, 2)));
    p.set_flow_label(0xF_FFFF);
    p.set_packet_rate(0x3F);
    p.set_traffic_class(0x68);
    p.set_hop_limit(64);
    p.set_sl(0xF);
    p.set_subnet_local(false);
    p.set_local_ack_timeout(18);
    let private = CmaHeader::ipv4(
        Ipv4Addr::new(10, 0, 0, 1),
        50_000,
        Ipv4Addr::new(10, 0, 0, 2),
    )
    .write_req_private(&[0xAB; REQ_CONSUMER_PRIVATE_LEN])
    .unwrap();
    *r.private_data_mut() = private;
    r
}

#[test]
fn req_field_offsets() {
    let mad = Mad::cm(0xDEAD_BEEF_0000_0001, &sample_req());
    let b = mad.as_bytes();
    assert_eq!(b.len(), MAD_LEN);
    // MAD header: base version, class, class version, method, attribute.
    assert_eq!(&b[..4], &[1, 0x07, 2, 0x03]);
    assert_eq!(&b[8..16], &0xDEAD_BEEF_0000_0001u64.to_be_bytes());
    assert_eq!(&b[16..18], &[0x00, 0x10]);
    assert_eq!(&b[at(0)..at(4)], &[0x11, 0x22, 0x33, 0x44]);
    assert_eq!(&b[at(8)..at(16)], &[0, 0, 0, 0, 0x01, 0x06, 0x01, 0xBD]);
    assert_eq!(&b[at(16)..at(24)], &0x0002_C903_00AB_CDEFu64.to_be_bytes());
    // QPN in the top 24 bits of the word at 32, responder resources below.
    assert_eq!(&b[at(32)..at(36)], &[0xAB, 0xCD, 0xEF, 16]);
    assert_eq!(b[at(39)], 8);
    // Byte 43: remote CM response timeout 20 (10100), RC (00), E2E 1.
    assert_eq!(b[at(43)], 0b1010_0001);
    assert_eq!(&b[at(44)..at(48)], &[0xFE, 0xDC, 0xBA, 0b1001_1111]);
    assert_eq!(&b[at(48)..at(50)], &[0xFF, 0xFF]);
    // Byte 50: MTU 3, RDC 0, RNR retry 6. Byte 51: CM retries 15, SRQ 1.
    assert_eq!(b[at(50)], 0b0011_0110);
    assert_eq!(b[at(51)], 0b1111_1000);
    assert_eq!(&b[at(52)..at(56)], &[0xFF; 4]);
    assert_eq!(
        &b[at(56)..at(72)],
        &[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 10, 0, 0, 1]
    );
    assert_eq!(&b[at(84)..at(88)], &[10, 0, 0, 2]);
    // Flow label in the top 20 bits of the word at 88, rate in the low 6.
    assert_eq!(&b[at(88)..at(92)], &[0xFF, 0xFF, 0xF0, 0x3F]);
    assert_eq!(&b[at(92)..at(96)], &[0x68, 64, 0xF0, 18 << 3]);
    assert_eq!(&b[at(96)..at(140)], &[0u8; 44]);
    // Private data at 140: the CMA header, then the consumer's bytes.
    assert_eq!(&b[at(140)..at(144)], &[0x00, 0x40, 0xC3, 0x50]);
    assert_eq!(&b[at(176)..at(232)], &[0xAB; 56]);
}

#[test]
fn req_round_trip() {
    let req = sample_req();
    let mad = Mad::cm(7, &req);
    let (hdr, msg) = parse_cm(mad.as_bytes()).unwrap();
    assert_eq!(hdr.transaction_id.get(), 7);
    assert_eq!(hdr.attribute_id.get(), ATTR_REQ);
    let CmMessage::Req(r) = msg else {
        panic!("not a REQ: {msg:?}")
    };
    assert_eq!(r, &req);
    assert_eq!(r.local_comm_id(), 0x1122_3344);
    assert_eq!(ip_service_port(r.service_id()), Some((PORT_SPACE_TCP, 445)));
    assert_eq!(r.local_qpn(), 0xAB_CDEF);
    assert_eq!(r.responder_resources(), 16);
    assert_eq!(r.initiator_depth(), 8);
    assert_eq!(r.remote_cm_response_timeout(), 20);
    assert_eq!(r.transport_service_type(), TRANSPORT_RC);
    assert!(r.end_to_end_flow_control());
    assert_eq!(r.starting_psn(), 0xFE_DCBA);
    assert_eq!(r.local_cm_response_timeout(), 19);
    assert_eq!(r.retry_count(), 7);
    assert_eq!(Pmtu::from_code(r.path_mtu()), Some(Pmtu::Mtu1024));
    assert!(!r.rdc_exists());
    assert_eq!(r.rnr_retry_count(), 6);
    assert_eq!(r.max_cm_retries(), 15);
    assert!(r.srq());
    let p = r.primary_path();
    assert_eq!(
        ipv4_from_gid(p.local_gid()),
        Some(Ipv4Addr::new(10, 0, 0, 1))
    );
    assert_eq!(
        ipv4_from_gid(p.remote_gid()),
        Some(Ipv4Addr::new(10, 0, 0, 2))
    );
    assert_eq!(p.flow_label(), 0xF_FFFF);
    assert_eq!(p.packet_rate(), 0x3F);
    assert_eq!(p.sl(), 0xF);
    assert!(!p.subnet_local());
    assert_eq!(p.local_ack_timeout(), 18);
    let (cma, consumer) = CmaHeader::parse(r.private_data()).unwrap();
    assert_eq!(cma.src_port(), 50_000);
    assert_eq!(cma.dst_ipv4(), Some(Ipv4Addr::new(10, 0, 0, 2)));
    assert_eq!(consumer, &[0xAB; 56]);
}

#[test]
fn packed_fields_do_not_disturb_neighbours() {
    let mut r = ReqMsg::new_zeroed();
    r.set_local_qpn(0xFFFF_FFFF); // truncated to 24 bits
    assert_eq!(r.local_qpn(), 0xFF_FFFF);
    assert_eq!(r.responder_resources(), 0);
    r.set_responder_resources(0xFF);
    r.set_local_qpn(0);
    assert_eq!(r.responder_resources(), 0xFF);

    r.set_remote_cm_response_timeout(0xFF);
    assert_eq!(r.remote_cm_response_timeout(), 31);
    assert_eq!(r.transport_service_type(), 0);
    assert!(!r.end_to_end_flow_control());
    r.set_transport_service_type(3);
    r.set_end_to_end_flow_control(true);
    r.set_remote_cm_response_timeout(0);
    assert_eq!(r.transport_service_type(), 3);
    assert!(r.end_to_end_flow_control());

    r.set_path_mtu(0xF);
    r.set_rdc_exists(true);
    r.set_rnr_retry_count(0);
    assert_eq!(
        (r.path_mtu(), r.rdc_exists(), r.rnr_retry_count()),
        (0xF, true, 0)
    );
    r.set_rnr_retry_count(7);
    r.set_path_mtu(0);
    assert_eq!(
        (r.path_mtu(), r.rdc_exists(), r.rnr_retry_count()),
        (0, true, 7)
    );

    let p = r.alternate_path_mut();
    p.set_local_ack_timeout(31);
    r.set_sap_supported(true);
    assert_eq!(r.alternate_path().local_ack_timeout(), 31);
    assert!(r.sap_supported());
    r.alternate_path_mut().set_local_ack_timeout(0);
    assert!(r.sap_supported());

    let p = r.primary_path_mut();
    p.set_packet_rate(0xFF);
    p.set_flow_label(0xFFFF_FFFF);
    assert_eq!((p.flow_label(), p.packet_rate()), (0xF_FFFF, 0x3F));
    p.set_flow_label(0);
    assert_eq!(p.packet_rate(), 0x3F);
    p.set_sl(0xF);
    p.set_subnet_local(true);
    p.set_sl(0);
    assert!(p.subnet_local());
}

#[test]
fn rep_offsets_and_round_trip() {
    let mut m = RepMsg::new_zeroed();
    m.set_local_comm_id(0xA1A2_A3A4);
    m.set_remote_comm_id(0x1122_3344);
    m.set_local_qkey(0x0BAD_F00D);
    m.set_local_qpn(0x12_3456);
    m.set_local_eecn(0x65_4321);
    m.set_starting_psn(0xFF_FFFF);
    m.set_responder_resources(4);
    m.set_initiator_depth(2);
    m.set_target_ack_delay(15);
    m.set_failover_accepted(3);
    m.set_end_to_end_flow_control(true);
    m.set_rnr_retry_count(7);
    m.set_srq(true);
    m.set_local_ca_guid(0x0102_0304_0506_0708);
    m.private_data_mut()[195] = 0x99;
    let mad = Mad::cm(1, &m);
    let b = mad.as_bytes();
    assert_eq!(&b[16..18], &ATTR_REP.to_be_bytes());
    assert_eq!(&b[at(12)..at(16)], &[0x12, 0x34, 0x56, 0]);
    assert_eq!(&b[at(16)..at(20)], &[0x65, 0x43, 0x21, 0]);
    assert_eq!(&b[at(20)..at(24)], &[0xFF, 0xFF, 0xFF, 0]);
    assert_eq!(&b[at(24)..at(28)], &[4, 2, 0b0111_1111, 0b1111_0000]);
    assert_eq!(&b[at(28)..at(36)], &[1, 2, 3, 4, 5, 6, 7, 8]);
    assert_eq!(b[at(231)], 0x99);
    let CmMessage::Rep(r) = parse_cm(b).unwrap().1 else {
        panic!("not a REP")
    };
    assert_eq!(r, &m);
    assert_eq!(r.local_qpn(), 0x12_3456);
    assert_eq!(r.starting_psn(), 0xFF_FFFF);
    assert_eq!(
        (
            r.target_ack_delay(),
            r.failover_accepted(),
            r.rnr_retry_count()
        ),
        (15, 3, 7)
    );
    assert!(r.srq() && r.end_to_end_flow_control());
    assert_eq!(r.private_data().len(), 196);
}

#[test]
fn rej_offsets_and_round_trip() {
    let mut m = RejMsg::new_zeroed();
    m.set_local_comm_id(5);
    m.set_remote_comm_id(6);
    m.set_message_rejected(MessageRef::REQ);
    m.set_rejected_info_length(0x7F);
    m.set_reason(RejReason::CONSUMER_REJECT);
    m.ari_mut()[0] = 0xA0;
    m.private_data_mut()[0] = 0xB0;
    let mad = Mad::cm(2, &m);
    let b = mad.as_bytes();
    assert_eq!(&b[16..18], &ATTR_REJ.to_be_bytes());
    assert_eq!(&b[at(8)..at(12)], &[0x00, 0xFE, 0, 28]);
    assert_eq!(b[at(12)], 0xA0);
    assert_eq!(b[at(84)], 0xB0);
    let CmMessage::Rej(r) = parse_cm(b).unwrap().1 else {
        panic!("not a REJ")
    };
    assert_eq!(r.reason(), RejReason(28));
    assert_eq!(r.message_rejected(), MessageRef::REQ);
    assert_eq!(r.rejected_info_length(), 0x7F);
    assert_eq!(r.private_data().len(), 148);
    let mut m2 = m;
    m2.set_message_rejected(MessageRef::OTHER);
    assert_eq!(Mad::cm(2, &m2).as_bytes()[at(8)], 0x80);
}

#[test]
fn mra_rtu_dreq_drep_round_trip() {
    let mut mra = MraMsg::new_zeroed();
    mra.set_local_comm_id(1);
    mra.set_remote_comm_id(2);
    mra.set_message_mraed(MessageRef::REP);
    mra.set_service_timeout(31);
    let mad = Mad::cm(3, &mra);
    assert_eq!(&mad.as_bytes()[at(8)..at(10)], &[0x40, 0xF8]);
    assert_eq!(mad.header.attribute_id.get(), ATTR_MRA);
    let CmMessage::Mra(m) = parse_cm(mad.as_bytes()).unwrap().1 else {
        panic!("not an MRA")
    };
    assert_eq!(
        (m.message_mraed(), m.service_timeout()),
        (MessageRef::REP, 31)
    );

    let mut rtu = RtuMsg::new_zeroed();
    rtu.set_local_comm_id(0xAAAA_0001);
    rtu.set_remote_comm_id(0xBBBB_0002);
    rtu.private_data_mut()[223] = 1;
    let mad = Mad::cm(4, &rtu);
    assert_eq!(mad.header.attribute_id.get(), ATTR_RTU);
    assert_eq!(
        &mad.as_bytes()[at(0)..at(8)],
        &[0xAA, 0xAA, 0, 1, 0xBB, 0xBB, 0, 2]
    );
    assert_eq!(parse_cm(mad.as_bytes()).unwrap().1, CmMessage::Rtu(&rtu));

    let mut dreq = DreqMsg::new_zeroed();
    dreq.set_local_comm_id(9);
    dreq.set_remote_comm_id(10);
    dreq.set_remote_qpn(0xC0_FFEE);
    dreq.private_data_mut()[219] = 2;
    let mad = Mad::cm(5, &dreq);
    assert_eq!(mad.header.attribute_id.get(), ATTR_DREQ);
    assert_eq!(&mad.as_bytes()[at(8)..at(12)], &[0xC0, 0xFF, 0xEE, 0]);
    let CmMessage::Dreq(d) = parse_cm(mad.as_bytes()).unwrap().1 else {
        panic!("not a DREQ")
    };
    assert_eq!(d.remote_qpn(), 0xC0_FFEE);
    assert_eq!(d.private_data()[219], 2);

    let mut drep = DrepMsg::new_zeroed();
    drep.set_local_comm_id(10);
    drep.set_remote_comm_id(9);
    let mad = Mad::cm(6, &drep);
    assert_eq!(mad.header.attribute_id.get(), ATTR_DREP);
    let CmMessage::Drep(d) = parse_cm(mad.as_bytes()).unwrap().1 else {
        panic!("not a DREP")
    };
    assert_eq!((d.local_comm_id(), d.remote_comm_id()), (10, 9));
    assert_eq!(d.private_data().len(), 224);
}

#[test]
fn mad_header_checks() {
    let good = Mad::cm(1, &RtuMsg::new_zeroed());
    let bytes = good.as_bytes();
    assert!(parse_cm(bytes).is_ok());
    assert_eq!(parse_cm(&bytes[..255]), Err(CmError::Length));
    let mut long = bytes.to_vec();
    long.push(0);
    assert_eq!(parse_cm(&long), Err(CmError::Length));
    let cases = [
        (0, 2, CmError::BadBaseVersion),
        (1, 0x81, CmError::NotCm),
        (2, 1, CmError::BadClassVersion),
        (3, 0x83, CmError::BadMethod),
        (17, 0x19, CmError::UnknownAttribute(0x0019)),
    ];
    for (offset, value, err) in cases {
        let mut m = good;
        m.as_mut_bytes()[offset] = value;
        assert_eq!(parse_cm(m.as_bytes()), Err(err));
    }
}

#[test]
fn cm_over_a_whole_packet() {
    let ip = Ipv4UdpFields::new(
        Ipv4Addr::new(10, 0, 0, 1),
        Ipv4Addr::new(10, 0, 0, 2),
        0xC001,
    );
    let mad = Mad::cm(0x42, &sample_req());
    let h = gsi_headers(ip, 0);
    let mut out = [0u8; 512];
    let n = build_udp_payload(&h, &[mad.as_bytes()], &mut out).unwrap();
    assert_eq!(n, 12 + 8 + 256 + 4);
    let p = parse_udp_payload(&ip, &out[..n]).unwrap();
    assert_eq!(
        p.ext.deth,
        Some(Deth {
            qkey: 0x8001_0000,
            src_qp: 1
        })
    );
    let (hdr, msg) = parse_cm(p.payload).unwrap();
    assert_eq!(hdr.transaction_id.get(), 0x42);
    assert_eq!(msg, CmMessage::Req(&sample_req()));
}
