//! The upper edge of each miniport adapter (V), where NDIS stands between
//! the miniport and the protocol stack above it ([`super::upper`], the
//! bottle's TCP/IP):
//!
//! - Sends from above: [`send_frame`] builds a `NET_BUFFER_LIST` per frame
//!   ([`super::nbl::build`]), hands it to V's `MiniportSendNetBufferLists`
//!   at DISPATCH_LEVEL on the stack's processor, and takes it back in
//!   `NdisMSendNetBufferListsComplete`, which must return it exactly once,
//!   with its `SourceHandle`, buffers, MDLs, offsets and context as they
//!   went down. While the stack above V is
//!   paused ([`pause_upper`], before V's `MiniportPause`) nothing more is
//!   sent, and the pause waits until V completed everything it was given.
//! - Receives: `NdisMIndicateReceiveNetBufferLists` copies every frame of
//!   the indicated lists (through their `NET_BUFFER`s and MDLs) to the
//!   stack, which processes them later on its own thread (never inside
//!   the indication). Lists indicated with `NDIS_RECEIVE_FLAGS_RESOURCES`
//!   are the miniport's again when the call returns; the others go back
//!   through `MiniportReturnNetBufferLists`, called from the worker thread
//!   at DISPATCH_LEVEL.
//! - [`NblChain`]: empty lists for [`crate::Machine::send`], completed
//!   through the adapter's `sends_outstanding` (they are not the
//!   ledger's).

// Each import's safety contract is its WDK documentation, and the caller is
// the driver; the per-function docs say what the bottle checks instead.
#![expect(
    clippy::missing_safety_doc,
    reason = "imports follow the WDK contract of the same name"
)]

use std::collections::BTreeMap;
use std::ptr;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use ndis::{
    DISPATCH_LEVEL, NDIS_DEFAULT_PORT_NUMBER, NDIS_HANDLE, NDIS_PORT_NUMBER,
    NDIS_RECEIVE_FLAGS_DISPATCH_LEVEL, NDIS_RECEIVE_FLAGS_RESOURCES,
    NDIS_RETURN_FLAGS_DISPATCH_LEVEL, NDIS_SEND_COMPLETE_FLAGS_DISPATCH_LEVEL,
    NDIS_SEND_FLAGS_DISPATCH_LEVEL, NET_BUFFER_LIST,
};
use ndkpi::{NDIS_STATUS, ULONG};

use super::checks::{
    NDIS_BUGCHECK_LEAKED_NBL, NDIS_BUGCHECK_WATCHDOG, guarded, invalid_handle, ndis_bugcheck,
    require_dispatch_or_below,
};
use super::nbl::{self, Holder};
use super::state::{self, AdapterState};
use super::upper;
use super::workitem::run_on_worker;
use crate::ids::AdapterId;
use crate::kernel::cpu;
use crate::kernel::verifier::{self, DRIVER_VERIFIER_DETECTED_VIOLATION};

/// How long [`pause_upper`] waits for V to complete the stack's sends.
const PAUSE_TIMEOUT: Duration = Duration::from_secs(10);
/// The most lists one indication may chain (a loop would never end).
const MAX_INDICATED: usize = 65_536;

/// Bytes of one [`NblChain`] list: a whole `NET_BUFFER_LIST`.
const NBL_BYTES: usize = size_of::<NET_BUFFER_LIST>();

/// One empty `NET_BUFFER_LIST` of an [`NblChain`].
#[repr(C, align(16))]
#[derive(Debug)]
pub struct Nbl([u8; NBL_BYTES]);

impl Nbl {
    fn addr(&mut self) -> usize {
        self.0.as_mut_ptr() as usize
    }
}

/// A chain of empty lists (no `NET_BUFFER`) for [`crate::Machine::send`].
/// The vector never grows after [`NblChain::new`], so the lists never
/// move.
#[derive(Debug)]
pub struct NblChain(Vec<Nbl>);

impl NblChain {
    /// `count` zeroed lists linked through `Next`.
    pub fn new(count: usize) -> Self {
        let mut lists: Vec<Nbl> = (0..count).map(|_| Nbl([0; NBL_BYTES])).collect();
        for i in 1..lists.len() {
            let next = lists[i].addr();
            lists[i - 1].0[..8].copy_from_slice(&next.to_ne_bytes());
        }
        Self(lists)
    }

    /// The first list (what the miniport is handed), or null.
    pub fn head(&mut self) -> *mut NET_BUFFER_LIST {
        self.0
            .first_mut()
            .map_or(ptr::null_mut(), |l| l.addr() as *mut NET_BUFFER_LIST)
    }

    /// Every list's address.
    pub fn addrs(&mut self) -> Vec<usize> {
        self.0.iter_mut().map(Nbl::addr).collect()
    }
}

