//! The PE loader on the real image: refusal with every NDIS/NETIO import
//! listed, relocation at a random base, bound IAT, W^X section
//! protections, the entry point running `DriverEntry` against the
//! kernel's imports, and the refusals of malformed variants.
#![cfg(all(target_os = "linux", target_arch = "x86_64"))]
#![allow(unsafe_code)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use kbottle::export::Export;
use kbottle::pe::{self, LoadError};
use kbottle::{crt, io, ke, mm, pool};

/// Tests here share process-global kernel state (pool, processors).
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn image() -> PathBuf {
    kbottle::image::rsndk_sys()
}

/// Every export of the kernel modules.
fn kernel_exports() -> Vec<Export> {
    let mut v = ke::exports();
    v.extend(pool::exports());
    v.extend(mm::exports());
    v.extend(io::exports());
    v.extend(crt::exports());
    v
}

/// The image's imports per goblin (an independent parser): (module, name,
/// IAT slot RVA).
fn goblin_imports(bytes: &[u8]) -> Vec<(String, String, usize)> {
    let pe = goblin::pe::PE::parse(bytes).expect("goblin parses the image");
    pe.imports
        .iter()
        .map(|i| (i.dll.to_owned(), i.name.to_string(), i.offset))
        .collect()
}

static STAND_IN_CALLS: AtomicUsize = AtomicUsize::new(0);
/// Makes `register_stand_in` stop the machine (the frames test).
static REGISTER_BUGCHECKS: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);
static REGISTER_CALLS: AtomicUsize = AtomicUsize::new(0);

/// A stand-in for any NDIS/NETIO import: counts the call, fails it.
unsafe extern "win64" fn stand_in() -> i32 {
    STAND_IN_CALLS.fetch_add(1, Ordering::SeqCst);
    0xC000_0001_u32 as i32
}

/// `NdisMRegisterMiniportDriver` stand-in: refuses registration with
/// `NDIS_STATUS_FAILURE`, which DriverEntry must return after undoing its
/// own allocations.
unsafe extern "win64" fn register_stand_in(
    _driver: *mut u8,
    _registry: *mut u8,
    _context: *mut u8,
    characteristics: *mut u8,
    handle: *mut usize,
) -> i32 {
    REGISTER_CALLS.fetch_add(1, Ordering::SeqCst);
    assert!(!characteristics.is_null() && !handle.is_null());
    if REGISTER_BUGCHECKS.load(Ordering::SeqCst) && kbottle::cpu::current_name() == "frames" {
        kbottle::verifier::bugcheck(0xDEAD_0001, [0; 4], "stand-in stops the machine");
    }
    0xC000_0001_u32 as i32
}

/// Kernel exports plus stand-ins for every other import of the image.
fn exports_with_stand_ins(bytes: &[u8]) -> Vec<Export> {
    let mut v = kernel_exports();
    for (module, name, _) in goblin_imports(bytes) {
        if v.iter()
            .any(|e| e.module.eq_ignore_ascii_case(&module) && e.name == name)
        {
            continue;
        }
        let module: &'static str = Box::leak(module.into_boxed_str());
        let name: &'static str = Box::leak(name.into_boxed_str());
        let addr = if name == "NdisMRegisterMiniportDriver" {
            register_stand_in as *const ()
        } else {
            stand_in as *const ()
        };
        v.push(Export { module, name, addr });
    }
    v
}

#[test]
fn refusal_lists_every_ndis_and_netio_import() {
    let path = image();
    let bytes = std::fs::read(&path).unwrap();
    let expected: BTreeSet<String> = goblin_imports(&bytes)
        .into_iter()
        .filter(|(m, _, _)| {
            m.eq_ignore_ascii_case("NDIS.SYS") || m.eq_ignore_ascii_case("NETIO.SYS")
        })
        .map(|(m, n, _)| format!("{m}!{n}"))
        .collect();
    assert!(expected.iter().any(|s| s.starts_with("NDIS.SYS!")));
    assert!(expected.iter().any(|s| s.starts_with("NETIO.SYS!")));
    match pe::load(&path, &kernel_exports()) {
        Err(LoadError::Unresolved(names)) => {
            let got: BTreeSet<String> = names.into_iter().collect();
            assert_eq!(got, expected, "every non-kernel import, and only those");
        }
        other => panic!("expected Unresolved, got {other:?}"),
    }
}

