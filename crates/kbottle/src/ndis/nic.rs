//! The NICs the bottle plays (P, the miniport below an intermediate
//! driver's protocol edge): each has a MAC, an MTU, a link state, a
//! receive filter set through the binding's OIDs, a port on a
//! [`crate::world::segment`], and a thread of its own (the processor
//! `nic-<n>`) that does what a NIC's interrupt and DPC would, always at
//! DISPATCH_LEVEL: indicates the frames the segment delivers, completes
//! sends and OID requests the bottle deferred, and indicates link changes.
//!
//! Receive: frames that pass the filter (directed to the NIC's MAC,
//! broadcast, a multicast address of the list or all multicast,
//! promiscuous) become bottle lists ([`super::nbl::build`]) and go up in
//! chains of up to [`RECEIVE_BATCH`] through `ProtocolReceiveNetBufferLists`,
//! only while the binding is running and the link is up (otherwise they
//! are dropped and counted, as NDIS drops receives on a paused binding).
//! One indication in [`RESOURCES_EVERY`], and any indication while the
//! protocol holds [`RESOURCES_THRESHOLD`] lists, carries
//! `NDIS_RECEIVE_FLAGS_RESOURCES` (the lists are the NIC's again when the
//! call returns; returning one is a fault); the others are owned by the
//! protocol until `NdisReturnNetBufferLists`.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;

use ndis::{
    MediaConnectStateConnected, MediaConnectStateDisconnected, MediaDuplexStateFull, NDIS_HANDLE,
    NDIS_LINK_STATE, NDIS_OBJECT_HEADER, NDIS_OBJECT_TYPE_STATUS_INDICATION,
    NDIS_PACKET_TYPE_ALL_MULTICAST, NDIS_PACKET_TYPE_BROADCAST, NDIS_PACKET_TYPE_DIRECTED,
    NDIS_PACKET_TYPE_MULTICAST, NDIS_PACKET_TYPE_PROMISCUOUS, NDIS_RECEIVE_FLAGS_DISPATCH_LEVEL,
    NDIS_RECEIVE_FLAGS_RESOURCES, NDIS_SIZEOF_STATUS_INDICATION_REVISION_1, NDIS_STATUS_INDICATION,
    NDIS_STATUS_INDICATION_REVISION_1, NDIS_STATUS_LINK_STATE, NET_BUFFER_LIST,
    NetBufferListFrameType,
};

use super::checks::{NDIS_BUGCHECK_LEAKED_NBL, ndis_bugcheck};
use super::nbl::{self, Holder};
use super::state::{self, BindingState};
use crate::kernel::cpu;
use crate::world::segment::{self, PortId, SegmentId, Station};

/// Frames indicated in one chain at most.
pub const RECEIVE_BATCH: usize = 16;
/// One receive indication in this many carries `NDIS_RECEIVE_FLAGS_RESOURCES`.
pub const RESOURCES_EVERY: u64 = 4;
/// Lists the protocol may hold before every indication carries
/// `NDIS_RECEIVE_FLAGS_RESOURCES` (a NIC short of receive buffers).
pub const RESOURCES_THRESHOLD: usize = 256;
/// How long [`NicRuntime::wait_idle`] waits.
pub const IDLE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);
/// The NIC's link speed (10 Gb/s), both ways.
pub const LINK_SPEED: u64 = 10_000_000_000;

/// What a NIC has done.
#[derive(Debug, Default)]
pub struct NicCounters {
    /// Frames indicated up.
    pub indicated: AtomicU64,
    /// Of those, with `NDIS_RECEIVE_FLAGS_RESOURCES`.
    pub indicated_with_resources: AtomicU64,
    /// Frames the receive filter refused.
    pub filtered: AtomicU64,
    /// Frames dropped because the binding was not running or the link
    /// was down.
    pub dropped: AtomicU64,
    /// Frames put on the segment.
    pub transmitted: AtomicU64,
    /// Send lists completed with a failure status.
    pub send_failures: AtomicU64,
    /// Send lists completed inside `NdisSendNetBufferLists`.
    pub inline_completions: AtomicU64,
    /// Send lists completed later from the NIC's thread.
    pub deferred_completions: AtomicU64,
    /// `NdisSendNetBufferLists` calls its bindings made (each with a
    /// chain of one list or more).
    pub send_calls: AtomicU64,
    /// Send lists those calls carried.
    pub lists_sent: AtomicU64,
}

