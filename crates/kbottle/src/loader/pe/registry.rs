//! The registry of loaded images: signal-safe lookups for the trap
//! handler, names of driver addresses for reports, driver frames on a
//! stack, and harness code registered as an image (trap tests).

use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use super::symbols::Symbols;
use super::{IMAGE_SCN_MEM_EXECUTE, IMAGE_SCN_MEM_READ, Image, Section};
use crate::sync::lock;

const SLOTS: usize = 16;
static SLOT_BASE: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(0) }; SLOTS];
static SLOT_END: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(0) }; SLOTS];

#[derive(Debug)]
struct Registered {
    base: usize,
    end: usize,
    name: String,
    exec: Vec<Range<usize>>,
    /// The image's PDB, read on first use.
    pdb: Option<std::path::PathBuf>,
    symbols: std::sync::Arc<OnceLock<Symbols>>,
}

static IMAGES: Mutex<Vec<Registered>> = Mutex::new(Vec::new());

pub(super) fn register(image: &Image, pdb: Option<std::path::PathBuf>) {
    for (b, e) in SLOT_BASE.iter().zip(&SLOT_END) {
        if b.compare_exchange(0, image.base, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            e.store(image.base + image.size, Ordering::SeqCst);
            break;
        }
    }
    lock(&IMAGES).push(Registered {
        base: image.base,
        end: image.base + image.size,
        name: image.name.clone(),
        exec: image
            .sections
            .iter()
            .filter(|s| s.executable())
            .map(|s| image.base + s.rva..image.base + s.rva + s.size)
            .collect(),
        pdb,
        symbols: std::sync::Arc::default(),
    });
}

pub(super) fn unregister(base: usize) {
    for (b, e) in SLOT_BASE.iter().zip(&SLOT_END) {
        if b.load(Ordering::SeqCst) == base {
            e.store(0, Ordering::SeqCst);
            b.store(0, Ordering::SeqCst);
        }
    }
    lock(&IMAGES).retain(|r| r.base != base);
}

/// The base of the loaded image containing `addr`; async-signal-safe (no
/// locks, no allocation).
pub fn image_base_of(addr: usize) -> Option<usize> {
    SLOT_BASE.iter().zip(&SLOT_END).find_map(|(b, e)| {
        let base = b.load(Ordering::SeqCst);
        let end = e.load(Ordering::SeqCst);
        (base != 0 && (base..end).contains(&addr)).then_some(base)
    })
}

/// The end of the loaded image containing `addr`; async-signal-safe.
pub fn image_end_of(addr: usize) -> Option<usize> {
    SLOT_BASE.iter().zip(&SLOT_END).find_map(|(b, e)| {
        let base = b.load(Ordering::SeqCst);
        let end = e.load(Ordering::SeqCst);
        (base != 0 && (base..end).contains(&addr)).then_some(end)
    })
}

/// `name+0xRVA (function+0xoffset)` for an address inside a loaded image
/// (the function from the image's PDB when there is one), else the
/// address.
pub fn describe(addr: usize) -> String {
    let found = lock(&IMAGES)
        .iter()
        .find(|r| (r.base..r.end).contains(&addr))
        .map(|r| {
            (
                r.name.clone(),
                r.base,
                r.pdb.clone(),
                std::sync::Arc::clone(&r.symbols),
            )
        });
    let Some((name, base, pdb, symbols)) = found else {
        return format!("{addr:#x} (outside any driver image)");
    };
    let rva = addr - base;
    let symbols = symbols.get_or_init(|| pdb.as_deref().map(Symbols::read).unwrap_or_default());
    match symbols.lookup(rva) {
        Some((function, offset)) => format!("{name}+{rva:#x} ({function}+{offset:#x})"),
        None => format!("{name}+{rva:#x}"),
    }
}

