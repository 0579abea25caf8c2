//! Reader/writer spin locks (`ExAcquireSpinLockShared`/`Exclusive`): the
//! bottle prefers writers as Windows does and applies Verifier's spin-lock
//! rules to them, deadlock detection included, a shared hold counting as a
//! hold. Each case that stops the machine runs on its own processor thread
//! under `Policy::Park`.
#![cfg(all(target_os = "linux", target_arch = "x86_64"))]
#![allow(unsafe_code, non_snake_case)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use kbottle::verifier::{self, Bugcheck, Policy};

mod common;
use kbottle::{cpu, ke};
use ndis::{EX_SPIN_LOCK, KSPIN_LOCK};

/// Runs `f` on a new processor and returns the bugcheck it hits (the
/// thread stays parked).
fn bugcheck_of(label: &str, f: impl FnOnce() + Send + 'static) -> Bugcheck {
    common::on_new_processor(label, f).unwrap_or_else(|| panic!("{label}: no bugcheck"))
}

/// A leaked, free reader/writer lock's address.
fn new_rw() -> usize {
    let l: &'static mut EX_SPIN_LOCK = Box::leak(Box::new(0));
    (&raw mut *l).addr()
}

/// A leaked, free spin lock's address.
fn new_spin() -> usize {
    let l: &'static mut KSPIN_LOCK = Box::leak(Box::new(0));
    (&raw mut *l).addr()
}

fn shared(l: usize) -> u8 {
    // SAFETY: a leaked, aligned EX_SPIN_LOCK.
    unsafe { ke::ExAcquireSpinLockShared(l as *mut EX_SPIN_LOCK) }
}

fn unshare(l: usize, old: u8) {
    // SAFETY: held shared by this processor, released at the acquire's IRQL.
    unsafe { ke::ExReleaseSpinLockShared(l as *mut EX_SPIN_LOCK, old) }
}

fn exclusive(l: usize) -> u8 {
    // SAFETY: a leaked, aligned EX_SPIN_LOCK.
    unsafe { ke::ExAcquireSpinLockExclusive(l as *mut EX_SPIN_LOCK) }
}

fn unexclusive(l: usize, old: u8) {
    // SAFETY: held exclusively by this processor, at the acquire's IRQL.
    unsafe { ke::ExReleaseSpinLockExclusive(l as *mut EX_SPIN_LOCK, old) }
}

/// Two readers nesting two tables in opposite orders (the cross-device
/// key-table read before #23's redesign): a deadlock once writers queue on
/// both, reported at the second nesting even without contention.
#[test]
fn shared_holds_nested_in_both_orders_are_a_deadlock() {
    let (a, b) = (new_rw(), new_rw());
    let bc = bugcheck_of("rw-inversion", move || {
        let oa = shared(a);
        let ob = shared(b);
        unshare(b, ob);
        unshare(a, oa);
        let ob = shared(b);
        let oa = shared(a);
        unshare(a, oa);
        unshare(b, ob);
    });
    assert_eq!(
        (bc.code, bc.params),
        (0xC4, [0x1001, a as u64, b as u64, 0]),
        "{}",
        bc.rule
    );
}

/// The order graph is one for both kinds of spin lock.
#[test]
fn a_cycle_through_a_spin_lock_and_a_reader_writer_lock_is_a_deadlock() {
    let (spin, rw) = (new_spin(), new_rw());
    let bc = bugcheck_of("mixed-inversion", move || {
        // SAFETY: a leaked, aligned KSPIN_LOCK, released below.
        let os = unsafe { ke::KeAcquireSpinLockRaiseToDpc(spin as *mut KSPIN_LOCK) };
        let or = exclusive(rw);
        unexclusive(rw, or);
        // SAFETY: held, at the IRQL the acquire left.
        unsafe { ke::KeReleaseSpinLock(spin as *mut KSPIN_LOCK, os) };
        let or = shared(rw);
        // SAFETY: as above.
        let os = unsafe { ke::KeAcquireSpinLockRaiseToDpc(spin as *mut KSPIN_LOCK) };
        // SAFETY: as above.
        unsafe { ke::KeReleaseSpinLock(spin as *mut KSPIN_LOCK, os) };
        unshare(rw, or);
    });
    assert_eq!(
        (bc.code, bc.params),
        (0xC4, [0x1001, spin as u64, rw as u64, 0]),
        "{}",
        bc.rule
    );
}

#[test]
fn a_recursive_shared_acquire_is_a_self_deadlock() {
    let l = new_rw();
    let bc = bugcheck_of("rw-recursion", move || {
        let _ = shared(l);
        let _ = shared(l);
    });
    assert_eq!(
        (bc.code, bc.params[0], bc.params[1]),
        (0xC4, 0x1000, l as u64),
        "{}",
        bc.rule
    );
}

#[test]
fn releasing_a_lock_not_held_that_way_stops_the_machine() {
    let l = new_rw();
    let bc = bugcheck_of("rw-wrong-release", move || {
        let old = shared(l);
        unexclusive(l, old);
    });
    assert_eq!(
        (bc.code, bc.params[0], bc.params[1]),
        (0xC4, 0x1007, l as u64),
        "{}",
        bc.rule
    );
}

#[test]
fn an_acquire_above_dispatch_level_stops_the_machine() {
    let l = new_rw();
    let bc = bugcheck_of("rw-high-irql", move || {
        // SAFETY: raising is always allowed; the bugcheck parks here.
        let _ = unsafe { ke::KfRaiseIrql(5) };
        let _ = shared(l);
    });
    assert_eq!((bc.code, bc.params[0]), (0xC4, 0xE5), "{}", bc.rule);
}

/// Windows' reader/writer spin locks prefer writers: with a reader in and
/// a writer waiting, a new reader waits for the writer.
#[test]
fn a_waiting_writer_holds_new_readers_back() {
    verifier::set_policy(Policy::Park);
    let l = new_rw();
    let (held_tx, held_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let first = std::thread::spawn(move || {
        cpu::enter("rw-first-reader");
        let old = shared(l);
        held_tx.send(()).unwrap();
        release_rx.recv().unwrap();
        unshare(l, old);
    });
    held_rx.recv().unwrap();
    let writer_done = std::sync::Arc::new(AtomicBool::new(false));
    let writer = {
        let done = writer_done.clone();
        std::thread::spawn(move || {
            cpu::enter("rw-writer");
            let old = exclusive(l);
            std::thread::sleep(Duration::from_millis(50));
            done.store(true, Ordering::SeqCst);
            unexclusive(l, old);
        })
    };
    // Let the writer start waiting.
    std::thread::sleep(Duration::from_millis(100));
    let second_in = std::sync::Arc::new(AtomicBool::new(false));
    let second = {
        let (done, inside) = (writer_done.clone(), second_in.clone());
        std::thread::spawn(move || {
            cpu::enter("rw-second-reader");
            let old = shared(l);
            inside.store(true, Ordering::SeqCst);
            let after_writer = done.load(Ordering::SeqCst);
            unshare(l, old);
            after_writer
        })
    };
    std::thread::sleep(Duration::from_millis(100));
    assert!(
        !second_in.load(Ordering::SeqCst),
        "a new reader got in past a waiting writer (reader-preferring)"
    );
    release_tx.send(()).unwrap();
    first.join().unwrap();
    writer.join().unwrap();
    assert!(
        second.join().unwrap(),
        "the second reader got in before the writer finished"
    );
    assert!(ke::distinct_rw_spin_locks() >= 1);
}
