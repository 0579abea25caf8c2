//! Adapter-level behaviour through the NDK dispatch tables: version
//! negotiation, adapter info, object headers, extensions, LAMs, adapter
//! close. Every test runs on the scripted device and on the software RNIC
//! over the in-memory fabric and UDP.
//!
//! Scripted-only: `loopback_flag_follows_the_device` (needs a device
//! without loopback support; the RNIC always has it).

use std::ptr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use ndkpi::*;
use testkit::adapter::*;
use testkit::scripted::{DEFAULT_CAPS, ScriptedDevice};

backend_tests! {

fn version_1_0_and_1_1_are_served_at_1_2(b: Backend) {
    let env = Env::on(b);
    for minor in [0, 1, 2] {
        let a = env.open_another(1, minor).expect("accepted");
        let h = read_header(a);
        assert_eq!((h.Version.Major, h.Version.Minor), (1, 2));
        assert_eq!(h.ObjectType, NdkObjectTypeAdapter);
        assert!(h.NdkReserved.rf.iter().all(|p| p.is_null()));
        assert_eq!(env.close_adapter(a), STATUS_SUCCESS);
    }
    env.finish();
}

fn other_versions_are_refused(b: Backend) {
    let env = Env::on(b);
    // 2.0 and 2.1 are served since NDKPI 2.1 support (`v21`).
    for (major, minor) in [(2, 2), (1, 3), (0, 9), (3, 0), (3, 1)] {
        assert_eq!(
            env.open_another(major, minor).err(),
            Some(NDIS_STATUS_BAD_VERSION),
            "{major}.{minor}"
        );
    }
    env.finish();
}

fn adapter_info_is_honest_and_sized(b: Backend) {
    let env = Env::on(b);
    let info = env.info();
    let caps = env.caps();
    assert_eq!((info.Version.Major, info.Version.Minor), (1, 2));
    assert_eq!(info.VendorId, caps.vendor_id);
    assert_eq!(info.DeviceId, caps.device_id);
    assert_eq!(info.RdmaTechnology, NdkRoCEv2);
    assert_eq!(info.MaxInitiatorRequestSge, 16);
    assert_eq!(info.MaxReceiveRequestSge, 16);
    assert_eq!(info.MaxReadRequestSge, 16);
    assert_eq!(info.MaxInlineDataSize, 256);
    assert!(info.FRMRPageCount >= 16);
    assert_eq!(info.MaxCqDepth, caps.max_cq_depth);
    assert_eq!(info.MaxInitiatorQueueDepth, caps.max_qp_depth);
    assert_eq!(info.MaxReceiveQueueDepth, caps.max_qp_depth);
    assert_eq!(info.MaxSrqDepth, caps.max_srq_depth);
    assert_eq!(info.MaxTransferLength, caps.max_transfer);
    assert_eq!(
        info.MaxRegistrationSize as u64,
        caps.max_registration
    );
    assert_eq!(info.MaxInboundReadLimit, caps.max_inbound_reads);
    assert_eq!(info.MaxOutboundReadLimit, caps.max_outbound_reads);
    assert_eq!(info.MaxCallerData, caps.max_connect_data);
    assert_eq!(info.MaxCalleeData, caps.max_accept_data);
    let expected = NDK_ADAPTER_FLAG_RDMA_READ_SINK_NOT_REQUIRED
        | NDK_ADAPTER_FLAG_RDMA_READ_LOCAL_INVALIDATE_SUPPORTED
        | NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED
        | NDK_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED
        | NDK_ADAPTER_FLAG_MULTI_ENGINE_SUPPORTED
        | NDK_ADAPTER_FLAG_LOOPBACK_CONNECTIONS_SUPPORTED;
    assert_eq!(info.AdapterFlags, expected);
    assert_eq!(
        info.AdapterFlags & NDK_ADAPTER_FLAG_IN_ORDER_DMA_SUPPORTED,
        0
    );

    // Short buffer: BUFFER_TOO_SMALL and the required size; nothing written.
    let f = adapter_table(env.adapter).NdkQueryAdapterInfo.unwrap();
    let mut small = [0xAAu8; 16];
    let mut size = small.len() as u32;
    // SAFETY: a 16-byte buffer described as 16 bytes.
    let status = unsafe { f(env.adapter, small.as_mut_ptr().cast(), &raw mut size) };
    assert_eq!(status, STATUS_BUFFER_TOO_SMALL);
    assert_eq!(size as usize, size_of::<NDK_ADAPTER_INFO>());
    assert!(small.iter().all(|b| *b == 0xAA));
    // NULL buffer: the size query.
    let mut size = 0;
    // SAFETY: null info with a size pointer.
    let status = unsafe { f(env.adapter, ptr::null_mut(), &raw mut size) };
    assert_eq!(
        (status, size as usize),
        (STATUS_BUFFER_TOO_SMALL, size_of::<NDK_ADAPTER_INFO>())
    );
    env.finish();
}

}

