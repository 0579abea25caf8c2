//! Function names of driver addresses, from the image's PDB.

use std::path::Path;

use super::DIR_DEBUG;
use super::parse::{Headers, cstr_at, u32_at};

/// Function names by RVA, from a PDB's procedure records.
#[derive(Debug, Default)]
pub(super) struct Symbols {
    /// (rva, length, name), sorted by rva.
    procs: Vec<(usize, usize, String)>,
}

impl Symbols {
    /// Reads the procedures of the PDB at `path` (empty if it cannot).
    pub(super) fn read(path: &Path) -> Self {
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
    pub(super) fn lookup(&self, rva: usize) -> Option<(&str, usize)> {
        let i = self.procs.partition_point(|p| p.0 <= rva).checked_sub(1)?;
        let (start, len, name) = &self.procs[i];
        (rva < start + (*len).max(1)).then(|| (name.as_str(), rva - start))
    }
}

/// The image's PDB: the path its CodeView debug record names, else
/// `<image>.pdb` beside it.
pub(super) fn find_pdb(image: &Path, file: &[u8], h: &Headers) -> Option<std::path::PathBuf> {
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
