//! The key table (what hardware calls the memory protection table).

use alloc::vec::Vec;

use hwq::MemoryKey;
use hwq::device::Registration;
use hwq::wqe::Access;

/// Page size of logical-address page lists.
pub const PAGE_SIZE: u64 = 4096;

/// What kind of object a key-table entry is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyKind {
    /// Registered from a page list by a command (NdkRegisterMr).
    Region,
    /// Registered by a fast-register work request.
    FastRegion,
    /// A memory window, bound onto a region by a bind work request.
    Window,
    /// A protection domain's privileged key: logical addresses, local only.
    Privileged,
}

/// The access a DMA needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Need {
    /// Gather from local memory (SEND/WRITE source, READ response source at
    /// the responder is `RemoteRead`).
    LocalRead,
    /// Scatter into local memory (receive buffer, READ sink).
    LocalWrite,
    /// A peer reads (RDMA READ target).
    RemoteRead,
    /// A peer writes (RDMA WRITE target).
    RemoteWrite,
}

/// Why a key check or key operation failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyError {
    /// No entry at that index, or the variant byte is stale.
    UnknownKey,
    /// The entry exists but holds no valid registration.
    NotValid,
    /// The entry belongs to another protection domain.
    WrongPd,
    /// The access is not granted.
    Access,
    /// The range is not inside the registration.
    Bounds,
    /// The operation does not apply to this kind of entry.
    WrongKind,
    /// The table or a page list is full.
    NoResources,
    /// A parameter is malformed (length, alignment, page count).
    Invalid,
    /// The entry is in use (bound windows) and cannot change.
    Busy,
}

#[derive(Debug)]
struct Entry {
    kind: KeyKind,
    pd: u32,
    variant: u8,
    valid: bool,
    access: Access,
    va: u64,
    length: u64,
    /// Offset of `va` inside the first page.
    fbo: u32,
    /// Logical page addresses (regions; capacity fixed for fast regions).
    pages: Vec<u64>,
    /// Fast regions: page-list capacity and whether remote access may be granted.
    max_pages: u32,
    remote_allowed: bool,
    /// Windows: index of the region they are bound to.
    parent: u32,
    /// Regions: windows currently bound to them.
    bound_windows: u32,
}

impl Entry {
    fn new(kind: KeyKind, pd: u32) -> Self {
        Self {
            kind,
            pd,
            variant: 1,
            valid: false,
            access: Access::empty(),
            va: 0,
            length: 0,
            fbo: 0,
            pages: Vec::new(),
            max_pages: 0,
            remote_allowed: false,
            parent: 0,
            bound_windows: 0,
        }
    }

    fn key(&self, index: u32) -> MemoryKey {
        MemoryKey::new(index, self.variant)
    }

    fn contains(&self, va: u64, len: u64) -> bool {
        let Some(end) = va.checked_add(len) else {
            return false;
        };
        va >= self.va && end <= self.va.saturating_add(self.length)
    }

    fn grants(&self, need: Need) -> bool {
        match need {
            Need::LocalRead => true,
            Need::LocalWrite => {
                self.access.contains(Access::LOCAL_WRITE) || self.kind == KeyKind::Privileged
            }
            Need::RemoteRead => self.access.contains(Access::REMOTE_READ),
            Need::RemoteWrite => self.access.contains(Access::REMOTE_WRITE),
        }
    }
}

/// A resolved, checked range: the page list and offset to translate with.
#[derive(Clone, Copy, Debug)]
pub struct Resolved<'a> {
    /// Page list to translate through; empty for a privileged (identity) key.
    pub pages: &'a [u64],
    /// Byte offset of the range from the start of the first page of `pages`
    /// (for a privileged key: the logical address itself).
    pub offset: u64,
    /// Bytes.
    pub len: u64,
}

/// The device's table of memory keys.
#[derive(Debug)]
pub struct KeyTable {
    entries: Vec<Option<Entry>>,
    free: Vec<u32>,
}

/// Index 0 is never used, so a zero token is always invalid.
const FIRST_INDEX: u32 = 1;