/// Work for a NIC's thread.
enum Job {
    Frame(Arc<[u8]>),
    /// A completion NDIS deferred to the NIC (send lists, an OID
    /// request), run at DISPATCH_LEVEL; `lists` send lists are counted
    /// as deferred completions once it ran.
    Deferred {
        complete: Box<dyn FnOnce() + Send>,
        lists: u64,
    },
    /// The link went up or down.
    Link(bool),
    Stop,
}

struct Queue {
    jobs: VecDeque<Job>,
    /// A job is being processed.
    busy: bool,
}

/// One NIC's thread and counters.
pub struct NicRuntime {
    id: u32,
    segment: SegmentId,
    port: Mutex<Option<PortId>>,
    queue: Mutex<Queue>,
    wake: Condvar,
    thread: Mutex<Option<JoinHandle<()>>>,
    indications: AtomicU64,
    /// What it has done.
    pub counters: NicCounters,
}

impl std::fmt::Debug for NicRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NicRuntime")
            .field("id", &self.id)
            .field("segment", &self.segment)
            .field("counters", &self.counters)
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Station for NicRuntime {
    fn deliver(&self, frame: Arc<[u8]>) {
        self.post(Job::Frame(frame));
    }
}

impl NicRuntime {
    fn post(&self, job: Job) {
        let mut q = lock(&self.queue);
        let was_empty = q.jobs.is_empty();
        q.jobs.push_back(job);
        drop(q);
        // The thread sleeps only on an empty queue (and wait_idle waiters
        // are woken by the thread when it runs dry).
        if was_empty {
            self.wake.notify_all();
        }
    }

