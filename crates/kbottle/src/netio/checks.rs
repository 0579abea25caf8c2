//! What NETIO would crash on, reported as the bugcheck it would cause.
//!
//! - A call above its documented IRQL: `IRQL_NOT_LESS_OR_EQUAL` (0xA) with
//!   P1 = P4 = the routine's address, P2 = the IRQL, P3 = 8 (execute: the
//!   routine could not run there).
//! - An object WSK does not know, or no longer knows (a registration block
//!   never registered or already deregistered, a socket never created or
//!   already closed, an indication list not retained, a missing IRP), or
//!   one used against its contract (a provider NPI released more often
//!   than captured, a socket closed while another of its calls runs): WSK
//!   would dereference freed or foreign memory, so
//!   `KMODE_EXCEPTION_NOT_HANDLED` (0x1E) with P1 = `STATUS_ACCESS_VIOLATION`,
//!   P2 = the routine's address, P4 = the object's address.
//! - A panic of the bottle's own code inside a NETIO routine (it must not
//!   unwind into driver frames): 0x1E with P1 = `STATUS_INTERNAL_ERROR`.

use std::panic::{AssertUnwindSafe, catch_unwind};

use ndis::{DISPATCH_LEVEL, KIRQL, PASSIVE_LEVEL};
use ndkpi::{STATUS_ACCESS_VIOLATION, STATUS_INTERNAL_ERROR};

use crate::{cpu, verifier};

/// `IRQL_NOT_LESS_OR_EQUAL`.
pub const IRQL_NOT_LESS_OR_EQUAL: u32 = 0xA;
/// `KMODE_EXCEPTION_NOT_HANDLED`.
pub const KMODE_EXCEPTION_NOT_HANDLED: u32 = 0x1E;
/// P3 of 0xA: an execute access.
const EXECUTE: u64 = 8;

fn level_name(irql: KIRQL) -> &'static str {
    match irql {
        PASSIVE_LEVEL => "PASSIVE_LEVEL",
        DISPATCH_LEVEL => "DISPATCH_LEVEL",
        _ => "APC_LEVEL",
    }
}

/// Bugchecks unless the current IRQL is at most `max`.
pub fn irql_at_most(api: &str, routine: usize, max: KIRQL) {
    let irql = cpu::current();
    if irql > max {
        verifier::bugcheck(
            IRQL_NOT_LESS_OR_EQUAL,
            [routine as u64, u64::from(irql), EXECUTE, routine as u64],
            format!(
                "{api} must be called at IRQL <= {} (called at IRQL {irql})",
                level_name(max)
            ),
        );
    }
}

/// Reports a call on an object WSK does not know or that breaks the
/// object's contract.
pub fn bad_object(api: &str, routine: usize, object: usize, what: &str) -> ! {
    verifier::bugcheck(
        KMODE_EXCEPTION_NOT_HANDLED,
        [
            u64::from(STATUS_ACCESS_VIOLATION as u32),
            routine as u64,
            0,
            object as u64,
        ],
        format!("{api}: {what} ({object:#x})"),
    )
}

/// Runs the body of a NETIO routine; a panic of the bottle inside it
/// becomes a bugcheck report instead of unwinding into driver frames.
pub fn shielded<R>(api: &str, routine: usize, body: impl FnOnce() -> R) -> R {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(r) => r,
        Err(panic) => {
            let message = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            verifier::bugcheck(
                KMODE_EXCEPTION_NOT_HANDLED,
                [
                    u64::from(STATUS_INTERNAL_ERROR as u32),
                    routine as u64,
                    0,
                    0,
                ],
                format!("{api}: the bottle's NETIO failed: {message}"),
            )
        }
    }
}
