//! What NETIO would crash on, reported as the bugcheck it would cause.
//!
//! - A call above its documented IRQL: the bottle's rule for kernel APIs
//!   at the wrong IRQL ([`crate::kernel::ke::require_irql_at_most`], 0xC4/0xE5).
//! - An object NETIO does not know, or no longer knows (a notification
//!   handle never registered or already cancelled): NETIO would
//!   dereference freed or foreign memory, so `KMODE_EXCEPTION_NOT_HANDLED`
//!   (0x1E) with P1 = `STATUS_ACCESS_VIOLATION`, P2 = the routine's
//!   address, P4 = the object's address.
//! - A panic of the bottle's own code inside a NETIO routine never unwinds
//!   into driver frames: each routine runs under [`crate::kernel::verifier::firewall`].

use ndis::KIRQL;
use ndkpi::STATUS_ACCESS_VIOLATION;

use crate::kernel::verifier::{self, KMODE_EXCEPTION_NOT_HANDLED};

/// Bugchecks unless the current IRQL is at most `max`.
pub fn irql_at_most(api: &str, max: KIRQL) {
    crate::kernel::ke::require_irql_at_most(max, api);
}

/// Reports a call on an object NETIO does not know.
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
