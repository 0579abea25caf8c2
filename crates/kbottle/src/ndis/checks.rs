//! The rules every NDIS import enforces: IRQL, object headers, handles,
//! and the bug check codes they end in. A violation is reported through
//! [`crate::kernel::verifier::bugcheck`] with the code Windows (or NDIS's own
//! checks) would raise, and never returns.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};

use ndis::{DISPATCH_LEVEL, KIRQL, NDIS_OBJECT_HEADER, PASSIVE_LEVEL};

use crate::kernel::verifier::{
    DRIVER_VERIFIER_DETECTED_VIOLATION, IRQL_UNEXPECTED_VALUE, PAGE_FAULT_IN_NONPAGED_AREA,
};
use crate::kernel::{cpu, verifier};

/// `NDIS_INTERNAL_ERROR`: raised when the bottle's own NDIS code fails
/// (a panic caught at the import boundary), never for a driver bug.
pub const NDIS_INTERNAL_ERROR: u32 = 0x4F;
/// `BUGCODE_NDIS_DRIVER`; P1 is one of the `NDIS_BUGCHECK_*` cases below.
pub const BUGCODE_NDIS_DRIVER: u32 = 0x7C;
/// `WORKER_THREAD_RETURNED_AT_BAD_IRQL`: P1 = worker routine, P2 = IRQL,
/// P3 = work item parameter, P4 = work item.
pub const WORKER_THREAD_RETURNED_AT_BAD_IRQL: u32 = 0xE1;
/// `WORKER_INVALID`: P1 = 1 an active (queued) work item was queued again,
/// 2 a queued I/O work item was freed, 3 a work item was allocated for an
/// invalid object, 7 queued with an invalid routine.
pub const WORKER_INVALID: u32 = 0xE4;

/// 0x7C case: an OID request completed with `BytesWritten` larger than
/// the buffer.
pub const NDIS_BUGCHECK_OID_INVALID_BUFFER_LENGTH: u64 = 0x1D;
/// 0x7C case: `NdisMPauseComplete` / `NdisMRestartComplete` (and the
/// reset completion) with nothing pending.
pub const NDIS_BUGCHECK_ILLEGAL_PAUSE_RESTART_COMPLETE: u64 = 0x1F;
/// 0x7C case: an invalid status indication.
pub const NDIS_BUGCHECK_INVALID_STATUS_INDICATION: u64 = 0x20;
/// 0x7C case: an `NDIS_OBJECT_HEADER` with a wrong type, revision or
/// size. P2 = miniport block, P3 = the object.
pub const NDIS_BUGCHECK_INVALID_OBJECT_HEADER: u64 = 0x21;
/// 0x7C case: an illegal `NET_PNP_EVENT`.
pub const NDIS_BUGCHECK_INVALID_NET_PNP_EVENT: u64 = 0x22;
/// 0x7C case: the NDIS watchdog fired; P2 says on what.
pub const NDIS_BUGCHECK_WATCHDOG: u64 = 0x25;
/// 0x7C case: an OID completion that matches no pending request.
pub const NDIS_BUGCHECK_INVALID_OID_COMPLETION: u64 = 0x26;
/// 0x7C case: a leaked `NET_BUFFER_LIST`; the bottle files every list
/// ownership fault (freed, completed or returned twice or by the wrong
/// party, kept past a hand-over) here. P2 = the list or pool.
pub const NDIS_BUGCHECK_LEAKED_NBL: u64 = 0x27;
/// 0x7C case: `NdisOpenAdapterEx` called outside `ProtocolBindAdapterEx`.
pub const NDIS_BUGCHECK_OPEN_OUTSIDE_BIND: u64 = 0x16;
/// 0x7C case: an interface stack entry that would make a loop.
pub const NDIS_BUGCHECK_IFSTACK_LOOP: u64 = 0x1B;
/// Watchdog P2: `MiniportPause` did not complete.
pub const WATCHDOG_MINIPORT_PAUSE: u64 = 0x21;
/// Watchdog P2: `MiniportHaltEx` did not return.
pub const WATCHDOG_MINIPORT_HALT: u64 = 0x22;
/// Watchdog P2: an OID request did not complete.
pub const WATCHDOG_MINIPORT_OID: u64 = 0x23;

/// Reports an NDIS bug check (0x7C) of case `case`.
pub fn ndis_bugcheck(case: u64, p2: usize, p3: usize, rule: String) -> ! {
    verifier::bugcheck(BUGCODE_NDIS_DRIVER, [case, p2 as u64, p3 as u64, 0], rule)
}

/// Checks that `api` (the export at `addr`) is called at PASSIVE_LEVEL.
pub fn require_passive(api: &'static str, addr: *const ()) {
    let irql = cpu::current();
    if irql != PASSIVE_LEVEL {
        irql_violation(api, addr, irql, "PASSIVE_LEVEL");
    }
}

/// Checks that `api` (the export at `addr`) is called at or below
/// DISPATCH_LEVEL.
pub fn require_dispatch_or_below(api: &'static str, addr: *const ()) {
    let irql = cpu::current();
    if irql > DISPATCH_LEVEL {
        irql_violation(api, addr, irql, "IRQL <= DISPATCH_LEVEL");
    }
}

