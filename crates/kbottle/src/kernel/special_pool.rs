//! Special pool, as Driver Verifier's option of that name does it: each
//! pool block on pages of its own between inaccessible guard pages, and
//! freed blocks kept inaccessible for a while, so that a driver access
//! past the end of a block (0xD6 `DRIVER_PAGE_FAULT_BEYOND_END_OF_ALLOCATION`)
//! or into a freed one (0xD5 `DRIVER_PAGE_FAULT_IN_FREED_SPECIAL_POOL`)
//! faults at once and is reported with its address instead of corrupting
//! memory quietly.
//!
//! On with `RSNDK_BOTTLE_SPECIAL_POOL=1` (or `end`: blocks end where their
//! last page ends, Verifier's default, so an overrun of even one aligned
//! unit faults) or `start` (blocks start at their first page, which
//! catches underruns instead), read once per process; or through
//! [`set`]. Blocks keep the pool's alignment (16 bytes, 64 with
//! `POOL_FLAG_CACHE_ALIGNED`), so an end-aligned block of a size that is
//! not a multiple of it leaves a few bytes before its guard page, as on
//! Windows; those, and the rest of the block's pages, are filled with
//! [`SLACK_FILL`] and checked when the block is freed (0xC1
//! `SPECIAL_POOL_DETECTED_MEMORY_CORRUPTION`, 0x24 after the block, 0x23
//! before it). From a page up a block is page-aligned either way (the pool's
//! contract) and its guard page follows its last page.
//!
//! Each block is its own `mmap` (a guard page on each side, the block's
//! pages readable and writable); a freed block's pages become `PROT_NONE`
//! and stay so until [`SpecialPool::quarantine_blocks`] later frees push
//! it out, when it is unmapped. The process's mapping count limit
//! (`vm.max_map_count`, 65530 by default) bounds live plus quarantined
//! blocks to some tens of thousands.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Mutex;

use crate::sync::lock;

const PAGE: usize = 4096;
/// The environment variable that turns special pool on.
pub const ENV: &str = "RSNDK_BOTTLE_SPECIAL_POOL";
/// Freed blocks kept inaccessible by default.
pub const DEFAULT_QUARANTINE_BLOCKS: usize = 4096;

/// Where a block sits on its pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    /// Its end at the end of its last page (rounded down to the block's
    /// alignment): overruns fault.
    End,
    /// Its start at the start of its first page: underruns fault.
    Start,
}

/// The special pool's settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpecialPool {
    /// Where blocks below a page sit.
    pub align: Align,
    /// Freed blocks kept inaccessible before their pages are unmapped.
    pub quarantine_blocks: usize,
}

impl SpecialPool {
    /// End-aligned, [`DEFAULT_QUARANTINE_BLOCKS`].
    pub const DEFAULT: Self = Self {
        align: Align::End,
        quarantine_blocks: DEFAULT_QUARANTINE_BLOCKS,
    };
}

/// What a faulting address lies in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// A guard page or the slack of a live block's pages.
    BeyondEnd {
        /// The block.
        block: usize,
        /// Its size.
        size: usize,
    },
    /// The pages of a freed block still in quarantine.
    Freed {
        /// The block.
        block: usize,
        /// Its size.
        size: usize,
    },
}

/// Byte the rest of a block's pages (its alignment bytes, before or
/// after it) is filled with; checked when the block is freed.
pub const SLACK_FILL: u8 = 0xBD;

/// A write into a block's pages outside the block, found at its free.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Corruption {
    /// The first byte found changed.
    pub at: usize,
    /// After the block's end (else before its start).
    pub after_block: bool,
}

/// The setting in force.
#[derive(Clone, Copy, Debug)]
enum Setting {
    /// Not decided yet: the environment is read on first use.
    Unread,
    /// Decided: on (`Some`) or off.
    Decided(Option<SpecialPool>),
}

static CONFIG: Mutex<Setting> = Mutex::new(Setting::Unread);

/// One block's mapping.
#[derive(Clone, Copy, Debug)]
struct Region {
    len: usize,
    block: usize,
    size: usize,
    freed: bool,
}

#[derive(Debug, Default)]
struct Regions {
    /// Mapping base → region, live and quarantined.
    by_base: BTreeMap<usize, Region>,
    /// Bases of freed regions, oldest first.
    quarantine: VecDeque<usize>,
}

static REGIONS: Mutex<Option<Regions>> = Mutex::new(None);

fn with_regions<R>(f: impl FnOnce(&mut Regions) -> R) -> R {
    let mut g = lock(&REGIONS);
    f(g.get_or_insert_with(Regions::default))
}

/// The settings from the environment: unset, empty or `0` is off; `1`
/// or `end` end-aligned; `start` start-aligned; anything else is a
/// configuration error the process stops on.
fn from_env() -> Option<SpecialPool> {
    let value = std::env::var(ENV).ok()?;
    match value.trim() {
        "" | "0" => None,
        "1" | "end" => Some(SpecialPool::DEFAULT),
        "start" => Some(SpecialPool {
            align: Align::Start,
            ..SpecialPool::DEFAULT
        }),
        other => panic!("{ENV}={other}: expected 0, 1, end or start"),
    }
}

