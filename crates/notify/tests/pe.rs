//! PE checks of `rsndknotify.dll` as the packager ships it (`cargo build
//! -p rsndknotify --target x86_64-pc-windows-msvc --release`), parsed with
//! the `object` crate, after `tests/bottle/pe_conformance.rs` for
//! `rsndk.sys`: a user-mode AMD64 DLL that exports exactly the COM entry
//! points, imports only routines of system DLLs every Windows Server has,
//! keeps W^X, carries base relocations, and is entered at its own stub
//! rather than at the kernel image's `DriverEntry` (`.cargo/config.toml`
//! links every image of this target with the driver's flags; build.rs
//! overrides them).
//!
//! The DLL is built by a nested cargo with its own target directory
//! (`target/notify-pe`): the outer `cargo test` holds the lock of
//! `target/` while tests run.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use object::LittleEndian as LE;
use object::pe;
use object::read::pe::{ExportTarget, ImageNtHeaders, ImageOptionalHeader, Import, PeFile64};

const TARGET: &str = "x86_64-pc-windows-msvc";

/// What a COM in-process server exports, and nothing else (the notify
/// object's exports: src/com/server.rs says why all four).
const EXPORTS: [&str; 4] = [
    "DllCanUnloadNow",
    "DllGetClassObject",
    "DllRegisterServer",
    "DllUnregisterServer",
];

/// Every routine the DLL may import, by module. All four modules are in
/// System32 of every Windows since Vista, Server Core included; each name
/// is a documented export of its module (learn.microsoft.com Win32 API
/// reference; ntdll's C routines per mingw-w64
/// `mingw-w64-crt/lib-common/ntdllcrt.def.in`).
const ALLOWED_IMPORTS: [(&str, &[&str]); 4] = [
    (
        "kernel32.dll",
        &[
            "GetModuleFileNameW",
            "GetProcessHeap",
            "HeapAlloc",
            "HeapFree",
            "HeapReAlloc",
        ],
    ),
    (
        "advapi32.dll",
        &[
            "RegCloseKey",
            "RegCreateKeyExW",
            "RegDeleteKeyW",
            "RegDeleteTreeW",
            "RegEnumKeyExW",
            "RegGetValueW",
            "RegOpenKeyExW",
            "RegSetValueExW",
        ],
    ),
    ("ole32.dll", &["CoTaskMemFree"]),
    (
        "ntdll.dll",
        &[
            "__chkstk", "memcmp", "memcpy", "memmove", "memset", "strlen",
        ],
    ),
];

/// `IMAGE_DLLCHARACTERISTICS_WDM_DRIVER`: what `/DRIVER:WDM` would set.
const WDM_DRIVER: u16 = 0x2000;

/// The entry stub of src/com/runtime.rs: `mov eax, 1; ret`.
const ENTRY_STUB: [u8; 6] = [0xb8, 0x01, 0x00, 0x00, 0x00, 0xc3];

fn workspace_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("crates/notify has a workspace root two levels up")
}

/// Builds the release DLL once per process and reads it.
fn dll() -> &'static (PathBuf, Vec<u8>) {
    static DLL: OnceLock<(PathBuf, Vec<u8>)> = OnceLock::new();
    DLL.get_or_init(|| {
        let root = workspace_root();
        let target_dir = root.join("target").join("notify-pe");
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let output = Command::new(&cargo)
            .current_dir(root)
            .args([
                "build",
                "--release",
                "--target",
                TARGET,
                "-p",
                "rsndknotify",
            ])
            .env("CARGO_TARGET_DIR", &target_dir)
            // The link flags come from .cargo/config.toml and build.rs
            // alone; RUSTFLAGS meant for the host test build would
            // replace the target table's.
            .env_remove("RUSTFLAGS")
            .env_remove("CARGO_ENCODED_RUSTFLAGS")
            .output()
            .expect("running cargo");
        assert!(
            output.status.success(),
            "building rsndknotify.dll failed ({}; it needs `rustup target add {TARGET}`):\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        let path = target_dir
            .join(TARGET)
            .join("release")
            .join("rsndknotify.dll");
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        (path, bytes)
    })
}

fn parse() -> PeFile64<'static> {
    let (path, bytes) = dll();
    PeFile64::parse(bytes.as_slice())
        .unwrap_or_else(|e| panic!("{} is not a PE32+ image: {e}", path.display()))
}

