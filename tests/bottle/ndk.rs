//! An NDK adapter of a bottled driver (or of `librsndk.so`) as the bottle
//! tests drive it: its objects created through the dispatch tables, calls
//! that may pend waited out, and memory described the way its kernel sees
//! it (page numbers physical in the bottle's model, virtual on the host).

use std::net::Ipv4Addr;
use std::ptr;

use ndkpi::*;

use testkit::adapter::*;

/// One open `NDK_ADAPTER` and the address of the adapter behind it.
#[derive(Debug)]
pub struct Ndk {
    pub adapter: *mut NDK_ADAPTER,
    pub ip: Ipv4Addr,
    /// The adapter belongs to a bottled driver (else to `librsndk.so`).
    pub bottled: bool,
}

impl Ndk {
    /// A socket address of this adapter.
    pub fn addr(&self, port: u16) -> SockAddr {
        SockAddr::v4(self.ip.octets(), port)
    }

    /// An MDL over `len` bytes at `va` as this adapter's kernel sees it
    /// ([`mdl`]).
    pub fn mdl(&self, va: u64, len: u32) -> Mdl {
        mdl(self.bottled, va, len)
    }

    pub fn create_pd(&self) -> *mut NDK_PD {
        create_pd(self.adapter)
    }

    pub fn create_cq(&self, depth: u32, notify: &Recorder) -> *mut NDK_CQ {
        create_cq(self.adapter, depth, notify)
    }

    pub fn create_connector(&self) -> *mut NDK_CONNECTOR {
        create_connector(self.adapter)
    }

    pub fn create_listener(&self, events: &Recorder) -> *mut NDK_LISTENER {
        create_listener(self.adapter, events)
    }
}

/// An MDL over `len` bytes at `va` as an adapter's kernel sees it:
/// page numbers are physical in the bottle (`phys_of(va) >> 12`),
/// virtual on the host (`bottled` false).
pub fn mdl(bottled: bool, va: u64, len: u32) -> Mdl {
    let mut mdl = Mdl::new(va, len);
    // `set_pfn` adds this thread's suite offset (`logical_of(0)`, set
    // by the last `Env` it opened) to what it is given: give it the
    // page number wanted less that.
    let thread_offset = logical_of(0) >> 12;
    let first = va & !0xfff;
    let pages = ((va & 0xfff) + u64::from(len)).div_ceil(4096);
    for i in 0..pages {
        let page = first + i * 4096;
        let pfn = if bottled {
            kbottle::mm::phys_of(page as usize) >> 12
        } else {
            page >> 12
        };
        mdl.set_pfn(0, i as usize, pfn - thread_offset);
    }
    mdl
}

pub fn create_pd(adapter: *mut NDK_ADAPTER) -> *mut NDK_PD {
    let mut pd = ptr::null_mut();
    let rec = Recorder::new();
    let f = adapter_table(adapter).NdkCreatePd.unwrap();
    // SAFETY: the caller's open adapter and a valid out-pointer.
    let status = unsafe { f(adapter, Some(create_cb), rec.ctx(), &raw mut pd) };
    assert_eq!(
        finish(status, rec, "create PD"),
        STATUS_SUCCESS,
        "NdkCreatePd"
    );
    pd
}

pub fn create_cq(adapter: *mut NDK_ADAPTER, depth: u32, notify: &Recorder) -> *mut NDK_CQ {
    let mut cq = ptr::null_mut();
    let rec = Recorder::new();
    let f = adapter_table(adapter).NdkCreateCq.unwrap();
    // SAFETY: the caller's open adapter and a valid out-pointer; `notify` lives for
    // the whole test binary.
    let status = unsafe {
        f(
            adapter,
            depth,
            Some(cq_cb),
            notify.ctx(),
            ptr::null_mut(),
            Some(create_cb),
            rec.ctx(),
            &raw mut cq,
        )
    };
    assert_eq!(
        finish(status, rec, "create CQ"),
        STATUS_SUCCESS,
        "NdkCreateCq"
    );
    cq
}

pub fn create_connector(adapter: *mut NDK_ADAPTER) -> *mut NDK_CONNECTOR {
    let mut c = ptr::null_mut();
    let rec = Recorder::new();
    let f = adapter_table(adapter).NdkCreateConnector.unwrap();
    // SAFETY: the caller's open adapter and a valid out-pointer.
    let status = unsafe { f(adapter, Some(create_cb), rec.ctx(), &raw mut c) };
    assert_eq!(
        finish(status, rec, "create connector"),
        STATUS_SUCCESS,
        "NdkCreateConnector"
    );
    c
}

pub fn create_listener(adapter: *mut NDK_ADAPTER, events: &Recorder) -> *mut NDK_LISTENER {
    let mut l = ptr::null_mut();
    let rec = Recorder::new();
    let f = adapter_table(adapter).NdkCreateListener.unwrap();
    // SAFETY: the caller's open adapter and a valid out-pointer; `events` lives for
    // the whole test binary.
    let status = unsafe {
        f(
            adapter,
            Some(connect_cb),
            events.ctx(),
            Some(create_cb),
            rec.ctx(),
            &raw mut l,
        )
    };
    assert_eq!(
        finish(status, rec, "create listener"),
        STATUS_SUCCESS,
        "NdkCreateListener"
    );
    l
}

/// The final status of a call that may pend: its return value, or the one
/// its callback reports.
pub fn finish(status: NTSTATUS, rec: &Recorder, what: &str) -> NTSTATUS {
    if status == STATUS_PENDING {
        wait_until(what, || rec.count() >= 1);
        rec.statuses()[0]
    } else {
        status
    }
}

/// Closes any NDK object: at once, or (while the device still completes
/// work of it, or a callback of it is returning) with exactly one close
/// completion.
pub fn close_wait<T>(object: *mut T) {
    let rec = Recorder::new();
    let status = close(object, rec);
    let what = format!("close of {}", std::any::type_name::<T>());
    match status {
        STATUS_SUCCESS => assert_eq!(rec.count(), 0, "{what}: a callback for a synchronous close"),
        STATUS_PENDING => {
            wait_until(&what, || rec.count() >= 1);
            assert_eq!(
                rec.statuses(),
                vec![STATUS_SUCCESS],
                "{what}: one close completion"
            );
        }
        status => panic!("{what}: {status:#010x}"),
    }
}

/// Exactly `n` results of `cq` (bounded wait).
pub fn wait_results(cq: *mut NDK_CQ, n: usize) -> Vec<NDK_RESULT_EX> {
    let mut got = Vec::new();
    wait_until(&format!("{n} CQ results"), || {
        got.extend(results_ex(cq, n - got.len()));
        got.len() >= n
    });
    got
}
