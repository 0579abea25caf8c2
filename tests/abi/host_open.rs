//! Opening and closing adapters through the C entry points, then asking the
//! adapter about itself through its NDK dispatch table, as a kernel consumer
//! does right after `WskOpenNdkAdapter`.

use std::ptr;

use ndkpi::{
    NDIS_STATUS_BAD_VERSION, NDK_ADAPTER, NDK_ADAPTER_FLAG_RDMA_READ_SINK_NOT_REQUIRED,
    NDK_ADAPTER_INFO, NdkRoCEv2, STATUS_INVALID_PARAMETER, STATUS_SHARING_VIOLATION,
    STATUS_SUCCESS,
};
use rsndk::{RsNdkCloseAdapter, RsNdkOpenAdapter, RsNdkOpenAdapterEx};

/// A non-null out-pointer value no open returns: a refused open must leave
/// it as it was (the header promises nothing is written on failure).
fn sentinel() -> *mut NDK_ADAPTER {
    ptr::without_provenance_mut(0x1000)
}

fn open(config: &std::ffi::CStr) -> Result<*mut NDK_ADAPTER, i32> {
    let mut adapter = sentinel();
    // SAFETY: a valid C string and out-pointer.
    let status = unsafe { RsNdkOpenAdapter(config.as_ptr(), &raw mut adapter) };
    if status == STATUS_SUCCESS {
        Ok(adapter)
    } else {
        assert_eq!(
            adapter,
            sentinel(),
            "refused open of {config:?} wrote the out-pointer"
        );
        Err(status)
    }
}

fn close(adapter: *mut NDK_ADAPTER) {
    // SAFETY: an adapter we opened and close once.
    assert_eq!(unsafe { RsNdkCloseAdapter(adapter) }, STATUS_SUCCESS);
}

fn query_info(adapter: *mut NDK_ADAPTER) -> NDK_ADAPTER_INFO {
    let mut info = NDK_ADAPTER_INFO::default();
    let mut size = size_of::<NDK_ADAPTER_INFO>() as u32;
    // SAFETY: an open adapter: a live NDK_ADAPTER.
    let dispatch = unsafe { (*adapter).Dispatch };
    // SAFETY: the provider's static dispatch table.
    let query = unsafe { (*dispatch).NdkQueryAdapterInfo }.expect("NdkQueryAdapterInfo");
    // SAFETY: valid adapter, buffer and size.
    let status = unsafe { query(adapter, &raw mut info, &raw mut size) };
    assert_eq!(status, STATUS_SUCCESS);
    info
}

#[test]
fn memory_fabric_adapter_opens_reports_rocev2_and_closes() {
    let a = open(c"mem:hostopen/127.0.1.1").expect("open");
    let info = query_info(a);
    assert_eq!((info.Version.Major, info.Version.Minor), (1, 2));
    assert_eq!(info.RdmaTechnology, NdkRoCEv2);
    assert_ne!(
        info.AdapterFlags & NDK_ADAPTER_FLAG_RDMA_READ_SINK_NOT_REQUIRED,
        0
    );
    // A second open of the same configuration shares the device.
    let b = open(c"mem:hostopen/127.0.1.1").expect("second open");
    assert_ne!(a, b);
    close(a);
    let _ = query_info(b);
    close(b);
}

#[test]
fn udp_adapter_owns_its_port_until_closed() {
    let a = open(c"127.0.1.2").expect("open udp");
    // Same address, other settings: refused while the first is open.
    assert_eq!(
        open(c"udp:127.0.1.2,pmtu=4096").err(),
        Some(STATUS_SHARING_VIOLATION)
    );
    close(a);
    let again = open(c"udp:127.0.1.2,pmtu=4096").expect("reopen after close");
    close(again);
}

#[test]
fn version_negotiation_accepts_1_0_and_refuses_2_2() {
    let mut adapter = ptr::null_mut();
    // SAFETY: valid arguments.
    let status =
        unsafe { RsNdkOpenAdapterEx(c"mem:hostver/127.0.1.3".as_ptr(), 1, 0, &raw mut adapter) };
    assert_eq!(status, STATUS_SUCCESS);
    let info = query_info(adapter);
    assert_eq!(
        (info.Version.Major, info.Version.Minor),
        (1, 2),
        "runs at the provider's highest minor"
    );
    close(adapter);
    let mut refused = sentinel();
    // SAFETY: valid arguments.
    let status =
        unsafe { RsNdkOpenAdapterEx(c"mem:hostver/127.0.1.3".as_ptr(), 2, 2, &raw mut refused) };
    assert_eq!(status, NDIS_STATUS_BAD_VERSION);
    assert_eq!(refused, sentinel(), "nothing written on failure");
}

#[test]
fn bad_configurations_write_nothing() {
    assert_eq!(
        open(c"mem:hostbad/127.0.1.4,loss=2").err(),
        Some(STATUS_INVALID_PARAMETER)
    );
    assert_eq!(
        open(c"udp:127.0.1.5,pcap=/nonexistent-dir/x.pcap").err(),
        Some(STATUS_INVALID_PARAMETER)
    );
}
