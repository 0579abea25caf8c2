//! The adapter under test and what stands behind it: the scripted device
//! (completes WQEs and delivers CM events when told), or the software RNIC
//! opened with `RsNdkOpenAdapter` on the in-memory fabric or on UDP over
//! loopback. Test bodies are written once against [`Env`] and run on every
//! backend through [`backend_tests!`].
//!
//! On the RNIC, completions and CM events arrive on device threads: every
//! wait here is a bounded poll whose limit is a hang guard, never a
//! performance assertion.

use std::ffi::CString;
use std::ptr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::scripted::{ADDR_V4, DEFAULT_CAPS, ScriptedDevice};
use host::platform::HostPlatform;
use hwq::TryArc;
use hwq::device::DeviceCaps;
use ndkpi::{
    NDK_ADAPTER, NDK_ADAPTER_INFO, NDK_CONNECTOR, NDK_CQ, NDK_LISTENER, NDK_MR,
    NDK_MR_FLAG_ALLOW_LOCAL_WRITE, NDK_MR_FLAG_ALLOW_REMOTE_READ, NDK_MR_FLAG_ALLOW_REMOTE_WRITE,
    NDK_PD, NDK_QP, NDK_RESULT, NDK_RESULT_EX, NDK_SGE, NDK_SHARED_ENDPOINT, NDK_VERSION, NTSTATUS,
    STATUS_PENDING, STATUS_SHARING_VIOLATION, STATUS_SUCCESS,
};
use provider::DeviceContext;

use super::{
    Backend, Mdl, Recorder, SockAddr, accept, adapter_table, close_now, complete_connect, connect,
    connect_cb, cq_cb, create_cb, create_qp, listen, logical_of, mr_tokens, privileged_token,
    receive, registered_mr, results, results_ex, set_pfn_offset, sge,
};

/// Hang guard of every wait on the RNIC.
pub const WAIT: Duration = Duration::from_secs(10);

/// Grace period in which nothing more may arrive (negative checks on the
/// RNIC).
pub const SETTLE: Duration = Duration::from_millis(30);

thread_local! {
    static ASYNC_DEVICE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether the last [`Env`] this thread opened runs on the RNIC, whose
/// callbacks come from device threads (so a close may briefly pend).
pub fn device_is_async() -> bool {
    ASYNC_DEVICE.with(std::cell::Cell::get)
}

static NEXT_MEM: AtomicU32 = AtomicU32::new(0);
static NEXT_UDP: AtomicU32 = AtomicU32::new(0);
static NEXT_MEM6: AtomicU32 = AtomicU32::new(0);

/// A configuration string with an address (and fabric) no other adapter
/// of this process uses: mem nodes 127.0.8.x-127.0.9.x on fabrics
/// `suite<N>`, UDP nodes 127.0.10.x-127.0.15.x.
fn unique_config(backend: Backend) -> String {
    match backend {
        Backend::Scripted => String::new(),
        Backend::Mem => {
            let n = NEXT_MEM.fetch_add(1, Ordering::SeqCst);
            assert!(n < 2 * 254, "mem address block exhausted");
            format!("mem:suite{n}/127.0.{}.{}", 8 + n / 254, 1 + n % 254)
        }
        Backend::Udp => {
            let n = NEXT_UDP.fetch_add(1, Ordering::SeqCst);
            assert!(n < 6 * 254, "udp address block exhausted");
            format!("udp:127.0.{}.{}", 10 + n / 254, 1 + n % 254)
        }
        // Bottled adapters are miniport adapters, named by keywords.
        #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
        Backend::Bottle => String::new(),
    }
}

/// Polls `done` every 100 µs until it holds; panics after [`WAIT`].
pub fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_micros(100));
    }
}

struct Scripted {
    dev: Arc<ScriptedDevice>,
    ctx: TryArc<DeviceContext>,
}

/// Runs work at DISPATCH_LEVEL on the platform the provider under test
/// runs on: the checked host platform's simulated IRQL, or the calling
/// bottle processor's own (the bottled driver reads it through
/// `KeGetCurrentIrql`).
#[derive(Clone, Copy, Debug)]
pub struct AtDispatch {
    host: &'static HostPlatform,
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    bottle: bool,
}

impl AtDispatch {
    /// Runs `f` at DISPATCH_LEVEL.
    pub fn run<R>(self, f: impl FnOnce() -> R) -> R {
        #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
        if self.bottle {
            return super::bottle::at_dispatch(f);
        }
        self.host.at_dispatch(f)
    }
}

