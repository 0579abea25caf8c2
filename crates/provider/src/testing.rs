//! A minimal `Platform` for the provider's own unit tests (the full host
//! platform lives in `host::platform`; this crate cannot depend on it).

extern crate std;

use core::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::boxed::Box;

use hwq::{DmaAccess, DmaFault};

use crate::platform::{Irql, LockClass, Platform, PoolTag, PoolType};

/// Counts pool bytes and callouts; refuses the `fail_at`th charge.
#[derive(Debug, Default)]
pub struct TestPlatform {
    pub bytes: AtomicI64,
    pub charges: AtomicU64,
    pub fail_at: AtomicU64,
    pub callouts: AtomicU64,
    pub locks_held: AtomicI64,
}

impl TestPlatform {
    /// A fresh instance for one test.
    pub fn leaked() -> &'static Self {
        Box::leak(Box::default())
    }
}

struct NoDma;

impl DmaAccess for NoDma {
    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), DmaFault> {
        Err(DmaFault {
            addr,
            len: buf.len(),
        })
    }
    fn write(&self, addr: u64, data: &[u8]) -> Result<(), DmaFault> {
        Err(DmaFault {
            addr,
            len: data.len(),
        })
    }
}

impl Platform for TestPlatform {
    fn current_irql(&self) -> Irql {
        Irql::Passive
    }
    fn raise_to_dispatch(&self) -> Irql {
        Irql::Passive
    }
    fn lower_irql(&self, _old: Irql) {}
    fn pool_charge(&self, _tag: PoolTag, _pool: PoolType, bytes: usize) -> bool {
        let n = self.charges.fetch_add(1, Ordering::SeqCst) + 1;
        if self.fail_at.load(Ordering::SeqCst) == n {
            return false;
        }
        self.bytes.fetch_add(bytes as i64, Ordering::SeqCst);
        true
    }
    fn pool_release(&self, _tag: PoolTag, _pool: PoolType, bytes: usize) {
        self.bytes.fetch_sub(bytes as i64, Ordering::SeqCst);
    }
    fn lock_acquired(&self, _class: &'static LockClass, _lock: usize) {
        self.locks_held.fetch_add(1, Ordering::SeqCst);
    }
    fn lock_released(&self, _class: &'static LockClass, _lock: usize) {
        self.locks_held.fetch_sub(1, Ordering::SeqCst);
    }
    fn callout_begin(&self) {
        assert_eq!(
            self.locks_held.load(Ordering::SeqCst),
            0,
            "callout under a lock"
        );
        self.callouts.fetch_add(1, Ordering::SeqCst);
    }
    fn callout_end(&self) {}
    fn now_ns(&self) -> u64 {
        0
    }
    fn pfn_to_logical(&self, pfn: u64) -> u64 {
        pfn << 12
    }
    fn logical_of(&self, va: usize, _len: usize) -> Option<u64> {
        Some(va as u64)
    }
    fn dma_map(&self, _owner: usize, _pages: &mut dyn ExactSizeIterator<Item = u64>) -> bool {
        // No device memory access to prepare: `dma` reaches nothing.
        true
    }
    fn dma_unmap(&self, _owner: usize) {}
    fn copy_from_va(&self, _va: u64, _buf: &mut [u8]) -> bool {
        false
    }
    fn dma(&self) -> &dyn DmaAccess {
        &NoDma
    }
    fn require_passive(&self, _what: &'static str) {}
    fn wait_briefly(&self) {}
}