    /// Waits until the NIC's thread has nothing queued or running; false
    /// if that did not happen within [`IDLE_TIMEOUT`] (the thread is stuck
    /// in driver code, or parked by a bug check).
    pub fn wait_idle(&self) -> bool {
        let deadline = std::time::Instant::now() + IDLE_TIMEOUT;
        let mut q = lock(&self.queue);
        while !q.jobs.is_empty() || q.busy {
            let now = std::time::Instant::now();
            if now >= deadline {
                return false;
            }
            q = self
                .wake
                .wait_timeout(q, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        true
    }

    /// The segment port it sits on.
    pub fn port(&self) -> Option<PortId> {
        *lock(&self.port)
    }

    /// The segment it sits on.
    pub fn segment(&self) -> SegmentId {
        self.segment
    }
}

static RUNTIMES: Mutex<BTreeMap<u32, Arc<NicRuntime>>> = Mutex::new(BTreeMap::new());

/// The runtime of NIC `id`.
pub fn runtime(id: u32) -> Option<Arc<NicRuntime>> {
    lock(&RUNTIMES).get(&id).cloned()
}

/// Starts NIC `id`'s thread and attaches it, owner of `mac`, to
/// `segment`; false if the segment does not exist.
pub fn start(id: u32, mac: [u8; 6], segment_id: SegmentId) -> bool {
    let Some(seg) = segment::get(segment_id) else {
        return false;
    };
    let rt = Arc::new(NicRuntime {
        id,
        segment: segment_id,
        port: Mutex::new(None),
        queue: Mutex::new(Queue {
            jobs: VecDeque::new(),
            busy: false,
        }),
        wake: Condvar::new(),
        thread: Mutex::new(None),
        indications: AtomicU64::new(0),
        counters: NicCounters::default(),
    });
    let port = seg.attach(mac, rt.clone());
    *lock(&rt.port) = Some(port);
    let worker = rt.clone();
    let thread = std::thread::Builder::new()
        .name(format!("nic-{id}"))
        .spawn(move || run(&worker))
        .expect("spawning a NIC thread");
    *lock(&rt.thread) = Some(thread);
    lock(&RUNTIMES).insert(id, rt);
    true
}

/// Detaches NIC `id` from its segment and ends its thread after what is
/// queued.
pub fn stop(id: u32) {
    let Some(rt) = lock(&RUNTIMES).remove(&id) else {
        return;
    };
    if let (Some(seg), Some(port)) = (segment::get(rt.segment), rt.port()) {
        seg.detach(port);
    }
    rt.post(Job::Stop);
    let thread = lock(&rt.thread).take();
    if let Some(t) = thread {
        let _ = t.join();
    }
}

/// Defers a completion to NIC `id`'s thread, which runs `complete` at
/// DISPATCH_LEVEL as its DPC would: `lists` send lists (counted in
/// [`NicCounters::deferred_completions`]), or a pended OID request
/// (`lists` 0). The caller says what completes ([`super::lower`],
/// [`super::lower_oid`]): the NIC is below them and names neither.
pub fn defer(id: u32, lists: u64, complete: impl FnOnce() + Send + 'static) {
    if let Some(rt) = runtime(id) {
        rt.post(Job::Deferred {
            complete: Box::new(complete),
            lists,
        });
    }
}

/// Sets NIC `id`'s link; the protocol hears of it from the NIC's thread.
pub fn set_link(id: u32, up: bool) {
    if let Some(rt) = runtime(id) {
        rt.post(Job::Link(up));
    }
}

fn run(rt: &NicRuntime) {
    cpu::enter(&format!("nic-{}", rt.id));
    loop {
        let jobs: Vec<Job> = {
            let mut q = lock(&rt.queue);
            while q.jobs.is_empty() {
                q = rt.wake.wait(q).unwrap_or_else(PoisonError::into_inner);
            }
            q.busy = true;
            q.jobs.drain(..).collect()
        };
        let mut frames = Vec::new();
        let mut stop = false;
        for job in jobs {
            match job {
                Job::Frame(f) => frames.push(f),
                other => {
                    receive(rt, std::mem::take(&mut frames));
                    match other {
                        Job::Deferred { complete, lists } => {
                            cpu::run_at_dispatch(complete);
                            rt.counters
                                .deferred_completions
                                .fetch_add(lists, Ordering::Relaxed);
                        }
                        Job::Link(up) => link_changed(rt.id, up),
                        Job::Stop => stop = true,
                        Job::Frame(_) => {}
                    }
                }
            }
        }
        receive(rt, frames);
        let mut q = lock(&rt.queue);
        q.busy = false;
        rt.wake.notify_all();
        drop(q);
        state::changed();
        if stop {
            return;
        }
    }
}

/// What the receive path needs of the NIC and its binding.
struct ReceiveView {
    binding: usize,
    context: usize,
    handler: ndis::PROTOCOL_RECEIVE_NET_BUFFER_LISTS,
    nic_handle: usize,
    mac: [u8; 6],
    filter: u32,
    multicast: Vec<[u8; 6]>,
}

fn receive_view(id: u32) -> Option<ReceiveView> {
    state::with(|n| {
        let handler = n
            .protocol
            .as_ref()?
            .characteristics
            .ReceiveNetBufferListsHandler?;
        let nic = n.live_nic(id)?;
        if !nic.link_up {
            return None;
        }
        let (binding, mac, filter, multicast, nic_handle) = (
            nic.binding?,
            nic.mac,
            nic.packet_filter,
            nic.multicast.clone(),
            nic.handle.addr(),
        );
        let b = n.bindings.get(&binding)?;
        (b.state == BindingState::Running).then_some(ReceiveView {
            binding,
            context: b.context,
            handler,
            nic_handle,
            mac,
            filter,
            multicast,
        })
    })
}

/// Whether a NIC with `filter`, `multicast` and `mac` takes a frame for
/// `dst`.
pub fn accepts(filter: u32, multicast: &[[u8; 6]], mac: &[u8; 6], dst: &[u8; 6]) -> bool {
    if filter & NDIS_PACKET_TYPE_PROMISCUOUS != 0 {
        return true;
    }
    if *dst == segment::BROADCAST {
        return filter & NDIS_PACKET_TYPE_BROADCAST != 0;
    }
    if segment::is_group(dst) {
        return filter & NDIS_PACKET_TYPE_ALL_MULTICAST != 0
            || (filter & NDIS_PACKET_TYPE_MULTICAST != 0 && multicast.contains(dst));
    }
    filter & NDIS_PACKET_TYPE_DIRECTED != 0 && dst == mac
}

/// Lists indicated with `NDIS_RECEIVE_FLAGS_RESOURCES` and not yet taken
/// back: returning one of them is a fault.
static WITH_RESOURCES: Mutex<Vec<usize>> = Mutex::new(Vec::new());

/// Whether `nbl` is on loan to the protocol only for the indication call
/// (indicated with `NDIS_RECEIVE_FLAGS_RESOURCES`).
pub fn lent_with_resources(nbl: usize) -> bool {
    lock(&WITH_RESOURCES).contains(&nbl)
}

fn receive(rt: &NicRuntime, frames: Vec<Arc<[u8]>>) {
    if frames.is_empty() {
        return;
    }
    let Some(view) = receive_view(rt.id) else {
        rt.counters
            .dropped
            .fetch_add(frames.len() as u64, Ordering::Relaxed);
        return;
    };
    let wanted: Vec<Arc<[u8]>> = frames
        .into_iter()
        .filter(|f| {
            let dst: [u8; 6] = f.get(..6).and_then(|d| d.try_into().ok()).unwrap_or([0; 6]);
            let ok = accepts(view.filter, &view.multicast, &view.mac, &dst);
            if !ok {
                rt.counters.filtered.fetch_add(1, Ordering::Relaxed);
            }
            ok
        })
        .collect();
    for batch in wanted.chunks(RECEIVE_BATCH) {
        indicate(rt, &view, batch);
    }
}

/// Builds the receive list of one frame.
fn receive_list(view: &ReceiveView, frame: &[u8]) -> *mut NET_BUFFER_LIST {
    let list = nbl::build(frame);
    let ethertype = frame
        .get(12..14)
        .map_or(0, |t| u16::from_ne_bytes([t[0], t[1]]));
    // SAFETY: a list just built, held by the bottle (the NIC).
    unsafe {
        (*list).SourceHandle = view.nic_handle as NDIS_HANDLE;
    }
    // SAFETY: as above; the frame-type slot holds the EtherType in
    // network byte order, as miniports set it on receive.
    unsafe {
        (*list).NetBufferListInfo[NetBufferListFrameType as usize] = usize::from(ethertype) as _;
    }
    list
}

fn indicate(rt: &NicRuntime, view: &ReceiveView, frames: &[Arc<[u8]>]) {
    let n = rt.indications.fetch_add(1, Ordering::Relaxed);
    let held = nbl::count_held(Holder::IndicatedOnBinding(view.binding));
    let resources = n % RESOURCES_EVERY == RESOURCES_EVERY - 1 || held >= RESOURCES_THRESHOLD;
    let lists: Vec<*mut NET_BUFFER_LIST> = frames.iter().map(|f| receive_list(view, f)).collect();
    for pair in lists.windows(2) {
        // SAFETY: lists just built, held by the bottle: linking them.
        unsafe { (*pair[0]).Next = pair[1] };
    }
    for l in &lists {
        // Push cannot fail for a list just built.
        let _ = nbl::push(*l as usize, Holder::IndicatedOnBinding(view.binding));
    }
    if resources {
        lock(&WITH_RESOURCES).extend(lists.iter().map(|l| *l as usize));
    }
    let flags = NDIS_RECEIVE_FLAGS_DISPATCH_LEVEL
        | if resources {
            NDIS_RECEIVE_FLAGS_RESOURCES
        } else {
            0
        };
    let head = lists[0] as usize;
    let count = lists.len() as u32;
    let (handler, context) = (view.handler, view.context);
    cpu::run_at_dispatch(|| {
        // SAFETY: the protocol's ProtocolReceiveNetBufferLists on its
        // binding context, at DISPATCH_LEVEL as the flags say, with a
        // chain of `count` lists the NIC built.
        unsafe {
            handler(
                context as NDIS_HANDLE,
                head as *mut NET_BUFFER_LIST,
                0,
                count,
                flags,
            );
        };
    });
    rt.counters
        .indicated
        .fetch_add(u64::from(count), Ordering::Relaxed);
    if !resources {
        return;
    }
    rt.counters
        .indicated_with_resources
        .fetch_add(u64::from(count), Ordering::Relaxed);
    let mut lent = lock(&WITH_RESOURCES);
    lent.retain(|l| !lists.iter().any(|x| *x as usize == *l));
    drop(lent);
    for l in lists {
        if let Err(e) = nbl::pop(l as usize, Holder::IndicatedOnBinding(view.binding)) {
            ndis_bugcheck(
                NDIS_BUGCHECK_LEAKED_NBL,
                l as usize,
                view.binding,
                format!(
                    "ProtocolReceiveNetBufferLists kept a list indicated with \
                     NDIS_RECEIVE_FLAGS_RESOURCES past the call ({e})"
                ),
            );
        }
        // Held by the bottle again: freeing cannot fail.
        let _ = nbl::free(l);
    }
}

/// Tells the binding of NIC `id` its link changed, through
/// `ProtocolStatusEx` at DISPATCH_LEVEL.
fn link_changed(id: u32, up: bool) {
    let target = state::with(|n| {
        let status = n
            .protocol
            .as_ref()
            .and_then(|p| p.characteristics.StatusHandlerEx);
        let nic = n.live_nic(id)?;
        nic.link_up = up;
        let (binding, nic_handle) = (nic.binding?, nic.handle.addr());
        let b = n.bindings.get(&binding)?;
        let open = !matches!(b.state, BindingState::Opening | BindingState::Closed);
        open.then_some((status?, b.context, binding, nic_handle))
    });
    state::changed();
    let Some((handler, context, binding, nic_handle)) = target else {
        return;
    };
    let mut link = NDIS_LINK_STATE::new(
        if up {
            MediaConnectStateConnected
        } else {
            MediaConnectStateDisconnected
        },
        MediaDuplexStateFull,
        if up { LINK_SPEED } else { 0 },
        if up { LINK_SPEED } else { 0 },
    );
    // SAFETY: all-zero bytes are a valid indication (integers, pointers
    // and a GUID).
    let mut indication: NDIS_STATUS_INDICATION = unsafe { std::mem::zeroed() };
    indication.Header = NDIS_OBJECT_HEADER::new(
        NDIS_OBJECT_TYPE_STATUS_INDICATION,
        NDIS_STATUS_INDICATION_REVISION_1,
        NDIS_SIZEOF_STATUS_INDICATION_REVISION_1,
    );
    indication.SourceHandle = nic_handle as NDIS_HANDLE;
    indication.DestinationHandle = binding as NDIS_HANDLE;
    indication.StatusCode = NDIS_STATUS_LINK_STATE;
    indication.StatusBuffer = (&raw mut link).cast();
    indication.StatusBufferSize = size_of::<NDIS_LINK_STATE>() as u32;
    cpu::run_at_dispatch(|| {
        // SAFETY: the protocol's ProtocolStatusEx on its binding context,
        // at DISPATCH_LEVEL, with an indication and link state that live
        // for the call.
        unsafe { handler(context as NDIS_HANDLE, &raw mut indication) };
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_receive_filter_takes_what_its_bits_say() {
        let mac = [2, 0, 0, 0, 0, 1];
        let other = [2, 0, 0, 0, 0, 2];
        let group = [0x33, 0x33, 0xFF, 0, 0, 1];
        let list = [group];
        let d = NDIS_PACKET_TYPE_DIRECTED;
        assert!(!accepts(0, &list, &mac, &mac), "filter 0 takes nothing");
        assert!(accepts(d, &[], &mac, &mac));
        assert!(!accepts(d, &[], &mac, &other));
        assert!(!accepts(d, &list, &mac, &segment::BROADCAST));
        assert!(accepts(
            NDIS_PACKET_TYPE_BROADCAST,
            &[],
            &mac,
            &segment::BROADCAST
        ));
        assert!(!accepts(NDIS_PACKET_TYPE_MULTICAST, &[], &mac, &group));
        assert!(accepts(NDIS_PACKET_TYPE_MULTICAST, &list, &mac, &group));
        assert!(accepts(NDIS_PACKET_TYPE_ALL_MULTICAST, &[], &mac, &group));
        assert!(!accepts(
            NDIS_PACKET_TYPE_ALL_MULTICAST,
            &[],
            &mac,
            &segment::BROADCAST
        ));
        assert!(accepts(NDIS_PACKET_TYPE_PROMISCUOUS, &[], &mac, &other));
    }
}