/// The adapter under test.
pub struct Env {
    /// What the adapter runs on.
    pub backend: Backend,
    /// The checked host platform (the provider's, on the host backends).
    pub platform: &'static HostPlatform,
    /// The adapter under test.
    pub adapter: *mut NDK_ADAPTER,
    /// The adapter's IPv4 address.
    pub ip: [u8; 4],
    /// The RNIC configuration string (empty on the scripted device and
    /// in the bottle).
    pub config: String,
    /// The adapter's IPv6 address when the test runs over IPv6
    /// ([`Env::on_v6`]): [`Env::addr`] is then a `SOCKADDR_IN6`.
    pub ip6: Option<[u8; 16]>,
    /// Held while this adapter owns `[::1]`:4791 ([`Env::on_v6`] on UDP).
    _ipv6_loopback: Option<std::sync::MutexGuard<'static, ()>>,
    scripted: Option<Scripted>,
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    bottled: Option<super::bottle::Bottled>,
}

impl std::fmt::Debug for Env {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Env")
            .field("backend", &self.backend)
            .field("adapter", &self.adapter)
            .field("ip", &self.ip)
            .field("config", &self.config)
            .field("ip6", &self.ip6)
            .finish_non_exhaustive()
    }
}

impl Env {
    /// An adapter over a scripted device with the default capabilities.
    // Not `Default`: it opens an adapter.
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        Self::on(Backend::Scripted)
    }

    /// An adapter on `backend` (the RNIC ones at a fresh address).
    pub fn on(backend: Backend) -> Self {
        ASYNC_DEVICE.with(|a| a.set(backend != Backend::Scripted));
        set_pfn_offset(0);
        if backend == Backend::Scripted {
            return Self::with_device(ScriptedDevice::with_default_caps());
        }
        #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
        if backend == Backend::Bottle {
            return Self::bottled(false);
        }
        let (config, adapter) = loop {
            let config = unique_config(backend);
            let c = CString::new(config.clone()).unwrap();
            let mut adapter = ptr::null_mut();
            // SAFETY: a valid C string and out-pointer.
            let status = unsafe { host::RsNdkOpenAdapter(c.as_ptr(), &raw mut adapter) };
            // Another process (a concurrent test run) may hold that UDP
            // address: take the next one.
            if status == STATUS_SHARING_VIOLATION && backend == Backend::Udp {
                continue;
            }
            assert_eq!(status, STATUS_SUCCESS, "open {config}");
            break (config, adapter);
        };
        let ip = config
            .rsplit(['/', ':'])
            .next()
            .unwrap()
            .parse::<std::net::Ipv4Addr>()
            .unwrap()
            .octets();
        Self {
            backend,
            platform: HostPlatform::for_device(ip.into()),
            adapter,
            ip,
            config,
            ip6: None,
            _ipv6_loopback: None,
            scripted: None,
            #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
            bottled: None,
        }
    }

    /// An adapter on `backend` whose test runs over IPv6: its address is
    /// an IPv6 one and [`Env::addr`] gives `SOCKADDR_IN6` addresses. The
    /// scripted device owns [`crate::scripted::ADDR_V6`] besides its IPv4
    /// address; the RNIC is opened at a fresh `mem:NAME/[fd00::8:N]`, or at
    /// `udp:[::1]`, the one IPv6 loopback address, which one adapter owns
    /// at a time: this waits (bounded) while another test of this process,
    /// or another process, holds it. A bottled adapter's interface is
    /// given a fresh IPv6 address (`fd00:5253:0:N::H/64`) and no IPv4 one.
    pub fn on_v6(backend: Backend) -> Self {
        if backend == Backend::Scripted {
            return Self {
                ip6: Some(crate::scripted::ADDR_V6.octets()),
                ..Self::on(backend)
            };
        }
        #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
        if backend == Backend::Bottle {
            return Self::bottled(true);
        }
        ASYNC_DEVICE.with(|a| a.set(true));
        set_pfn_offset(0);
        let held = (backend == Backend::Udp).then(|| {
            static IPV6_LOOPBACK: std::sync::Mutex<()> = std::sync::Mutex::new(());
            IPV6_LOOPBACK
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        });
        let config = if backend == Backend::Udp {
            "udp:[::1]".to_owned()
        } else {
            let n = NEXT_MEM6.fetch_add(1, Ordering::SeqCst);
            format!("mem:suite6x{n}/[fd00::8:{:x}]", n + 1)
        };
        let c = CString::new(config.clone()).unwrap();
        let deadline = Instant::now() + 12 * WAIT;
        let adapter = loop {
            let mut adapter = ptr::null_mut();
            // SAFETY: a valid C string and out-pointer.
            let status = unsafe { host::RsNdkOpenAdapter(c.as_ptr(), &raw mut adapter) };
            // Another process (a concurrent test run) holds [::1]:4791.
            if status == STATUS_SHARING_VIOLATION && backend == Backend::Udp {
                assert!(Instant::now() < deadline, "{config} stayed taken");
                std::thread::sleep(Duration::from_millis(20));
                continue;
            }
            assert_eq!(status, STATUS_SUCCESS, "open {config}");
            break adapter;
        };
        let ip6 = config
            .split_once('[')
            .and_then(|(_, rest)| rest.split_once(']'))
            .map(|(addr, _)| addr.parse::<std::net::Ipv6Addr>().unwrap())
            .unwrap();
        Self {
            backend,
            platform: HostPlatform::for_address(ip6.into()),
            adapter,
            ip: [0; 4],
            config,
            ip6: Some(ip6.octets()),
            _ipv6_loopback: held,
            scripted: None,
            #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
            bottled: None,
        }
    }

    /// An adapter over `device` (the scripted backend).
    pub fn with_device(device: ScriptedDevice) -> Self {
        ASYNC_DEVICE.with(|a| a.set(false));
        let platform = HostPlatform::leaked();
        let dev = Arc::new(device);
        let ctx = DeviceContext::new(hwq::SharedDevice::from_arc(dev.clone()), platform)
            .expect("device context");
        let adapter =
            provider::open_adapter(&ctx, NDK_VERSION { Major: 1, Minor: 2 }).expect("open adapter");
        Self {
            backend: Backend::Scripted,
            platform,
            adapter,
            ip: ADDR_V4.octets(),
            config: String::new(),
            ip6: None,
            _ipv6_loopback: None,
            scripted: Some(Scripted { dev, ctx }),
            #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
            bottled: None,
        }
    }

    /// An adapter of the bottled driver, at a fresh IPv4 address or (`v6`)
    /// a fresh IPv6 one. Its provider runs on the driver's kernel platform,
    /// so [`Env::platform`] is a host platform no device uses (its checks
    /// pass vacuously; the bottle's own Verifier-style checks stand in for
    /// them).
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    fn bottled(v6: bool) -> Self {
        ASYNC_DEVICE.with(|a| a.set(true));
        let (bottled, adapter) = super::bottle::open(v6);
        set_pfn_offset(super::bottle::pfn_offset());
        let (ip, ip6) = match bottled.ip {
            std::net::IpAddr::V4(v4) => (v4.octets(), None),
            std::net::IpAddr::V6(v6) => ([0; 4], Some(v6.octets())),
        };
        Self {
            backend: Backend::Bottle,
            platform: HostPlatform::leaked(),
            adapter,
            ip,
            config: String::new(),
            ip6,
            _ipv6_loopback: None,
            scripted: None,
            bottled: Some(bottled),
        }
    }

    /// Runs `f` at DISPATCH_LEVEL, on the platform the provider under
    /// test runs on (see [`AtDispatch`]).
    pub fn at_dispatch<R>(&self, f: impl FnOnce() -> R) -> R {
        self.dispatcher().run(f)
    }

    /// What raises a thread to DISPATCH_LEVEL for this adapter's provider,
    /// to hand to other threads.
    pub fn dispatcher(&self) -> AtDispatch {
        AtDispatch {
            host: self.platform,
            #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
            bottle: self.bottled.is_some(),
        }
    }

    /// The calling thread's IRQL as the provider under test sees it.
    pub fn irql(&self) -> provider::Irql {
        #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
        if self.bottled.is_some() {
            return super::bottle::irql();
        }
        HostPlatform::irql()
    }

    /// Whether the adapter runs on the scripted device.
    pub fn is_scripted(&self) -> bool {
        self.scripted.is_some()
    }

    /// The scripted device; panics on the RNIC (scripted-only checks must
    /// be guarded by [`Env::is_scripted`]).
    pub fn dev(&self) -> &Arc<ScriptedDevice> {
        &self
            .scripted
            .as_ref()
            .expect("a scripted-device check on the RNIC")
            .dev
    }

    /// The provider's device context (scripted device only).
    pub fn ctx(&self) -> &TryArc<DeviceContext> {
        &self
            .scripted
            .as_ref()
            .expect("the device context of the RNIC is the host's")
            .ctx
    }

    /// The capabilities of the device behind the adapter.
    pub fn caps(&self) -> DeviceCaps {
        #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
        if self.bottled.is_some() {
            return super::bottle::caps();
        }
        match &self.scripted {
            Some(s) => {
                let _ = &s.dev;
                DEFAULT_CAPS
            }
            None => host::adapters::device_of(self.adapter)
                .expect("an open RNIC adapter")
                .config()
                .caps(),
        }
    }

    /// The adapter's address as IPv6 (its own on an IPv6 adapter and on
    /// the scripted device; the IPv4-mapped form of an IPv4 RNIC's, which
    /// it does not own).
    pub fn v6(&self) -> [u8; 16] {
        if let Some(ip6) = self.ip6 {
            ip6
        } else if self.is_scripted() {
            crate::scripted::ADDR_V6.octets()
        } else {
            std::net::Ipv4Addr::from(self.ip).to_ipv6_mapped().octets()
        }
    }

    /// A socket address of this adapter (IPv6 on an [`Env::on_v6`] one).
    pub fn addr(&self, port: u16) -> SockAddr {
        match self.ip6 {
            Some(ip6) => SockAddr::v6(ip6, port),
            None => SockAddr::v4(self.ip, port),
        }
    }

    /// Opens another `NDK_ADAPTER` on the same device, asking for NDK
    /// version `major.minor`.
    pub fn open_another(&self, major: u16, minor: u16) -> Result<*mut NDK_ADAPTER, NTSTATUS> {
        let version = NDK_VERSION {
            Major: major,
            Minor: minor,
        };
        if let Some(s) = &self.scripted {
            return provider::open_adapter(&s.ctx, version);
        }
        #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
        if let Some(b) = self.bottled {
            return super::bottle::open_another(b, major, minor);
        }
        let c = CString::new(self.config.clone()).unwrap();
        let mut adapter = ptr::null_mut();
        // SAFETY: a valid C string and out-pointer.
        let status =
            unsafe { host::RsNdkOpenAdapterEx(c.as_ptr(), major, minor, &raw mut adapter) };
        if status == STATUS_SUCCESS {
            Ok(adapter)
        } else {
            Err(status)
        }
    }

    /// Closes an adapter of [`Env::open_another`] (or this one, as the
    /// last act of a test).
    pub fn close_adapter(&self, adapter: *mut NDK_ADAPTER) -> NTSTATUS {
        #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
        if let Some(b) = self.bottled {
            return super::bottle::close_adapter(b, adapter);
        }
        if self.is_scripted() {
            // SAFETY: an adapter of ours, closed once.
            unsafe { provider::close_adapter(adapter) }
        } else {
            // SAFETY: an adapter of ours, closed once.
            unsafe { host::RsNdkCloseAdapter(adapter) }
        }
    }

    /// Lets CM events and completions happen: the scripted device delivers
    /// its queued events once; on the RNIC, waits until `done` holds
    /// (bounded). The caller then asserts what it expects.
    pub fn pump(&self, done: impl FnMut() -> bool) {
        match &self.scripted {
            Some(s) => {
                s.dev.deliver_events();
            }
            None => wait_until("device progress", done),
        }
    }

    /// Gives the device a moment in which nothing more should happen
    /// (negative checks): the scripted device delivers what is queued; on
    /// the RNIC, a short grace period.
    pub fn settle(&self) {
        match &self.scripted {
            Some(s) => {
                s.dev.deliver_events();
            }
            None => std::thread::sleep(SETTLE),
        }
    }

    /// Collects `n` results of `cq`: what is there on the scripted device,
    /// waiting for them on the RNIC. Never more than `n`.
    pub fn results(&self, cq: *mut NDK_CQ, n: usize) -> Vec<NDK_RESULT> {
        self.collect(n, |k| results(cq, k))
    }

    /// As [`Env::results`], with `NdkGetCqResultsEx`.
    pub fn results_ex(&self, cq: *mut NDK_CQ, n: usize) -> Vec<NDK_RESULT_EX> {
        self.collect(n, |k| results_ex(cq, k))
    }

    /// `n` results taken by `take(at_most)`: one take on the scripted
    /// device, takes until there are `n` on the RNIC.
    fn collect<T>(&self, n: usize, mut take: impl FnMut(usize) -> Vec<T>) -> Vec<T> {
        let mut got = take(n);
        if !self.is_scripted() {
            wait_until(&format!("{n} CQ results"), || {
                got.extend(take(n - got.len()));
                got.len() >= n
            });
        }
        got
    }

    /// On the RNIC, waits for `n` successful completions the device makes
    /// on its own (binds, invalidates, fast registers, ...) and returns
    /// them; the scripted device makes none until told, so nothing there.
    pub fn device_completions(&self, cq: *mut NDK_CQ, n: usize) -> Vec<NDK_RESULT_EX> {
        if self.is_scripted() {
            return Vec::new();
        }
        let r = self.results_ex(cq, n);
        for x in &r {
            assert_eq!(x.Status, STATUS_SUCCESS, "device completion {x:?}");
        }
        r
    }

    /// Has the scripted device complete the next `n` send-queue WQEs of
    /// `s` successfully; the RNIC completes them on its own.
    pub fn complete_sends(&self, s: &Setup, n: usize) {
        if let Some(sc) = &self.scripted {
            for _ in 0..n {
                sc.dev
                    .complete_next_send(s.qpn, hwq::CqeStatus::Success)
                    .expect("a posted WQE");
            }
        }
    }

    /// Closes the adapter and checks that nothing is left: on the scripted
    /// device, no routed objects, no device objects, no pool bytes; on the
    /// RNIC, the close succeeds (it returns only when no callback can run).
    pub fn finish(self) {
        let status = self.close_adapter(self.adapter);
        assert_eq!(status, STATUS_SUCCESS, "close adapter {}", self.config);
        self.finish_closed();
    }

    /// The checks of [`Env::finish`] once the adapter is closed.
    pub fn finish_closed(self) {
        // The checked platform: no rule broken (on the RNIC, pool leaks
        // are reported as violations when the device stops).
        self.platform.assert_no_violations();
        // A bottled adapter is halted, which stops its RNIC: a leak or a
        // broken rule there is a bottle bugcheck.
        #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
        if let Some(b) = self.bottled {
            super::bottle::halt(b);
        }
        let Some(s) = self.scripted else {
            return;
        };
        assert_eq!(s.ctx.routed_objects(), 0, "objects left in routing tables");
        s.ctx.detach();
        assert!(!s.dev.attached());
        drop(s.ctx);
        assert_eq!(s.dev.live_objects(), 0, "device objects left");
        let left = self.platform.outstanding();
        assert!(left.is_empty(), "pool not released: {left:?}");
    }

    /// `NdkQueryAdapterInfo`; must succeed.
    pub fn info(&self) -> NDK_ADAPTER_INFO {
        let mut info = std::mem::MaybeUninit::<NDK_ADAPTER_INFO>::zeroed();
        let mut size = size_of::<NDK_ADAPTER_INFO>() as u32;
        let f = adapter_table(self.adapter).NdkQueryAdapterInfo.unwrap();
        // SAFETY: our adapter; the buffer holds a full NDK_ADAPTER_INFO.
        let status = unsafe { f(self.adapter, info.as_mut_ptr(), &raw mut size) };
        assert_eq!(status, STATUS_SUCCESS);
        // SAFETY: the provider filled it.
        unsafe { info.assume_init() }
    }

    // ---- adapter children ----

    /// `NdkCreatePd`: the PD or the refusal.
    pub fn try_create_pd(&self) -> Result<*mut NDK_PD, NTSTATUS> {
        let mut pd = ptr::null_mut();
        let f = adapter_table(self.adapter).NdkCreatePd.unwrap();
        // SAFETY: our adapter and a valid out-pointer.
        let status = unsafe { f(self.adapter, Some(create_cb), ptr::null_mut(), &raw mut pd) };
        if status == STATUS_SUCCESS {
            Ok(pd)
        } else {
            Err(status)
        }
    }

    /// `NdkCreatePd`; must succeed.
    pub fn create_pd(&self) -> *mut NDK_PD {
        self.try_create_pd().expect("create pd")
    }

    /// `NdkCreateCq` of `depth` entries, notifications recorded by `notify`: the CQ or the refusal.
    pub fn try_create_cq(&self, depth: u32, notify: &Recorder) -> Result<*mut NDK_CQ, NTSTATUS> {
        let mut cq = ptr::null_mut();
        let f = adapter_table(self.adapter).NdkCreateCq.unwrap();
        // SAFETY: our adapter and a valid out-pointer.
        let status = unsafe {
            f(
                self.adapter,
                depth,
                Some(cq_cb),
                notify.ctx(),
                ptr::null_mut(),
                Some(create_cb),
                ptr::null_mut(),
                &raw mut cq,
            )
        };
        if status == STATUS_SUCCESS {
            Ok(cq)
        } else {
            Err(status)
        }
    }

    /// `NdkCreateCq`; must succeed.
    pub fn create_cq(&self, depth: u32, notify: &Recorder) -> *mut NDK_CQ {
        self.try_create_cq(depth, notify).expect("create cq")
    }

    /// `NdkCreateConnector`; must succeed.
    pub fn create_connector(&self) -> *mut NDK_CONNECTOR {
        let mut c = ptr::null_mut();
        let f = adapter_table(self.adapter).NdkCreateConnector.unwrap();
        // SAFETY: our adapter and a valid out-pointer.
        let status = unsafe { f(self.adapter, Some(create_cb), ptr::null_mut(), &raw mut c) };
        assert_eq!(status, STATUS_SUCCESS);
        c
    }

    /// `NdkCreateListener`, connect events recorded by `events`; must succeed.
    pub fn create_listener(&self, events: &Recorder) -> *mut NDK_LISTENER {
        let mut l = ptr::null_mut();
        let f = adapter_table(self.adapter).NdkCreateListener.unwrap();
        // SAFETY: our adapter and a valid out-pointer.
        let status = unsafe {
            f(
                self.adapter,
                Some(connect_cb),
                events.ctx(),
                Some(create_cb),
                ptr::null_mut(),
                &raw mut l,
            )
        };
        assert_eq!(status, STATUS_SUCCESS);
        l
    }

    /// `NdkCreateSharedEndpoint` bound to `addr`: the endpoint or the refusal.
    pub fn try_create_endpoint(
        &self,
        addr: &SockAddr,
    ) -> Result<*mut NDK_SHARED_ENDPOINT, NTSTATUS> {
        let mut e = ptr::null_mut();
        let f = adapter_table(self.adapter).NdkCreateSharedEndpoint.unwrap();
        // SAFETY: our adapter, a valid address and out-pointer.
        let status = unsafe {
            f(
                self.adapter,
                addr.ptr(),
                addr.len(),
                Some(create_cb),
                ptr::null_mut(),
                &raw mut e,
            )
        };
        if status == STATUS_SUCCESS {
            Ok(e)
        } else {
            Err(status)
        }
    }

    /// A PD, one CQ for both directions and a QP with the given limits.
    pub fn qp_setup(&self, notify: &Recorder, depth: u32, sge: u32, inline: u32) -> Setup {
        let pd = self.create_pd();
        let cq = self.create_cq(64, notify);
        let context = 0x5100 + CONTEXTS.fetch_add(1, Ordering::SeqCst) as usize;
        let qp = create_qp(pd, cq, cq, context, depth, depth, sge, sge, inline).expect("create qp");
        let (qpn, cqn) = if self.is_scripted() {
            let qpn = self.qpn_of(context);
            (qpn, self.dev().qp_info(qpn).unwrap().0)
        } else {
            (0, 0)
        };
        Setup {
            pd,
            cq,
            qp,
            qpn,
            cqn,
            context,
            scratch: Scratch::new(pd),
        }
    }

    /// The device's number of the QP created with `context` (scripted).
    pub fn qpn_of(&self, context: usize) -> u32 {
        let dev = self.dev();
        dev.qpns()
            .into_iter()
            .find(|q| dev.qp_info(*q).is_some_and(|i| i.2 == context as u64))
            .expect("a QP with that context")
    }
}