/// Words on the current thread's stack that point into an executable
/// section of a loaded image (return addresses of driver frames, and
/// some noise), innermost first, as [`describe`] names them.
pub fn driver_frames_on_stack() -> Vec<String> {
    let exec: Vec<Range<usize>> = lock(&IMAGES)
        .iter()
        .flat_map(|r| r.exec.iter().cloned())
        .collect();
    if exec.is_empty() {
        return Vec::new();
    }
    let Some((_, top)) = stack_bounds() else {
        return Vec::new();
    };
    let marker = 0usize;
    let mut at = (&raw const marker as usize) & !7;
    let limit = top.min(at + 512 * 1024);
    let mut out = Vec::new();
    while at + 8 <= limit && out.len() < 32 {
        // SAFETY: `at` lies between a live local of this frame and the top
        // of this thread's stack, all mapped and readable; 8-aligned.
        let word = unsafe { (at as *const usize).read_volatile() };
        if exec
            .iter()
            .any(|r| r.contains(&word) && r.contains(&word.wrapping_sub(7)))
            && follows_a_call(word)
        {
            out.push(describe(word));
        }
        at += 8;
    }
    out
}

/// Whether the bytes before `ret` (inside driver text, at least 7 bytes
/// from its start) end with a call instruction: `E8 rel32`, `FF /2` with
/// a register, `[reg+disp8]`, `[reg+disp32]` or `[rip+disp32]` operand
/// (optionally REX-prefixed). This keeps return addresses and drops most
/// other words that happen to point into the text.
fn follows_a_call(ret: usize) -> bool {
    // SAFETY: `ret - 7 .. ret` lies in an executable (readable) section
    // of a loaded image (checked by the caller).
    let b: [u8; 7] = unsafe { ((ret - 7) as *const [u8; 7]).read_unaligned() };
    let modrm_is_call = |m: u8| (m >> 3) & 7 == 2;
    // call rel32
    b[2] == 0xE8
        // call reg (FF D0+r), REX-prefixed or not
        || (b[5] == 0xFF && b[6] & 0xF8 == 0xD0)
        // call [reg+disp8] (FF 50+r d8) or [rsp+disp8] (FF 54 24 d8)
        || (b[4] == 0xFF && b[5] >> 6 == 1 && modrm_is_call(b[5]))
        || (b[3] == 0xFF && b[4] == 0x54 && b[5] == 0x24)
        // call [rip+disp32] (FF 15 d32) or [reg+disp32] (FF 90+r d32)
        || (b[1] == 0xFF && (b[2] == 0x15 || (b[2] >> 6 == 2 && modrm_is_call(b[2]))))
        // call [reg] (FF 10+r)
        || (b[5] == 0xFF && b[6] >> 6 == 0 && modrm_is_call(b[6]))
}

/// (lowest, highest) address of the calling thread's stack.
fn stack_bounds() -> Option<(usize, usize)> {
    let mut attr = std::mem::MaybeUninit::<libc::pthread_attr_t>::uninit();
    // SAFETY: pthread_self has no preconditions.
    let me = unsafe { libc::pthread_self() };
    // SAFETY: pthread_getattr_np initialises `attr` for the calling thread.
    if unsafe { libc::pthread_getattr_np(me, attr.as_mut_ptr()) } != 0 {
        return None;
    }
    let mut addr = std::ptr::null_mut();
    let mut size = 0usize;
    // SAFETY: `attr` was initialised above.
    let ok =
        unsafe { libc::pthread_attr_getstack(attr.as_ptr(), &raw mut addr, &raw mut size) } == 0;
    // SAFETY: `attr` was initialised above and is destroyed once.
    unsafe { libc::pthread_attr_destroy(attr.as_mut_ptr()) };
    ok.then(|| (addr as usize, addr as usize + size))
}

/// Registers a harness-made code range as an image (tests of the trap
/// handler); unregistered when the guard drops.
#[derive(Debug)]
pub struct CodeRange {
    base: usize,
}

impl CodeRange {
    /// Treats `range` as a driver image named `name` (executable as a
    /// whole) until the returned guard drops.
    pub fn register(name: &str, range: Range<usize>) -> Self {
        let image = Image {
            base: range.start,
            size: range.len(),
            entry_rva: 0,
            preferred_base: 0,
            name: name.to_owned(),
            sections: vec![Section {
                name: ".text".into(),
                rva: 0,
                size: range.len(),
                characteristics: IMAGE_SCN_MEM_EXECUTE | IMAGE_SCN_MEM_READ,
            }],
        };
        register(&image, None);
        std::mem::forget(image);
        Self { base: range.start }
    }
}

impl Drop for CodeRange {
    fn drop(&mut self) {
        unregister(self.base);
    }
}