#[test]
fn every_ntoskrnl_and_hal_import_is_implemented() {
    let bytes = std::fs::read(image()).unwrap();
    let exports = kernel_exports();
    let missing: Vec<String> = goblin_imports(&bytes)
        .into_iter()
        .filter(|(m, n, _)| {
            m.eq_ignore_ascii_case("ntoskrnl.exe") && !exports.iter().any(|e| e.name == n.as_str())
        })
        .map(|(_, n, _)| n)
        .collect();
    assert!(missing.is_empty(), "unimplemented: {missing:?}");
}

/// Reads `len` bytes of the file at `rva` (through the section table).
fn file_bytes_at(bytes: &[u8], rva: usize, len: usize) -> Option<&[u8]> {
    let pe = goblin::pe::PE::parse(bytes).ok()?;
    let s = pe.sections.iter().find(|s| {
        let start = s.virtual_address as usize;
        (start..start + s.size_of_raw_data as usize).contains(&rva)
    })?;
    let off = s.pointer_to_raw_data as usize + (rva - s.virtual_address as usize);
    bytes.get(off..off + len)
}

#[test]
fn relocated_at_a_random_base_with_the_iat_bound() {
    let _g = serial();
    let path = image();
    let bytes = std::fs::read(&path).unwrap();
    let exports = exports_with_stand_ins(&bytes);
    let img = pe::load(&path, &exports).expect("loads with stand-ins");
    let second = pe::load(&path, &exports).expect("loads twice");
    assert_ne!(img.base() as u64, img.preferred_base());
    assert_ne!(img.base(), second.base());
    drop(second);
    let pe_file = goblin::pe::PE::parse(&bytes).unwrap();
    assert_eq!(img.entry_rva(), pe_file.entry as usize);
    assert_eq!(img.entry() as usize, img.base() + pe_file.entry as usize);
    let named = pe::describe(img.entry() as usize);
    if path.with_extension("pdb").is_file() {
        // Named from the PDB: the entry point is the driver's DriverEntry.
        assert!(
            named.ends_with("(rsndk::driver::entry::driver_entry+0x0)"),
            "{named}"
        );
    } else {
        assert_eq!(named, format!("rsndk.sys+{:#x}", pe_file.entry), "{named}");
    }
    let delta = (img.base() as u64).wrapping_sub(pe_file.image_base);
    let mut dir64 = 0;
    let relocs = pe_file
        .relocation_data
        .as_ref()
        .expect("a .reloc directory");
    for block in relocs.blocks() {
        let block = block.unwrap();
        for word in block.words() {
            let word = word.unwrap();
            if word.reloc_type() != 10 {
                assert_eq!(word.reloc_type(), 0);
                continue;
            }
            let rva = block.rva as usize + usize::from(word.offset());
            let orig =
                u64::from_le_bytes(file_bytes_at(&bytes, rva, 8).unwrap().try_into().unwrap());
            // SAFETY: `rva` is inside the mapped, readable image.
            let now = unsafe { ((img.base() + rva) as *const u64).read_unaligned() };
            assert_eq!(now, orig.wrapping_add(delta), "DIR64 at RVA {rva:#x}");
            dir64 += 1;
        }
    }
    assert!(dir64 > 10, "{dir64} DIR64 relocations");
    for (module, name, slot) in goblin_imports(&bytes) {
        let e = exports
            .iter()
            .find(|e| e.module.eq_ignore_ascii_case(&module) && e.name == name)
            .unwrap();
        // SAFETY: the IAT slot is inside the mapped, readable image.
        let bound = unsafe { ((img.base() + slot) as *const usize).read_unaligned() };
        assert_eq!(bound, e.addr as usize, "{module}!{name}");
    }
}