static CONTEXTS: AtomicU64 = AtomicU64::new(0);

/// A leaked buffer of [`Scratch::LEN`] bytes reachable through a PD's
/// privileged token: valid local memory for any post on any backend.
#[derive(Clone, Copy, Debug)]
pub struct Scratch {
    /// Where the test reads and writes it.
    pub va: u64,
    /// Its logical address, what an SGE under the privileged token names
    /// (the virtual address on the host, the physical one in the bottle).
    pub logical: u64,
    /// The PD's privileged token, which covers it.
    pub token: u32,
}

impl Scratch {
    /// Its length in bytes.
    pub const LEN: usize = 64 * 1024;

    /// A new buffer under `pd`'s privileged token.
    pub fn new(pd: *mut NDK_PD) -> Self {
        let buf: &'static mut [u8] = Box::leak(vec![0u8; Self::LEN].into_boxed_slice());
        let va = buf.as_mut_ptr() as u64;
        Self {
            va,
            logical: logical_of(va),
            token: privileged_token(pd),
        }
    }

    /// An SGE over `len` bytes at `offset`.
    pub fn sge(&self, offset: usize, len: usize) -> NDK_SGE {
        assert!(offset + len <= Self::LEN);
        sge(self.logical + offset as u64, len as u32, self.token)
    }

