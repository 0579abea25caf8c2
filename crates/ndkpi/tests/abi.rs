//! Uses the mirror the way a provider does: `static` dispatch tables filled
//! with `extern "win64"` functions, objects pointing at them, and raw
//! constants mixed with the typed flag views.
#![allow(non_snake_case)]

use core::ptr;

use ndkpi::{
    NDK_FN_REQUEST_COMPLETION, NDK_OBJECT_HEADER, NDK_QP, NDK_QP_DISPATCH, NDK_SGE,
    NDK_VERSION_1_2, NTSTATUS, NdkObjectTypeQp, OpFlags, PVOID, STATUS_NOT_SUPPORTED,
    STATUS_SUCCESS, UINT32, UINT64, ULONG,
};

unsafe extern "win64" fn read(
    _qp: *mut NDK_QP,
    _ctx: PVOID,
    _sgl: *const NDK_SGE,
    nSge: ULONG,
    _remote_address: UINT64,
    _remote_token: UINT32,
    flags: ULONG,
) -> NTSTATUS {
    let flags = OpFlags::from_bits_retain(flags);
    if nSge == 0 || flags.contains(OpFlags::INLINE) {
        STATUS_NOT_SUPPORTED
    } else {
        STATUS_SUCCESS
    }
}

static QP_DISPATCH: NDK_QP_DISPATCH = NDK_QP_DISPATCH {
    NdkCloseQp: None,
    NdkQueryExtension: None,
    NdkFlush: None,
    NdkSend: None,
    NdkReceive: None,
    NdkBind: None,
    NdkFastRegister: None,
    NdkInvalidate: None,
    NdkRead: Some(read),
    NdkWrite: None,
    NdkSendAndInvalidate: None,
};

#[test]
fn call_through_a_dispatch_table() {
    let mut qp = NDK_QP {
        Header: NDK_OBJECT_HEADER {
            Version: NDK_VERSION_1_2,
            ObjectType: NdkObjectTypeQp,
            ..NDK_OBJECT_HEADER::default()
        },
        Dispatch: &raw const QP_DISPATCH,
    };
    let sge = NDK_SGE::with_virtual_address(ptr::null_mut(), 0, 0);
    // SAFETY: `qp.Dispatch` points at the static table above.
    let table = unsafe { &*qp.Dispatch };
    let read = table.NdkRead.expect("filled in");
    let flags = (OpFlags::READ_FENCE | OpFlags::DEFER).bits();
    // SAFETY: `read` ignores its pointer arguments.
    let status = unsafe { read(&raw mut qp, ptr::null_mut(), &raw const sge, 1, 0, 0, flags) };
    assert_eq!(status, STATUS_SUCCESS);
    // SAFETY: as above.
    let status = unsafe {
        read(
            &raw mut qp,
            ptr::null_mut(),
            &raw const sge,
            1,
            0,
            0,
            ndkpi::NDK_OP_FLAG_INLINE,
        )
    };
    assert_eq!(status, STATUS_NOT_SUPPORTED);
    assert!(table.NdkSend.is_none());
}

#[test]
fn fn_pointers_are_pointer_sized() {
    assert_eq!(size_of::<NDK_FN_REQUEST_COMPLETION>(), size_of::<usize>());
    assert_eq!(size_of::<ndkpi::NDK_FN_CREATE_QP>(), size_of::<usize>());
}

#[test]
fn layout_table_has_every_struct() {
    let sizes = ndkpi::LAYOUT
        .iter()
        .filter(|f| f.kind == ndkpi::FactKind::Size)
        .count();
    // 10 objects + 10 dispatch tables + header, reserved block, version,
    // result, result ex, LAM, SGE, extension interface, adapter info, and 8
    // Windows base types.
    assert_eq!(sizes, 37);
}

static LAST_REASON: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

unsafe extern "win64" fn on_disconnect_ex(_ctx: PVOID, reason: ULONG) {
    LAST_REASON.store(reason, std::sync::atomic::Ordering::SeqCst);
}

/// A provider's NdkCompleteConnectEx that reports a disconnect at once.
unsafe extern "win64" fn complete_connect_ex(
    _c: *mut ndkpi::NDK_CONNECTOR,
    event: ndkpi::NDK_FN_DISCONNECT_EVENT_CALLBACK_EX,
    ctx: PVOID,
    _completion: NDK_FN_REQUEST_COMPLETION,
    _request_ctx: PVOID,
) -> NTSTATUS {
    // SAFETY: the consumer's callback, called with its context.
    unsafe { event.expect("a callback")(ctx, 0x2A) };
    STATUS_SUCCESS
}

#[test]
fn the_2_1_connector_table_extends_the_1_x_one() {
    let table = ndkpi::NDK_CONNECTOR_DISPATCH {
        NdkCompleteConnectEx: Some(complete_connect_ex),
        ..Default::default()
    };
    // The 1.x entries keep their offsets; the 2.1 ones follow them.
    assert_eq!(ndkpi::NDK_CONNECTOR_DISPATCH_1_SIZE, 88);
    assert_eq!(
        core::mem::offset_of!(ndkpi::NDK_CONNECTOR_DISPATCH, NdkCompleteConnectEx),
        ndkpi::NDK_CONNECTOR_DISPATCH_1_SIZE
    );
    assert_eq!(size_of::<ndkpi::NDK_CONNECTOR_DISPATCH>(), 104);
    let f = table.NdkCompleteConnectEx.expect("filled in");
    // SAFETY: `complete_connect_ex` ignores the connector and completion.
    let status = unsafe {
        f(
            ptr::null_mut(),
            Some(on_disconnect_ex),
            ptr::null_mut(),
            None,
            ptr::null_mut(),
        )
    };
    assert_eq!(status, STATUS_SUCCESS);
    assert_eq!(LAST_REASON.load(std::sync::atomic::Ordering::SeqCst), 0x2A);
    assert!(table.NdkAcceptEx.is_none());
}