/// The stack's sends into one V.
#[derive(Debug, Default)]
struct UpperSends {
    /// The stack above is paused: nothing more is sent.
    paused: bool,
    /// Lists handed to V and not completed, with the `SourceHandle` they
    /// went down with.
    outstanding: BTreeMap<usize, usize>,
    /// Lists V completed, and how many of them with a failure status.
    completed: u64,
    failed: u64,
    /// Frames not sent (V not running, or the stack paused).
    dropped: u64,
}

static SENDS: Mutex<BTreeMap<usize, UpperSends>> = Mutex::new(BTreeMap::new());
static SENDS_CHANGED: Condvar = Condvar::new();

fn sends() -> MutexGuard<'static, BTreeMap<usize, UpperSends>> {
    SENDS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// An ownership fault of a list (0x7C / 0x27, as every list fault of
/// the bottle): P2 = the list.
fn list_fault(api: &str, list: usize, what: &str) -> ! {
    ndis_bugcheck(NDIS_BUGCHECK_LEAKED_NBL, list, 0, format!("{api}: {what}"))
}

/// The `SourceHandle` NDIS stamps on the stack's lists sent to V: the
/// address of V's miniport block, so a miniport that forgets to restore
/// it is caught at completion.
fn source_handle_of(handle: usize) -> usize {
    handle
}

/// What the stack's sends into V came to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UpperSendCounters {
    /// Lists V has not completed yet.
    pub outstanding: usize,
    /// Lists V completed.
    pub completed: u64,
    /// Of those, completed with a failure status.
    pub failed: u64,
    /// Frames not sent (V not running, or the stack paused).
    pub dropped: u64,
}

/// The counters of the stack's sends into the adapter whose miniport
/// handle is `handle`.
pub fn upper_send_counters(handle: usize) -> UpperSendCounters {
    sends()
        .get(&handle)
        .map_or_else(UpperSendCounters::default, |s| UpperSendCounters {
            outstanding: s.outstanding.len(),
            completed: s.completed,
            failed: s.failed,
            dropped: s.dropped,
        })
}

/// The stack above V (miniport handle `handle`) pauses, as NDIS pauses
/// the protocols bound to a miniport before `MiniportPause`: no more
/// sends, and this waits until V completed every list it was given (0x7C
/// / 0x25 if it does not within the NDIS watchdog's time).
pub fn pause_upper(handle: usize) {
    let deadline = Instant::now() + PAUSE_TIMEOUT;
    let mut s = sends();
    s.entry(handle).or_default().paused = true;
    loop {
        let left = s.get(&handle).map_or(0, |u| u.outstanding.len());
        if left == 0 {
            return;
        }
        let now = Instant::now();
        if now >= deadline {
            drop(s);
            ndis_bugcheck(
                NDIS_BUGCHECK_WATCHDOG,
                0,
                handle,
                format!(
                    "{left} lists the protocol above sent to the miniport were not completed \
                     within {PAUSE_TIMEOUT:?} while that protocol was pausing"
                ),
            );
        }
        s = SENDS_CHANGED
            .wait_timeout(s, deadline - now)
            .unwrap_or_else(PoisonError::into_inner)
            .0;
    }
}

/// The stack above V (miniport handle `handle`) may send again (after V's
/// `MiniportRestart`).
pub fn restart_upper(handle: usize) {
    sends().entry(handle).or_default().paused = false;
}

/// Sends `frame` from the stack above into adapter `id`'s
/// `MiniportSendNetBufferLists` at DISPATCH_LEVEL, in a list of its own;
/// dropped (and counted) when the adapter is not running or the stack
/// above it is paused.
pub fn send_frame(id: u32, frame: &[u8]) {
    let found = state::with(|n| {
        let handler = n
            .driver
            .as_ref()
            .and_then(|d| d.characteristics.SendNetBufferListsHandler);
        n.adapter_by_id(id).map(|a| {
            (
                a.handle.addr(),
                a.registration.map_or(0, |r| r.context),
                a.state,
                handler,
            )
        })
    });
    let Some((handle, context, adapter_state, Some(handler))) = found else {
        return;
    };
    let mut s = sends();
    let entry = s.entry(handle).or_default();
    if entry.paused || adapter_state != AdapterState::Running {
        entry.dropped += 1;
        return;
    }
    let list = nbl::build(frame);
    let source = source_handle_of(handle);
    // SAFETY: a list just built by the bottle, which holds it.
    unsafe { (*list).SourceHandle = source as NDIS_HANDLE };
    if nbl::push(list as usize, Holder::SentToMiniport(handle)).is_err() {
        // A list just built is always in the ledger.
        let _ = nbl::free(list);
        return;
    }
    entry.outstanding.insert(list as usize, source);
    drop(s);
    cpu::run_at_dispatch(|| {
        // SAFETY: the driver's MiniportSendNetBufferLists on its running
        // adapter's context, at DISPATCH_LEVEL as the flag says, with one
        // list the bottle built and hands over until its completion.
        unsafe {
            handler(
                context as NDIS_HANDLE,
                list,
                NDIS_DEFAULT_PORT_NUMBER,
                NDIS_SEND_FLAGS_DISPATCH_LEVEL,
            );
        };
    });
}

