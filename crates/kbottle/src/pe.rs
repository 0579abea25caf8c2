//! The PE32+ loader: maps a native x64 kernel image at a random base,
//! applies its base relocations, binds every import to an [`Export`],
//! initialises a `/GS` cookie if the image has one, and protects each
//! section as its characteristics say (W^X enforced).
//!
//! It refuses, with a precise [`LoadError`], what Windows or Driver
//! Verifier's code-integrity checks would refuse or what the bottle cannot
//! run: a non-AMD64 or non-native image, a TLS directory, imports by
//! ordinal, relocation types other than `ABSOLUTE`/`DIR64`, writable and
//! executable sections, sections not page-aligned, an import address
//! table in an executable section, and imports nobody exports (all of
//! them listed at once).

use std::fmt;
use std::ops::Range;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use crate::verifier::lock;

/// One function the bottle exports to the image.
#[derive(Clone, Copy, Debug)]
pub struct Export {
    /// Module the image imports it from (`ntoskrnl.exe`, `NDIS.SYS`, ...),
    /// compared case-insensitively.
    pub module: &'static str,
    /// Import name, compared exactly.
    pub name: &'static str,
    /// Address of the `unsafe extern "win64" fn` implementing it.
    pub addr: *const (),
}

// SAFETY: `addr` is the address of a function (code), immutable and valid
// for the whole process; sharing it between threads is harmless.
unsafe impl Send for Export {}
// SAFETY: as for Send: the address of immutable code.
unsafe impl Sync for Export {}

/// Builds an [`Export`] from an `unsafe extern "win64" fn` item named as
/// the import (`export!("ntoskrnl.exe", KeInsertQueueDpc)`), or from any
/// function under another name (`export!("NDIS.SYS", "NdisFoo" => foo)`).
#[macro_export]
macro_rules! export {
    ($module:literal, $name:ident) => {
        $crate::pe::Export {
            module: $module,
            name: stringify!($name),
            addr: $name as *const (),
        }
    };
    ($module:literal, $name:literal => $f:expr) => {
        $crate::pe::Export {
            module: $module,
            name: $name,
            addr: $f as *const (),
        }
    };
}

/// Why an image was not loaded.
#[derive(Debug)]
pub enum LoadError {
    /// Reading the file failed.
    Io(std::io::Error),
    /// The headers or a directory are inconsistent (the text says where).
    Malformed(String),
    /// `FileHeader.Machine` is not `IMAGE_FILE_MACHINE_AMD64` (0x8664).
    NotAmd64(u16),
    /// `OptionalHeader.Subsystem` is not `IMAGE_SUBSYSTEM_NATIVE` (1).
    NotNative(u16),
    /// The image has a TLS directory (kernel images cannot use implicit TLS).
    TlsDirectory,
    /// An import by ordinal (`module`, ordinal): the bottle binds by name.
    OrdinalImport(String, u16),
    /// A base relocation of a type other than ABSOLUTE (0) or DIR64 (10),
    /// at this RVA.
    UnknownRelocation { rva: u32, kind: u8 },
    /// A section both writable and executable (Verifier 0xC4/0x2003).
    WritableExecutable(String),
    /// `SectionAlignment` below the page size (Verifier 0xC4/0x2004).
    SectionAlignment(u32),
    /// The import address table lies in an executable section (0xC4/0x2005).
    IatInExecutableSection(String),
    /// Every `module!name` import nobody exports.
    Unresolved(Vec<String>),
    /// mmap/mprotect failed.
    Map(std::io::Error),
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io(e) => write!(f, "cannot read the image: {e}"),
            Self::Malformed(what) => write!(f, "malformed image: {what}"),
            Self::NotAmd64(m) => write!(f, "machine {m:#x} is not AMD64"),
            Self::NotNative(s) => write!(f, "subsystem {s} is not NATIVE (1)"),
            Self::TlsDirectory => write!(f, "the image has a TLS directory"),
            Self::OrdinalImport(m, o) => write!(f, "import by ordinal {m}!#{o}"),
            Self::UnknownRelocation { rva, kind } => {
                write!(f, "base relocation type {kind} at RVA {rva:#x}")
            }
            Self::WritableExecutable(s) => write!(f, "section {s} is writable and executable"),
            Self::SectionAlignment(a) => {
                write!(f, "section alignment {a:#x} is below the page size")
            }
            Self::IatInExecutableSection(s) => {
                write!(f, "the import address table is in executable section {s}")
            }
            Self::Unresolved(names) => write!(f, "unresolved imports: {}", names.join(", ")),
            Self::Map(e) => write!(f, "cannot map the image: {e}"),
        }
    }
}