    /// The bytes at `offset`.
    pub fn bytes(&self, offset: usize, len: usize) -> Vec<u8> {
        assert!(offset + len <= Self::LEN);
        // SAFETY: inside the leaked buffer; only devices write it, and the
        // tests read it after the completion that wrote it.
        unsafe { std::slice::from_raw_parts((self.va as usize + offset) as *const u8, len) }
            .to_vec()
    }

    /// Overwrites the bytes at `offset`.
    pub fn fill(&self, offset: usize, data: &[u8]) {
        assert!(offset + data.len() <= Self::LEN);
        // SAFETY: inside the leaked buffer, no request in flight on it.
        unsafe {
            std::ptr::copy_nonoverlapping(
                data.as_ptr(),
                (self.va as usize + offset) as *mut u8,
                data.len(),
            );
        }
    }
}

/// A PD, a CQ and a QP, with the device's numbers (scripted; 0 on the
/// RNIC) and a scratch buffer.
#[derive(Clone, Copy, Debug)]
pub struct Setup {
    /// The PD.
    pub pd: *mut NDK_PD,
    /// The CQ of both directions.
    pub cq: *mut NDK_CQ,
    /// The QP.
    pub qp: *mut NDK_QP,
    /// The QP's device number (scripted; 0 on the RNIC).
    pub qpn: u32,
    /// The CQ's device number (scripted; 0 on the RNIC).
    pub cqn: u32,
    /// The QP's context, as its completions carry it.
    pub context: usize,
    /// Local memory for its posts.
    pub scratch: Scratch,
}

