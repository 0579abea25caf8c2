//! What an ELF file needs at run time (interpreter, DT_NEEDED, RUNPATH) and
//! what a kernel module depends on (`.modinfo`'s `depends=`).

use goblin::elf::Elf;

/// The run-time needs of one dynamically linked ELF file.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Needs {
    /// PT_INTERP, e.g. `/lib64/ld-linux-x86-64.so.2`.
    pub interpreter: Option<String>,
    /// DT_NEEDED sonames.
    pub libraries: Vec<String>,
    /// DT_RUNPATH / DT_RPATH directories (`$ORIGIN` unexpanded).
    pub search_paths: Vec<String>,
}

/// Whether `bytes` start like an ELF file.
pub fn is_elf(bytes: &[u8]) -> bool {
    bytes.starts_with(b"\x7fELF")
}

/// The needs of the ELF file `bytes`; `what` names it in errors.
pub fn needs(bytes: &[u8], what: &str) -> Result<Needs, String> {
    let elf = Elf::parse(bytes).map_err(|e| format!("{what} is not a valid ELF file: {e}"))?;
    let split = |paths: &[&str]| -> Vec<String> {
        paths
            .iter()
            .flat_map(|list| list.split(':'))
            .filter(|dir| !dir.is_empty())
            .map(str::to_owned)
            .collect()
    };
    let mut search_paths = split(&elf.runpaths);
    search_paths.extend(split(&elf.rpaths));
    Ok(Needs {
        interpreter: elf.interpreter.map(str::to_owned),
        libraries: elf
            .libraries
            .iter()
            .map(|name| (*name).to_owned())
            .collect(),
        search_paths,
    })
}

/// The module names in a kernel module's `.modinfo` `depends=` entry.
pub fn module_depends(bytes: &[u8], what: &str) -> Result<Vec<String>, String> {
    let elf = Elf::parse(bytes).map_err(|e| format!("{what} is not a valid ELF file: {e}"))?;
    let modinfo = elf
        .section_headers
        .iter()
        .find(|header| elf.shdr_strtab.get_at(header.sh_name) == Some(".modinfo"))
        .ok_or_else(|| format!("{what} has no .modinfo section"))?;
    let range = modinfo
        .file_range()
        .ok_or_else(|| format!("{what}: .modinfo has no file data"))?;
    let data = bytes
        .get(range)
        .ok_or_else(|| format!("{what}: .modinfo lies past the end of the file"))?;
    Ok(data
        .split(|&byte| byte == 0)
        .filter_map(|entry| entry.strip_prefix(b"depends="))
        .flat_map(|list| list.split(|&byte| byte == b','))
        .filter(|name| !name.is_empty())
        .map(|name| String::from_utf8_lossy(name).into_owned())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_running_test_binary_needs_libc() {
        let me = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        assert!(is_elf(&me));
        let needs = needs(&me, "self").unwrap();
        assert!(needs.libraries.iter().any(|lib| lib.starts_with("libc.so")));
        assert!(needs.interpreter.is_some());
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(needs(b"\x7fELFgarbage", "garbage").is_err());
        assert!(module_depends(b"nothing", "nothing").is_err());
    }
}