/// Named exports with their RVAs (`None`: forwarded).
fn exports(pe: &PeFile64<'_>) -> Vec<(String, Option<u32>)> {
    let Some(table) = pe.export_table().expect("export table") else {
        return Vec::new();
    };
    table
        .exports()
        .expect("exports")
        .into_iter()
        .map(|export| {
            let name = export.name.map_or_else(
                || format!("#{}", export.ordinal.0),
                |n| String::from_utf8_lossy(n).into_owned(),
            );
            let rva = match export.target {
                ExportTarget::Address(rva) => Some(rva),
                _ => None,
            };
            (name, rva)
        })
        .collect()
}

/// Imports as (module, name or `#ordinal`).
fn imports(pe: &PeFile64<'_>) -> Vec<(String, String)> {
    let Some(table) = pe.import_table().expect("import table") else {
        return Vec::new();
    };
    let mut found = Vec::new();
    let mut descriptors = table.descriptors().expect("import descriptors");
    while let Some(descriptor) = descriptors.next().expect("import descriptor") {
        let module = table.name(descriptor.name.get(LE)).expect("module name");
        let module = String::from_utf8_lossy(module).into_owned();
        let lookup = match descriptor.original_first_thunk.get(LE) {
            0 => descriptor.first_thunk.get(LE),
            rva => rva,
        };
        let mut thunks = table.thunks(lookup).expect("thunks");
        while let Some(thunk) = thunks.next::<pe::ImageNtHeaders64>().expect("thunk") {
            let name = match table.import::<pe::ImageNtHeaders64>(thunk).expect("import") {
                Import::Name(_, name) => String::from_utf8_lossy(name).into_owned(),
                Import::Ordinal(ordinal) => format!("#{ordinal}"),
            };
            found.push((module.clone(), name));
        }
    }
    found
}

#[test]
fn is_an_amd64_user_mode_dll() {
    let pe = parse();
    let header = pe.nt_headers().file_header();
    assert_eq!(header.machine.get(LE), pe::IMAGE_FILE_MACHINE_AMD64);
    let characteristics = header.characteristics.get(LE);
    assert_ne!(
        characteristics.0 & pe::IMAGE_FILE_DLL.0,
        0,
        "IMAGE_FILE_DLL"
    );
    let optional = pe.nt_headers().optional_header();
    assert_eq!(
        optional.subsystem(),
        pe::IMAGE_SUBSYSTEM_WINDOWS_GUI,
        "a DLL's subsystem (not NATIVE: the driver's /SUBSYSTEM must be overridden)"
    );
    let flags = optional.dll_characteristics();
    assert_eq!(flags.0 & WDM_DRIVER, 0, "WDM_DRIVER set: {flags:#06x}");
    for (flag, name) in [
        (pe::IMAGE_DLLCHARACTERISTICS_DYNAMIC_BASE, "DYNAMIC_BASE"),
        (pe::IMAGE_DLLCHARACTERISTICS_NX_COMPAT, "NX_COMPAT"),
        (
            pe::IMAGE_DLLCHARACTERISTICS_HIGH_ENTROPY_VA,
            "HIGH_ENTROPY_VA",
        ),
    ] {
        assert_ne!(
            flags.0 & flag.0,
            0,
            "DllCharacteristics {flags:#06x} lacks {name}"
        );
    }
}

#[test]
fn exports_exactly_the_com_entry_points() {
    let pe = parse();
    let names: BTreeSet<String> = exports(&pe).into_iter().map(|(name, _)| name).collect();
    let expected: BTreeSet<String> = EXPORTS.iter().map(|s| (*s).to_owned()).collect();
    assert_eq!(names, expected);
}

/// Every export is code (a leaf such as `DllCanUnloadNow` has no unwind
/// data, so `.pdata` is not required at each), and the image has an
/// exception directory for the functions that need one.
#[test]
fn every_export_is_code() {
    let pe = parse();
    assert!(!runtime_function_starts(&pe).is_empty(), "an empty .pdata");
    for (name, rva) in exports(&pe) {
        let rva = rva.unwrap_or_else(|| panic!("{name} is forwarded"));
        assert!(
            executable(&pe, rva),
            "{name} ({rva:#x}) is not in an executable section"
        );
    }
}