impl Setup {
    /// An SGE over the scratch buffer.
    pub fn sg(&self, offset: usize, len: usize) -> NDK_SGE {
        self.scratch.sge(offset, len)
    }

    /// Posts `n` receives of `len` bytes each (contexts `ctx..ctx+n`).
    pub fn post_receives(&self, ctx: usize, n: usize, len: usize) {
        for i in 0..n {
            let at = (Scratch::LEN / 2 + i * len) % (Scratch::LEN - len);
            assert_eq!(
                receive(self.qp, ctx + i, &[self.sg(at, len)]),
                STATUS_SUCCESS
            );
        }
    }
}

// ---------------------------------------------------------------- connections

/// Both ends of a connection made through the adapter's CM: scripted CM
/// events on the scripted device, the real CM (loopback to the adapter's
/// own address) on the RNIC.
#[derive(Debug)]
pub struct Pair {
    /// The passive side's listener.
    pub listener: *mut NDK_LISTENER,
    /// The active side's connector.
    pub active: *mut NDK_CONNECTOR,
    /// The passive side's connector.
    pub passive: *mut NDK_CONNECTOR,
    /// The active side's PD, CQ and QP.
    pub active_qp: Setup,
    /// The passive side's PD, CQ and QP.
    pub passive_qp: Setup,
    /// The listener's connect events.
    pub listen_events: &'static Recorder,
    /// The active connector's disconnects.
    pub active_disc: &'static Recorder,
    /// The passive connector's disconnects.
    pub passive_disc: &'static Recorder,
    /// The CQs' notifications (both sides).
    pub notify: &'static Recorder,
    /// The passive side's remotely accessible region, made on first use.
    target: std::cell::RefCell<Option<(*mut NDK_MR, Mdl, Remote)>>,
}

