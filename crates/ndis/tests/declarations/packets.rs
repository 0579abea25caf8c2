//! Builds packets the way the bottle and the driver's L2 port will (a list
//! whose one buffer spans an MDL chain) and reads them back through the
//! declared fields, without NDIS.

use core::ptr;

use ndis::{
    MaxNetBufferListInfo, NDIS_OBJECT_HEADER, NDIS_OBJECT_TYPE_DEFAULT, NDIS_PROTOCOL_ID_DEFAULT,
    NET_BUFFER, NET_BUFFER_DATA_LENGTH, NET_BUFFER_LIST, NET_BUFFER_LIST_POOL_PARAMETERS,
    NetBufferListFrameType,
};

#[test]
fn data_length_reads_the_ulong_view_whichever_member_was_written() {
    let mut nb = NET_BUFFER::new(ptr::null_mut(), 14, 60);
    assert_eq!(nb.data_length(), 60);
    assert_eq!(nb.DataOffset, 14);
    assert_eq!(nb.CurrentMdlOffset, 14);

    nb.set_data_length(1514);
    assert_eq!(nb.data_length(), 1514);

    // What a C writer of `NET_BUFFER_DATA_LENGTH(nb) = n` leaves: only the
    // ULONG member.
    nb.NbDataLength = NET_BUFFER_DATA_LENGTH { DataLength: 42 };
    assert_eq!(nb.data_length(), 42);

    nb.NbDataLength = NET_BUFFER_DATA_LENGTH::from(7);
    assert_eq!(nb.data_length(), 7);
}

#[test]
fn a_list_links_its_buffer_and_the_next_list() {
    let mut nb = NET_BUFFER::new(ptr::null_mut(), 0, 64);
    let mut second = NET_BUFFER_LIST::new(ptr::null_mut());
    let mut first = NET_BUFFER_LIST::new(&raw mut nb);
    first.Next = &raw mut second;
    first.NetBufferListInfo[NetBufferListFrameType as usize] = 0x0008 as *mut _;

    assert_eq!(first.FirstNetBuffer, &raw mut nb);
    assert_eq!(first.Next, &raw mut second);
    assert!(second.Next.is_null());
    assert_eq!(first.NetBufferListInfo.len(), MaxNetBufferListInfo as usize);
    assert_eq!(first.Status, 0);
    assert_eq!(align_of::<NET_BUFFER_LIST>(), 16);
    assert_eq!(align_of::<NET_BUFFER>(), 16);
}

#[test]
fn pool_parameters_claim_revision_1() {
    let p = NET_BUFFER_LIST_POOL_PARAMETERS::new(NDIS_PROTOCOL_ID_DEFAULT, true, 0, 0x4B44_4E52, 0);
    assert_eq!(
        p.Header,
        NDIS_OBJECT_HEADER::new(NDIS_OBJECT_TYPE_DEFAULT, 1, 16)
    );
    assert_eq!(p.fAllocateNetBuffer, 1);
    assert_eq!(p.Flags, 0);
}

#[test]
fn context_data_starts_past_the_header_at_offset() {
    let ctx = ndis::NET_BUFFER_LIST_CONTEXT {
        Next: ptr::null_mut(),
        Size: 64,
        Offset: 48,
        ContextDataAlign: ndis::MEMORY_ALLOCATION_ALIGNED([]),
        ContextData: [],
    };
    assert_eq!(ctx.data_start_offset(), 16 + 48);
    assert_eq!(ctx.data_size(), 64);
}