crate::host_only! {
    #[test]
    fn loopback_flag_follows_the_device() {
        let env = Env::with_device(ScriptedDevice::new(hwq::device::DeviceCaps {
            loopback: false,
            ..DEFAULT_CAPS
        }));
        assert_eq!(
            env.info().AdapterFlags & NDK_ADAPTER_FLAG_LOOPBACK_CONNECTIONS_SUPPORTED,
            0
        );
        env.finish();
    }
}

backend_tests! {

fn every_object_reports_no_extensions_and_a_proper_header(b: Backend) {
    let env = Env::on(b);
    let notify = Recorder::new();
    let s = env.qp_setup(notify, 4, 2, 0);
    let mr = create_mr(s.pd, false);
    let mw = create_mw(s.pd);
    let srq = try_create_srq(s.pd, 4, 1, 0, None).unwrap();
    let connector = env.create_connector();
    let events = Recorder::new();
    let listener = env.create_listener(events);
    let endpoint = env.try_create_endpoint(&env.addr(0)).unwrap();
    let objects: [(
        *mut NDK_OBJECT_HEADER,
        i32,
        NDK_FN_QUERY_EXTENSION_INTERFACE,
    ); 10] = [
        (
            header(env.adapter),
            NdkObjectTypeAdapter,
            adapter_table(env.adapter).NdkQueryExtension,
        ),
        (
            header(s.pd),
            NdkObjectTypePd,
            pd_table(s.pd).NdkQueryExtension,
        ),
        (
            header(s.cq),
            NdkObjectTypeCq,
            cq_table(s.cq).NdkQueryExtension,
        ),
        (
            header(s.qp),
            NdkObjectTypeQp,
            qp_table(s.qp).NdkQueryExtension,
        ),
        (header(mr), NdkObjectTypeMr, mr_table(mr).NdkQueryExtension),
        (header(mw), NdkObjectTypeMw, mw_table(mw).NdkQueryExtension),
        (
            header(srq),
            NdkObjectTypeSrq,
            srq_table(srq).NdkQueryExtension,
        ),
        (
            header(connector),
            NdkObjectTypeConnector,
            connector_table(connector).NdkQueryExtension,
        ),
        (
            header(listener),
            NdkObjectTypeListener,
            listener_table(listener).NdkQueryExtension,
        ),
        (
            header(endpoint),
            NdkObjectTypeSharedEndpoint,
            endpoint_table(endpoint).NdkQueryExtension,
        ),
    ];
    for (object, kind, query) in objects {
        let h = read_header(object);
        assert_eq!(h.ObjectType, kind);
        assert_eq!((h.Version.Major, h.Version.Minor), (1, 2));
        assert!(
            h.NdkReserved.rf.iter().all(|p| p.is_null()),
            "reserved block zeroed"
        );
        let mut guid = GUID::default();
        let mut out = NDK_EXTENSION_INTERFACE::default();
        // SAFETY: our object, valid GUID and out-pointers.
        let status = unsafe {
            query.unwrap()(
                object,
                &raw mut guid,
                NDK_VERSION { Major: 1, Minor: 0 },
                &raw mut out,
            )
        };
        assert_eq!(status, STATUS_NOT_SUPPORTED);
    }
    for o in [
        header(endpoint),
        header(listener),
        header(connector),
        header(srq),
        header(mw),
        header(mr),
        header(s.qp),
        header(s.cq),
        header(s.pd),
    ] {
        close_now(o);
    }
    env.finish();
}

fn dispatch_tables_are_complete(b: Backend) {
    let env = Env::on(b);
    let t = adapter_table(env.adapter);
    assert!(t.NdkQueryExtension.is_some() && t.NdkQueryAdapterInfo.is_some());
    assert!(
        t.NdkCreateCq.is_some() && t.NdkCreatePd.is_some() && t.NdkCreateSharedEndpoint.is_some()
    );
    assert!(t.NdkCreateConnector.is_some() && t.NdkCreateListener.is_some());
    assert!(t.NdkBuildLAM.is_some() && t.NdkReleaseLAM.is_some());
    let notify = Recorder::new();
    let s = env.qp_setup(notify, 4, 1, 0);
    let q = qp_table(s.qp);
    for slot in [
        q.NdkSend.is_some(),
        q.NdkReceive.is_some(),
        q.NdkBind.is_some(),
        q.NdkFastRegister.is_some(),
        q.NdkInvalidate.is_some(),
        q.NdkRead.is_some(),
        q.NdkWrite.is_some(),
        q.NdkSendAndInvalidate.is_some(),
        q.NdkFlush.is_some(),
        q.NdkCloseQp.is_some(),
    ] {
        assert!(slot);
    }
    let c = cq_table(s.cq);
    assert!(
        c.NdkGetCqResultsEx.is_some()
            && c.NdkControlCqInterruptModeration.is_some()
            && c.NdkResizeCq.is_some()
    );
    close_now(s.qp);
    close_now(s.cq);
    close_now(s.pd);
    env.finish();
}

}

