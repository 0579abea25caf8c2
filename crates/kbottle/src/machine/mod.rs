//! One loaded driver, driven as Windows drives it: [`Machine::boot`] maps
//! the image with every module's exports and runs `DriverEntry`;
//! adapters are initialised, restarted, paused, queried and halted as NDIS
//! does ([`crate::ndis::miniport`]); NDK adapters are opened through the
//! registered `OpenNDKAdapterHandler`; [`Machine::unload`] halts what is
//! left, runs `MiniportDriverUnload` and reports what the driver left
//! behind.
//!
//! Kernel state is process-global, so a process holds one booted machine
//! at a time; booting again after [`Machine::unload`] maps a fresh copy of
//! the image.
//!
//! Rule: the top room. It imports every other room and no room imports
//! it: what they share with it lives in leaves ([`crate::ids`]). Its IP
//! side is `ip.rs`; [`shared`] is the one machine of a test process.

mod ip;
pub mod shared;

use std::cell::UnsafeCell;
use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use ndis::{
    DRIVER_OBJECT, NET_PNP_EVENT_CODE, NetEventNDKDisable, NetEventNDKEnable, UNICODE_STRING,
};
use ndkpi::{NDK_ADAPTER, NDK_VERSION, NTSTATUS};

use crate::export::Export;
pub use crate::ids::{AdapterId, Keyword};
use crate::kernel::verifier::{self, Bugcheck};
use crate::kernel::{cpu, crt, io, ke, mm, pool, trap};
use crate::loader::pe::{self, Image, LoadError};
use crate::ndis::bindflow::{self, NicOptions};
use crate::ndis::miniport::{self, OidKind};
use crate::ndis::{GeneralAttributes, NdkAttributes, RegistrationAttributes, nic, state, workitem};
use crate::netio;
use crate::world::segment::{self, SegmentId, SegmentStats};

/// Why [`Machine::boot`] failed.
#[derive(Debug)]
pub enum BootError {
    /// Another machine of this process is booted (and not unloaded).
    AlreadyBooted,
    /// The image did not load.
    Load(LoadError),
    /// `DriverEntry` failed; the report says what it left behind (a failed
    /// `DriverEntry` gets no unload call, so it must leave nothing).
    DriverEntry {
        /// Its status.
        status: NTSTATUS,
        /// What was left.
        report: Box<Report>,
    },
    /// `DriverEntry` succeeded without registering a miniport.
    NotRegistered(Box<Report>),
}

impl fmt::Display for BootError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::AlreadyBooted => write!(f, "a machine is already booted in this process"),
            Self::Load(e) => write!(f, "loading the image: {e}"),
            Self::DriverEntry { status, report } => {
                write!(
                    f,
                    "DriverEntry failed with {:#010x}; left: {report}",
                    *status as u32
                )
            }
            Self::NotRegistered(report) => {
                write!(f, "DriverEntry registered no miniport; left: {report}")
            }
        }
    }
}

impl std::error::Error for BootError {}

/// What the driver left behind when it was unloaded (or when its
/// `DriverEntry` failed), counted from the machine's boot (what an earlier
/// machine of the process left was reported at its unload). A clean
/// driver leaves nothing: see [`Report::is_clean`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// Pool still allocated, by tag: (blocks, bytes).
    pub pool_by_tag: BTreeMap<String, (usize, usize)>,
    /// Kernel timers still armed.
    pub armed_timers: usize,
    /// DPCs still queued.
    pub queued_dpcs: usize,
    /// Work items still queued (dropped unrun at unload).
    pub queued_work_items: usize,
    /// Bugchecks recorded since the machine booted.
    pub bugchecks: Vec<Bugcheck>,
    /// Work items allocated and never freed.
    pub leaked_work_items: usize,
    /// Configuration handles never closed.
    pub open_configurations: usize,
    /// MDLs from `IoAllocateMdl` never freed.
    pub mdls: usize,
    /// IRPs from `IoAllocateIrp` never freed.
    pub irps: usize,
    /// The miniport driver is still registered with NDIS.
    pub still_registered: bool,
    /// The protocol driver is still registered with NDIS.
    pub protocol_still_registered: bool,
    /// `NET_BUFFER_LIST` pools never freed, and the lists still allocated
    /// from them.
    pub nbl_pools: Vec<crate::ndis::nblpool::LivePool>,
    /// Bindings never closed.
    pub open_bindings: usize,
    /// Interface stack entries never deleted.
    pub if_stack_entries: usize,
    /// What the protocol or intermediate driver left wrong without a bug
    /// check (an unbind that left its binding open, ...).
    pub ndis_faults: Vec<String>,
    /// `GetUnicastIpAddressTable` results never given to `FreeMibTable`.
    pub mib_tables: usize,
    /// `NotifyUnicastIpAddressChange` handles never cancelled.
    pub mib_notifications: usize,
}

