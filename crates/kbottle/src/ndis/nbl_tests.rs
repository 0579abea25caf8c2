//! The NBL ledger and builders: lists the bottle builds carry their frame
//! through a real NET_BUFFER and MDL, hand-overs must come back to the
//! party that made them, and freed lists are gone.

use ndis::NET_BUFFER_LIST;

use super::nbl::{self, Holder, LedgerError, ReadError};

fn frame(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(7).wrapping_add(seed))
        .collect()
}

#[test]
fn a_built_list_reads_back_its_frame_through_buffer_and_mdl() {
    let f = frame(1514, 3);
    let nbl = nbl::build(&f);
    // SAFETY: a list just built, held by the bottle.
    let got = unsafe { nbl::frame_of(nbl) }.unwrap();
    assert_eq!(got, f);
    // SAFETY: as above.
    let list = unsafe { nbl.read() };
    let (pool, nb, ctx) = (list.NdisPoolHandle, list.FirstNetBuffer, list.Context);
    assert_eq!(pool as usize, nbl::bottle_pool());
    assert!(!nb.is_null());
    // SAFETY: the list's NET_BUFFER.
    let b = unsafe { *nb };
    assert_eq!(b.data_length(), 1514);
    assert_eq!((b.DataOffset, b.CurrentMdlOffset), (0, 0));
    assert_eq!(b.MdlChain, b.CurrentMdl);
    // SAFETY: the list's context block: 64 bytes of backfill, none used.
    let block = unsafe { ctx.read() };
    assert_eq!((block.Size, block.Offset), (64, 64));
    assert_eq!(nbl::holders(nbl as usize), Some(vec![Holder::Bottle]));
    nbl::free(nbl).unwrap();
    assert_eq!(nbl::holders(nbl as usize), None);
    assert_eq!(nbl::free(nbl), Err(LedgerError::Unknown(nbl as usize)));
}

#[test]
fn hand_overs_pop_in_order_and_only_their_owner_can_take_them_back() {
    let nbl = nbl::build(&frame(60, 1)) as usize;
    nbl::push(nbl, Holder::SentToMiniport(0x10)).unwrap();
    nbl::push(nbl, Holder::SentOnBinding(0x20)).unwrap();
    // Completing to the miniport before the binding gave it back: refused.
    assert!(matches!(
        nbl::pop(nbl, Holder::SentToMiniport(0x10)),
        Err(LedgerError::WrongHolder { .. })
    ));
    // Freed while handed out: refused.
    assert!(nbl::free(nbl as *mut NET_BUFFER_LIST).is_err());
    let shape = nbl::pop(nbl, Holder::SentOnBinding(0x20)).unwrap();
    assert_eq!(shape, nbl::shape_of(nbl), "unchanged while handed out");
    // Twice: refused.
    assert!(nbl::pop(nbl, Holder::SentOnBinding(0x20)).is_err());
    nbl::pop(nbl, Holder::SentToMiniport(0x10)).unwrap();
    // The bottom holder is never popped.
    assert!(nbl::pop(nbl, Holder::Bottle).is_err());
    assert_eq!(
        nbl::held_by(Holder::SentOnBinding(0x20)),
        Vec::<usize>::new()
    );
    nbl::free(nbl as *mut NET_BUFFER_LIST).unwrap();
}

#[test]
fn chains_link_in_order_and_each_list_has_its_own_frame() {
    let frames = [frame(60, 1), frame(100, 2), frame(1500, 3)];
    let refs: Vec<&[u8]> = frames.iter().map(Vec::as_slice).collect();
    let head = nbl::build_chain(&refs);
    // SAFETY: a chain just built, held by the bottle.
    let lists = unsafe { nbl::chain(head, 10) };
    assert_eq!(lists.len(), 3);
    for (list, f) in lists.iter().zip(&frames) {
        // SAFETY: a list of the chain.
        let got = unsafe { nbl::frame_of(*list as *const NET_BUFFER_LIST) };
        assert_eq!(got.unwrap(), *f);
    }
    for list in lists {
        nbl::free(list as *mut NET_BUFFER_LIST).unwrap();
    }
}

#[test]
fn a_buffer_shorter_than_its_length_or_without_buffer_is_unreadable() {
    let nbl = nbl::build(&frame(100, 4));
    // SAFETY: our own list, held by the bottle.
    let nb = unsafe { (*nbl).FirstNetBuffer };
    // SAFETY: its buffer: claim more bytes than the MDL holds.
    unsafe { (*nb).set_data_length(200) };
    // SAFETY: our own list, held by the bottle.
    let short = unsafe { nbl::frame_of(nbl) };
    assert_eq!(
        short,
        Err(ReadError::ShortChain {
            wanted: 200,
            found: 100
        })
    );
    // SAFETY: as above: a list without buffers.
    let first = unsafe { std::mem::replace(&mut (*nbl).FirstNetBuffer, std::ptr::null_mut()) };
    // SAFETY: as above.
    let none = unsafe { nbl::frame_of(nbl) };
    assert_eq!(none, Err(ReadError::NoBuffer));
    // SAFETY: restore the list before freeing it.
    unsafe { (*nbl).FirstNetBuffer = first };
    nbl::free(nbl).unwrap();
}

#[test]
fn lists_built_again_from_spares_read_back_their_new_frames() {
    // More frees than the quarantine holds: later builds reuse spares.
    let first: Vec<_> = (0..700)
        .map(|i| nbl::build(&frame(1500, i as u8)))
        .collect();
    for l in &first {
        nbl::free(*l).unwrap();
    }
    for (i, len) in [60usize, 1514, 2048, 3000, 14].into_iter().enumerate() {
        let f = frame(len, 100 + i as u8);
        let l = nbl::build(&f);
        // SAFETY: a list just built, held by the bottle.
        let got = unsafe { nbl::frame_of(l) }.unwrap();
        assert_eq!(got, f);
        // SAFETY: as above.
        let list = unsafe { l.read() };
        // SAFETY: its context block.
        let ctx = unsafe { list.Context.read() };
        assert_eq!((ctx.Size, ctx.Offset), (64, 64), "context reset");
        assert!(list.Next.is_null() && list.Status == 0 && list.SourceHandle.is_null());
        assert_eq!(nbl::holders(l as usize), Some(vec![Holder::Bottle]));
        nbl::free(l).unwrap();
    }
}