/// A list of the stack's came back from V (miniport handle `handle`):
/// its `SourceHandle` must be the one it went down with; it is freed.
fn complete_upper_send(api: &str, handle: usize, list: usize, status: NDIS_STATUS) {
    let mut s = sends();
    let Some(source) = s.get_mut(&handle).and_then(|u| u.outstanding.remove(&list)) else {
        drop(s);
        list_fault(
            api,
            list,
            &format!("{list:#x} was not sent to this miniport, or was completed already"),
        );
    };
    // SAFETY: one of the bottle's lists, still allocated (freed below).
    let found = unsafe { (*(list as *const NET_BUFFER_LIST)).SourceHandle } as usize;
    if found != source {
        drop(s);
        list_fault(
            api,
            list,
            &format!(
                "{list:#x} completed with SourceHandle {found:#x}; it went down with {source:#x} \
                 (NDIS routes the completion through it: a miniport that changes it must \
                 restore it)"
            ),
        );
    }
    if let Some(u) = s.get_mut(&handle) {
        u.completed += 1;
        if status != 0 {
            u.failed += 1;
        }
    }
    drop(s);
    SENDS_CHANGED.notify_all();
    match nbl::pop(list, Holder::SentToMiniport(handle)) {
        Ok(sent) => {
            let back = nbl::shape_of(list);
            if back != sent {
                list_fault(
                    api,
                    list,
                    &format!(
                        "{list:#x} came back changed: sent as {sent:?}, completed as {back:?} \
                         (a miniport restores the NET_BUFFERs, MDLs, offsets and context it \
                         changed)"
                    ),
                );
            }
        }
        Err(e) => list_fault(api, list, &e.to_string()),
    }
    if let Err(e) = nbl::free(list as *mut NET_BUFFER_LIST) {
        list_fault(api, list, &e.to_string());
    }
}

/// 0xC4 / 0xE5 unless the caller is at DISPATCH_LEVEL when its flag says
/// it is.
fn check_dispatch_flag(api: &str, flagged: bool) {
    let irql = cpu::current();
    if flagged && irql != DISPATCH_LEVEL {
        verifier::bugcheck(
            DRIVER_VERIFIER_DETECTED_VIOLATION,
            [0xE5, u64::from(irql), 0, 0],
            format!(
                "{api} with its DISPATCH_LEVEL flag at IRQL {irql} \
                 (NDIS takes its locks as if at DISPATCH_LEVEL)"
            ),
        );
    }
}

/// `NdisMSendNetBufferListsComplete` (<= DISPATCH_LEVEL, with
/// `NDIS_SEND_COMPLETE_FLAGS_DISPATCH_LEVEL` exactly when at
/// DISPATCH_LEVEL): returns send lists, their `Status` set, to NDIS, in
/// any grouping.
pub unsafe extern "win64" fn NdisMSendNetBufferListsComplete(
    MiniportAdapterHandle: NDIS_HANDLE,
    NetBufferList: *mut NET_BUFFER_LIST,
    SendCompleteFlags: ULONG,
) {
    const API: &str = "NdisMSendNetBufferListsComplete";
    guarded(API, || {
        require_dispatch_or_below(API, NdisMSendNetBufferListsComplete as *const ());
        let handle = MiniportAdapterHandle as usize;
        let Some(legacy) =
            state::with(|n| n.live_adapter(handle).map(|a| a.sends_outstanding.clone()))
        else {
            invalid_handle(API, handle, "miniport adapter");
        };
        check_dispatch_flag(
            API,
            SendCompleteFlags & NDIS_SEND_COMPLETE_FLAGS_DISPATCH_LEVEL != 0,
        );
        let mut lists: Vec<(usize, NDIS_STATUS)> = Vec::new();
        let mut at = NetBufferList as usize;
        while at != 0 {
            let upper = sends()
                .get(&handle)
                .is_some_and(|u| u.outstanding.contains_key(&at));
            if !(upper || legacy.contains(&at)) || lists.iter().any(|(l, _)| *l == at) {
                list_fault(
                    API,
                    at,
                    &format!("{at:#x} was not sent to this miniport, or was completed already"),
                );
            }
            // SAFETY: `at` is a list the bottle sent to this miniport and
            // that is not completed yet (checked), so its memory is live.
            let list = unsafe { &*(at as *const NET_BUFFER_LIST) };
            let (status, next) = (list.Status, list.Next as usize);
            lists.push((at, status));
            at = next;
        }
        let mut legacy_done = Vec::new();
        for (list, status) in lists {
            if legacy.contains(&list) {
                legacy_done.push((list, status));
            } else {
                complete_upper_send(API, handle, list, status);
            }
        }
        if !legacy_done.is_empty() {
            state::with(|n| {
                if let Some(a) = n.live_adapter(handle) {
                    for (list, status) in &legacy_done {
                        a.sends_outstanding.retain(|l| l != list);
                        a.send_completions.push(*status);
                    }
                }
            });
            state::changed();
        }
    });
}