#[test]
fn entry_point_is_the_stub_not_driver_entry() {
    let pe = parse();
    let entry = pe.nt_headers().optional_header().address_of_entry_point();
    assert_ne!(entry, 0, "no entry point");
    assert!(
        executable(&pe, entry),
        "entry point {entry:#x} is not in an executable section"
    );
    assert!(
        exports(&pe).iter().all(|(_, rva)| *rva != Some(entry)),
        "the entry point is an export"
    );
    let section = pe
        .section_table()
        .section_containing(entry)
        .expect("a section holds the entry point");
    let data = section.pe_data(pe.data()).expect("section data");
    let offset = (entry - section.virtual_address.get(LE)) as usize;
    assert_eq!(
        data.get(offset..offset + ENTRY_STUB.len()),
        Some(&ENTRY_STUB[..]),
        "the entry point is not src/com/runtime.rs's `mov eax, 1; ret`"
    );
}

#[test]
fn imports_only_listed_routines_of_system_dlls() {
    let pe = parse();
    let found = imports(&pe);
    assert!(!found.is_empty(), "no import table");
    let problems: Vec<String> = found
        .iter()
        .filter(|(module, name)| {
            !ALLOWED_IMPORTS
                .iter()
                .any(|(m, names)| m.eq_ignore_ascii_case(module) && names.contains(&name.as_str()))
        })
        .map(|(module, name)| format!("{module}!{name}"))
        .collect();
    assert!(problems.is_empty(), "imports not on the list: {problems:?}");
    assert!(
        pe.data_directory(pe::IMAGE_DIRECTORY_ENTRY_DELAY_IMPORT)
            .is_none(),
        "a delay-load import directory"
    );
}

#[test]
fn no_section_is_writable_and_executable() {
    let pe = parse();
    let both: Vec<String> = pe
        .section_table()
        .iter()
        .filter(|s| {
            let flags = s.characteristics.get(LE);
            flags.0 & pe::IMAGE_SCN_MEM_WRITE.0 != 0 && flags.0 & pe::IMAGE_SCN_MEM_EXECUTE.0 != 0
        })
        .map(|s| String::from_utf8_lossy(s.raw_name()).into_owned())
        .collect();
    assert!(both.is_empty(), "writable and executable: {both:?}");
}

#[test]
fn carries_base_relocations() {
    let pe = parse();
    let sections = pe.section_table();
    let mut blocks = pe
        .data_directories()
        .relocation_blocks(pe.data(), &sections)
        .expect("relocation directory")
        .expect("a base relocation directory (the vtables hold absolute addresses)");
    let mut count = 0usize;
    while let Some(block) = blocks.next().expect("relocation block") {
        for relocation in block {
            match relocation.typ {
                pe::IMAGE_REL_BASED_DIR64 => count += 1,
                pe::IMAGE_REL_BASED_ABSOLUTE => {}
                other => panic!(
                    "relocation of type {other} at {:#x}",
                    relocation.virtual_address
                ),
            }
        }
    }
    assert!(count > 0, "no DIR64 relocation");
}

#[test]
fn has_no_tls_directory() {
    let pe = parse();
    assert!(
        pe.data_directory(pe::IMAGE_DIRECTORY_ENTRY_TLS).is_none(),
        "a TLS directory (nothing here uses thread-local storage)"
    );
}

fn executable(pe: &PeFile64<'_>, rva: u32) -> bool {
    pe.section_table()
        .section_containing(rva)
        .is_some_and(|s| s.characteristics.get(LE).0 & pe::IMAGE_SCN_MEM_EXECUTE.0 != 0)
}

fn runtime_function_starts(pe: &PeFile64<'_>) -> BTreeSet<u32> {
    let dir = pe
        .data_directory(pe::IMAGE_DIRECTORY_ENTRY_EXCEPTION)
        .expect("an exception directory (.pdata)");
    let bytes = dir
        .data(pe.data(), &pe.section_table())
        .expect("exception directory data");
    let functions = object::pod::slice_from_all_bytes::<pe::ImageRuntimeFunctionEntry>(bytes)
        .expect("whole RUNTIME_FUNCTIONs");
    functions.iter().map(|f| f.begin_address.get(LE)).collect()
}