/// The settings in force (read from the environment on first use).
pub fn config() -> Option<SpecialPool> {
    let mut setting = lock(&CONFIG);
    if let Setting::Decided(config) = *setting {
        return config;
    }
    let config = from_env();
    *setting = Setting::Decided(config);
    config
}

/// Turns special pool on (`Some`) or off for the blocks allocated from
/// now on; blocks allocated before keep their placement.
pub fn set(config: Option<SpecialPool>) {
    *lock(&CONFIG) = Setting::Decided(config);
}

/// Allocates `size` (> 0) bytes aligned to `align` (a power of two up to
/// a page) on pages of their own per `config`; null if the system has no
/// memory. The bytes are readable and writable, the rest of the
/// mapping is not.
pub(crate) fn allocate(size: usize, align: usize, config: SpecialPool) -> *mut u8 {
    let pages = size.div_ceil(PAGE);
    let len = (pages + 2) * PAGE;
    // SAFETY: a fresh private anonymous mapping, no address requested.
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if base == libc::MAP_FAILED {
        return std::ptr::null_mut();
    }
    let base = base as usize;
    let first = base + PAGE;
    // SAFETY: the block's pages inside our fresh mapping.
    let opened = unsafe {
        libc::mprotect(
            first as *mut libc::c_void,
            pages * PAGE,
            libc::PROT_READ | libc::PROT_WRITE,
        )
    };
    if opened != 0 {
        // SAFETY: our own mapping, never handed out.
        unsafe { libc::munmap(base as *mut libc::c_void, len) };
        return std::ptr::null_mut();
    }
    let block = if size >= PAGE || config.align == Align::Start {
        first
    } else {
        (first + PAGE - size) & !(align - 1)
    };
    let end = first + pages * PAGE;
    // SAFETY: the bytes of the block's pages before the block, readable
    // and writable (opened above), handed to nobody yet.
    unsafe { std::ptr::write_bytes(first as *mut u8, SLACK_FILL, block - first) };
    // SAFETY: as above, the bytes after the block.
    unsafe { std::ptr::write_bytes((block + size) as *mut u8, SLACK_FILL, end - block - size) };
    with_regions(|r| {
        r.by_base.insert(
            base,
            Region {
                len,
                block,
                size,
                freed: false,
            },
        )
    });
    block as *mut u8
}

/// The first byte of `range` that is not [`SLACK_FILL`].
///
/// # Safety
/// `range` is readable.
unsafe fn changed(range: std::ops::Range<usize>) -> Option<usize> {
    let len = range.end - range.start;
    // SAFETY: per the contract.
    let bytes = unsafe { std::slice::from_raw_parts(range.start as *const u8, len) };
    bytes
        .iter()
        .position(|&b| b != SLACK_FILL)
        .map(|i| range.start + i)
}

/// Frees the special block at `block` (the pool checked it is live):
/// its pages become inaccessible, and the oldest quarantined blocks
/// beyond the quarantine's size are unmapped. What was written into its
/// pages outside the block, if anything.
pub(crate) fn free(block: usize) -> Option<Corruption> {
    let mut corruption = None;
    let quarantine_blocks = config().map_or(DEFAULT_QUARANTINE_BLOCKS, |c| c.quarantine_blocks);
    let released = with_regions(|r| {
        let Some((&base, region)) = r.by_base.range_mut(..=block).next_back() else {
            return Vec::new();
        };
        if region.block != block || region.freed {
            return Vec::new();
        }
        region.freed = true;
        let first = base + PAGE;
        let end = base + region.len - PAGE;
        // SAFETY: the block's pages before it, still readable.
        let before = unsafe { changed(first..block) };
        // SAFETY: the block's pages after it, still readable.
        let after = unsafe { changed(block + region.size..end) };
        corruption = before
            .map(|at| Corruption {
                at,
                after_block: false,
            })
            .or(after.map(|at| Corruption {
                at,
                after_block: true,
            }));
        // SAFETY: our own mapping of `len` bytes at `base`.
        unsafe { libc::mprotect(base as *mut libc::c_void, region.len, libc::PROT_NONE) };
        r.quarantine.push_back(base);
        let mut out = Vec::new();
        while r.quarantine.len() > quarantine_blocks {
            let Some(old) = r.quarantine.pop_front() else {
                break;
            };
            if let Some(g) = r.by_base.remove(&old) {
                out.push((old, g.len));
            }
        }
        out
    });
    for (base, len) in released {
        // SAFETY: a freed block's mapping, out of quarantine: no block
        // lives in it any more.
        unsafe { libc::munmap(base as *mut libc::c_void, len) };
    }
    corruption
}

/// What `addr` lies in, if it is inside a special pool mapping but not
/// inside a live block's bytes.
pub fn classify(addr: usize) -> Option<Fault> {
    with_regions(|r| {
        let (&base, g) = r.by_base.range(..=addr).next_back()?;
        if addr >= base + g.len {
            return None;
        }
        let (block, size) = (g.block, g.size);
        if g.freed {
            Some(Fault::Freed { block, size })
        } else if (block..block + size).contains(&addr) {
            None
        } else {
            Some(Fault::BeyondEnd { block, size })
        }
    })
}

/// Special blocks: (live, quarantined).
pub fn counts() -> (usize, usize) {
    with_regions(|r| {
        let q = r.quarantine.len();
        (r.by_base.len() - q, q)
    })
}