/// `NdisMIndicateReceiveNetBufferLists` (<= DISPATCH_LEVEL): hands the
/// frames of the lists to the stack above (copied: the stack reads them
/// later, on its own thread). Lists indicated with
/// `NDIS_RECEIVE_FLAGS_RESOURCES` are the miniport's again when the call
/// returns; the others go back through `MiniportReturnNetBufferLists`,
/// called from the worker thread at DISPATCH_LEVEL.
pub unsafe extern "win64" fn NdisMIndicateReceiveNetBufferLists(
    MiniportAdapterHandle: NDIS_HANDLE,
    NetBufferList: *mut NET_BUFFER_LIST,
    _PortNumber: NDIS_PORT_NUMBER,
    NumberOfNetBufferLists: ULONG,
    ReceiveFlags: ULONG,
) {
    const API: &str = "NdisMIndicateReceiveNetBufferLists";
    guarded(API, || {
        require_dispatch_or_below(API, NdisMIndicateReceiveNetBufferLists as *const ());
        let handle = MiniportAdapterHandle as usize;
        let Some((id, context)) = state::with(|n| {
            n.live_adapter(handle)
                .map(|a| (a.id, a.registration.map_or(0, |r| r.context)))
        }) else {
            invalid_handle(API, handle, "miniport adapter");
        };
        check_dispatch_flag(API, ReceiveFlags & NDIS_RECEIVE_FLAGS_DISPATCH_LEVEL != 0);
        if NetBufferList.is_null() || NumberOfNetBufferLists == 0 {
            invalid_handle(
                API,
                NetBufferList as usize,
                "received NET_BUFFER_LIST chain",
            );
        }
        // SAFETY: a non-null chain the miniport indicates; its lists are
        // valid for the call.
        let lists = unsafe { nbl::chain(NetBufferList, MAX_INDICATED) };
        if lists.len() != NumberOfNetBufferLists as usize {
            list_fault(
                API,
                NetBufferList as usize,
                &format!(
                    "NumberOfNetBufferLists is {NumberOfNetBufferLists}, the chain holds {} lists",
                    lists.len()
                ),
            );
        }
        let mut frames = Vec::new();
        for list in &lists {
            if nbl::holders(*list).is_none() {
                list_fault(
                    API,
                    *list,
                    &format!("{list:#x} is not a live NET_BUFFER_LIST allocated by NDIS"),
                );
            }
            // SAFETY: a live list of the ledger that the miniport
            // indicates (so its buffers and MDLs are valid for the call).
            match unsafe { nbl::frames_of(*list as *const NET_BUFFER_LIST) } {
                Ok(f) => frames.extend(f),
                Err(e) => list_fault(API, *list, &format!("{list:#x}: {e}")),
            }
        }
        if let Some(stack) = upper::upper() {
            for frame in &frames {
                stack.receive(AdapterId(id), frame);
            }
        }
        if ReceiveFlags & NDIS_RECEIVE_FLAGS_RESOURCES != 0 {
            return;
        }
        for list in &lists {
            if let Err(e) = nbl::push(*list, Holder::IndicatedByMiniport(handle)) {
                list_fault(API, *list, &e.to_string());
            }
        }
        let returner = state::with(|n| {
            n.driver
                .as_ref()
                .and_then(|d| d.characteristics.ReturnNetBufferListsHandler)
        });
        let Some(returner) = returner else { return };
        let head = NetBufferList as usize;
        run_on_worker(move || {
            for list in &lists {
                if let Err(e) = nbl::pop(*list, Holder::IndicatedByMiniport(handle)) {
                    list_fault("MiniportReturnNetBufferLists", *list, &e.to_string());
                }
            }
            cpu::run_at_dispatch(|| {
                // SAFETY: the miniport's MiniportReturnNetBufferLists, called
                // at DISPATCH_LEVEL with the flag saying so, with the chain
                // it indicated (linked as it was) and its adapter context.
                unsafe {
                    returner(
                        context as NDIS_HANDLE,
                        head as *mut NET_BUFFER_LIST,
                        NDIS_RETURN_FLAGS_DISPATCH_LEVEL,
                    );
                }
            });
        });
    });
}