/// A region the peer may read and write: its address and remote token.
#[derive(Clone, Copy, Debug)]
pub struct Remote {
    /// Its address (as the peer names it).
    pub va: u64,
    /// Its remote token.
    pub token: u32,
}

impl Remote {
    /// Its length in bytes.
    pub const LEN: usize = 64 * 1024;
}

static PORTS: AtomicU32 = AtomicU32::new(0);

/// A listening port no other test of this process uses.
pub fn fresh_port() -> u16 {
    4000 + PORTS.fetch_add(1, Ordering::SeqCst) as u16
}

/// A connection between two QPs: its listener, connectors and recorders.
#[derive(Debug)]
pub struct Link {
    /// The passive side's listener.
    pub listener: *mut NDK_LISTENER,
    /// The active side's connector.
    pub active: *mut NDK_CONNECTOR,
    /// The passive side's connector.
    pub passive: *mut NDK_CONNECTOR,
    /// The listener's connect events.
    pub listen_events: &'static Recorder,
    /// The active connector's disconnects.
    pub active_disc: &'static Recorder,
    /// The passive connector's disconnects.
    pub passive_disc: &'static Recorder,
}

impl Link {
    /// Closes the connectors and the listener, each synchronously.
    pub fn close(&self) {
        close_now(self.active);
        close_now(self.passive);
        close_now(self.listener);
    }
}