impl Report {
    /// Whether nothing at all was left behind and nothing bugchecked.
    pub fn is_clean(&self) -> bool {
        self.pool_by_tag.is_empty()
            && self.armed_timers == 0
            && self.queued_dpcs == 0
            && self.queued_work_items == 0
            && self.bugchecks.is_empty()
            && self.leaked_work_items == 0
            && self.open_configurations == 0
            && self.mdls == 0
            && self.irps == 0
            && !self.still_registered
            && !self.protocol_still_registered
            && self.nbl_pools.is_empty()
            && self.open_bindings == 0
            && self.if_stack_entries == 0
            && self.ndis_faults.is_empty()
            && self.mib_tables == 0
            && self.mib_notifications == 0
    }

    /// Whether anything left could still run driver code (so the image
    /// must stay mapped).
    fn driver_code_may_run(&self) -> bool {
        self.armed_timers != 0
            || self.queued_dpcs != 0
            || self.open_bindings != 0
            || self.mib_notifications != 0
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_clean() {
            return write!(f, "nothing");
        }
        write!(
            f,
            "pool {:?}, {} armed timers, {} queued DPCs, {} queued and {} leaked work items, \
             {} open configurations, {} MDLs, {} IRPs, \
             registered: {}, protocol registered: {}, NBL pools {:?}, {} open bindings, \
             {} interface stack entries, {} MIB tables, {} MIB notifications, faults: {:?}, \
             bugchecks: {:?}",
            self.pool_by_tag,
            self.armed_timers,
            self.queued_dpcs,
            self.queued_work_items,
            self.leaked_work_items,
            self.open_configurations,
            self.mdls,
            self.irps,
            self.still_registered,
            self.protocol_still_registered,
            self.nbl_pools,
            self.open_bindings,
            self.if_stack_entries,
            self.mib_tables,
            self.mib_notifications,
            self.ndis_faults,
            self.bugchecks
        )
    }
}

/// Set while a machine is booted in this process.
static BOOTED: AtomicBool = AtomicBool::new(false);

/// `sizeof(DRIVER_OBJECT)` on x64.
const DRIVER_OBJECT_SIZE: usize = 0x150;
/// `IO_TYPE_DRIVER`.
const IO_TYPE_DRIVER: u16 = 4;
/// How long unload waits for a work item routine that is running.
const WORKER_STOP_TIMEOUT: Duration = Duration::from_secs(5);
/// The driver's one service (rsndkp.inx and rsndk_mp.inx both name it:
/// the protocol edge and the virtual miniport run in one image).
pub const SERVICE: &str = "rsndkp";
/// The service key `DriverEntry` is given.
const REGISTRY_PATH: &str = r"\Registry\Machine\System\CurrentControlSet\Services\rsndkp";

/// The `DRIVER_OBJECT` the I/O manager would create: zeroed but for
/// `Type`, `Size`, `DriverStart` and `DriverSize`.
#[repr(C, align(16))]
struct DriverObject(UnsafeCell<[u8; DRIVER_OBJECT_SIZE]>);

impl DriverObject {
    fn new(image: &Image) -> Self {
        let mut bytes = [0u8; DRIVER_OBJECT_SIZE];
        bytes[0..2].copy_from_slice(&IO_TYPE_DRIVER.to_ne_bytes());
        bytes[2..4].copy_from_slice(&(DRIVER_OBJECT_SIZE as u16).to_ne_bytes());
        bytes[0x18..0x20].copy_from_slice(&image.base().to_ne_bytes());
        bytes[0x20..0x24].copy_from_slice(&(image.size() as u32).to_ne_bytes());
        Self(UnsafeCell::new(bytes))
    }

