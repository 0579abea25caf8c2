//! Reading the PE headers: bounds-checked little-endian fields of a byte
//! slice, and the header values the loader needs.

use super::{IMAGE_FILE_MACHINE_AMD64, IMAGE_SUBSYSTEM_NATIVE, LoadError, PAGE};

fn rd<const N: usize>(b: &[u8], at: usize, what: &str) -> Result<[u8; N], LoadError> {
    at.checked_add(N)
        .and_then(|end| b.get(at..end))
        .and_then(|s| s.try_into().ok())
        .ok_or_else(|| LoadError::Malformed(format!("{what} at {at:#x} is out of bounds")))
}

pub(super) fn u16_at(b: &[u8], at: usize, what: &str) -> Result<u16, LoadError> {
    rd::<2>(b, at, what).map(u16::from_le_bytes)
}

pub(super) fn u32_at(b: &[u8], at: usize, what: &str) -> Result<u32, LoadError> {
    rd::<4>(b, at, what).map(u32::from_le_bytes)
}

pub(super) fn u64_at(b: &[u8], at: usize, what: &str) -> Result<u64, LoadError> {
    rd::<8>(b, at, what).map(u64::from_le_bytes)
}

pub(super) fn cstr_at(b: &[u8], at: usize, what: &str) -> Result<String, LoadError> {
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
pub(super) struct Headers {
    pub(super) entry_rva: usize,
    pub(super) image_base: u64,
    pub(super) section_alignment: u32,
    pub(super) image_size: usize,
    pub(super) hdr_size: usize,
    /// (rva, size) of each data directory.
    pub(super) dirs: Vec<(usize, usize)>,
    /// (name, rva, virtual size, raw offset, raw size, characteristics).
    pub(super) sections: Vec<(String, usize, usize, usize, usize, u32)>,
}

impl Headers {
    pub(super) fn dir(&self, i: usize) -> Option<(usize, usize)> {
        self.dirs
            .get(i)
            .copied()
            .filter(|&(rva, size)| rva != 0 && size != 0)
    }
}

pub(super) fn parse_headers(file: &[u8]) -> Result<Headers, LoadError> {
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
