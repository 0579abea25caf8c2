//! Pool: `ExAllocatePool2` and `ExFreePoolWithTag` with Driver Verifier's
//! pool tracking.
//!
//! Every block is tracked with its tag, size, flags and allocating RVA.
//! Blocks are zeroed unless `POOL_FLAG_UNINITIALIZED` (then filled with
//! [`UNINITIALIZED_FILL`]), 16-byte aligned below a page (64 with
//! `POOL_FLAG_CACHE_ALIGNED`), page-aligned from a page up. Freed blocks
//! are filled with [`FREED_FILL`] and held in a quarantine for a while, so
//! a double free is told apart from a free of a foreign address and a
//! use-after-free reads poison. With special pool on
//! ([`crate::kernel::special_pool`]) blocks sit against guard pages and freed
//! ones are inaccessible, so the same mistakes fault at once. Freeing a block that still holds an armed
//! timer, a queued DPC or a held spin lock stops the machine.

// Each import's safety contract is its WDK documentation, and the caller is
// the driver; the per-function docs say what the bottle checks instead.
#![expect(
    clippy::missing_safety_doc,
    reason = "imports follow the WDK contract of the same name"
)]

use std::alloc::Layout;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Mutex;

use ndkpi::PVOID;

use crate::export;
use crate::export::Export;
use crate::kernel::cpu::{self, APC_LEVEL, DISPATCH_LEVEL};
use crate::kernel::ke::{self, LiveKind};
use crate::kernel::special_pool;
use crate::kernel::verifier::{
    self, BAD_POOL_CALLER, DRIVER_VERIFIER_DETECTED_VIOLATION, KMODE_EXCEPTION_NOT_HANDLED,
    SPECIAL_POOL_DETECTED_MEMORY_CORRUPTION, TIMER_OR_DPC_INVALID, firewall,
};
use crate::sync::lock;

/// `POOL_FLAG_USE_QUOTA`.
pub const POOL_FLAG_USE_QUOTA: u64 = 0x1;
/// `POOL_FLAG_UNINITIALIZED`.
pub const POOL_FLAG_UNINITIALIZED: u64 = 0x2;
/// `POOL_FLAG_SESSION`.
pub const POOL_FLAG_SESSION: u64 = 0x4;
/// `POOL_FLAG_CACHE_ALIGNED`.
pub const POOL_FLAG_CACHE_ALIGNED: u64 = 0x8;
/// `POOL_FLAG_RAISE_ON_FAILURE`.
pub const POOL_FLAG_RAISE_ON_FAILURE: u64 = 0x20;
/// `POOL_FLAG_NON_PAGED`.
pub const POOL_FLAG_NON_PAGED: u64 = 0x40;
/// `POOL_FLAG_NON_PAGED_EXECUTE`.
pub const POOL_FLAG_NON_PAGED_EXECUTE: u64 = 0x80;
/// `POOL_FLAG_PAGED`.
pub const POOL_FLAG_PAGED: u64 = 0x100;
/// Every flag `ExAllocatePool2` defines (required 0x1C0 + optional).
const KNOWN_FLAGS: u64 = 0x1 | 0x2 | 0x4 | 0x8 | 0x20 | 0x40 | 0x80 | 0x100;
const POOL_TYPE_FLAGS: u64 = POOL_FLAG_NON_PAGED | POOL_FLAG_NON_PAGED_EXECUTE | POOL_FLAG_PAGED;
/// `STATUS_INSUFFICIENT_RESOURCES`.
const STATUS_INSUFFICIENT_RESOURCES: u64 = 0xC000_009A;

/// Byte an uninitialised allocation is filled with.
pub const UNINITIALIZED_FILL: u8 = 0xCD;
/// Byte a freed block is filled with while in quarantine.
pub const FREED_FILL: u8 = 0xDF;
/// Bytes of freed blocks kept in quarantine before their memory is reused.
const QUARANTINE_BYTES: usize = 32 << 20;

/// One outstanding pool block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolBlock {
    /// Its address.
    pub addr: usize,
    /// The tag as its four characters (`RsNk`).
    pub tag: String,
    /// Requested size in bytes.
    pub size: usize,
    /// `POOL_FLAGS` it was allocated with.
    pub flags: u64,
    /// RVA of the call to `ExAllocatePool2` in the driver image (None for a
    /// call from harness code).
    pub rva: Option<usize>,
}

#[derive(Debug)]
struct Block {
    tag: u32,
    size: usize,
    flags: u64,
    backing: Backing,
    caller: usize,
}

/// Where a block's memory came from.
#[derive(Clone, Copy, Debug)]
enum Backing {
    /// The process heap, with this layout.
    Heap(Layout),
    /// Pages of its own ([`crate::kernel::special_pool`]).
    Special,
}

