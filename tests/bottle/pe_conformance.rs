//! PE conformance of `rsndk.sys`: what the Windows kernel loader and a
//! WDK-built driver would have, checked on the production image
//! (`cargo build --release`) and on the image the bottle runs (`bottle`
//! profile, or `$RSNDK_SYS`). The images are parsed with the `object`
//! crate, not with kbottle's loader, so a loader bug cannot hide an image
//! defect.
//!
//! Every import must name a routine on the checked-in list of its module
//! (`crates/kbottle/exports/<module>.txt`), where each name cites the WDK
//! header line declaring it as an import and its DDI reference page: a name
//! the headers only provide as a macro or inline body does not exist in
//! the kernel, and the driver would not load.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::OnceLock;

use object::LittleEndian as LE;
use object::pe;
use object::read::pe::{ExportTarget, ImageNtHeaders, ImageOptionalHeader, Import, PeFile64};

/// One built image, read once per test process.
struct Image {
    /// Which image this is, for messages.
    label: &'static str,
    path: PathBuf,
    bytes: Vec<u8>,
}

impl Image {
    fn read(label: &'static str, path: PathBuf) -> Image {
        let bytes =
            std::fs::read(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
        Image { label, path, bytes }
    }

    fn pe(&self) -> PeFile64<'_> {
        PeFile64::parse(self.bytes.as_slice())
            .unwrap_or_else(|e| panic!("{} is not a PE32+ image: {e}", self.path.display()))
    }
}

/// What ships: `--release`.
fn release() -> &'static Image {
    static RELEASE: OnceLock<Image> = OnceLock::new();
    RELEASE.get_or_init(|| Image::read("release", kbottle::image::release_image()))
}

/// What the bottle runs.
fn bottle() -> &'static Image {
    static BOTTLE: OnceLock<Image> = OnceLock::new();
    BOTTLE.get_or_init(|| Image::read("bottle", kbottle::image::rsndk_sys()))
}