impl KeyTable {
    /// A table of `capacity` keys. Allocates once, here.
    pub fn new(capacity: u32) -> Result<Self, KeyError> {
        let slots = capacity as usize + FIRST_INDEX as usize;
        let mut entries = Vec::new();
        entries
            .try_reserve_exact(slots)
            .map_err(|_| KeyError::NoResources)?;
        entries.resize_with(slots, || None);
        let mut free = Vec::new();
        free.try_reserve_exact(capacity as usize)
            .map_err(|_| KeyError::NoResources)?;
        // Hand out low indices first: pop from the end.
        free.extend((FIRST_INDEX..=capacity).rev());
        Ok(Self { entries, free })
    }

    fn entry(&self, key: MemoryKey) -> Result<&Entry, KeyError> {
        let e = self
            .entries
            .get(key.index() as usize)
            .and_then(Option::as_ref)
            .ok_or(KeyError::UnknownKey)?;
        if e.variant != key.variant() {
            return Err(KeyError::UnknownKey);
        }
        Ok(e)
    }

    fn entry_mut(&mut self, key: MemoryKey) -> Result<&mut Entry, KeyError> {
        let e = self
            .entries
            .get_mut(key.index() as usize)
            .and_then(Option::as_mut)
            .ok_or(KeyError::UnknownKey)?;
        if e.variant != key.variant() {
            return Err(KeyError::UnknownKey);
        }
        Ok(e)
    }

    fn slot_mut(&mut self, index: u32) -> Option<&mut Entry> {
        self.entries
            .get_mut(index as usize)
            .and_then(Option::as_mut)
    }

    /// Makes every key invalid (the device is going away): nothing can be
    /// reached through the table any more.
    pub fn revoke_all(&mut self) {
        for e in self.entries.iter_mut().flatten() {
            e.valid = false;
        }
    }

    /// Reserves an entry of `kind` in protection domain `pd`.
    pub fn alloc(&mut self, kind: KeyKind, pd: u32) -> Result<MemoryKey, KeyError> {
        let index = self.free.pop().ok_or(KeyError::NoResources)?;
        let entry = Entry::new(kind, pd);
        let key = entry.key(index);
        match self.entries.get_mut(index as usize) {
            Some(slot) => *slot = Some(entry),
            None => return Err(KeyError::NoResources),
        }
        Ok(key)
    }

    /// Reserves a protection domain's privileged key (valid at once, local
    /// access to logical addresses only).
    pub fn alloc_privileged(&mut self, pd: u32) -> Result<MemoryKey, KeyError> {
        let key = self.alloc(KeyKind::Privileged, pd)?;
        let e = self.entry_mut(key)?;
        e.valid = true;
        e.access = Access::LOCAL_WRITE;
        e.length = u64::MAX;
        Ok(key)
    }

    /// Releases an entry, whatever its state. Any token for it stops working.
    pub fn free(&mut self, key: MemoryKey) -> Result<(), KeyError> {
        let e = self.entry(key)?;
        if e.bound_windows != 0 {
            return Err(KeyError::Busy);
        }
        let (kind, parent, valid) = (e.kind, e.parent, e.valid);
        if kind == KeyKind::Window && valid {
            if let Some(p) = self.slot_mut(parent) {
                p.bound_windows = p.bound_windows.saturating_sub(1);
            }
        }
        let index = key.index();
        if let Some(slot) = self.entries.get_mut(index as usize) {
            *slot = None;
        }
        // Cannot fail: `free` has room for every index (reserved in `new`).
        self.free.push(index);
        Ok(())
    }

    /// Registers a page list on a region entry (the NdkRegisterMr command);
    /// returns the entry's new key. Allocates the page list copy.
    pub fn register(
        &mut self,
        key: MemoryKey,
        reg: &Registration<'_>,
    ) -> Result<MemoryKey, KeyError> {
        let e = self.entry_mut(key)?;
        if e.kind != KeyKind::Region || e.pd != reg.pd.raw() {
            return Err(KeyError::WrongKind);
        }
        if e.valid || e.bound_windows != 0 {
            return Err(KeyError::Busy);
        }
        check_page_list(reg.pages, reg.first_byte_offset, reg.length)?;
        let mut pages = Vec::new();
        pages
            .try_reserve_exact(reg.pages.len())
            .map_err(|_| KeyError::NoResources)?;
        pages.extend_from_slice(reg.pages);
        e.pages = pages;
        e.variant = e.variant.wrapping_add(1);
        e.valid = true;
        e.access = reg.access;
        e.va = reg.va;
        e.length = reg.length;
        e.fbo = reg.first_byte_offset;
        Ok(MemoryKey::new(key.index(), e.variant))
    }

