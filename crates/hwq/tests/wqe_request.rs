//! Typed send requests against their slot layout: every request decodes to
//! itself after encoding, whatever the slot held before; bytes no encoder
//! writes decode to an error, never a panic.

use hwq::MemoryKey;
use hwq::wqe::{
    Access, Bind, Data, FastRegister, Gather, MAX_INLINE, MAX_SGE, Remote, SendOp, SendRequest,
    SendWqe, WqeError,
};
use proptest::prelude::*;
use zerocopy::{FromBytes, IntoBytes};

fn key() -> impl Strategy<Value = MemoryKey> {
    any::<u32>().prop_map(MemoryKey)
}

fn access() -> impl Strategy<Value = Access> {
    any::<u8>().prop_map(Access::from_bits_truncate)
}

fn gather() -> impl Strategy<Value = Gather> {
    (0..=MAX_SGE as u8, any::<u32>()).prop_map(|(count, total_len)| Gather { count, total_len })
}

fn data() -> impl Strategy<Value = Data> {
    prop_oneof![
        gather().prop_map(Data::Gather),
        (0..=MAX_INLINE as u16).prop_map(|len| Data::Inline { len }),
    ]
}

fn remote() -> impl Strategy<Value = Remote> {
    (any::<u64>(), key()).prop_map(|(addr, key)| Remote { addr, key })
}

fn op() -> impl Strategy<Value = SendOp> {
    prop_oneof![
        (data(), any::<bool>(), proptest::option::of(key())).prop_map(
            |(data, solicited, invalidate)| SendOp::Send {
                data,
                solicited,
                invalidate
            }
        ),
        (data(), remote()).prop_map(|(data, remote)| SendOp::Write { data, remote }),
        (gather(), remote(), any::<bool>()).prop_map(|(sink, remote, invalidate_sink)| {
            SendOp::Read {
                sink,
                remote,
                invalidate_sink,
            }
        }),
        (
            key(),
            access(),
            any::<u64>(),
            any::<u64>(),
            any::<u32>(),
            any::<u32>(),
            any::<u64>()
        )
            .prop_map(|(key, access, va, length, fbo, page_count, page_list)| {
                SendOp::FastRegister(FastRegister {
                    key,
                    access,
                    va,
                    length,
                    fbo,
                    page_count,
                    page_list,
                })
            }),
        (key(), key(), access(), any::<u64>(), any::<u64>()).prop_map(
            |(window, region, access, va, length)| SendOp::Bind(Bind {
                window,
                region,
                access,
                va,
                length,
            })
        ),
        key().prop_map(|key| SendOp::LocalInvalidate { key }),
    ]
}

fn request() -> impl Strategy<Value = SendRequest> {
    (any::<u64>(), any::<bool>(), any::<bool>(), op()).prop_map(
        |(wr_id, signaled, read_fence, op)| SendRequest {
            wr_id,
            signaled,
            read_fence,
            op,
        },
    )
}

/// A slot holding arbitrary bytes, as a reused ring slot may.
fn slot() -> impl Strategy<Value = SendWqe> {
    proptest::collection::vec(any::<u8>(), size_of::<SendWqe>())
        .prop_map(|bytes| SendWqe::read_from_bytes(&bytes).expect("a slot's size"))
}

proptest! {
    #[test]
    fn encode_then_decode_is_identity(req in request(), mut slot in slot()) {
        req.encode(&mut slot);
        prop_assert_eq!(slot.decode(), Ok(req));
        prop_assert_eq!(slot.op(), Some(req.op.opcode()));
    }

    /// Whatever the bytes, decoding returns (an error or a request), and a
    /// request it returns encodes back to the same header.
    #[test]
    fn arbitrary_bytes_decode_without_panicking(slot in slot()) {
        if let Ok(req) = slot.decode() {
            let mut again = slot;
            req.encode(&mut again);
            prop_assert_eq!(again.as_bytes(), slot.as_bytes());
        }
    }

    /// Any one header byte changed in an encoded slot either decodes to a
    /// different request or is refused: no byte is silently ignored.
    #[test]
    fn no_header_byte_is_ignored(req in request(), at in 0usize..64, bit in 0u8..8) {
        let mut slot = SendWqe::default();
        req.encode(&mut slot);
        slot.as_mut_bytes()[at] ^= 1 << bit;
        prop_assert_ne!(slot.decode(), Ok(req));
    }
}

fn encoded(op: SendOp) -> SendWqe {
    let mut slot = SendWqe::default();
    SendRequest {
        wr_id: 1,
        signaled: true,
        read_fence: false,
        op,
    }
    .encode(&mut slot);
    slot
}

fn send() -> SendOp {
    SendOp::Send {
        data: Data::Gather(Gather {
            count: 1,
            total_len: 64,
        }),
        solicited: false,
        invalidate: None,
    }
}

#[test]
fn malformed_slots_decode_to_errors() {
    let mut s = encoded(send());
    s.opcode = 0;
    assert_eq!(s.decode(), Err(WqeError::Opcode(0)));
    s.opcode = 200;
    assert_eq!(s.decode(), Err(WqeError::Opcode(200)));

    let mut s = encoded(send());
    s.flags |= 0x80;
    assert!(
        matches!(s.decode(), Err(WqeError::Flags(_))),
        "an unknown flag bit"
    );

    let mut s = encoded(SendOp::LocalInvalidate { key: MemoryKey(5) });
    s.flags |= hwq::wqe::WqeFlags::INLINE.bits();
    assert!(
        matches!(s.decode(), Err(WqeError::Flags(_))),
        "inline on a local operation"
    );

    let mut s = encoded(send());
    s.reserved0 = 1;
    assert_eq!(s.decode(), Err(WqeError::Reserved("reserved0")));
    let mut s = encoded(send());
    s.reserved1 = 1;
    assert_eq!(s.decode(), Err(WqeError::Reserved("reserved1")));
    let mut s = encoded(send());
    s.key = 9;
    assert_eq!(
        s.decode(),
        Err(WqeError::Reserved("key")),
        "a key on a plain SEND"
    );

    let mut s = encoded(send());
    s.sge_count = MAX_SGE as u8 + 1;
    assert_eq!(s.decode(), Err(WqeError::SgeCount(MAX_SGE as u8 + 1)));

    let mut s = encoded(SendOp::Send {
        data: Data::Inline { len: 10 },
        solicited: true,
        invalidate: None,
    });
    s.inline_len = MAX_INLINE as u16 + 1;
    s.total_len = u32::from(s.inline_len);
    assert!(matches!(s.decode(), Err(WqeError::InlineLength(_))));

    let mut s = encoded(SendOp::Bind(Bind {
        window: MemoryKey(1),
        region: MemoryKey(2),
        access: Access::REMOTE_READ,
        va: 0,
        length: 4096,
    }));
    s.access = 0x80;
    assert_eq!(s.decode(), Err(WqeError::Access(0x80)));
    s.access = 0;
    s.total_len = 1;
    assert_eq!(s.decode(), Err(WqeError::Reserved("total_len")));
}

#[test]
fn errors_say_what_is_wrong() {
    assert_eq!(
        WqeError::Reserved("fbo").to_string(),
        "field `fbo` unused by the opcode is not zero"
    );
    assert_eq!(WqeError::Opcode(9).to_string(), "unknown send opcode 9");
}
