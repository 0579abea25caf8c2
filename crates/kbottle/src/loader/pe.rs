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

mod parse;
mod registry;
mod symbols;

use parse::{Headers, cstr_at, parse_headers, u16_at, u32_at, u64_at};
pub use registry::{CodeRange, describe, driver_frames_on_stack, image_base_of, image_end_of};
use registry::{register, unregister};
use symbols::find_pdb;

use crate::export::Export;

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
    /// A base relocation of a type other than ABSOLUTE (0) or DIR64 (10).
    UnknownRelocation {
        /// Where it applies (image-relative).
        rva: u32,
        /// Its type (the high 4 bits of the entry).
        kind: u8,
    },
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
        // The owner tells ke to forget the kernel objects the driver kept
        // in the image first (`Machine`): the loader is below the kernel.
        unregister(self.base);
        // SAFETY: `base..base+size` is the mapping this Image created in
        // `load` and owns; nothing of the driver runs after its unload.
        unsafe { libc::munmap(self.base as *mut libc::c_void, self.size) };
    }
}

/// A random number from the kernel.
fn random_u64() -> u64 {
    let mut v = 0u64;
    // SAFETY: getrandom writes at most 8 bytes into `v`.
    let n = unsafe { libc::getrandom((&raw mut v).cast(), 8, 0) };
    if n == 8 {
        v
    } else {
        // No entropy from the kernel: the clock's nanoseconds still move
        // the base between runs.
        let ns = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64);
        ns.wrapping_mul(0x9E37_79B9_7F4A_7C15)
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