#[derive(Debug, Default)]
struct Pool {
    live: HashMap<usize, Block>,
    /// Freed blocks not yet returned to the allocator: (addr, block).
    quarantine: VecDeque<(usize, Block)>,
    quarantine_bytes: usize,
}

static POOL: Mutex<Option<Pool>> = Mutex::new(None);

fn with_pool<R>(f: impl FnOnce(&mut Pool) -> R) -> R {
    let mut g = lock(&POOL);
    f(g.get_or_insert_with(Pool::default))
}

/// A tag's four characters as they appear in memory (how `!poolused`
/// shows them).
pub fn tag_name(tag: u32) -> String {
    tag.to_le_bytes()
        .iter()
        .map(|&b| {
            if b.is_ascii_graphic() || b == b' ' {
                char::from(b)
            } else {
                '?'
            }
        })
        .collect()
}

fn rva_in_image(addr: usize) -> Option<usize> {
    crate::loader::pe::image_base_of(addr).map(|b| addr - b)
}

/// `ExAllocatePool2`: a naked thunk that passes the caller's return
/// address as a fourth argument.
#[unsafe(naked)]
pub unsafe extern "win64" fn ExAllocatePool2() {
    core::arch::naked_asm!("mov r9, [rsp]", "jmp {imp}", imp = sym allocate_pool2)
}

unsafe extern "win64" fn allocate_pool2(flags: u64, size: usize, tag: u32, caller: usize) -> PVOID {
    firewall("ExAllocatePool2", || {
        allocate(flags, size, tag, caller).cast()
    })
}

/// The body of `ExAllocatePool2` (harness callers pass `caller` 0).
pub fn allocate(flags: u64, size: usize, tag: u32, caller: usize) -> *mut u8 {
    let irql = cpu::current();
    let where_ = crate::loader::pe::describe(caller);
    if size == 0 {
        verifier::bugcheck(
            DRIVER_VERIFIER_DETECTED_VIOLATION,
            [0x00, u64::from(irql), flags, 0],
            format!(
                "ExAllocatePool2 of zero bytes (tag {}) at {where_}",
                tag_name(tag)
            ),
        );
    }
    if flags & !KNOWN_FLAGS != 0 || (flags & POOL_TYPE_FLAGS).count_ones() != 1 {
        verifier::bugcheck(
            DRIVER_VERIFIER_DETECTED_VIOLATION,
            [0x16, 0, flags, size as u64],
            format!(
                "ExAllocatePool2 with invalid POOL_FLAGS {flags:#x} (exactly one of NON_PAGED, NON_PAGED_EXECUTE, PAGED is required) at {where_}"
            ),
        );
    }
    if flags & POOL_FLAG_NON_PAGED_EXECUTE != 0 {
        verifier::bugcheck(
            DRIVER_VERIFIER_DETECTED_VIOLATION,
            [0x2000, caller as u64, flags, size as u64],
            format!("code integrity: executable pool requested at {where_}"),
        );
    }
    if flags & POOL_FLAG_PAGED != 0 && irql > APC_LEVEL {
        verifier::bugcheck(
            DRIVER_VERIFIER_DETECTED_VIOLATION,
            [0x01, u64::from(irql), flags, size as u64],
            format!("paged pool allocated at IRQL {irql} at {where_}"),
        );
    }
    if irql > DISPATCH_LEVEL {
        verifier::bugcheck(
            DRIVER_VERIFIER_DETECTED_VIOLATION,
            [0x02, u64::from(irql), flags, size as u64],
            format!("non-paged pool allocated at IRQL {irql} at {where_}"),
        );
    }
    if flags & POOL_FLAG_USE_QUOTA != 0 && cpu::in_dpc() {
        verifier::bugcheck(
            DRIVER_VERIFIER_DETECTED_VIOLATION,
            [0x10B, 0, 0, 0],
            format!("pool quota charged from a DPC routine at {where_}"),
        );
    }
    if verifier::fault_point("ExAllocatePool2") {
        if flags & POOL_FLAG_RAISE_ON_FAILURE != 0 {
            verifier::bugcheck(
                KMODE_EXCEPTION_NOT_HANDLED,
                [STATUS_INSUFFICIENT_RESOURCES, caller as u64, 0, 0],
                format!(
                    "ExAllocatePool2 with POOL_FLAG_RAISE_ON_FAILURE failed (injected) and the exception is not handled, at {where_}"
                ),
            );
        }
        return std::ptr::null_mut();
    }
    let align = if size >= 4096 {
        4096
    } else if flags & POOL_FLAG_CACHE_ALIGNED != 0 {
        64
    } else {
        16
    };
    let (p, backing) = place(size, align);
    if p.is_null() {
        return p;
    }
    let fill = if flags & POOL_FLAG_UNINITIALIZED != 0 {
        UNINITIALIZED_FILL
    } else {
        0
    };
    // SAFETY: `p` is a fresh allocation of `size` bytes.
    unsafe { std::ptr::write_bytes(p, fill, size) };
    with_pool(|pool| {
        pool.live.insert(
            p as usize,
            Block {
                tag,
                size,
                flags,
                backing,
                caller,
            },
        );
    });
    p
}