impl Env {
    /// Connects QP `a` to QP `b` (both of this adapter) through a listener
    /// on a fresh port, checking every step's status.
    pub fn link(&self, a: *mut NDK_QP, b: *mut NDK_QP) -> Link {
        let listen_events = Recorder::new();
        let listener = self.create_listener(listen_events);
        let port = fresh_port();
        assert_eq!(listen(listener, &self.addr(port)), STATUS_SUCCESS);
        let active = self.create_connector();
        let connected = Recorder::new();
        let status = connect(
            active,
            a,
            &self.addr(0),
            &self.addr(port),
            b"hello",
            connected,
        );
        assert_eq!(status, STATUS_PENDING);
        self.pump(|| listen_events.count() >= 1);
        assert_eq!(listen_events.count(), 1, "connect event");
        let passive = listen_events.calls()[0].object as *mut NDK_CONNECTOR;
        let accepted = Recorder::new();
        let passive_disc = Recorder::new();
        assert_eq!(
            accept(passive, b, b"welcome", passive_disc, accepted),
            STATUS_PENDING
        );
        self.pump(|| connected.count() >= 1);
        assert_eq!(
            connected.statuses(),
            vec![STATUS_SUCCESS],
            "connect completes"
        );
        let active_disc = Recorder::new();
        assert_eq!(complete_connect(active, active_disc), STATUS_SUCCESS);
        self.pump(|| accepted.count() >= 1);
        assert_eq!(
            accepted.statuses(),
            vec![STATUS_SUCCESS],
            "accept completes"
        );
        Link {
            listener,
            active,
            passive,
            listen_events,
            active_disc,
            passive_disc,
        }
    }