    fn as_ptr(&self) -> *mut DRIVER_OBJECT {
        self.0.get().cast()
    }
}

/// The driver's service key as a `UNICODE_STRING` over its own text.
struct RegistryPath {
    _text: Vec<u16>,
    string: UnsafeCell<UNICODE_STRING>,
}

impl RegistryPath {
    fn new() -> Self {
        let mut text: Vec<u16> = REGISTRY_PATH.encode_utf16().collect();
        let length = (text.len() * 2) as u16;
        text.push(0);
        let string = UNICODE_STRING {
            Length: length,
            MaximumLength: length + 2,
            Buffer: text.as_mut_ptr(),
        };
        // The text's heap buffer stays put when the Vec moves.
        Self {
            _text: text,
            string: UnsafeCell::new(string),
        }
    }

    fn as_ptr(&self) -> *mut UNICODE_STRING {
        self.string.get()
    }
}

/// What `DriverEntry` registered, and from where ([`Machine::registrations`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[expect(
    clippy::struct_excessive_bools,
    reason = "independent facts a test asserts one by one, not a state"
)]
pub struct Registrations {
    /// The service whose key `DriverEntry` was given.
    pub service: String,
    /// The miniport driver was registered inside `DriverEntry`.
    pub miniport_from_driver_entry: bool,
    /// ... with `NDIS_INTERMEDIATE_DRIVER`.
    pub intermediate: bool,
    /// The registered protocol's name.
    pub protocol_name: Option<String>,
    /// The protocol was registered inside `DriverEntry`.
    pub protocol_from_driver_entry: bool,
    /// `NdisIMAssociateMiniport` tied that protocol to that miniport driver.
    pub associated: bool,
}

/// One loaded driver.
pub struct Machine {
    image: Option<Image>,
    driver_object: Box<DriverObject>,
    registry_path: Box<RegistryPath>,
    baseline: Baseline,
    /// The segment [`Machine::add_adapter`] puts NICs on.
    default_segment: SegmentId,
}

// SAFETY: the image mapping, the driver object and the registry path are
// memory the driver may use from any of its threads, as in the kernel;
// the bottle itself only reads them (or writes them before DriverEntry).
unsafe impl Send for Machine {}
// SAFETY: as for Send: `&Machine` methods never touch the driver object
// or registry path memory; all other state is behind locks.
unsafe impl Sync for Machine {}

impl fmt::Debug for Machine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Machine")
            .field("image", &self.image.as_ref().map(Image::range))
            .field("driver_object", &self.driver_object.as_ptr())
            .field("registry_path", &self.registry_path.as_ptr())
            .finish_non_exhaustive()
    }
}

/// A NIC on `segment` (behaving as `options` say), bound, and its V
/// initialised with `keywords`.
fn nic_adapter(
    segment: SegmentId,
    keywords: &[(&str, Keyword)],
    options: Option<&NicOptions>,
) -> Result<AdapterId, i32> {
    if !state::with(|n| n.protocol.is_some()) {
        return Err(ndis::NDIS_STATUS_FAILURE);
    }
    let Some(nic) = bindflow::add_nic(segment, owned(keywords), options) else {
        return Err(ndis::NDIS_STATUS_ADAPTER_NOT_FOUND);
    };
    match bindflow::bind(nic) {
        Ok(id) => Ok(AdapterId(id)),
        Err(status) => {
            bindflow::unbind(nic);
            Err(status)
        }
    }
}

/// Keywords as the adapter's store keeps them.
fn owned(keywords: &[(&str, Keyword)]) -> Vec<(String, Keyword)> {
    keywords
        .iter()
        .map(|(name, value)| ((*name).to_owned(), value.clone()))
        .collect()
}

/// Every export of the bottle's kernel modules.
fn all_exports() -> Vec<Export> {
    let mut exports = ke::exports();
    exports.extend(pool::exports());
    exports.extend(mm::exports());
    exports.extend(io::exports());
    exports.extend(crt::exports());
    exports.extend(crate::ndis::exports());
    exports.extend(netio::exports());
    exports
}