/// Memory for a block of `size` (> 0) bytes aligned to `align`: on pages
/// of its own with special pool on, else from the heap; null if there
/// is none.
fn place(size: usize, align: usize) -> (*mut u8, Backing) {
    if let Some(special) = special_pool::config() {
        return (
            special_pool::allocate(size, align, special),
            Backing::Special,
        );
    }
    let Ok(layout) = Layout::from_size_align(size, align) else {
        return (std::ptr::null_mut(), Backing::Special);
    };
    // SAFETY: `layout` has a non-zero size (the caller's contract).
    (unsafe { std::alloc::alloc(layout) }, Backing::Heap(layout))
}

/// `ExFreePoolWithTag`: a naked thunk that passes the caller's return
/// address as a third argument.
#[unsafe(naked)]
pub unsafe extern "win64" fn ExFreePoolWithTag() {
    core::arch::naked_asm!("mov r8, [rsp]", "jmp {imp}", imp = sym free_pool_with_tag)
}

unsafe extern "win64" fn free_pool_with_tag(p: PVOID, tag: u32, caller: usize) {
    firewall("ExFreePoolWithTag", || free(p as usize, Some(tag), caller));
}

/// The body of `ExFreePoolWithTag` (`tag` None = `ExFreePool`): frees
/// the block at `addr` or stops the machine with the violation
/// [`check_free`] finds.
pub fn free(addr: usize, tag: Option<u32>, caller: usize) {
    if let Some(err) = check_free(addr, tag) {
        let where_ = crate::loader::pe::describe(caller);
        verifier::bugcheck(err.code, err.params, format!("{} (at {where_})", err.rule));
    }
    let block = with_pool(|pool| pool.live.remove(&addr));
    let Some(block) = block else { return };
    ke::forget_objects_in(addr..addr + block.size);
    match block.backing {
        // SAFETY: `addr` was a live block of `size` bytes (it was in the
        // table), now ours again.
        Backing::Heap(_) => unsafe {
            std::ptr::write_bytes(addr as *mut u8, FREED_FILL, block.size);
        },
        // Inaccessible from now on: a later access faults (0xD5). A write
        // into the block's pages outside it that faulted nothing (the
        // alignment bytes) shows now, as Verifier checks at free.
        Backing::Special => {
            if let Some(c) = special_pool::free(addr) {
                let where_ = crate::loader::pe::describe(caller);
                verifier::bugcheck(
                    SPECIAL_POOL_DETECTED_MEMORY_CORRUPTION,
                    [
                        addr as u64,
                        c.at as u64,
                        0,
                        if c.after_block { 0x24 } else { 0x23 },
                    ],
                    format!(
                        "special pool: the {}-byte block at {addr:#x} (tag {}) was written {} it, at {:#x}; found when it was freed at {where_}",
                        block.size,
                        tag_name(block.tag),
                        if c.after_block { "after" } else { "before" },
                        c.at
                    ),
                );
            }
        }
    }
    let released = with_pool(|pool| {
        pool.quarantine_bytes += block.size;
        pool.quarantine.push_back((addr, block));
        let mut out = Vec::new();
        while pool.quarantine_bytes > QUARANTINE_BYTES {
            let Some((a, b)) = pool.quarantine.pop_front() else {
                break;
            };
            pool.quarantine_bytes -= b.size;
            // Special blocks leave their own quarantine (special_pool).
            if let Backing::Heap(layout) = b.backing {
                out.push((a, layout));
            }
        }
        out
    });
    for (a, layout) in released {
        // SAFETY: allocated by `allocate` with this layout, freed by the
        // driver, and out of quarantine: nothing refers to it any more.
        unsafe { std::alloc::dealloc(a as *mut u8, layout) };
    }
}

/// A violation [`check_free`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FreeViolation {
    /// Bug check code.
    pub code: u32,
    /// Parameters.
    pub params: [u64; 4],
    /// The rule.
    pub rule: String,
}