/// Runs `check` on both images and fails with every problem it found,
/// each prefixed with the image it was found in.
fn assert_both_conform(check: fn(&PeFile64<'_>) -> Vec<String>) {
    let mut failures = Vec::new();
    for image in [release(), bottle()] {
        let pe = image.pe();
        for problem in check(&pe) {
            failures.push(format!(
                "{} image {}: {problem}",
                image.label,
                image.path.display()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn is_an_amd64_native_image() {
    assert_both_conform(amd64_native);
}

#[test]
fn declares_aslr_and_nx() {
    assert_both_conform(aslr_and_nx);
}

#[test]
fn carries_base_relocations() {
    assert_both_conform(base_relocations);
}

#[test]
fn no_section_is_writable_and_executable() {
    assert_both_conform(writable_executable_sections);
}

#[test]
fn has_no_tls_directory() {
    assert_both_conform(tls_directory);
}

#[test]
fn has_a_valid_checksum() {
    assert_both_conform(checksum);
}

#[test]
fn entry_point_is_driver_entry() {
    assert_both_conform(entry_point);
}

#[test]
fn exports_only_driver_entry_and_link_markers() {
    assert_both_conform(unexpected_exports);
}

#[test]
fn imports_only_from_kernel_modules() {
    assert_both_conform(import_modules);
}

#[test]
fn every_import_is_a_documented_export() {
    assert_both_conform(|pe| match imports(pe) {
        Ok(imports) => undocumented(&imports),
        Err(problem) => vec![problem],
    });
}

/// Machine AMD64 and the native subsystem: what the kernel loads as a
/// driver (`/SUBSYSTEM:NATIVE`).
fn amd64_native(pe: &PeFile64<'_>) -> Vec<String> {
    let mut problems = Vec::new();
    let machine = pe.nt_headers().file_header().machine.get(LE);
    if machine != pe::IMAGE_FILE_MACHINE_AMD64 {
        problems.push(format!("machine {machine:#06x}, not AMD64 (0x8664)"));
    }
    let subsystem = pe.nt_headers().optional_header().subsystem();
    if subsystem != pe::IMAGE_SUBSYSTEM_NATIVE {
        problems.push(format!("subsystem {subsystem:#x}, not NATIVE (1)"));
    }
    problems
}

/// `/DYNAMICBASE` and `/NXCOMPAT`: the kernel maps drivers at a random
/// base, and HVCI refuses images that do not declare NX compatibility.
fn aslr_and_nx(pe: &PeFile64<'_>) -> Vec<String> {
    let flags = pe.nt_headers().optional_header().dll_characteristics();
    [
        (pe::IMAGE_DLLCHARACTERISTICS_DYNAMIC_BASE, "DYNAMIC_BASE"),
        (pe::IMAGE_DLLCHARACTERISTICS_NX_COMPAT, "NX_COMPAT"),
    ]
    .into_iter()
    .filter(|(flag, _)| flags.0 & flag.0 == 0)
    .map(|(_, name)| format!("DllCharacteristics {flags:#06x} lacks {name}"))
    .collect()
}

/// A non-empty base relocation directory (the image is never loaded at its
/// preferred base), holding only the kinds an x64 image uses, each inside
/// a section.
fn base_relocations(pe: &PeFile64<'_>) -> Vec<String> {
    let sections = pe.section_table();
    let mut blocks = match pe
        .data_directories()
        .relocation_blocks(pe.data(), &sections)
    {
        Ok(Some(blocks)) => blocks,
        Ok(None) => return vec!["no base relocation directory".to_owned()],
        Err(e) => return vec![format!("base relocation directory: {e}")],
    };
    let mut problems = Vec::new();
    let mut count = 0usize;
    loop {
        let block = match blocks.next() {
            Ok(Some(block)) => block,
            Ok(None) => break,
            Err(e) => {
                problems.push(format!("base relocation block: {e}"));
                break;
            }
        };
        for relocation in block {
            count += 1;
            let rva = relocation.virtual_address;
            match relocation.typ {
                pe::IMAGE_REL_BASED_DIR64 => {
                    let fits = sections.section_containing(rva).is_some_and(|section| {
                        let (start, size) = section.pe_address_range();
                        u64::from(rva) + 8 <= u64::from(start) + u64::from(size)
                    });
                    if !fits {
                        problems.push(format!(
                            "DIR64 relocation at {rva:#x} is not inside a section"
                        ));
                    }
                }
                // Padding that keeps a block 32-bit aligned.
                pe::IMAGE_REL_BASED_ABSOLUTE => {}
                other => problems.push(format!(
                    "relocation at {rva:#x} has type {}, not DIR64",
                    other.0
                )),
            }
        }
    }
    if count == 0 {
        problems.push("the base relocation directory holds no relocation".to_owned());
    }
    problems
}

/// W^X: Driver Verifier's code integrity checks and HVCI reject a section
/// that is both writable and executable.
fn writable_executable_sections(pe: &PeFile64<'_>) -> Vec<String> {
    pe.section_table()
        .iter()
        .filter(|section| {
            let flags = section.characteristics.get(LE).0;
            flags & pe::IMAGE_SCN_MEM_WRITE.0 != 0 && flags & pe::IMAGE_SCN_MEM_EXECUTE.0 != 0
        })
        .map(|section| {
            format!(
                "section {} is writable and executable",
                String::from_utf8_lossy(section.raw_name())
            )
        })
        .collect()
}

/// No TLS directory: the kernel loader does not set up implicit TLS for
/// drivers.
fn tls_directory(pe: &PeFile64<'_>) -> Vec<String> {
    match pe.data_directory(pe::IMAGE_DIRECTORY_ENTRY_TLS) {
        Some(dir) => vec![format!(
            "TLS directory at {:#x} ({} bytes)",
            dir.virtual_address.get(LE),
            dir.size.get(LE)
        )],
        None => Vec::new(),
    }
}

/// The PE checksum is set and right. "The operating system requires the
/// Checksum for device drivers" (MSVC's `/RELEASE`, set by default with
/// `/SUBSYSTEM:NATIVE`: learn.microsoft.com/cpp/build/reference/release-set-the-checksum);
/// lld-link sets it only when given `/RELEASE`.
fn checksum(pe: &PeFile64<'_>) -> Vec<String> {
    let recorded = pe.nt_headers().optional_header().check_sum();
    // The field's file offset: the NT headers' signature (4 bytes) and
    // file header (20), then offset 64 of the optional header.
    let field = pe.dos_header().nt_headers_offset() as usize + 4 + 20 + 64;
    let computed = pe_checksum(pe.data(), field);
    if recorded == computed {
        Vec::new()
    } else {
        vec![format!(
            "CheckSum is {recorded:#x}, the image sums to {computed:#x} (link with /RELEASE)"
        )]
    }
}

/// The PE image checksum (what `CheckSumMappedFile` computes): the
/// one's-complement-style 16-bit sum of the file, with the checksum field
/// itself taken as zero, plus the file length.
fn pe_checksum(bytes: &[u8], field: usize) -> u32 {
    let mut sum: u32 = 0;
    for (index, word) in bytes.chunks(2).enumerate() {
        let offset = index * 2;
        if offset == field || offset == field + 2 {
            continue;
        }
        let low = word[0];
        let high = word.get(1).copied().unwrap_or(0);
        sum += u32::from(u16::from_le_bytes([low, high]));
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum = (sum & 0xffff) + (sum >> 16);
    sum + bytes.len() as u32
}

/// The exports a linked rsndk.sys has: `DriverEntry`, and the two link
/// markers of `src/driver/entry.rs` (a cdylib exports every
/// `#[unsafe(no_mangle)] pub` item): `_fltused` (data) and
/// `__CxxFrameHandler3` (never called with `panic = "abort"`). Any other
/// export is an item the driver leaks to the kernel by accident.
const EXPECTED_EXPORTS: [&str; 3] = ["DriverEntry", "_fltused", "__CxxFrameHandler3"];

/// One named export of an image.
struct Exported {
    name: String,
    /// `None` for a forwarded export.
    rva: Option<u32>,
}

fn exports(pe: &PeFile64<'_>) -> Result<Vec<Exported>, String> {
    let Some(table) = pe
        .export_table()
        .map_err(|e| format!("export table: {e}"))?
    else {
        return Ok(Vec::new());
    };
    let exports = table.exports().map_err(|e| format!("export table: {e}"))?;
    Ok(exports
        .into_iter()
        .map(|export| Exported {
            name: export.name.map_or_else(
                || format!("#{}", export.ordinal.0),
                |name| String::from_utf8_lossy(name).into_owned(),
            ),
            rva: match export.target {
                ExportTarget::Address(rva) => Some(rva),
                ExportTarget::ForwardByOrdinal(..) | ExportTarget::ForwardByName(..) => None,
            },
        })
        .collect())
}

fn unexpected_exports(pe: &PeFile64<'_>) -> Vec<String> {
    match exports(pe) {
        Ok(exports) => exports
            .iter()
            .filter(|export| !EXPECTED_EXPORTS.contains(&export.name.as_str()))
            .map(|export| format!("unexpected export {}", export.name))
            .collect(),
        Err(problem) => vec![problem],
    }
}

/// The entry point is `DriverEntry`.
///
/// The image has no COFF symbol table (lld-link writes none into an image)
/// and the production link flags must not change to emit a map, so the
/// check uses what the image itself records about that symbol:
/// - the export table's `DriverEntry` (the cdylib exports the symbol the
///   driver defines with `export_name = "DriverEntry"`) has exactly the
///   entry point's address: `/ENTRY:DriverEntry` resolved to that same
///   symbol, not to a CRT default or another function;
/// - the entry point lies in an executable section;
/// - a `.pdata` RUNTIME_FUNCTION begins exactly at the entry point: it is
///   the first byte of a function the compiler emitted (with unwind data,
///   which the kernel needs to dispatch an exception through it), not an
///   address inside one.
fn entry_point(pe: &PeFile64<'_>) -> Vec<String> {
    let mut problems = Vec::new();
    let entry = pe.nt_headers().optional_header().address_of_entry_point();
    match exports(pe) {
        Ok(exports) => match exports.iter().find(|e| e.name == "DriverEntry") {
            None => problems.push("DriverEntry is not exported".to_owned()),
            Some(export) if export.rva != Some(entry) => problems.push(format!(
                "entry point {entry:#x} is not DriverEntry ({})",
                export
                    .rva
                    .map_or_else(|| "a forwarder".to_owned(), |rva| format!("{rva:#x}"))
            )),
            Some(_) => {}
        },
        Err(problem) => problems.push(problem),
    }
    let executable = pe
        .section_table()
        .section_containing(entry)
        .is_some_and(|s| s.characteristics.get(LE).0 & pe::IMAGE_SCN_MEM_EXECUTE.0 != 0);
    if !executable {
        problems.push(format!(
            "entry point {entry:#x} is not in an executable section"
        ));
    }
    match runtime_function_starts(pe) {
        Ok(starts) if starts.contains(&entry) => {}
        Ok(_) => problems.push(format!(
            "no .pdata RUNTIME_FUNCTION begins at the entry point {entry:#x}"
        )),
        Err(problem) => problems.push(problem),
    }
    problems
}

/// The begin addresses of the exception directory's RUNTIME_FUNCTIONs.
fn runtime_function_starts(pe: &PeFile64<'_>) -> Result<BTreeSet<u32>, String> {
    let dir = pe
        .data_directory(pe::IMAGE_DIRECTORY_ENTRY_EXCEPTION)
        .ok_or("no exception directory (.pdata)")?;
    let bytes = dir
        .data(pe.data(), &pe.section_table())
        .map_err(|e| format!("exception directory: {e}"))?;
    let functions = object::pod::slice_from_all_bytes::<pe::ImageRuntimeFunctionEntry>(bytes)
        .map_err(|()| "exception directory is not a whole number of RUNTIME_FUNCTIONs")?;
    Ok(functions.iter().map(|f| f.begin_address.get(LE)).collect())
}

/// One imported routine.
#[derive(Debug)]
struct Imported {
    /// The module name as the image spells it.
    module: String,
    /// The routine's name, or `#<ordinal>` for an import by ordinal.
    name: String,
}

impl Imported {
    fn new(module: &str, name: &str) -> Imported {
        Imported {
            module: module.to_owned(),
            name: name.to_owned(),
        }
    }
}

fn imports(pe: &PeFile64<'_>) -> Result<Vec<Imported>, String> {
    let err = |e: object::read::Error| format!("import table: {e}");
    let Some(table) = pe.import_table().map_err(err)? else {
        return Ok(Vec::new());
    };
    let mut imports = Vec::new();
    let mut descriptors = table.descriptors().map_err(err)?;
    while let Some(descriptor) = descriptors.next().map_err(err)? {
        let module = table.name(descriptor.name.get(LE)).map_err(err)?;
        let module = String::from_utf8_lossy(module).into_owned();
        // The lookup table; images without one name the IAT only.
        let lookup = match descriptor.original_first_thunk.get(LE) {
            0 => descriptor.first_thunk.get(LE),
            rva => rva,
        };
        let mut thunks = table.thunks(lookup).map_err(err)?;
        while let Some(thunk) = thunks.next::<pe::ImageNtHeaders64>().map_err(err)? {
            let name = match table.import::<pe::ImageNtHeaders64>(thunk).map_err(err)? {
                Import::Name(_hint, name) => String::from_utf8_lossy(name).into_owned(),
                Import::Ordinal(ordinal) => format!("#{ordinal}"),
            };
            imports.push(Imported {
                module: module.clone(),
                name,
            });
        }
    }
    Ok(imports)
}

/// The modules a kernel driver of this kind imports from, as the WDK's
/// import libraries name them (the loader compares case-insensitively).
const KERNEL_MODULES: [&str; 4] = ["ntoskrnl.exe", "HAL.dll", "NDIS.SYS", "NETIO.SYS"];

/// Imports come only from the kernel modules, by name, and none is
/// delay-loaded (the kernel has no delay-load helper).
fn import_modules(pe: &PeFile64<'_>) -> Vec<String> {
    let mut problems = Vec::new();
    match imports(pe) {
        Ok(imports) => {
            let foreign: BTreeSet<&str> = imports
                .iter()
                .map(|i| i.module.as_str())
                .filter(|m| !KERNEL_MODULES.iter().any(|k| k.eq_ignore_ascii_case(m)))
                .collect();
            problems.extend(foreign.iter().map(|m| format!("imports from {m}")));
            problems.extend(
                imports
                    .iter()
                    .filter(|i| i.name.starts_with('#'))
                    .map(|i| format!("imports {}!{} by ordinal", i.module, i.name)),
            );
        }
        Err(problem) => problems.push(problem),
    }
    if pe
        .data_directory(pe::IMAGE_DIRECTORY_ENTRY_DELAY_IMPORT)
        .is_some()
    {
        problems.push("has a delay-load import directory".to_owned());
    }
    problems
}

/// The checked-in export lists: module (as `KERNEL_MODULES` spells it),
/// list file name, its text.
const EXPORT_LISTS: [(&str, &str, &str); 4] = [
    (
        "ntoskrnl.exe",
        "ntoskrnl.exe.txt",
        include_str!("../../crates/kbottle/exports/ntoskrnl.exe.txt"),
    ),
    (
        "HAL.dll",
        "HAL.dll.txt",
        include_str!("../../crates/kbottle/exports/HAL.dll.txt"),
    ),
    (
        "NDIS.SYS",
        "NDIS.SYS.txt",
        include_str!("../../crates/kbottle/exports/NDIS.SYS.txt"),
    ),
    (
        "NETIO.SYS",
        "NETIO.SYS.txt",
        include_str!("../../crates/kbottle/exports/NETIO.SYS.txt"),
    ),
];

/// The names of a list: one per line, `#` starts a comment.
fn listed_names(text: &str) -> Vec<&str> {
    text.lines()
        .map(|line| line.split('#').next().unwrap_or_default().trim())
        .filter(|name| !name.is_empty())
        .collect()
}

/// Every import that is not on its module's list, as `module!name` and
/// why.
fn undocumented(imports: &[Imported]) -> Vec<String> {
    imports
        .iter()
        .filter_map(|import| {
            let Some((_, file, text)) = EXPORT_LISTS
                .iter()
                .find(|(module, ..)| module.eq_ignore_ascii_case(&import.module))
            else {
                return Some(format!(
                    "{}!{}: no export list for module {} (crates/kbottle/exports/)",
                    import.module, import.name, import.module
                ));
            };
            (!listed_names(text).contains(&import.name.as_str())).then(|| {
                let elsewhere = EXPORT_LISTS
                    .iter()
                    .find(|(_, _, text)| listed_names(text).contains(&import.name.as_str()))
                    .map(|(module, ..)| format!(" (it is documented as a {module} export)"))
                    .unwrap_or_default();
                format!(
                    "{}!{} is not a documented export on crates/kbottle/exports/{file}{elsewhere}",
                    import.module, import.name
                )
            })
        })
        .collect()
}

/// Names the WDK headers provide only as macros or inline bodies on AMD64
/// (no export exists): no list may hold them.
const HEADER_INLINE: [&str; 18] = [
    "KeRaiseIrql",                   // wdm.h:19533, macro over KfRaiseIrql
    "KeAcquireSpinLock",             // wdm.h:22835, macro over KeAcquireSpinLockRaiseToDpc
    "IoSetCompletionRoutine",        // wdm.h:34022, FORCEINLINE
    "IoGetCurrentIrpStackLocation",  // wdm.h:33445, FORCEINLINE
    "IoGetNextIrpStackLocation",     // wdm.h:33650, FORCEINLINE
    "IoSkipCurrentIrpStackLocation", // wdm.h:34165, FORCEINLINE
    "IoCallDriver",                  // wdm.h:32517, macro over IofCallDriver
    "IoCompleteRequest",             // wdm.h:32649, macro over IofCompleteRequest
    "MmGetSystemAddressForMdlSafe",  // wdm.h:29065, FORCEINLINE
    "MmGetMdlVirtualAddress",        // wdm.h:28161, macro
    "MmInitializeMdl",               // wdm.h:29021, FORCEINLINE
    "RtlEqualMemory",                // wdm.h:13900, macro over memcmp
    "RtlMoveMemory",                 // wdm.h:13901, macro over memmove
    "RtlCopyMemory",                 // wdm.h:13902, macro over memcpy
    "RtlFillMemory",                 // wdm.h:13903, macro over memset
    "RtlZeroMemory",                 // wdm.h:13904, macro over memset
    "NdisMoveMemory",                // ndis.h:1049, macro over RtlCopyMemory
    "NdisZeroMemory",                // ndis.h:1050, macro over RtlZeroMemory
];

#[test]
fn export_lists_hold_no_header_inline_name() {
    let found: Vec<String> = EXPORT_LISTS
        .iter()
        .flat_map(|(_, file, text)| {
            listed_names(text)
                .into_iter()
                .filter(|name| HEADER_INLINE.contains(name))
                .map(move |name| format!("{file}: {name}"))
        })
        .collect();
    assert!(
        found.is_empty(),
        "header-inline names on an export list: {found:?}"
    );
}

#[test]
fn export_lists_are_sorted_unique_identifiers() {
    for (module, file, text) in EXPORT_LISTS {
        assert!(
            text.starts_with(&format!("# {module}:")),
            "{file} must open with its header comment"
        );
        let names = listed_names(text);
        assert!(!names.is_empty(), "{file} lists no name");
        for name in &names {
            let mut chars = name.chars();
            let identifier = chars
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
            assert!(identifier, "{file}: {name:?} is not a C identifier");
        }
        for pair in names.windows(2) {
            assert!(
                pair[0] < pair[1],
                "{file}: {:?} must come after {:?} (sorted, each once)",
                pair[0],
                pair[1]
            );
        }
    }
}

#[test]
fn an_undocumented_import_is_named() {
    let problems = undocumented(&[
        Imported::new("ntoskrnl.exe", "KeSetTimer"),
        Imported::new("NTOSKRNL.EXE", "KeInsertQueueDpc"),
        Imported::new("ntoskrnl.exe", "KeRaiseIrql"),
        Imported::new("ntoskrnl.exe", "KeQueryPerformanceCounter"),
        Imported::new("HAL.DLL", "KeQueryPerformanceCounter"),
        Imported::new("ws2_32.dll", "send"),
    ]);
    assert_eq!(problems.len(), 3, "{problems:#?}");
    assert!(problems[0].starts_with("ntoskrnl.exe!KeRaiseIrql "));
    assert!(problems[1].starts_with("ntoskrnl.exe!KeQueryPerformanceCounter "));
    assert!(problems[1].ends_with("(it is documented as a HAL.dll export)"));
    assert!(problems[2].starts_with("ws2_32.dll!send: no export list"));
}