/// The kernel's counters when a machine booted: what a previous machine
/// of the process left (already reported at its unload) is not this
/// machine's.
#[derive(Clone, Copy, Debug)]
struct Baseline {
    bugchecks: usize,
    armed_timers: usize,
    queued_dpcs: usize,
    mdls: usize,
    irps: usize,
    mib_tables: usize,
    mib_notifications: usize,
}

impl Baseline {
    fn now() -> Self {
        Self {
            bugchecks: verifier::bugchecks().len(),
            armed_timers: ke::armed_timers(),
            queued_dpcs: ke::queued_dpcs(),
            mdls: mm::outstanding_mdls(),
            irps: io::outstanding_irps(),
            mib_tables: netio::iphelper_tables_outstanding(),
            mib_notifications: netio::iphelper_notifications_open(),
        }
    }

    /// What is left now beyond the baseline, with the work items dropped
    /// at unload.
    fn report(&self, queued_work_items: usize) -> Report {
        let (leaked_work_items, open_configurations, still_registered) = state::with(|n| {
            (
                n.work_items.len(),
                n.configurations.len(),
                n.driver.is_some(),
            )
        });
        let (protocol_still_registered, open_bindings, if_stack_entries, ndis_faults) =
            state::with(|n| {
                (
                    n.protocol.is_some(),
                    n.bindings
                        .values()
                        .filter(|b| b.state != state::BindingState::Closed)
                        .count(),
                    n.if_stack.len(),
                    n.faults.clone(),
                )
            });
        Report {
            pool_by_tag: pool::outstanding_by_tag(),
            armed_timers: ke::armed_timers().saturating_sub(self.armed_timers),
            queued_dpcs: ke::queued_dpcs().saturating_sub(self.queued_dpcs),
            queued_work_items,
            bugchecks: verifier::bugchecks()
                .into_iter()
                .skip(self.bugchecks)
                .collect(),
            leaked_work_items,
            open_configurations,
            mdls: mm::outstanding_mdls().saturating_sub(self.mdls),
            irps: io::outstanding_irps().saturating_sub(self.irps),
            still_registered,
            protocol_still_registered,
            nbl_pools: crate::ndis::nblpool::live_pools(),
            open_bindings,
            if_stack_entries,
            ndis_faults,
            mib_tables: netio::iphelper_tables_outstanding().saturating_sub(self.mib_tables),
            mib_notifications: netio::iphelper_notifications_open()
                .saturating_sub(self.mib_notifications),
        }
    }
}

/// Stops the worker thread, reports, and keeps the image mapped if any
/// driver code could still run from what was left.
fn finish(image: Image, baseline: &Baseline) -> Report {
    let dropped = workitem::stop(WORKER_STOP_TIMEOUT);
    let report = baseline.report(dropped);
    if report.driver_code_may_run() || workitem::worker_alive() {
        // A timer, DPC or socket could still call into the image, or a
        // work item routine never returned: leave it mapped (the report
        // fails the test; the process must not crash).
        std::mem::forget(image);
    } else {
        // Kernel objects the driver kept in its image's data die with it.
        ke::forget_objects_in(image.range());
        drop(image);
    }
    BOOTED.store(false, Ordering::SeqCst);
    report
}