impl std::error::Error for LoadError {}

const PAGE: usize = 4096;
const IMAGE_FILE_MACHINE_AMD64: u16 = 0x8664;
const IMAGE_SUBSYSTEM_NATIVE: u16 = 1;
const IMAGE_SCN_MEM_EXECUTE: u32 = 0x2000_0000;
const IMAGE_SCN_MEM_READ: u32 = 0x4000_0000;
const IMAGE_SCN_MEM_WRITE: u32 = 0x8000_0000;
const DIR_IMPORT: usize = 1;
const DIR_BASERELOC: usize = 5;
const DIR_DEBUG: usize = 6;
const DIR_TLS: usize = 9;
const DIR_LOAD_CONFIG: usize = 10;
const DIR_IAT: usize = 12;
const IMAGE_REL_BASED_ABSOLUTE: u8 = 0;
const IMAGE_REL_BASED_DIR64: u8 = 10;

/// One section of a mapped image.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Section {
    /// Section name (`.text`).
    pub name: String,
    /// RVA of its first byte.
    pub rva: usize,
    /// Mapped size (page-rounded `VirtualSize`).
    pub size: usize,
    /// `IMAGE_SCN_*` characteristics.
    pub characteristics: u32,
}

impl Section {
    /// Whether the section is executable.
    pub fn executable(&self) -> bool {
        self.characteristics & IMAGE_SCN_MEM_EXECUTE != 0
    }
}

/// A mapped, relocated, bound and protected image. Dropping it unmaps it.
#[derive(Debug)]
pub struct Image {
    base: usize,
    size: usize,
    entry_rva: usize,
    preferred_base: u64,
    name: String,
    sections: Vec<Section>,
}

impl Image {
    /// Address of the first byte (the DOS header).
    pub fn base(&self) -> usize {
        self.base
    }

    /// `SizeOfImage`, page-rounded.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The mapped range.
    pub fn range(&self) -> Range<usize> {
        self.base..self.base + self.size
    }

    /// The entry point (`DriverEntry`).
    pub fn entry(&self) -> *const () {
        (self.base + self.entry_rva) as *const ()
    }

    /// `AddressOfEntryPoint`.
    pub fn entry_rva(&self) -> usize {
        self.entry_rva
    }

    /// `ImageBase` of the file (never where the bottle maps it).
    pub fn preferred_base(&self) -> u64 {
        self.preferred_base
    }

    /// File name of the image.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The sections, in file order.
    pub fn sections(&self) -> &[Section] {
        &self.sections
    }

    /// Whether `addr` is inside the mapped image.
    pub fn contains(&self, addr: usize) -> bool {
        self.range().contains(&addr)
    }

    /// `addr - base` if `addr` is inside the image.
    pub fn rva_of(&self, addr: usize) -> Option<usize> {
        self.contains(addr).then(|| addr - self.base)
    }
}

impl Drop for Image {
    fn drop(&mut self) {
        unregister(self.base);
        crate::ke::forget_objects_in(self.range());
        // SAFETY: `base..base+size` is the mapping this Image created in
        // `load` and owns; nothing of the driver runs after its unload.
        unsafe { libc::munmap(self.base as *mut libc::c_void, self.size) };
    }
}

// ---- Registry of loaded images (signal-safe lookups) ----

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