/// The protection of `addr` in /proc/self/maps ("r-xp").
fn protection_of(addr: usize) -> String {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    for line in maps.lines() {
        let mut parts = line.split_whitespace();
        let range = parts.next().unwrap();
        let perms = parts.next().unwrap();
        let (a, b) = range.split_once('-').unwrap();
        let (a, b) = (
            usize::from_str_radix(a, 16).unwrap(),
            usize::from_str_radix(b, 16).unwrap(),
        );
        if (a..b).contains(&addr) {
            return perms.to_owned();
        }
    }
    panic!("{addr:#x} is not mapped")
}

#[test]
fn sections_are_protected_w_xor_x_and_text_writes_fault() {
    let _g = serial();
    let path = image();
    let bytes = std::fs::read(&path).unwrap();
    let img = pe::load(&path, &exports_with_stand_ins(&bytes)).unwrap();
    assert_eq!(protection_of(img.base()), "r--p", "headers");
    let mut seen_text = false;
    for s in img.sections() {
        let perms = protection_of(img.base() + s.rva);
        let expected = match s.name.as_str() {
            ".text" => "r-xp",
            ".data" => "rw-p",
            _ => "r--p",
        };
        assert_eq!(perms, expected, "section {}", s.name);
        seen_text |= s.name == ".text";
    }
    assert!(seen_text);
    let text = img.base()
        + img
            .sections()
            .iter()
            .find(|s| s.name == ".text")
            .unwrap()
            .rva;
    // A child writes to .text and must die of SIGSEGV.
    // SAFETY: the child only does a volatile write and _exit (both
    // async-signal-safe); the parent waits for it.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // SAFETY: deliberately writing to a read-only mapping (the test).
        unsafe { (text as *mut u8).write_volatile(0xCC) };
        // SAFETY: leaving the child without running the parent's atexit.
        unsafe { libc::_exit(0) };
    }
    let mut status = 0;
    // SAFETY: waiting for our own child.
    unsafe { libc::waitpid(pid, &raw mut status, 0) };
    assert!(
        libc::WIFSIGNALED(status),
        "the write to .text did not fault"
    );
    assert_eq!(libc::WTERMSIG(status), libc::SIGSEGV);
}

/// `DRIVER_OBJECT` is opaque to the driver shell; DriverEntry only passes
/// it to NDIS. 0x150 bytes cover the x64 structure.
#[repr(C, align(16))]
struct FakeDriverObject([u8; 0x150]);

/// `NTSTATUS DriverEntry(PDRIVER_OBJECT, PUNICODE_STRING)`.
type DriverEntry =
    unsafe extern "win64" fn(*mut FakeDriverObject, *mut ndis::UNICODE_STRING) -> i32;

#[test]
fn the_entry_point_is_driver_entry_and_undoes_its_work_on_failure() {
    let _g = serial();
    let path = image();
    let bytes = std::fs::read(&path).unwrap();
    let img = pe::load(&path, &exports_with_stand_ins(&bytes)).unwrap();
    let before = pool::outstanding_by_tag()
        .get("RsNk")
        .copied()
        .unwrap_or((0, 0));
    let mdls_before = mm::outstanding_mdls();
    let mut driver = FakeDriverObject([0; 0x150]);
    let mut path_units: Vec<u16> = "\\Registry\\Machine\\System\\rsndk"
        .encode_utf16()
        .collect();
    let mut registry = ndis::UNICODE_STRING {
        Length: (path_units.len() * 2) as u16,
        MaximumLength: (path_units.len() * 2) as u16,
        Buffer: path_units.as_mut_ptr(),
    };
    // SAFETY: the entry point is DriverEntry (NTSTATUS DriverEntry(PDRIVER_OBJECT, PUNICODE_STRING)).
    let entry = unsafe { std::mem::transmute::<*const (), DriverEntry>(img.entry()) };
    let calls = REGISTER_CALLS.load(Ordering::SeqCst);
    // SAFETY: called once, at PASSIVE_LEVEL, with a driver object and a
    // registry path that outlive the call, as the I/O manager does.
    let status = unsafe { entry(&raw mut driver, &raw mut registry) };
    assert_eq!(
        status as u32, 0xC000_0001,
        "DriverEntry returns the registration failure"
    );
    assert_eq!(REGISTER_CALLS.load(Ordering::SeqCst), calls + 1);
    let after = pool::outstanding_by_tag()
        .get("RsNk")
        .copied()
        .unwrap_or((0, 0));
    assert_eq!(after, before, "DriverEntry freed its pool on failure");
    assert_eq!(mm::outstanding_mdls(), mdls_before, "and its MDLs");
    assert!(
        crt::log_lines()
            .iter()
            .any(|l| l.contains("NdisMRegisterMiniportDriver failed")),
        "the failure was logged through DbgPrintEx: {:?}",
        crt::log_lines()
    );
    assert_eq!(kbottle::cpu::current(), 0, "back at PASSIVE_LEVEL");
    let me = kbottle::cpu::current_name();
    assert!(
        kbottle::verifier::bugchecks()
            .iter()
            .all(|b| b.processor != me)
    );
    // As Machine does before unmapping: the image's kernel objects die
    // with it (the loader does not reach into ke).
    ke::forget_objects_in(img.range());
}