/// What freeing `addr` with `tag` would violate, without freeing or
/// stopping: unknown address (0xC4/0x10), IRQL (0xC4/0x12), double free
/// (0xC4/0x13), an IRP freed as pool (0xC4/0x105), wrong tag
/// (0xC2/0x0A), an armed timer (0xC4/0x15), a queued DPC or one an armed
/// timer will queue (0xC7/1), or a held spin lock (0xC4/0x100B) inside
/// the block.
pub fn check_free(addr: usize, tag: Option<u32>) -> Option<FreeViolation> {
    let v = |code, params, rule: String| Some(FreeViolation { code, params, rule });
    let irql = cpu::current();
    if crate::kernel::io::is_irp(addr) {
        return v(
            DRIVER_VERIFIER_DETECTED_VIOLATION,
            [0x105, addr as u64, 0, 0],
            format!("IRP {addr:#x} freed with ExFreePool instead of IoFreeIrp"),
        );
    }
    let (known, quarantined) = with_pool(|pool| {
        (
            pool.live.get(&addr).map(|b| (b.tag, b.size, b.flags)),
            pool.quarantine.iter().any(|(a, _)| *a == addr),
        )
    });
    let Some((btag, size, flags)) = known else {
        if quarantined {
            return v(
                DRIVER_VERIFIER_DETECTED_VIOLATION,
                [0x13, 0, addr as u64, 0],
                format!("double free of pool block {addr:#x}"),
            );
        }
        return v(
            DRIVER_VERIFIER_DETECTED_VIOLATION,
            [0x10, addr as u64, 0, 0],
            format!("free of {addr:#x}, which no allocation returned"),
        );
    };
    let max = if flags & POOL_FLAG_PAGED != 0 {
        APC_LEVEL
    } else {
        DISPATCH_LEVEL
    };
    if irql > max {
        return v(
            DRIVER_VERIFIER_DETECTED_VIOLATION,
            [
                if max == APC_LEVEL { 0x11 } else { 0x12 },
                u64::from(irql),
                flags,
                addr as u64,
            ],
            format!("pool block {addr:#x} freed at IRQL {irql}"),
        );
    }
    if let Some(t) = tag
        && t != btag
    {
        return v(
            BAD_POOL_CALLER,
            [0x0A, addr as u64, u64::from(btag), u64::from(t)],
            format!(
                "pool block {addr:#x} allocated with tag {} freed with tag {}",
                tag_name(btag),
                tag_name(t)
            ),
        );
    }
    let live = ke::live_objects_in(addr..addr + size);
    let first = live.first()?;
    let (code, params, what) = match first.kind {
        LiveKind::ArmedTimer => (
            DRIVER_VERIFIER_DETECTED_VIOLATION,
            [0x15, first.addr as u64, flags, addr as u64],
            "an armed timer",
        ),
        LiveKind::QueuedDpc => (
            TIMER_OR_DPC_INVALID,
            [1, first.addr as u64, addr as u64, (addr + size) as u64],
            "a queued DPC",
        ),
        LiveKind::TimerDpc => (
            TIMER_OR_DPC_INVALID,
            [1, first.addr as u64, addr as u64, (addr + size) as u64],
            "a DPC that an armed timer will queue",
        ),
        LiveKind::HeldSpinLock => (
            DRIVER_VERIFIER_DETECTED_VIOLATION,
            [0x100B, first.addr as u64, 0, 0],
            "a held spin lock",
        ),
    };
    v(
        code,
        params,
        format!(
            "pool block {addr:#x} ({size} bytes, tag {}) freed while it holds {what} at {:#x}",
            tag_name(btag),
            first.addr
        ),
    )
}

/// Every outstanding block, by address.
pub fn outstanding() -> Vec<PoolBlock> {
    let mut v: Vec<PoolBlock> = with_pool(|pool| {
        pool.live
            .iter()
            .map(|(&addr, b)| PoolBlock {
                addr,
                tag: tag_name(b.tag),
                size: b.size,
                flags: b.flags,
                rva: rva_in_image(b.caller),
            })
            .collect()
    });
    v.sort_by_key(|b| b.addr);
    v
}

/// Outstanding blocks per tag: (count, bytes).
pub fn outstanding_by_tag() -> BTreeMap<String, (usize, usize)> {
    let mut m = BTreeMap::new();
    for b in outstanding() {
        let e = m.entry(b.tag).or_insert((0, 0));
        e.0 += 1;
        e.1 += b.size;
    }
    m
}

/// Whether `addr..addr+len` lies inside one live block; `Some(flags)`.
pub fn block_flags_containing(addr: usize, len: usize) -> Option<u64> {
    with_pool(|pool| {
        pool.live
            .iter()
            .find(|&(&a, b)| a <= addr && addr + len <= a + b.size)
            .map(|(_, b)| b.flags)
    })
}

/// Forgets every tracked block (a new machine after an unload that
/// leaked: the leak was reported, the memory stays allocated).
pub fn forget_all() {
    with_pool(|pool| {
        pool.live.clear();
    });
}

/// Every pool import.
pub fn exports() -> Vec<Export> {
    vec![
        export!("ntoskrnl.exe", ExAllocatePool2),
        export!("ntoskrnl.exe", ExFreePoolWithTag),
    ]
}