fn register(image: &Image, pdb: Option<std::path::PathBuf>) {
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

fn unregister(base: usize) {
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

/// Function names by RVA, from a PDB's procedure records.
#[derive(Debug, Default)]
struct Symbols {
    /// (rva, length, name), sorted by rva.
    procs: Vec<(usize, usize, String)>,
}

impl Symbols {
    /// Reads the procedures of the PDB at `path` (empty if it cannot).
    fn read(path: &Path) -> Self {
        Self::try_read(path).unwrap_or_default()
    }

    fn try_read(path: &Path) -> Result<Self, pdb::Error> {
        use pdb::FallibleIterator as _;
        let mut pdb = pdb::PDB::open(std::fs::File::open(path)?)?;
        let map = pdb.address_map()?;
        let dbi = pdb.debug_information()?;
        let mut procs = Vec::new();
        let mut modules = dbi.modules()?;
        while let Some(module) = modules.next()? {
            let Some(info) = pdb.module_info(&module)? else {
                continue;
            };
            let mut symbols = info.symbols()?;
            while let Some(symbol) = symbols.next()? {
                if let Ok(pdb::SymbolData::Procedure(p)) = symbol.parse()
                    && let Some(rva) = p.offset.to_rva(&map)
                {
                    procs.push((
                        rva.0 as usize,
                        p.len as usize,
                        p.name.to_string().into_owned(),
                    ));
                }
            }
        }
        procs.sort_by_key(|p| p.0);
        Ok(Self { procs })
    }

    /// The function containing `rva` and the offset into it.
    fn lookup(&self, rva: usize) -> Option<(&str, usize)> {
        let i = self.procs.partition_point(|p| p.0 <= rva).checked_sub(1)?;
        let (start, len, name) = &self.procs[i];
        (rva < start + (*len).max(1)).then(|| (name.as_str(), rva - start))
    }
}

/// The image's PDB: the path its CodeView debug record names, else
/// `<image>.pdb` beside it.
fn find_pdb(image: &Path, file: &[u8], h: &Headers) -> Option<std::path::PathBuf> {
    let from_record = h.dir(DIR_DEBUG).and_then(|(rva, size)| {
        (0..size / 28).find_map(|i| {
            let at = file_offset(h, rva + 28 * i)?;
            let kind = u32_at(file, at + 12, "debug entry").ok()?;
            let raw = u32_at(file, at + 24, "debug entry").ok()? as usize;
            // IMAGE_DEBUG_TYPE_CODEVIEW with an RSDS record: the path
            // follows the signature, GUID and age.
            if kind != 2 || file.get(raw..raw + 4)? != b"RSDS" {
                return None;
            }
            cstr_at(file, raw + 24, "PDB path")
                .ok()
                .map(std::path::PathBuf::from)
        })
    });
    from_record
        .filter(|p| p.is_file())
        .or_else(|| Some(image.with_extension("pdb")).filter(|p| p.is_file()))
}

/// The file offset of an RVA (through the section table).
fn file_offset(h: &Headers, rva: usize) -> Option<usize> {
    h.sections
        .iter()
        .find_map(|&(_, va, vsize, raw, raw_size, _)| {
            (va..va + vsize.max(raw_size))
                .contains(&rva)
                .then(|| raw + (rva - va))
        })
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

// ---- Parsing helpers over a byte slice ----

fn rd<const N: usize>(b: &[u8], at: usize, what: &str) -> Result<[u8; N], LoadError> {
    at.checked_add(N)
        .and_then(|end| b.get(at..end))
        .and_then(|s| s.try_into().ok())
        .ok_or_else(|| LoadError::Malformed(format!("{what} at {at:#x} is out of bounds")))
}

fn u16_at(b: &[u8], at: usize, what: &str) -> Result<u16, LoadError> {
    rd::<2>(b, at, what).map(u16::from_le_bytes)
}

fn u32_at(b: &[u8], at: usize, what: &str) -> Result<u32, LoadError> {
    rd::<4>(b, at, what).map(u32::from_le_bytes)
}

fn u64_at(b: &[u8], at: usize, what: &str) -> Result<u64, LoadError> {
    rd::<8>(b, at, what).map(u64::from_le_bytes)
}

fn cstr_at(b: &[u8], at: usize, what: &str) -> Result<String, LoadError> {
    let tail = b
        .get(at..)
        .ok_or_else(|| LoadError::Malformed(format!("{what} at {at:#x} is out of bounds")))?;
    let len = tail
        .iter()
        .position(|&c| c == 0)
        .ok_or_else(|| LoadError::Malformed(format!("{what} at {at:#x} is not terminated")))?;
    Ok(String::from_utf8_lossy(&tail[..len]).into_owned())
}

/// The parsed headers the loader needs.
#[derive(Debug)]
struct Headers {
    entry_rva: usize,
    image_base: u64,
    section_alignment: u32,
    image_size: usize,
    hdr_size: usize,
    /// (rva, size) of each data directory.
    dirs: Vec<(usize, usize)>,
    /// (name, rva, virtual size, raw offset, raw size, characteristics).
    sections: Vec<(String, usize, usize, usize, usize, u32)>,
}

impl Headers {
    fn dir(&self, i: usize) -> Option<(usize, usize)> {
        self.dirs
            .get(i)
            .copied()
            .filter(|&(rva, size)| rva != 0 && size != 0)
    }
}

fn parse_headers(file: &[u8]) -> Result<Headers, LoadError> {
    if file.get(..2) != Some(b"MZ") {
        return Err(LoadError::Malformed("no MZ signature".into()));
    }
    let nt = u32_at(file, 0x3C, "e_lfanew")? as usize;
    if rd::<4>(file, nt, "PE signature")? != *b"PE\0\0" {
        return Err(LoadError::Malformed("no PE signature".into()));
    }
    let machine = u16_at(file, nt + 4, "Machine")?;
    if machine != IMAGE_FILE_MACHINE_AMD64 {
        return Err(LoadError::NotAmd64(machine));
    }
    let nsections = u16_at(file, nt + 6, "NumberOfSections")? as usize;
    let opt_size = u16_at(file, nt + 20, "SizeOfOptionalHeader")? as usize;
    let opt = nt + 24;
    if u16_at(file, opt, "Magic")? != 0x20B {
        return Err(LoadError::Malformed("optional header is not PE32+".into()));
    }
    let subsystem = u16_at(file, opt + 68, "Subsystem")?;
    if subsystem != IMAGE_SUBSYSTEM_NATIVE {
        return Err(LoadError::NotNative(subsystem));
    }
    let ndirs = (u32_at(file, opt + 108, "NumberOfRvaAndSizes")? as usize).min(16);
    let mut dirs = Vec::with_capacity(ndirs);
    for i in 0..ndirs {
        let at = opt + 112 + 8 * i;
        dirs.push((
            u32_at(file, at, "data directory")? as usize,
            u32_at(file, at + 4, "data directory")? as usize,
        ));
    }
    let mut sections = Vec::with_capacity(nsections);
    for i in 0..nsections {
        let at = opt + opt_size + 40 * i;
        let raw_name = rd::<8>(file, at, "section name")?;
        let end = raw_name.iter().position(|&c| c == 0).unwrap_or(8);
        sections.push((
            String::from_utf8_lossy(&raw_name[..end]).into_owned(),
            u32_at(file, at + 12, "VirtualAddress")? as usize,
            u32_at(file, at + 8, "VirtualSize")? as usize,
            u32_at(file, at + 20, "PointerToRawData")? as usize,
            u32_at(file, at + 16, "SizeOfRawData")? as usize,
            u32_at(file, at + 36, "Characteristics")?,
        ));
    }
    Ok(Headers {
        entry_rva: u32_at(file, opt + 16, "AddressOfEntryPoint")? as usize,
        image_base: u64_at(file, opt + 24, "ImageBase")?,
        section_alignment: u32_at(file, opt + 32, "SectionAlignment")?,
        image_size: (u32_at(file, opt + 56, "SizeOfImage")? as usize).next_multiple_of(PAGE),
        hdr_size: u32_at(file, opt + 60, "SizeOfHeaders")? as usize,
        dirs,
        sections,
    })
}

/// A random number from the kernel.
fn random_u64() -> u64 {
    let mut v = 0u64;
    // SAFETY: getrandom writes at most 8 bytes into `v`.
    let n = unsafe { libc::getrandom((&raw mut v).cast(), 8, 0) };
    if n == 8 {
        v
    } else {
        crate::cpu::now_ns().wrapping_mul(0x9E37_79B9_7F4A_7C15)
    }
}

/// An anonymous read-write mapping of `size` bytes at a random,
/// page-aligned address.
fn map_randomly(size: usize) -> Result<usize, LoadError> {
    const SLIDE_PAGES: usize = 4096;
    let total = size + SLIDE_PAGES * PAGE;
    // SAFETY: a fresh anonymous private reservation; no existing mapping
    // is touched.
    let reserved = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            total,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if reserved == libc::MAP_FAILED {
        return Err(LoadError::Map(std::io::Error::last_os_error()));
    }
    let start = reserved as usize;
    let slide = (random_u64() as usize % SLIDE_PAGES) * PAGE;
    let base = start + slide;
    if slide > 0 {
        // SAFETY: the head of our own reservation.
        unsafe { libc::munmap(reserved, slide) };
    }
    let tail = total - slide - size;
    if tail > 0 {
        // SAFETY: the tail of our own reservation.
        unsafe { libc::munmap((base + size) as *mut libc::c_void, tail) };
    }
    // SAFETY: `base..base+size` is ours (reserved above).
    if unsafe {
        libc::mprotect(
            base as *mut libc::c_void,
            size,
            libc::PROT_READ | libc::PROT_WRITE,
        )
    } != 0
    {
        let e = std::io::Error::last_os_error();
        // SAFETY: our own mapping.
        unsafe { libc::munmap(base as *mut libc::c_void, size) };
        return Err(LoadError::Map(e));
    }
    Ok(base)
}

/// Unmaps the image if loading fails half way.
struct Mapping {
    base: usize,
    size: usize,
}

impl Drop for Mapping {
    fn drop(&mut self) {
        if self.base != 0 {
            // SAFETY: the mapping created by `map_randomly`, not yet handed
            // to an Image.
            unsafe { libc::munmap(self.base as *mut libc::c_void, self.size) };
        }
    }
}

/// Loads the image at `path`, binding its imports to `exports`.
pub fn load(path: &Path, exports: &[Export]) -> Result<Image, LoadError> {
    let file = std::fs::read(path).map_err(LoadError::Io)?;
    let name = path
        .file_name()
        .map_or_else(|| "image".to_owned(), |n| n.to_string_lossy().into_owned());
    let h = parse_headers(&file)?;
    if h.dir(DIR_TLS).is_some() {
        return Err(LoadError::TlsDirectory);
    }
    if (h.section_alignment as usize) < PAGE {
        return Err(LoadError::SectionAlignment(h.section_alignment));
    }
    let size = h.image_size;
    if size == 0 || h.hdr_size > size || h.hdr_size > file.len() {
        return Err(LoadError::Malformed("SizeOfImage/SizeOfHeaders".into()));
    }
    let mut sections = Vec::with_capacity(h.sections.len());
    for &(ref sname, rva, vsize, raw_off, raw_size, ch) in &h.sections {
        if ch & IMAGE_SCN_MEM_WRITE != 0 && ch & IMAGE_SCN_MEM_EXECUTE != 0 {
            return Err(LoadError::WritableExecutable(sname.clone()));
        }
        let mapped = vsize.max(1).next_multiple_of(h.section_alignment as usize);
        if rva % PAGE != 0 || rva.checked_add(mapped).is_none_or(|end| end > size) {
            return Err(LoadError::Malformed(format!(
                "section {sname} lies outside the image"
            )));
        }
        if raw_size > 0
            && raw_off
                .checked_add(raw_size.min(vsize.max(raw_size)))
                .is_none_or(|e| e > file.len())
        {
            return Err(LoadError::Malformed(format!("raw data of section {sname}")));
        }
        let _ = raw_off;
        sections.push(Section {
            name: sname.clone(),
            rva,
            size: mapped,
            characteristics: ch,
        });
    }
    if let Some((iat, _)) = h.dir(DIR_IAT)
        && let Some(s) = sections
            .iter()
            .find(|s| (s.rva..s.rva + s.size).contains(&iat) && s.executable())
    {
        return Err(LoadError::IatInExecutableSection(s.name.clone()));
    }

    let base = map_randomly(size)?;
    let mut mapping = Mapping { base, size };
    {
        // SAFETY: `base..base+size` is a fresh read-write mapping owned by
        // `mapping`; no other reference to it exists while `img` lives.
        let img: &mut [u8] = unsafe { std::slice::from_raw_parts_mut(base as *mut u8, size) };
        img[..h.hdr_size].copy_from_slice(&file[..h.hdr_size]);
        for &(_, rva, vsize, raw_off, raw_size, _) in &h.sections {
            let n = raw_size.min(vsize.max(raw_size)).min(size - rva);
            img[rva..rva + n].copy_from_slice(&file[raw_off..raw_off + n]);
        }
        let delta = (base as u64).wrapping_sub(h.image_base);
        apply_relocations(img, &h, delta)?;
        bind_imports(img, &h, exports)?;
        init_security_cookie(img, &h, base);
    }
    protect(base, size, &sections)?;
    mapping.base = 0;
    let image = Image {
        base,
        size,
        entry_rva: h.entry_rva,
        preferred_base: h.image_base,
        name,
        sections,
    };
    register(&image, find_pdb(path, &file, &h));
    Ok(image)
}

fn apply_relocations(img: &mut [u8], h: &Headers, delta: u64) -> Result<(), LoadError> {
    let Some((rva, len)) = h.dir(DIR_BASERELOC) else {
        return Ok(());
    };
    let end = rva
        .checked_add(len)
        .filter(|&e| e <= img.len())
        .ok_or_else(|| LoadError::Malformed("base relocation directory out of bounds".into()))?;
    let mut at = rva;
    while at + 8 <= end {
        let page = u32_at(img, at, "relocation block")? as usize;
        let block = u32_at(img, at + 4, "relocation block")? as usize;
        if block < 8 || at + block > end {
            return Err(LoadError::Malformed(format!("relocation block at {at:#x}")));
        }
        for e in (at + 8..at + block).step_by(2) {
            let entry = u16_at(img, e, "relocation entry")?;
            let kind = (entry >> 12) as u8;
            let target = page + usize::from(entry & 0xFFF);
            match kind {
                IMAGE_REL_BASED_ABSOLUTE => {}
                IMAGE_REL_BASED_DIR64 => {
                    let v = u64_at(img, target, "DIR64 target")?;
                    img[target..target + 8].copy_from_slice(&v.wrapping_add(delta).to_le_bytes());
                }
                _ => {
                    return Err(LoadError::UnknownRelocation {
                        rva: target as u32,
                        kind,
                    });
                }
            }
        }
        at += block;
    }
    Ok(())
}

fn bind_imports(img: &mut [u8], h: &Headers, exports: &[Export]) -> Result<(), LoadError> {
    let Some((rva, _)) = h.dir(DIR_IMPORT) else {
        return Ok(());
    };
    let mut unresolved = Vec::new();
    let mut desc = rva;
    loop {
        let lookup = u32_at(img, desc, "import descriptor")? as usize;
        let name_rva = u32_at(img, desc + 12, "import descriptor")? as usize;
        let iat = u32_at(img, desc + 16, "import descriptor")? as usize;
        if name_rva == 0 && iat == 0 {
            break;
        }
        let module = cstr_at(img, name_rva, "import module name")?;
        let lookup = if lookup == 0 { iat } else { lookup };
        for i in 0.. {
            let thunk = u64_at(img, lookup + 8 * i, "import lookup entry")?;
            if thunk == 0 {
                break;
            }
            if thunk & (1 << 63) != 0 {
                return Err(LoadError::OrdinalImport(module, thunk as u16));
            }
            let fname = cstr_at(img, (thunk as usize & 0x7FFF_FFFF) + 2, "import name")?;
            let found = exports
                .iter()
                .find(|e| e.module.eq_ignore_ascii_case(&module) && e.name == fname);
            match found {
                Some(e) => {
                    let slot = iat + 8 * i;
                    u64_at(img, slot, "IAT slot")?;
                    img[slot..slot + 8].copy_from_slice(&(e.addr as u64).to_le_bytes());
                }
                None => unresolved.push(format!("{module}!{fname}")),
            }
        }
        desc += 20;
    }
    if unresolved.is_empty() {
        Ok(())
    } else {
        Err(LoadError::Unresolved(unresolved))
    }
}

/// Writes a fresh `/GS` cookie where the load configuration says, as the
/// Windows loader does for drivers (none in rsndk: rustc emits no cookie
/// checks).
fn init_security_cookie(img: &mut [u8], h: &Headers, base: usize) {
    let Some((rva, _)) = h.dir(DIR_LOAD_CONFIG) else {
        return;
    };
    let Ok(size) = u32_at(img, rva, "load config") else {
        return;
    };
    if size < 0x60 {
        return;
    }
    let Ok(cookie_va) = u64_at(img, rva + 0x58, "SecurityCookie") else {
        return;
    };
    let Some(at) = (cookie_va as usize)
        .checked_sub(base)
        .filter(|&a| a + 8 <= img.len())
    else {
        return;
    };
    let cookie = random_u64() & 0x0000_FFFF_FFFF_FFFF;
    img[at..at + 8].copy_from_slice(&cookie.to_le_bytes());
}

fn protect(base: usize, size: usize, sections: &[Section]) -> Result<(), LoadError> {
    let set = |start: usize, len: usize, prot: i32| -> Result<(), LoadError> {
        // SAFETY: a page-aligned sub-range of the image mapping we own.
        if unsafe { libc::mprotect(start as *mut libc::c_void, len, prot) } != 0 {
            return Err(LoadError::Map(std::io::Error::last_os_error()));
        }
        Ok(())
    };
    // Everything not covered by a section (headers, gaps): read-only.
    set(base, size, libc::PROT_READ)?;
    for s in sections {
        let mut prot = libc::PROT_NONE;
        if s.characteristics & IMAGE_SCN_MEM_READ != 0 {
            prot |= libc::PROT_READ;
        }
        if s.characteristics & IMAGE_SCN_MEM_WRITE != 0 {
            prot |= libc::PROT_WRITE;
        }
        if s.characteristics & IMAGE_SCN_MEM_EXECUTE != 0 {
            prot |= libc::PROT_EXEC;
        }
        set(base + s.rva, s.size, prot)?;
    }
    Ok(())
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