    /// Connects two QPs of this adapter to each other, checking every
    /// step's status.
    pub fn connected_pair(&self, depth: u32, sge: u32, inline: u32) -> Pair {
        let notify = Recorder::new();
        let active_qp = self.qp_setup(notify, depth, sge, inline);
        let passive_qp = self.qp_setup(notify, depth, sge, inline);
        let Link {
            listener,
            active,
            passive,
            listen_events,
            active_disc,
            passive_disc,
        } = self.link(active_qp.qp, passive_qp.qp);
        Pair {
            listener,
            active,
            passive,
            active_qp,
            passive_qp,
            listen_events,
            active_disc,
            passive_disc,
            notify,
            target: std::cell::RefCell::new(None),
        }
    }
}

impl Pair {
    /// A region of the passive side (its PD) the active side may read and
    /// write with RDMA ([`Remote::LEN`] bytes, registered on first use and
    /// closed by [`Pair::close`]).
    pub fn remote(&self) -> Remote {
        let mut t = self.target.borrow_mut();
        if let Some((_, _, r)) = &*t {
            return *r;
        }
        let buf: &'static mut [u8] = Box::leak(vec![0u8; Remote::LEN].into_boxed_slice());
        let flags = NDK_MR_FLAG_ALLOW_LOCAL_WRITE
            | NDK_MR_FLAG_ALLOW_REMOTE_READ
            | NDK_MR_FLAG_ALLOW_REMOTE_WRITE;
        let (mr, mdl) = registered_mr(self.passive_qp.pd, buf, flags);
        let r = Remote {
            va: buf.as_ptr() as u64,
            token: mr_tokens(mr).1,
        };
        *t = Some((mr, mdl, r));
        r
    }

    /// Closes everything in dependency order (connectors, listener, QPs,
    /// CQs, PDs), each synchronously.
    pub fn close(self) {
        if let Some((mr, _mdl, _)) = self.target.borrow_mut().take() {
            close_now(mr);
        }
        close_now(self.active);
        close_now(self.passive);
        close_now(self.listener);
        for s in [self.active_qp, self.passive_qp] {
            close_now(s.qp);
            close_now(s.cq);
            close_now(s.pd);
        }
    }
}