    /// Drops a region's registration (NdkDeregisterMr).
    pub fn deregister(&mut self, key: MemoryKey) -> Result<(), KeyError> {
        let e = self.entry_mut(key)?;
        if e.kind != KeyKind::Region {
            return Err(KeyError::WrongKind);
        }
        if e.bound_windows != 0 {
            return Err(KeyError::Busy);
        }
        e.valid = false;
        e.pages = Vec::new();
        Ok(())
    }

    /// Turns a region entry into a fast-register entry able to hold
    /// `max_pages` pages (NdkInitializeFastRegisterMr). Allocates the page list.
    pub fn init_fast_register(
        &mut self,
        key: MemoryKey,
        max_pages: u32,
        remote: bool,
    ) -> Result<(), KeyError> {
        let e = self.entry_mut(key)?;
        if !matches!(e.kind, KeyKind::Region | KeyKind::FastRegion) || e.valid {
            return Err(KeyError::WrongKind);
        }
        if max_pages == 0 {
            return Err(KeyError::Invalid);
        }
        let mut pages = Vec::new();
        pages
            .try_reserve_exact(max_pages as usize)
            .map_err(|_| KeyError::NoResources)?;
        e.kind = KeyKind::FastRegion;
        e.pages = pages;
        e.max_pages = max_pages;
        e.remote_allowed = remote;
        Ok(())
    }

    /// Executes a fast-register work request: `new_key` (same index, the
    /// variant the driver chose) becomes valid over `pages`. No allocation.
    pub fn fast_register(
        &mut self,
        new_key: MemoryKey,
        pd: u32,
        access: Access,
        va: u64,
        length: u64,
        fbo: u32,
        pages: &[u64],
    ) -> Result<(), KeyError> {
        let e = self.slot_mut(new_key.index()).ok_or(KeyError::UnknownKey)?;
        if e.kind != KeyKind::FastRegion {
            return Err(KeyError::WrongKind);
        }
        if e.pd != pd {
            return Err(KeyError::WrongPd);
        }
        if e.valid {
            return Err(KeyError::Busy);
        }
        if pages.len() > e.max_pages as usize {
            return Err(KeyError::Invalid);
        }
        if access.intersects(Access::REMOTE_READ | Access::REMOTE_WRITE) && !e.remote_allowed {
            return Err(KeyError::Access);
        }
        check_page_list(pages, fbo, length)?;
        if va % PAGE_SIZE != u64::from(fbo) {
            return Err(KeyError::Invalid);
        }
        e.pages.clear();
        e.pages.extend_from_slice(pages); // within the capacity reserved at init
        e.variant = new_key.variant();
        e.valid = true;
        e.access = access;
        e.va = va;
        e.length = length;
        e.fbo = fbo;
        Ok(())
    }

    /// Executes a bind work request: window `new_key` (variant chosen by the
    /// driver) covers `[va, va+length)` of region `region_key`.
    pub fn bind(
        &mut self,
        new_key: MemoryKey,
        region_key: MemoryKey,
        pd: u32,
        access: Access,
        va: u64,
        length: u64,
    ) -> Result<(), KeyError> {
        let region = self.entry(region_key)?;
        if !matches!(region.kind, KeyKind::Region | KeyKind::FastRegion) {
            return Err(KeyError::WrongKind);
        }
        if !region.valid {
            return Err(KeyError::NotValid);
        }
        if region.pd != pd {
            return Err(KeyError::WrongPd);
        }
        if length == 0 || !region.contains(va, length) {
            return Err(KeyError::Bounds);
        }
        if access.contains(Access::REMOTE_WRITE) && !region.access.contains(Access::LOCAL_WRITE) {
            return Err(KeyError::Access);
        }
        let window = self.slot_mut(new_key.index()).ok_or(KeyError::UnknownKey)?;
        if window.kind != KeyKind::Window {
            return Err(KeyError::WrongKind);
        }
        if window.pd != pd {
            return Err(KeyError::WrongPd);
        }
        if window.valid {
            return Err(KeyError::Busy);
        }
        window.variant = new_key.variant();
        window.valid = true;
        window.access = access & (Access::REMOTE_READ | Access::REMOTE_WRITE);
        window.va = va;
        window.length = length;
        window.parent = region_key.index();
        if let Some(r) = self.slot_mut(region_key.index()) {
            r.bound_windows += 1;
        }
        Ok(())
    }