impl Machine {
    /// Loads `image` with every module's exports and runs `DriverEntry`
    /// at PASSIVE_LEVEL on the calling thread (it registers the miniport,
    /// and NDIS calls `MiniportSetOptions` inside that registration).
    pub fn boot(image: &Path) -> Result<Machine, BootError> {
        if BOOTED
            .compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst)
            .is_err()
        {
            return Err(BootError::AlreadyBooted);
        }
        trap::install();
        // Leaks of a previous machine were reported at its unload.
        pool::forget_all();
        let baseline = Baseline::now();
        let image = match pe::load(image, &all_exports()) {
            Ok(image) => image,
            Err(e) => {
                BOOTED.store(false, Ordering::SeqCst);
                return Err(BootError::Load(e));
            }
        };
        let driver_object = Box::new(DriverObject::new(&image));
        let registry_path = Box::new(RegistryPath::new());
        state::reset();
        crate::ndis::nbl::reset();
        crate::ndis::nblpool::reset();
        // The stack above every V (the bottle's TCP/IP).
        crate::tcpip::install();
        state::with(|n| {
            n.driver_object = driver_object.as_ptr() as usize;
            n.registry_path = registry_path.as_ptr() as usize;
            n.in_driver_entry = true;
        });
        workitem::start();
        // SAFETY: the image's entry point is its `DriverEntry`, an
        // `extern "win64"` function of exactly this signature (the
        // driver's `/ENTRY:DriverEntry`); the image stays mapped while it
        // runs.
        let driver_entry: unsafe extern "win64" fn(
            *mut DRIVER_OBJECT,
            *mut UNICODE_STRING,
        ) -> NTSTATUS = unsafe { std::mem::transmute(image.entry()) };
        let entered = cpu::current();
        assert_eq!(
            entered,
            ndis::PASSIVE_LEVEL,
            "boot from a thread at IRQL {entered}"
        );
        // SAFETY: DriverEntry called once, at PASSIVE_LEVEL, with a driver
        // object and registry path that live as long as the machine.
        let status = unsafe { driver_entry(driver_object.as_ptr(), registry_path.as_ptr()) };
        state::with(|n| n.in_driver_entry = false);
        if cpu::current() != entered {
            crate::ndis::checks::returned_at_raised_irql(
                "DriverEntry",
                image.entry() as usize,
                entered,
            );
        }
        if status < 0 {
            let report = Box::new(finish(image, &baseline));
            return Err(BootError::DriverEntry { status, report });
        }
        if !state::with(|n| n.driver.is_some()) {
            let report = Box::new(finish(image, &baseline));
            return Err(BootError::NotRegistered(report));
        }
        Ok(Machine {
            image: Some(image),
            driver_object,
            registry_path,
            baseline,
            default_segment: segment::create(segment::DEFAULT_MTU),
        })
    }

    /// How `DriverEntry` registered the driver's edges: what a MUX
    /// intermediate driver installed as one service must show.
    pub fn registrations(&self) -> Registrations {
        state::with(|n| Registrations {
            service: REGISTRY_PATH
                .rsplit('\\')
                .next()
                .unwrap_or_default()
                .to_owned(),
            miniport_from_driver_entry: n.driver.as_ref().is_some_and(|d| d.from_driver_entry),
            intermediate: n
                .driver
                .as_ref()
                .is_some_and(|d| d.characteristics.Flags & ndis::NDIS_INTERMEDIATE_DRIVER != 0),
            protocol_name: n.protocol.as_ref().map(|p| p.name.clone()),
            protocol_from_driver_entry: n.protocol.as_ref().is_some_and(|p| p.from_driver_entry),
            associated: match (&n.driver, &n.protocol) {
                (Some(d), Some(p)) => p.associated == Some(d.handle.addr()),
                _ => false,
            },
        })
    }

    /// The address range the image is mapped at.
    pub fn image_range(&self) -> std::ops::Range<usize> {
        self.image.as_ref().map_or(0..0, Image::range)
    }

    /// A new adapter with `keywords`. With a registered protocol (an
    /// intermediate driver): a NIC on the machine's default segment, the
    /// protocol bound to it, and its virtual miniport V initialised with
    /// `keywords` and restarted; V is the adapter returned. Without one
    /// (a plain miniport): a root-enumerated adapter, `MiniportInitializeEx`
    /// then `MiniportRestart`. The failing `NDIS_STATUS` otherwise.
    pub fn add_adapter(&self, keywords: &[(&str, Keyword)]) -> Result<AdapterId, i32> {
        if state::with(|n| n.protocol.is_some()) {
            return self.add_adapter_on(self.default_segment, keywords);
        }
        miniport::initialize(owned(keywords)).map(AdapterId)
    }

    /// A NIC on `segment` with the protocol bound to it and its virtual
    /// miniport V initialised with `keywords` (see
    /// [`Machine::add_adapter`]); V's id. The NIC pends its opens and
    /// closes or not by its number ([`NicOptions::varied`]).
    pub fn add_adapter_on(
        &self,
        segment: SegmentId,
        keywords: &[(&str, Keyword)],
    ) -> Result<AdapterId, i32> {
        nic_adapter(segment, keywords, None)
    }

    /// [`Machine::add_adapter_on`] with a NIC that behaves as `options`
    /// says (opens or closes that pend, a link down at bind time).
    pub fn add_adapter_with(
        &self,
        segment: SegmentId,
        keywords: &[(&str, Keyword)],
        options: &NicOptions,
    ) -> Result<AdapterId, i32> {
        nic_adapter(segment, keywords, Some(options))
    }

    /// A new segment (Ethernet, MTU 1500).
    pub fn add_segment(&self) -> SegmentId {
        segment::create(segment::DEFAULT_MTU)
    }

    /// A new segment of `mtu`.
    pub fn add_segment_with_mtu(&self, mtu: u32) -> SegmentId {
        segment::create(mtu)
    }

    /// Joins `segment` to the Linux tap `fd` (opened `IFF_TAP |
    /// IFF_NO_PI`): frames cross between the segment and the tap's real
    /// Ethernet while the returned port lives ([`crate::world::tap`]).
    pub fn join_tap(
        &self,
        segment: SegmentId,
        fd: std::os::fd::OwnedFd,
    ) -> std::io::Result<crate::world::tap::TapPort> {
        segment::get(segment)
            .ok_or_else(|| std::io::Error::other(format!("no segment {}", segment.0)))?
            .join_tap(fd)
    }

    /// The segment [`Machine::add_adapter`] uses.
    pub fn default_segment(&self) -> SegmentId {
        self.default_segment
    }

    /// Captures every frame `segment` forwards to a new pcap file at
    /// `path` (LINKTYPE_ETHERNET), written as the frames pass.
    pub fn start_capture(&self, segment: SegmentId, path: &Path) -> std::io::Result<()> {
        segment::get(segment)
            .ok_or_else(|| std::io::Error::other("no such segment"))?
            .start_capture(path)
    }

    /// Ends `segment`'s capture.
    pub fn stop_capture(&self, segment: SegmentId) -> std::io::Result<()> {
        segment::get(segment).map_or(Ok(()), |s| s.stop_capture())
    }

    /// From now on `segment` drops one frame in `one_in` (0: none), for
    /// tests of what loss does (RoCE retransmission, ARP/ND retries).
    pub fn set_segment_loss(&self, segment: SegmentId, one_in: u32) -> bool {
        segment::get(segment).map(|s| s.set_loss(one_in)).is_some()
    }

    /// What `segment` has done.
    pub fn segment_stats(&self, segment: SegmentId) -> Option<SegmentStats> {
        segment::get(segment).map(|s| s.stats())
    }

    /// The NIC below V `a`, if `a` is an intermediate driver's V.
    pub fn nic_of(&self, a: AdapterId) -> Option<u32> {
        state::with(|n| n.adapter_by_id(a.0).and_then(|ad| ad.nic))
    }

    /// Sets the link of the NIC below `a` up or down; returns once the
    /// protocol has been told (`ProtocolStatusEx`). False if `a` has no
    /// NIC, or the NIC's thread did not get to it in time.
    pub fn set_nic_link(&self, a: AdapterId, up: bool) -> bool {
        let Some(id) = self.nic_of(a) else {
            return false;
        };
        nic::set_link(id, up);
        nic::runtime(id).is_some_and(|rt| rt.wait_idle())
    }

    /// Pauses the binding below `a` (`NetEventPause`); its status
    /// (`NDIS_STATUS_FAILURE` if there is no running binding).
    pub fn pause_binding(&self, a: AdapterId) -> i32 {
        self.nic_of(a)
            .map_or(ndis::NDIS_STATUS_FAILURE, bindflow::pause)
    }

    /// Restarts the paused binding below `a` (`NetEventRestart`).
    pub fn restart_binding(&self, a: AdapterId) -> i32 {
        self.nic_of(a)
            .map_or(ndis::NDIS_STATUS_FAILURE, bindflow::restart)
    }

    /// The MAC address `a` reported in its general attributes (V takes
    /// its NIC's).
    pub fn adapter_mac(&self, a: AdapterId) -> Option<[u8; 6]> {
        state::with(|n| {
            let ad = n.adapter_by_id(a.0)?;
            ad.general.as_ref()?.current_mac.get(..6)?.try_into().ok()
        })
    }

    /// The MAC address of the NIC below `a`.
    pub fn nic_mac(&self, a: AdapterId) -> Option<[u8; 6]> {
        let id = self.nic_of(a)?;
        state::with(|n| n.nics.get(&id).map(|x| x.mac))
    }

    /// `a`'s `NET_LUID` value.
    pub fn adapter_luid(&self, a: AdapterId) -> Option<u64> {
        state::with(|n| n.adapter_by_id(a.0).map(|ad| ad.luid))
    }

    /// `a`'s interface index.
    pub fn adapter_if_index(&self, a: AdapterId) -> Option<u32> {
        state::with(|n| n.adapter_by_id(a.0).map(|ad| ad.if_index))
    }

    /// The counters of the NIC below `a`: (indicated, with resources,
    /// filtered, dropped, transmitted, send failures).
    pub fn nic_counters(&self, a: AdapterId) -> Option<[u64; 6]> {
        let rt = nic::runtime(self.nic_of(a)?)?;
        let c = &rt.counters;
        let get = |x: &std::sync::atomic::AtomicU64| x.load(Ordering::Relaxed);
        Some([
            get(&c.indicated),
            get(&c.indicated_with_resources),
            get(&c.filtered),
            get(&c.dropped),
            get(&c.transmitted),
            get(&c.send_failures),
        ])
    }

    /// The sends of the bindings on the NIC below `a`:
    /// (`NdisSendNetBufferLists` calls, lists they carried).
    pub fn nic_send_calls(&self, a: AdapterId) -> Option<(u64, u64)> {
        let rt = nic::runtime(self.nic_of(a)?)?;
        let c = &rt.counters;
        Some((
            c.send_calls.load(Ordering::Relaxed),
            c.lists_sent.load(Ordering::Relaxed),
        ))
    }

    /// Opens an NDK adapter on `a` at `version` through the registered
    /// `OpenNDKAdapterHandler`.
    pub fn open_ndk(&self, a: AdapterId, version: NDK_VERSION) -> Result<*mut NDK_ADAPTER, i32> {
        miniport::open_ndk(a.0, version)
    }

    /// Closes an NDK adapter [`Machine::open_ndk`] opened.
    pub fn close_ndk(&self, a: AdapterId, adapter: *mut NDK_ADAPTER) {
        miniport::close_ndk(a.0, adapter as usize);
    }

    /// Waits until NDK is operational on `a`: its latest NDK PnP event is
    /// `NetEventNDKEnable`, or, when it raised none, its NDK attributes
    /// said enabled (an NDK provider starts operational as its attributes
    /// say and raises `NetEventNDKEnable`/`Disable` only on changes);
    /// whether that happened within `timeout`.
    pub fn wait_ndk_ready(&self, a: AdapterId, timeout: Duration) -> bool {
        state::wait_until(timeout, |n| {
            n.adapter_by_id(a.0).is_some_and(|ad| {
                match ad
                    .pnp_events
                    .iter()
                    .rev()
                    .find(|e| **e == NetEventNDKEnable || **e == NetEventNDKDisable)
                {
                    Some(e) => *e == NetEventNDKEnable,
                    None => {
                        ad.state == state::AdapterState::Running
                            && ad.ndk.is_some_and(|k| k.enabled)
                    }
                }
            })
        })
    }

    /// `NdisRequestQueryInformation` of `oid` into `buf`; bytes written.
    pub fn oid_query(&self, a: AdapterId, oid: u32, buf: &mut [u8]) -> Result<usize, i32> {
        miniport::oid_request(a.0, OidKind::Query, oid, buf)
    }

    /// `NdisRequestSetInformation` of `oid` with `buf`; bytes read.
    pub fn oid_set(&self, a: AdapterId, oid: u32, buf: &[u8]) -> Result<usize, i32> {
        let mut value = buf.to_vec();
        miniport::oid_request(a.0, OidKind::Set, oid, &mut value)
    }

    /// `MiniportPause` of a running adapter.
    pub fn pause(&self, a: AdapterId) -> i32 {
        miniport::pause(a.0)
    }

    /// `MiniportRestart` of a paused adapter.
    pub fn restart(&self, a: AdapterId) -> i32 {
        miniport::restart(a.0)
    }

    /// Halts `a`. An intermediate driver's V: the protocol is unbound
    /// from the NIC below (binding paused, `ProtocolUnbindAdapterEx`, in
    /// which the driver deinitialises V and closes the binding) and the
    /// NIC leaves its segment. A root-enumerated adapter: its open NDK
    /// adapters are closed, a running adapter is paused, then
    /// `MiniportHaltEx`.
    pub fn halt(&self, a: AdapterId) {
        match self.nic_of(a) {
            Some(nic) => bindflow::unbind(nic),
            None => miniport::halt(a.0),
        }
    }

    /// Disables `a` (`Disable-NetAdapter`): a running adapter is paused,
    /// then `MiniportHaltEx`, with its NDK adapters left open for their
    /// consumers to close (an intermediate driver's V stays bound to the
    /// NIC below; [`Machine::halt`] unbinds it afterwards).
    pub fn disable(&self, a: AdapterId) {
        miniport::disable(a.0);
    }

    /// Sends `count` (empty) lists to `a` and waits for their completion;
    /// their statuses.
    pub fn send(&self, a: AdapterId, count: usize, at_dispatch: bool) -> Vec<i32> {
        miniport::send(a.0, count, at_dispatch)
    }

    /// The PnP events `a` raised, oldest first.
    pub fn pnp_events(&self, a: AdapterId) -> Vec<NET_PNP_EVENT_CODE> {
        state::with(|n| {
            n.adapter_by_id(a.0)
                .map(|ad| ad.pnp_events.clone())
                .unwrap_or_default()
        })
    }

    /// Waits until `a` has raised at least `count` PnP events; those it
    /// has raised when the wait ends (`timeout` at the latest).
    pub fn wait_pnp_events(
        &self,
        a: AdapterId,
        count: usize,
        timeout: Duration,
    ) -> Vec<NET_PNP_EVENT_CODE> {
        state::wait_until(timeout, |n| {
            n.adapter_by_id(a.0)
                .is_some_and(|ad| ad.pnp_events.len() >= count)
        });
        self.pnp_events(a)
    }

    /// Status codes `a` indicated, oldest first.
    pub fn status_indications(&self, a: AdapterId) -> Vec<i32> {
        state::with(|n| {
            n.adapter_by_id(a.0)
                .map(|ad| ad.status_indications.clone())
                .unwrap_or_default()
        })
    }

    /// The registration attributes `a` set.
    pub fn registration_attributes(&self, a: AdapterId) -> Option<RegistrationAttributes> {
        state::with(|n| n.adapter_by_id(a.0).and_then(|ad| ad.registration))
    }

    /// The general attributes `a` set.
    pub fn general_attributes(&self, a: AdapterId) -> Option<GeneralAttributes> {
        state::with(|n| n.adapter_by_id(a.0).and_then(|ad| ad.general.clone()))
    }

    /// The NDK attributes `a` set.
    pub fn ndk_attributes(&self, a: AdapterId) -> Option<NdkAttributes> {
        state::with(|n| n.adapter_by_id(a.0).and_then(|ad| ad.ndk))
    }

    /// Waits until the system worker thread has nothing queued or running.
    pub fn wait_idle(&self, timeout: Duration) -> bool {
        workitem::wait_idle(timeout)
    }

    /// Halts the adapters still live, runs `MiniportDriverUnload`, stops
    /// the worker thread and reports what the driver left behind.
    pub fn unload(mut self) -> Report {
        let nics: Vec<u32> = state::with(|n| {
            n.nics
                .values()
                .filter(|x| !x.removed)
                .map(|x| x.id)
                .collect()
        });
        for nic in nics {
            bindflow::unbind(nic);
        }
        let live: Vec<u32> = state::with(|n| {
            n.adapters
                .values()
                .filter(|a| a.state != state::AdapterState::Gone)
                .map(|a| a.id)
                .collect()
        });
        for id in live {
            miniport::halt(id);
        }
        miniport::unload(self.driver_object.as_ptr() as usize);
        let image = self.image.take().expect("an unloaded machine");
        finish(image, &self.baseline)
    }
}

impl Drop for Machine {
    fn drop(&mut self) {
        // Dropped without unload (a test failed midway): the driver may
        // still run on other threads, so its image stays mapped and the
        // process keeps counting as booted.
        if let Some(image) = self.image.take() {
            std::mem::forget(image);
        }
    }
}