// ---- Refusals of malformed variants ----

/// A malformed copy of the image in the temporary directory, removed when
/// dropped.
struct Variant(PathBuf);

impl std::ops::Deref for Variant {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Variant {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn variant(name: &str, edit: impl FnOnce(&mut Vec<u8>, &goblin::pe::PE<'_>)) -> Variant {
    let bytes = std::fs::read(image()).unwrap();
    let mut copy = bytes.clone();
    let pe_file = goblin::pe::PE::parse(&bytes).unwrap();
    edit(&mut copy, &pe_file);
    let variant =
        Variant(std::env::temp_dir().join(format!("kbottle-pe-{}-{name}", std::process::id())));
    std::fs::write(&variant.0, copy).unwrap();
    variant
}

fn nt_offset(b: &[u8]) -> usize {
    u32::from_le_bytes(b[0x3C..0x40].try_into().unwrap()) as usize
}

fn load_variant(path: &Path) -> LoadError {
    let bytes = std::fs::read(image()).unwrap();
    match pe::load(path, &exports_with_stand_ins(&bytes)) {
        Ok(_) => panic!("{} loaded", path.display()),
        Err(e) => e,
    }
}

#[test]
fn refuses_a_non_amd64_image() {
    let p = variant("i386.sys", |b, _| {
        let nt = nt_offset(b);
        b[nt + 4..nt + 6].copy_from_slice(&0x14C_u16.to_le_bytes());
    });
    assert!(matches!(load_variant(&p), LoadError::NotAmd64(0x14C)));
}

#[test]
fn refuses_a_non_native_subsystem() {
    let p = variant("console.sys", |b, _| {
        let opt = nt_offset(b) + 24;
        b[opt + 68..opt + 70].copy_from_slice(&3_u16.to_le_bytes());
    });
    assert!(matches!(load_variant(&p), LoadError::NotNative(3)));
}

#[test]
fn refuses_a_tls_directory() {
    let p = variant("tls.sys", |b, _| {
        let dir = nt_offset(b) + 24 + 112 + 8 * 9;
        b[dir..dir + 8].copy_from_slice(&[0, 0x10, 0, 0, 0x28, 0, 0, 0]);
    });
    assert!(matches!(load_variant(&p), LoadError::TlsDirectory));
}

#[test]
fn refuses_a_writable_executable_section() {
    let p = variant("wx.sys", |b, pe_file| {
        let nt = nt_offset(b);
        let opt_size = u16::from_le_bytes(b[nt + 20..nt + 22].try_into().unwrap()) as usize;
        let first = nt + 24 + opt_size;
        let i = pe_file
            .sections
            .iter()
            .position(|s| s.name().unwrap() == ".text")
            .unwrap();
        let ch = first + 40 * i + 36;
        let v = u32::from_le_bytes(b[ch..ch + 4].try_into().unwrap()) | 0x8000_0000;
        b[ch..ch + 4].copy_from_slice(&v.to_le_bytes());
    });
    assert!(matches!(load_variant(&p), LoadError::WritableExecutable(s) if s == ".text"));
}

#[test]
fn refuses_an_ordinal_import() {
    let p = variant("ordinal.sys", |b, pe_file| {
        // Turn the first lookup entry of the first descriptor into an ordinal.
        let nt = nt_offset(b);
        let dir = nt + 24 + 112 + 8;
        let rva = u32::from_le_bytes(b[dir..dir + 4].try_into().unwrap()) as usize;
        let desc = file_offset(pe_file, rva);
        let ilt = u32::from_le_bytes(b[desc..desc + 4].try_into().unwrap()) as usize;
        let iat = u32::from_le_bytes(b[desc + 16..desc + 20].try_into().unwrap()) as usize;
        let at = file_offset(pe_file, if ilt != 0 { ilt } else { iat });
        b[at..at + 8].copy_from_slice(&(0x8000_0000_0000_0007_u64).to_le_bytes());
    });
    assert!(matches!(load_variant(&p), LoadError::OrdinalImport(_, 7)));
}

#[test]
fn refuses_an_unknown_relocation_type() {
    let p = variant("highlow.sys", |b, pe_file| {
        let nt = nt_offset(b);
        let dir = nt + 24 + 112 + 8 * 5;
        let rva = u32::from_le_bytes(b[dir..dir + 4].try_into().unwrap()) as usize;
        let block = file_offset(pe_file, rva);
        let word = block + 8;
        let w = u16::from_le_bytes(b[word..word + 2].try_into().unwrap());
        b[word..word + 2].copy_from_slice(&((w & 0x0FFF) | (3 << 12)).to_le_bytes());
    });
    assert!(matches!(
        load_variant(&p),
        LoadError::UnknownRelocation { kind: 3, .. }
    ));
}

fn file_offset(pe_file: &goblin::pe::PE<'_>, rva: usize) -> usize {
    let s = pe_file
        .sections
        .iter()
        .find(|s| {
            (s.virtual_address as usize
                ..(s.virtual_address + s.virtual_size.max(s.size_of_raw_data)) as usize)
                .contains(&rva)
        })
        .unwrap();
    s.pointer_to_raw_data as usize + rva - s.virtual_address as usize
}

#[test]
fn a_bugcheck_names_the_driver_frames_on_the_stack() {
    let path = image();
    if !path.with_extension("pdb").is_file() {
        eprintln!("no PDB beside {}: frames are not named", path.display());
        return;
    }
    let bytes = std::fs::read(&path).unwrap();
    let img = pe::load(&path, &exports_with_stand_ins(&bytes)).unwrap();
    let entry = img.entry() as usize;
    kbottle::verifier::set_policy(kbottle::verifier::Policy::Park);
    REGISTER_BUGCHECKS.store(true, Ordering::SeqCst);
    std::thread::spawn(move || {
        kbottle::cpu::enter("frames");
        let driver = Box::leak(Box::new(FakeDriverObject([0; 0x150])));
        let registry = Box::leak(Box::new(ndis::UNICODE_STRING {
            Length: 0,
            MaximumLength: 0,
            Buffer: std::ptr::null_mut(),
        }));
        // SAFETY: the entry point is DriverEntry.
        let f = unsafe { std::mem::transmute::<usize, DriverEntry>(entry) };
        // SAFETY: as the I/O manager calls it; the stand-in never returns.
        unsafe { f(driver, registry) };
    });
    let end = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let b = loop {
        if let Some(b) = kbottle::verifier::bugchecks()
            .into_iter()
            .find(|b| b.processor == "frames")
        {
            break b;
        }
        assert!(std::time::Instant::now() < end, "no bugcheck");
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    assert_eq!(b.code, 0xDEAD_0001);
    let frames = b.driver_frames.join("\n");
    // NdisMRegisterMiniportDriver is called from miniport::register,
    // which the release code generation may inline into driver_entry.
    assert!(
        b.driver_frames[0].contains("rsndk::driver::"),
        "innermost frame is driver code:\n{frames}"
    );
    assert!(
        b.driver_frames.iter().any(|f| f.contains("driver_entry")),
        "the call came from DriverEntry:\n{frames}"
    );
    // The image stays mapped: a processor is parked inside it.
    std::mem::forget(img);
}