fn build_lam(
    env: &Env,
    mdl: &mut Mdl,
    length: usize,
    buf: Option<&mut [u64]>,
    size: &mut u32,
    fbo: &mut u32,
) -> NTSTATUS {
    let f = adapter_table(env.adapter).NdkBuildLAM.unwrap();
    let lam = buf.map_or(ptr::null_mut(), |b| {
        b.as_mut_ptr().cast::<NDK_LOGICAL_ADDRESS_MAPPING>()
    });
    // SAFETY: our adapter, a valid MDL chain, a LAM buffer of `*size`
    // bytes (or null), NULL completion (synchronous).
    unsafe {
        f(
            env.adapter,
            mdl.ptr(),
            length,
            None,
            ptr::null_mut(),
            lam,
            size,
            fbo,
        )
    }
}

fn release_lam(env: &Env, buf: &mut [u64]) {
    let f = adapter_table(env.adapter).NdkReleaseLAM.unwrap();
    // SAFETY: a LAM built on this adapter.
    unsafe { f(env.adapter, buf.as_mut_ptr().cast()) };
}

backend_tests! {

fn build_lam_maps_pages_of_a_chain(b: Backend) {
    let env = Env::on(b);
    let mut pages = Pages::new(4);
    let base = pages.addr();
    // Two MDLs meeting inside page 1: 0x123..0x1800 and 0x1800..0x3100.
    let mut mdl = Mdl::chain(&[(base + 0x123, 0x1800 - 0x123), (base + 0x1800, 0x1900)]);
    let length = 0x3100 - 0x123;
    let (mut size, mut fbo) = (0u32, 0u32);
    assert_eq!(
        build_lam(&env, &mut mdl, length, None, &mut size, &mut fbo),
        STATUS_BUFFER_TOO_SMALL
    );
    assert_eq!(size as usize, NDK_LOGICAL_ADDRESS_MAPPING::size_for(4));
    let mut buf = vec![0u64; size as usize / 8];
    assert_eq!(
        build_lam(&env, &mut mdl, length, Some(&mut buf), &mut size, &mut fbo),
        STATUS_SUCCESS
    );
    assert_eq!(fbo, 0x123);
    assert_eq!(buf[1] as u32, 4, "AdapterPageCount");
    let want: Vec<u64> = (0..4).map(|i| logical_of(base + i * 4096)).collect();
    assert_eq!(
        &buf[2..6],
        &want[..],
        "one logical address per page, the shared page once"
    );
    // A LAM keeps the adapter's close waiting: release it first.
    release_lam(&env, &mut buf);
    release_lam(&env, &mut buf); // a second release is ignored
    let _ = pages.bytes();
    env.finish();
}

fn build_lam_refuses_gaps_and_short_chains(b: Backend) {
    let env = Env::on(b);
    let pages = Pages::new(4);
    let base = pages.addr();
    let mut gap = Mdl::chain(&[(base, 0x1000), (base + 0x2000, 0x1000)]);
    let (mut size, mut fbo) = (1024u32, 0u32);
    let mut buf = vec![0u64; 128];
    assert_eq!(
        build_lam(&env, &mut gap, 0x2000, Some(&mut buf), &mut size, &mut fbo),
        STATUS_INVALID_PARAMETER
    );
    let mut short = Mdl::new(base, 0x1000);
    assert_eq!(
        build_lam(
            &env,
            &mut short,
            0x1001,
            Some(&mut buf),
            &mut size,
            &mut fbo
        ),
        STATUS_INVALID_PARAMETER
    );
    assert_eq!(
        build_lam(&env, &mut short, 0, Some(&mut buf), &mut size, &mut fbo),
        STATUS_INVALID_PARAMETER
    );
    // Only the first `length` bytes matter: a gap after them is fine.
    let mut size = 1024;
    assert_eq!(
        build_lam(&env, &mut gap, 0x800, Some(&mut buf), &mut size, &mut fbo),
        STATUS_SUCCESS
    );
    assert_eq!(buf[1], 1);
    release_lam(&env, &mut buf);
    env.finish();
}

fn privileged_token_is_the_pds(b: Backend) {
    let env = Env::on(b);
    let a = env.create_pd();
    let b = env.create_pd();
    let (ta, tb) = (privileged_token(a), privileged_token(b));
    assert_ne!(ta, tb, "one privileged key per PD");
    assert_eq!(ta, privileged_token(a), "stable");
    close_now(a);
    close_now(b);
    env.finish();
}

fn adapter_close_waits_for_children(b: Backend) {
    let env = Env::on(b);
    let pd = env.create_pd();
    let adapter = env.adapter;
    let pd_addr = pd as usize;
    let child_closing = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&child_closing);
    let closer = std::thread::spawn(move || {
        // The pause only widens the window in which a close that did not
        // wait would return; the check below is about order, not time.
        std::thread::sleep(std::time::Duration::from_millis(50));
        // Raised before the PD close starts: a waiting adapter close cannot
        // return before the PD close has run, so it must see the flag.
        flag.store(true, Ordering::Release);
        close_now(pd_addr as *mut NDK_PD);
    });
    // The PD is closed by the thread.
    assert_eq!(env.close_adapter(adapter), STATUS_SUCCESS);
    assert!(
        child_closing.load(Ordering::Acquire),
        "adapter close returned before its child PD was closed"
    );
    closer.join().unwrap();
    assert_eq!(env.irql(), provider::Irql::Passive);
    env.finish_closed();
}

fn bad_object_pointers_are_refused_not_followed(b: Backend) {
    let env = Env::on(b);
    let pd = env.create_pd();
    let g = pd_table(pd).NdkCreateMr.unwrap();
    let mut out = ptr::null_mut();
    // SAFETY: a null PD is refused before any access.
    let status = unsafe { g(ptr::null_mut(), 0, None, ptr::null_mut(), &raw mut out) };
    assert_eq!(status, STATUS_INVALID_HANDLE);
    // The adapter is not a PD.
    // SAFETY: the provider checks the header type before using the object.
    let status = unsafe { g(env.adapter.cast(), 0, None, ptr::null_mut(), &raw mut out) };
    assert_eq!(status, STATUS_INVALID_HANDLE);
    assert!(out.is_null());
    close_now(pd);
    env.finish();
}

}