/// 0xC4 / 0xE5: "a call was made to a kernel API at the incorrect IRQL"
/// (P2 = current IRQL), as for the ntoskrnl imports.
fn irql_violation(api: &str, addr: *const (), irql: KIRQL, needed: &str) -> ! {
    verifier::bugcheck(
        DRIVER_VERIFIER_DETECTED_VIOLATION,
        [0xE5, u64::from(irql), 0, 0],
        format!("{api} (bottle export {addr:p}) must be called at {needed}; called at IRQL {irql}"),
    )
}

/// Reports a driver handler (at `addr`) that returned at another IRQL
/// than NDIS called it at (`entered`): 0xC8 `IRQL_UNEXPECTED_VALUE`, P1 =
/// (current << 16) | (expected << 8) | 0xFF, as for other driver code the
/// bottle enters at a known IRQL.
pub fn returned_at_raised_irql(handler: &str, addr: usize, entered: KIRQL) -> ! {
    let irql = cpu::current();
    verifier::bugcheck(
        IRQL_UNEXPECTED_VALUE,
        [
            (u64::from(irql) << 16) | (u64::from(entered) << 8) | 0xFF,
            addr as u64,
            0,
            0,
        ],
        format!("{handler} returned at IRQL {irql}; NDIS called it at {entered}"),
    )
}

/// Reports a handle that NDIS never gave out, or already took back: what
/// NDIS dereferencing it comes to, 0x50 `PAGE_FAULT_IN_NONPAGED_AREA`
/// (P1 = address, P2 = 0 read, P4 = 2 not-present page).
pub fn invalid_handle(api: &str, handle: usize, what: &str) -> ! {
    verifier::bugcheck(
        PAGE_FAULT_IN_NONPAGED_AREA,
        [handle as u64, 0, 0, 2],
        format!("{api}: {handle:#x} is not a live {what} handle"),
    )
}

/// Runs the body of an import, turning a panic of the bottle's own code
/// (which must not unwind into driver frames) into an `NDIS_INTERNAL_ERROR`
/// report.
pub fn guarded<R>(api: &'static str, body: impl FnOnce() -> R) -> R {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(value) => value,
        Err(payload) => verifier::bugcheck(
            NDIS_INTERNAL_ERROR,
            [0; 4],
            format!("the bottle's {api} panicked: {}", panic_text(&*payload)),
        ),
    }
}

fn panic_text(payload: &dyn Any) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(non-text panic)".to_owned()
    }
}

/// What is wrong with an object header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeaderFault {
    /// `Type` is not the one the call takes.
    Type,
    /// `Revision` is one NDIS does not know for this object.
    Revision,
    /// `Size` is below the size of the revision claimed.
    Size,
}

/// Checks `header` against the object type `ty` and the smallest size of
/// each known revision (`sizes[r - 1]` for revision `r`).
pub fn check_header(header: NDIS_OBJECT_HEADER, ty: u8, sizes: &[u16]) -> Result<(), HeaderFault> {
    if header.Type != ty {
        return Err(HeaderFault::Type);
    }
    let Some(&min) = usize::from(header.Revision)
        .checked_sub(1)
        .and_then(|i| sizes.get(i))
    else {
        return Err(HeaderFault::Revision);
    };
    if header.Size < min {
        return Err(HeaderFault::Size);
    }
    Ok(())
}

/// Reports a bad object header passed to `api` (0x7C / 0x21).
pub fn bad_header(
    api: &str,
    block: usize,
    object: usize,
    what: &str,
    header: NDIS_OBJECT_HEADER,
    fault: HeaderFault,
) -> ! {
    ndis_bugcheck(
        NDIS_BUGCHECK_INVALID_OBJECT_HEADER,
        block,
        object,
        format!(
            "{api}: {what} has a bad NDIS_OBJECT_HEADER ({fault:?}): Type {:#x}, Revision {}, Size {}",
            header.Type, header.Revision, header.Size
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_are_checked_by_type_revision_and_size() {
        let sizes = [16, 24];
        let h = |t, r, s| NDIS_OBJECT_HEADER::new(t, r, s);
        assert_eq!(check_header(h(0x80, 1, 16), 0x80, &sizes), Ok(()));
        assert_eq!(check_header(h(0x80, 2, 24), 0x80, &sizes), Ok(()));
        assert_eq!(check_header(h(0x80, 2, 40), 0x80, &sizes), Ok(()));
        assert_eq!(
            check_header(h(0x81, 1, 16), 0x80, &sizes),
            Err(HeaderFault::Type)
        );
        assert_eq!(
            check_header(h(0x80, 0, 16), 0x80, &sizes),
            Err(HeaderFault::Revision)
        );
        assert_eq!(
            check_header(h(0x80, 3, 99), 0x80, &sizes),
            Err(HeaderFault::Revision)
        );
        assert_eq!(
            check_header(h(0x80, 2, 16), 0x80, &sizes),
            Err(HeaderFault::Size)
        );
    }
}
