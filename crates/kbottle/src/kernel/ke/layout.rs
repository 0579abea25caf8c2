//! The x64 layouts of the dispatcher objects the bottle fills in driver
//! memory (`DISPATCHER_HEADER`, `KTIMER`, `KDPC`), and due-time arithmetic.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use ndis::{KDPC, KTIMER};

/// `DISPATCHER_HEADER.Type` of the objects the bottle models.
pub(super) const EVENT_NOTIFICATION_OBJECT: u8 = 0;
pub(super) const EVENT_SYNCHRONIZATION_OBJECT: u8 = 1;
pub(super) const TIMER_NOTIFICATION_OBJECT: u8 = 8;
pub(super) const TIMER_SYNCHRONIZATION_OBJECT: u8 = 9;
/// `KOBJECTS` value of a DPC (`DpcObject`).
pub(super) const DPC_OBJECT: u8 = 19;
/// `MediumImportance`.
pub(super) const MEDIUM_IMPORTANCE: u8 = 1;

/// x64 `DISPATCHER_HEADER` (0x18 bytes).
#[repr(C)]
#[derive(Clone, Copy)]
pub(super) struct DispatcherHeader {
    pub(super) kind: u8,
    pub(super) signalling: u8,
    /// Object size in `ULONG`s.
    pub(super) size: u8,
    pub(super) reserved: u8,
    pub(super) signal_state: i32,
    pub(super) wait_list_head: [usize; 2],
}

/// x64 `KTIMER` (0x40 bytes).
#[repr(C)]
pub(super) struct KtimerLayout {
    pub(super) header: DispatcherHeader,
    pub(super) due_time: u64,
    pub(super) timer_list_entry: [usize; 2],
    pub(super) dpc: usize,
    pub(super) processor: u32,
    pub(super) period: u32,
}

/// x64 `KDPC` (0x40 bytes).
#[repr(C)]
pub(super) struct KdpcLayout {
    pub(super) kind: u8,
    pub(super) importance: u8,
    pub(super) number: u16,
    pub(super) reserved: u32,
    pub(super) dpc_list_entry: usize,
    pub(super) processor_history: usize,
    pub(super) deferred_routine: usize,
    pub(super) deferred_context: usize,
    pub(super) system_argument1: usize,
    pub(super) system_argument2: usize,
    pub(super) dpc_data: usize,
}

const _: () = assert!(size_of::<KtimerLayout>() == size_of::<KTIMER>());
const _: () = assert!(size_of::<KdpcLayout>() == size_of::<KDPC>());
const _: () = assert!(size_of::<DispatcherHeader>() == size_of::<ndis::KEVENT>());

/// Offset of `SignalState` in a dispatcher header.
pub(super) const SIGNAL_STATE: usize = 4;
/// Offset of `KDPC.SystemArgument1`.
pub(super) const DPC_SYSTEM_ARGUMENT1: usize = 0x28;
/// Offset of `KDPC.DpcData` (non-null while queued).
pub(crate) const DPC_DATA: usize = 0x38;

/// Stores `SignalState` in a dispatcher header.
///
/// # Safety
/// `addr` is a writable dispatcher object (an event or timer the driver
/// handed to an import and still owns).
pub(super) unsafe fn store_signal_state(addr: usize, state: bool) {
    // SAFETY: per the contract; the field is at offset 4, 4-byte aligned.
    unsafe { ((addr + SIGNAL_STATE) as *mut i32).write_volatile(i32::from(state)) };
}

/// 100 ns intervals since 1601-01-01 (system time).
pub fn system_time() -> i64 {
    const UNIX_TO_1601: i64 = 116_444_736_000_000_000;
    let since_unix = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    UNIX_TO_1601 + (since_unix.as_nanos() / 100) as i64
}

/// The instant a kernel due time names: negative = relative 100 ns units,
/// positive = absolute system time, zero = now.
pub(super) fn instant_of(due: i64) -> Instant {
    let now = Instant::now();
    if due < 0 {
        now + Duration::from_nanos(due.unsigned_abs().saturating_mul(100))
    } else {
        let delta = due.saturating_sub(system_time());
        now + Duration::from_nanos((delta.max(0) as u64).saturating_mul(100))
    }
}
