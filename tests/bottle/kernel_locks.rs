//! #23 item 5, locks: the provider's (and the RNIC's) spin locks are the
//! kernel's, so the bottle's Driver Verifier checks their IRQL and their
//! order (deadlock detection, 0xC4/0x1001) on every run of the suite.

use crate::common::{child_passes, is_child};
use crate::defects::{Pair, boot, unload_clean};
use kbottle::ke;

/// Opening two NDK adapters, a connected QP on each and a registered
/// region acquires many different kernel spin locks: each NDK object's
/// own. Before they were kernel spin locks only the shell's registration
/// map (one lock) was.
#[test]
fn ndk_objects_lock_with_kernel_spin_locks() {
    if !is_child() {
        child_passes("kernel_locks::ndk_objects_lock_with_kernel_spin_locks");
        return;
    }
    let machine = boot();
    let before = ke::distinct_spin_locks();
    let pair = Pair::new(&machine, None, 8, 4096);
    let locks = ke::distinct_spin_locks() - before;
    // Per side: the adapter's, the PD's, the CQ's, the QP's (several),
    // the connector's, the MR's: well over this bound.
    assert!(
        locks >= 10,
        "two adapters with a connected QP each and an MR acquired only {locks} different kernel spin locks"
    );
    pair.close_and_halt(&machine);
    unload_clean(machine);
}