    /// Invalidates a fast-register region or a window by its current key
    /// (local invalidate, send with invalidate, read with local invalidate).
    pub fn invalidate(&mut self, key: MemoryKey, pd: u32) -> Result<(), KeyError> {
        let e = self.entry_mut(key)?;
        if e.pd != pd {
            return Err(KeyError::WrongPd);
        }
        match e.kind {
            KeyKind::FastRegion if e.bound_windows != 0 => Err(KeyError::Busy),
            KeyKind::FastRegion => {
                e.valid = false;
                Ok(())
            }
            KeyKind::Window => {
                let was_valid = core::mem::replace(&mut e.valid, false);
                let parent = e.parent;
                if was_valid && let Some(p) = self.slot_mut(parent) {
                    p.bound_windows = p.bound_windows.saturating_sub(1);
                }
                Ok(())
            }
            KeyKind::Region | KeyKind::Privileged => Err(KeyError::WrongKind),
        }
    }

    /// Checks that `key` grants `need` over `[va, va+len)` in protection
    /// domain `pd`, and resolves the range for translation.
    pub fn check(
        &self,
        key: MemoryKey,
        pd: u32,
        va: u64,
        len: u64,
        need: Need,
    ) -> Result<Resolved<'_>, KeyError> {
        let e = self.entry(key)?;
        if !e.valid {
            return Err(KeyError::NotValid);
        }
        if e.pd != pd {
            return Err(KeyError::WrongPd);
        }
        if !e.grants(need) {
            return Err(KeyError::Access);
        }
        match e.kind {
            KeyKind::Privileged => {
                if matches!(need, Need::RemoteRead | Need::RemoteWrite) {
                    return Err(KeyError::Access);
                }
                va.checked_add(len).ok_or(KeyError::Bounds)?;
                Ok(Resolved {
                    pages: &[],
                    offset: va,
                    len,
                })
            }
            KeyKind::Region | KeyKind::FastRegion => {
                if !e.contains(va, len) {
                    return Err(KeyError::Bounds);
                }
                Ok(Resolved {
                    pages: &e.pages,
                    offset: va - e.va + u64::from(e.fbo),
                    len,
                })
            }
            KeyKind::Window => {
                if !e.contains(va, len) {
                    return Err(KeyError::Bounds);
                }
                let parent = self
                    .entries
                    .get(e.parent as usize)
                    .and_then(Option::as_ref)
                    .filter(|p| p.valid)
                    .ok_or(KeyError::NotValid)?;
                if !parent.contains(va, len) {
                    return Err(KeyError::Bounds);
                }
                Ok(Resolved {
                    pages: &parent.pages,
                    offset: va - parent.va + u64::from(parent.fbo),
                    len,
                })
            }
        }
    }

    /// The protection domain and kind of a key's entry, if it exists.
    pub fn describe(&self, key: MemoryKey) -> Option<(KeyKind, u32, bool)> {
        self.entry(key).ok().map(|e| (e.kind, e.pd, e.valid))
    }
}

