//! #23 item 5, locks: the provider's and the RNIC's spin locks are the
//! kernel's (`KSPIN_LOCK`s, and `EX_SPIN_LOCK`s for the RNIC's
//! reader/writer locks), so the bottle's Driver Verifier checks their IRQL
//! and their order (deadlock detection, 0xC4/0x1001) on every run of the
//! suite.

use crate::common::{child_passes, is_child};
use crate::defects::{Pair, boot, unload_clean};
use kbottle::ke;

/// Opening two NDK adapters, a connected QP on each and a registered
/// region acquires many different kernel spin locks: each NDK object's
/// own and the device's exclusive ones (connection manager, table slots,
/// outboxes, port frames) and its reader/writer ones (key table, addresses,
/// event sink, own addresses, neighbour cache, RC defaults, capture).
/// Measured: 55, 12 of them `EX_SPIN_LOCK`s (47 and none before the
/// reader/writer locks went through the kernel); the provider's alone 21;
/// before either was a kernel spin lock, only the shell's registration map
/// (1).
#[test]
fn ndk_objects_lock_with_kernel_spin_locks() {
    if !is_child() {
        child_passes("kernel_locks::ndk_objects_lock_with_kernel_spin_locks");
        return;
    }
    let machine = boot();
    let before = ke::distinct_spin_locks();
    let rw_before = ke::distinct_rw_spin_locks();
    let pair = Pair::new(&machine, None, 8, 4096);
    let locks = ke::distinct_spin_locks() - before;
    let rw_locks = ke::distinct_rw_spin_locks() - rw_before;
    assert!(
        locks >= 40,
        "two adapters with a connected QP each and an MR acquired only {locks} different kernel spin locks (are the provider's and the device's locks kernel spin locks?)"
    );
    assert!(
        rw_locks >= 10,
        "two adapters with a connected QP each and an MR acquired only {rw_locks} different EX_SPIN_LOCKs (are the device's reader/writer locks kernel spin locks?)"
    );
    pair.close_and_halt(&machine);
    unload_clean(machine);
}
