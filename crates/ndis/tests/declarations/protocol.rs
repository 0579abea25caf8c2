//! Uses the protocol-edge declarations the way the MUX driver will:
//! handlers with the C signatures stored in revision-2 characteristics,
//! and open parameters built for `NdisOpenAdapterEx`. Nothing here calls
//! into NDIS.

use core::ptr;

use ndkpi::ULONG;

use ndis::{
    NDIS_BIND_PARAMETERS, NDIS_HANDLE, NDIS_MEDIUM, NDIS_OBJECT_HEADER, NDIS_OPEN_PARAMETERS,
    NDIS_PROTOCOL_DRIVER_CHARACTERISTICS, NDIS_STATUS, NDIS_STATUS_SUCCESS, NET_BUFFER_LIST,
    NET_FRAME_TYPE, NET_PNP_EVENT_NOTIFICATION, NdisMedium802_3, PROTOCOL_BIND_ADAPTER_EX,
    PROTOCOL_NET_PNP_EVENT, PROTOCOL_RECEIVE_NET_BUFFER_LISTS, UINT, UNICODE_STRING,
    ascii_to_utf16,
};

unsafe extern "win64" fn bind(
    _driver: NDIS_HANDLE,
    _bind_context: NDIS_HANDLE,
    _params: *mut NDIS_BIND_PARAMETERS,
) -> NDIS_STATUS {
    NDIS_STATUS_SUCCESS
}

unsafe extern "win64" fn pnp(
    _binding: NDIS_HANDLE,
    _event: *mut NET_PNP_EVENT_NOTIFICATION,
) -> NDIS_STATUS {
    NDIS_STATUS_SUCCESS
}

unsafe extern "win64" fn receive(
    _binding: NDIS_HANDLE,
    _lists: *mut NET_BUFFER_LIST,
    _port: ULONG,
    _count: ULONG,
    _flags: ULONG,
) {
}

static NAME: [u16; 6] = ascii_to_utf16(b"rsndkp");

#[test]
fn characteristics_are_revision_2_with_the_handlers_stored() {
    const BIND: PROTOCOL_BIND_ADAPTER_EX = bind;
    const PNP: PROTOCOL_NET_PNP_EVENT = pnp;
    const RECEIVE: PROTOCOL_RECEIVE_NET_BUFFER_LISTS = receive;

    let mut c = NDIS_PROTOCOL_DRIVER_CHARACTERISTICS::new(UNICODE_STRING::from_static(&NAME), 1, 0);
    c.BindAdapterHandlerEx = Some(BIND);
    c.NetPnPEventHandler = Some(PNP);
    c.ReceiveNetBufferListsHandler = Some(RECEIVE);

    assert_eq!(c.Header, NDIS_OBJECT_HEADER::new(0x95, 2, 128));
    assert_eq!((c.MajorNdisVersion, c.MinorNdisVersion), (6, 50));
    assert_eq!(c.Name.Length, 12);
    assert!(c.BindAdapterHandlerEx.is_some());
    assert!(c.DirectOidRequestCompleteHandler.is_none());
}

#[test]
fn open_parameters_point_at_the_caller_arrays() {
    let mut name = UNICODE_STRING::from_static(&NAME);
    let mut media: [NDIS_MEDIUM; 1] = [NdisMedium802_3];
    let mut selected: UINT = UINT::MAX;
    let mut frame_types: [NET_FRAME_TYPE; 2] = [0x0800u16.to_be(), 0x86DDu16.to_be()];
    let p = NDIS_OPEN_PARAMETERS::new(
        &raw mut name,
        media.as_mut_ptr(),
        1,
        &raw mut selected,
        frame_types.as_mut_ptr(),
        2,
    );
    assert_eq!(p.Header, NDIS_OBJECT_HEADER::new(0x87, 1, 52));
    assert_eq!(p.MediumArray, media.as_mut_ptr());
    assert_eq!(p.FrameTypeArraySize, 2);
    assert!(!ptr::eq(p.SelectedMediumIndex, ptr::null()));
}