/// A page list must cover `fbo + length` bytes, with page-aligned entries
/// and an in-page first byte offset.
fn check_page_list(pages: &[u64], fbo: u32, length: u64) -> Result<(), KeyError> {
    if u64::from(fbo) >= PAGE_SIZE || length == 0 {
        return Err(KeyError::Invalid);
    }
    if pages.iter().any(|p| p % PAGE_SIZE != 0) {
        return Err(KeyError::Invalid);
    }
    let capacity = (pages.len() as u64).saturating_mul(PAGE_SIZE);
    if u64::from(fbo).saturating_add(length) > capacity {
        return Err(KeyError::Invalid);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::translate::Chunks;
    use super::*;

    const PD: u32 = 3;

    fn region(t: &mut KeyTable, access: Access) -> MemoryKey {
        let key = t.alloc(KeyKind::Region, PD).unwrap();
        let pages = [0x10_000, 0x30_000, 0x20_000];
        let reg = Registration {
            pd: hwq::Pdn::from_raw(PD),
            access,
            va: 0x7000_0100,
            length: 3 * PAGE_SIZE - 0x100,
            first_byte_offset: 0x100,
            pages: &pages,
        };
        t.register(key, &reg).unwrap()
    }

    #[test]
    fn region_translates_across_noncontiguous_pages() {
        let mut t = KeyTable::new(8).unwrap();
        let k = region(&mut t, Access::LOCAL_WRITE | Access::REMOTE_READ);
        let r = t
            .check(k, PD, 0x7000_0F00, 0x300, Need::RemoteRead)
            .unwrap();
        let chunks: Vec<_> = Chunks::new(r).collect();
        assert_eq!(chunks, [(0x10_F00, 0x100), (0x30_000, 0x200)]);
    }

    #[test]
    fn pages_that_follow_each_other_make_one_chunk() {
        let mut t = KeyTable::new(8).unwrap();
        let key = t.alloc(KeyKind::Region, PD).unwrap();
        // Pages 0 and 1 adjoin, 2 is elsewhere, 3 adjoins 2.
        let pages = [0x10_000, 0x11_000, 0x40_000, 0x41_000];
        let reg = Registration {
            pd: hwq::Pdn::from_raw(PD),
            access: Access::REMOTE_READ,
            va: 0x7000_0000,
            length: 4 * PAGE_SIZE,
            first_byte_offset: 0,
            pages: &pages,
        };
        let k = t.register(key, &reg).unwrap();
        let chunks = |va, len| {
            let r = t.check(k, PD, va, len, Need::RemoteRead).unwrap();
            Chunks::new(r).collect::<Vec<_>>()
        };
        assert_eq!(
            chunks(0x7000_0800, 4 * PAGE_SIZE - 0x900),
            [(0x10_800, 0x1800), (0x40_000, 0x1F00)]
        );
        assert_eq!(chunks(0x7000_0010, 0x20), [(0x10_010, 0x20)]);
        assert_eq!(chunks(0x7000_0FF0, 0x20), [(0x10_FF0, 0x20)]);
        assert_eq!(
            chunks(0x7000_1FF0, 0x20),
            [(0x11_FF0, 0x10), (0x40_000, 0x10)]
        );
    }

    #[test]
    fn every_check_refuses_without_touching_anything() {
        let mut t = KeyTable::new(8).unwrap();
        let k = region(&mut t, Access::LOCAL_WRITE | Access::REMOTE_READ);
        let va = 0x7000_0100;
        assert_eq!(
            t.check(k.next_variant(), PD, va, 8, Need::LocalRead).err(),
            Some(KeyError::UnknownKey)
        );
        assert_eq!(
            t.check(MemoryKey(0), PD, va, 8, Need::LocalRead).err(),
            Some(KeyError::UnknownKey)
        );
        assert_eq!(
            t.check(k, PD + 1, va, 8, Need::LocalRead).err(),
            Some(KeyError::WrongPd)
        );
        assert_eq!(
            t.check(k, PD, va, 8, Need::RemoteWrite).err(),
            Some(KeyError::Access)
        );
        assert_eq!(
            t.check(k, PD, va - 1, 8, Need::LocalRead).err(),
            Some(KeyError::Bounds)
        );
        let end = va + 3 * PAGE_SIZE - 0x100;
        assert!(t.check(k, PD, end - 8, 8, Need::LocalRead).is_ok());
        assert_eq!(
            t.check(k, PD, end - 7, 8, Need::LocalRead).err(),
            Some(KeyError::Bounds)
        );
        assert_eq!(
            t.check(k, PD, u64::MAX - 2, 8, Need::LocalRead).err(),
            Some(KeyError::Bounds)
        );
        t.deregister(k).unwrap();
        assert_eq!(
            t.check(k, PD, va, 8, Need::LocalRead).err(),
            Some(KeyError::NotValid)
        );
    }

    #[test]
    fn fast_register_then_invalidate_makes_the_token_stale() {
        let mut t = KeyTable::new(8).unwrap();
        let k = t.alloc(KeyKind::Region, PD).unwrap();
        t.init_fast_register(k, 2, false).unwrap();
        let new = k.next_variant();
        let pages = [0x40_000, 0x50_000];
        assert_eq!(
            t.fast_register(new, PD, Access::REMOTE_READ, 0x1000, 4096, 0, &pages),
            Err(KeyError::Access),
            "remote access on an MR initialised without it"
        );
        assert_eq!(
            t.fast_register(new, PD, Access::LOCAL_WRITE, 0x1000, 4096, 0, &[1, 2, 3]),
            Err(KeyError::Invalid),
            "more pages than initialised"
        );
        assert_eq!(
            t.fast_register(new, PD, Access::LOCAL_WRITE, 0x1010, 4096, 0, &pages),
            Err(KeyError::Invalid),
            "base VA must be a page multiple plus FBO"
        );
        t.fast_register(new, PD, Access::LOCAL_WRITE, 0x1000, 8192, 0, &pages)
            .unwrap();
        assert!(t.check(new, PD, 0x1000, 8192, Need::LocalWrite).is_ok());
        assert_eq!(
            t.check(k, PD, 0x1000, 8, Need::LocalRead).err(),
            Some(KeyError::UnknownKey)
        );
        t.invalidate(new, PD).unwrap();
        assert_eq!(
            t.check(new, PD, 0x1000, 8, Need::LocalRead).err(),
            Some(KeyError::NotValid)
        );
    }

    #[test]
    fn windows_need_local_write_for_remote_write_and_die_with_invalidate() {
        let mut t = KeyTable::new(8).unwrap();
        let ro = region(&mut t, Access::empty());
        let w = t.alloc(KeyKind::Window, PD).unwrap().next_variant();
        let va = 0x7000_0200;
        assert_eq!(
            t.bind(w, ro, PD, Access::REMOTE_WRITE, va, 16),
            Err(KeyError::Access)
        );
        assert_eq!(
            t.bind(w, ro, PD, Access::REMOTE_READ, va - 0x200, 16),
            Err(KeyError::Bounds)
        );
        t.bind(w, ro, PD, Access::REMOTE_READ, va, 16).unwrap();
        assert!(t.check(w, PD, va, 16, Need::RemoteRead).is_ok());
        assert_eq!(
            t.check(w, PD, va, 17, Need::RemoteRead).err(),
            Some(KeyError::Bounds)
        );
        assert_eq!(
            t.deregister(ro),
            Err(KeyError::Busy),
            "region has a bound window"
        );
        assert_eq!(
            t.invalidate(ro, PD),
            Err(KeyError::WrongKind),
            "regular MRs are not invalidated"
        );
        t.invalidate(w, PD).unwrap();
        assert_eq!(
            t.check(w, PD, va, 16, Need::RemoteRead).err(),
            Some(KeyError::NotValid)
        );
        t.deregister(ro).unwrap();
    }

    #[test]
    fn privileged_key_is_local_only() {
        let mut t = KeyTable::new(2).unwrap();
        let p = t.alloc_privileged(PD).unwrap();
        assert!(t.check(p, PD, 0xdead_0000, 64, Need::LocalWrite).is_ok());
        assert_eq!(
            t.check(p, PD, 0xdead_0000, 64, Need::RemoteRead).err(),
            Some(KeyError::Access)
        );
        assert_eq!(
            t.check(p, PD, 0xdead_0000, 64, Need::RemoteWrite).err(),
            Some(KeyError::Access)
        );
    }

    #[test]
    fn table_capacity_is_enforced_and_indices_recycle() {
        let mut t = KeyTable::new(2).unwrap();
        let a = t.alloc(KeyKind::Region, PD).unwrap();
        let _b = t.alloc(KeyKind::Region, PD).unwrap();
        assert_eq!(t.alloc(KeyKind::Region, PD), Err(KeyError::NoResources));
        t.free(a).unwrap();
        assert_eq!(
            t.check(a, PD, 0, 1, Need::LocalRead).err(),
            Some(KeyError::UnknownKey)
        );
        assert!(t.alloc(KeyKind::Region, PD).is_ok());
    }
}
