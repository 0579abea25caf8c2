//! Pool, MDLs, IRPs and the C runtime through their win64 entry points:
//! what they return when used right, leak accounting, low-resources
//! simulation, and the non-stopping free check.
#![cfg(all(target_os = "linux", target_arch = "x86_64"))]
#![allow(unsafe_code, non_snake_case)]

use std::ffi::c_char;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use kbottle::verifier::{self, FaultPlan};
use kbottle::{cpu, crt, io, ke, mm, pool};
use ndis::{IO_STACK_LOCATION, IRP, KTIMER, SL_INVOKE_ON_SUCCESS, STATUS_MORE_PROCESSING_REQUIRED};
use ndkpi::{
    MDL, MDL_MAPPED_TO_SYSTEM_VA, MDL_PAGES_LOCKED, MDL_SOURCE_IS_NONPAGED_POOL, mdl_pfn_array,
};

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

type AllocFn = unsafe extern "win64" fn(u64, usize, u32) -> *mut u8;
type FreeFn = unsafe extern "win64" fn(*mut u8, u32);

fn alloc(flags: u64, size: usize, tag: &[u8; 4]) -> *mut u8 {
    let f =
        // SAFETY: ExAllocatePool2's thunk has this signature.
        unsafe { std::mem::transmute::<*const (), AllocFn>(pool::ExAllocatePool2 as *const ()) };
    // SAFETY: valid flags and size.
    unsafe { f(flags, size, u32::from_le_bytes(*tag)) }
}

fn free(p: *mut u8, tag: &[u8; 4]) {
    let f =
        // SAFETY: ExFreePoolWithTag's thunk has this signature.
        unsafe { std::mem::transmute::<*const (), FreeFn>(pool::ExFreePoolWithTag as *const ()) };
    // SAFETY: `p` came from `alloc` with this tag.
    unsafe { f(p, u32::from_le_bytes(*tag)) };
}

const NP: u64 = pool::POOL_FLAG_NON_PAGED;

#[test]
fn pool_blocks_are_zeroed_aligned_and_tracked_by_tag() {
    let _s = serial();
    let a = alloc(NP, 40, b"TstA");
    let b = alloc(NP, 5000, b"TstA");
    let c = alloc(NP | pool::POOL_FLAG_UNINITIALIZED, 24, b"TstB");
    assert_eq!(a as usize % 16, 0);
    assert_eq!(b as usize % 4096, 0);
    assert!(
        // SAFETY: 40 fresh bytes.
        unsafe { std::slice::from_raw_parts(a, 40) }
            .iter()
            .all(|&x| x == 0)
    );
    assert!(
        // SAFETY: 24 fresh bytes.
        unsafe { std::slice::from_raw_parts(c, 24) }
            .iter()
            .all(|&x| x == pool::UNINITIALIZED_FILL)
    );
    let by_tag = pool::outstanding_by_tag();
    assert_eq!(by_tag.get("TstA"), Some(&(2, 5040)));
    assert_eq!(by_tag.get("TstB"), Some(&(1, 24)));
    let blocks = pool::outstanding();
    let block = blocks.iter().find(|x| x.addr == a as usize).unwrap();
    assert_eq!(block.tag, "TstA");
    assert_eq!(block.rva, None, "allocated by harness code, not an image");
    free(a, b"TstA");
    free(b, b"TstA");
    free(c, b"TstB");
    assert!(!pool::outstanding_by_tag().contains_key("TstA"));
    assert!(!pool::outstanding_by_tag().contains_key("TstB"));
}

#[test]
fn the_free_check_names_double_frees_wrong_tags_and_live_objects() {
    let _s = serial();
    let p = alloc(NP, 64, b"Chk1");
    assert_eq!(
        pool::check_free(p as usize, Some(u32::from_le_bytes(*b"Chk1"))),
        None
    );
    let wrong = pool::check_free(p as usize, Some(u32::from_le_bytes(*b"Nope"))).unwrap();
    assert_eq!((wrong.code, wrong.params[0]), (0xC2, 0x0A));
    // An armed timer inside the block.
    #[expect(clippy::cast_ptr_alignment, reason = "pool blocks are 16-byte aligned")]
    let timer = p.cast::<KTIMER>();
    // SAFETY: 64 bytes of pool hold a KTIMER (0x40).
    unsafe { ke::KeInitializeTimerEx(timer, 0) };
    // SAFETY: an initialised timer; no DPC.
    unsafe { ke::KeSetTimer(timer, -10_000_000, std::ptr::null_mut()) };
    let armed = pool::check_free(p as usize, None).unwrap();
    assert_eq!(
        (armed.code, armed.params[0], armed.params[1]),
        (0xC4, 0x15, p as u64)
    );
    // SAFETY: `timer` was initialised by KeInitializeTimerEx above; its
    // pool block `p` is freed only after this call.
    assert_eq!(unsafe { ke::KeCancelTimer(timer) }, 1);
    free(p, b"Chk1");
    let double = pool::check_free(p as usize, None).unwrap();
    assert_eq!((double.code, double.params[0]), (0xC4, 0x13));
    let foreign = pool::check_free(0x1234_5670, None).unwrap();
    assert_eq!((foreign.code, foreign.params[0]), (0xC4, 0x10));
    // The freed block reads poison.
    // SAFETY: the block is in quarantine, still allocated to the harness.
    assert_eq!(unsafe { p.read() }, pool::FREED_FILL);
}

#[test]
fn fail_nth_fails_exactly_that_allocation() {
    let _s = serial();
    verifier::set_fault_plan(FaultPlan::FailNth(2));
    let a = alloc(NP, 8, b"Flt1");
    let b = alloc(NP, 8, b"Flt1");
    // SAFETY: IoAllocateMdl computes from the (never read) address.
    let m = unsafe { mm::IoAllocateMdl(0x10_0000 as _, 4096, 0, 0, std::ptr::null_mut()) };
    assert!(!a.is_null());
    assert!(b.is_null(), "the second fault point fails");
    assert!(!m.is_null());
    assert_eq!(verifier::fault_points_seen(), 3);
    assert_eq!(verifier::faults_injected(), ["ExAllocatePool2"]);
    verifier::set_fault_plan(FaultPlan::Off);
    free(a, b"Flt1");
    // SAFETY: from IoAllocateMdl, never mapped.
    unsafe { mm::IoFreeMdl(m) };
}

#[test]
fn mdls_describe_build_map_and_unmap() {
    let _s = serial();
    let buf = alloc(NP, 3 * 4096, b"MdlT");
    let va = buf.wrapping_add(100);
    // SAFETY: a valid range of pool; no IRP.
    let mdl = unsafe { mm::IoAllocateMdl(va.cast(), 8000, 0, 0, std::ptr::null_mut()) };
    // SAFETY: a fresh MDL.
    let m = unsafe { &*mdl };
    assert_eq!((m.ByteOffset, m.ByteCount), (100, 8000));
    assert_eq!(m.StartVa as usize, buf as usize);
    assert_eq!(m.Size as usize, size_of::<MDL>() + 2 * 8);
    // SAFETY: nonpaged pool.
    unsafe { mm::MmBuildMdlForNonPagedPool(mdl) };
    // SAFETY: `mdl` is still the live MDL from IoAllocateMdl (freed below);
    // the build has returned and the earlier `m` is not used again.
    let m = unsafe { &*mdl };
    assert_ne!(m.MdlFlags & MDL_SOURCE_IS_NONPAGED_POOL, 0);
    assert_eq!(m.MappedSystemVa as usize, va as usize);
    // SAFETY: two PFNs after the header.
    let pfn0 = unsafe { mdl_pfn_array(mdl).read() };
    assert_eq!(pfn0 as u64, mm::phys_of(buf as usize) >> 12);
    // SAFETY: a resident address.
    let pa = unsafe { mm::MmGetPhysicalAddress(va.cast()) };
    assert_eq!(pa as u64, va as u64 + mm::PHYS_OFFSET);
    assert_eq!(mm::va_of(pa as u64), va as usize);
    // SAFETY: an MDL from IoAllocateMdl, not mapped.
    unsafe { mm::IoFreeMdl(mdl) };

    // A mapping MDL as the driver builds it: PFNs of locked pages.
    let map_mdl =
        // SAFETY: computes sizes only.
        unsafe { mm::IoAllocateMdl(0x10_0000 as _, 2 * 4096, 0, 0, std::ptr::null_mut()) };
    let pfns = mdl_pfn_array(map_mdl);
    for i in 0..2 {
        // SAFETY: room for two PFNs.
        unsafe {
            pfns.wrapping_add(i)
                .write(((mm::phys_of(buf as usize) >> 12) + i as u64) as usize);
        }
    }
    // SAFETY: our MDL.
    unsafe { (*map_mdl).MdlFlags |= MDL_PAGES_LOCKED };
    // SAFETY: a locked MDL, PASSIVE_LEVEL, no-execute.
    let mapped = unsafe {
        mm::MmMapLockedPagesSpecifyCache(map_mdl, 0, 1, std::ptr::null_mut(), 0, 16 | 0x4000_0000)
    };
    assert_eq!(mapped as usize, buf as usize, "the PFNs' virtual run");
    // SAFETY: our MDL.
    assert_ne!(unsafe { (*map_mdl).MdlFlags } & MDL_MAPPED_TO_SYSTEM_VA, 0);
    // SAFETY: mapped above.
    unsafe { mm::MmUnmapLockedPages(mapped, map_mdl) };
    // SAFETY: our MDL; unlock before freeing.
    unsafe { (*map_mdl).MdlFlags &= !MDL_PAGES_LOCKED };
    // SAFETY: not mapped, not locked.
    unsafe { mm::IoFreeMdl(map_mdl) };
    assert_eq!(mm::outstanding_mdls(), 0);
    free(buf, b"MdlT");

    let mut data = vec![7u8; 10_000];
    let owned = mm::OwnedMdl::describe(data.as_mut_ptr(), data.len());
    // SAFETY: a valid MDL describing `data`.
    assert_eq!(unsafe { mm::system_va(owned.as_ptr()) }, data.as_mut_ptr());
}

static COMPLETIONS: AtomicUsize = AtomicUsize::new(0);

unsafe extern "win64" fn on_complete(
    device: *mut ndis::DEVICE_OBJECT,
    irp: *mut IRP,
    context: *mut core::ffi::c_void,
) -> i32 {
    assert!(device.is_null(), "the top location has no device");
    assert_eq!(context as usize, 0x5EED);
    assert_eq!(cpu::current(), cpu::DISPATCH_LEVEL);
    // SAFETY: the IRP being completed.
    let r = unsafe { &*irp };
    assert_eq!(r.IoStatus.Status, 0);
    assert_eq!(r.IoStatus.Information, 42);
    assert_eq!(r.CurrentLocation, 2, "back at the driver's location");
    COMPLETIONS.fetch_add(1, Ordering::SeqCst);
    STATUS_MORE_PROCESSING_REQUIRED
}

#[test]
fn irps_have_the_x64_layout_and_complete_through_their_routine() {
    let _s = serial();
    // SAFETY: one stack location.
    let irp = unsafe { io::IoAllocateIrp(1, 0) };
    assert!(io::is_irp(irp as usize));
    // SAFETY: a fresh IRP.
    let r = unsafe { &mut *irp };
    assert_eq!((r.Type, r.StackCount, r.CurrentLocation), (6, 1, 2));
    assert_eq!(r.Size as usize, 0xD0 + 0x48);
    let next = r.next_stack_location();
    assert_eq!(next as usize, irp as usize + 0xD0);
    // IoSetCompletionRoutine on the next location, as the driver does.
    // SAFETY: the IRP's only location.
    let loc: &mut IO_STACK_LOCATION = unsafe { &mut *next };
    loc.CompletionRoutine = Some(on_complete);
    loc.Context = 0x5EED as _;
    loc.Control = SL_INVOKE_ON_SUCCESS;
    let before = COMPLETIONS.load(Ordering::SeqCst);
    // SAFETY: the next location was filled; completes at DISPATCH_LEVEL as
    // a network completion would.
    cpu::run_at_dispatch(|| unsafe { io::complete_as_lower_driver(irp, 0, 42) });
    assert_eq!(COMPLETIONS.load(Ordering::SeqCst), before + 1);
    // SAFETY: a live IRP.
    unsafe { io::IoReuseIrp(irp, 0x103) };
    // SAFETY: `irp` is still allocated (IoFreeIrp comes below) and
    // IoReuseIrp has returned; the earlier `r` is not used again.
    let r = unsafe { &*irp };
    assert_eq!((r.CurrentLocation, r.IoStatus.Status), (2, 0x103));
    // SAFETY: from IoAllocateIrp.
    unsafe { io::IoFreeIrp(irp) };
    assert!(!io::is_irp(irp as usize));
    assert_eq!(io::outstanding_irps(), 0);
}

#[test]
fn the_crt_routines_follow_the_c_contract() {
    let _s = serial();
    let src = *b"hello, bottle";
    let mut dst = [0u8; 13];
    // SAFETY: non-overlapping 13-byte buffers.
    let r = unsafe { crt::memcpy(dst.as_mut_ptr(), src.as_ptr(), 13) };
    assert_eq!(r, dst.as_mut_ptr());
    assert_eq!(&dst, &src);
    // SAFETY: an overlapping move inside one buffer.
    unsafe { crt::memmove(dst.as_mut_ptr().wrapping_add(2), dst.as_ptr(), 5) };
    assert_eq!(&dst[..7], b"hehello");
    // SAFETY: 4 writable bytes.
    unsafe { crt::memset(dst.as_mut_ptr(), 0x41, 4) };
    assert_eq!(&dst[..4], b"AAAA");
    // SAFETY: 3 readable bytes each.
    assert!(unsafe { crt::memcmp(b"abc".as_ptr(), b"abd".as_ptr(), 3) } < 0);
    assert_eq!(
        // SAFETY: two 3-byte literals, readable for the 3 bytes compared.
        unsafe { crt::memcmp(b"abc".as_ptr(), b"abc".as_ptr(), 3) },
        0
    );
    // SAFETY: a NUL-terminated string.
    assert_eq!(unsafe { crt::strlen(c"bottle".as_ptr().cast()) }, 6);
}

type DbgPrintExFn = unsafe extern "win64" fn(u32, u32, *const c_char, ...) -> u32;

#[test]
fn dbg_print_ex_formats_its_variadic_arguments() {
    let _s = serial();
    // SAFETY: DbgPrintEx's thunk is a win64 variadic function.
    let f = unsafe { std::mem::transmute::<*const (), DbgPrintExFn>(crt::DbgPrintEx as *const ()) };
    // SAFETY: arguments match the format.
    let status = unsafe {
        f(
            80,
            0,
            c"kbottle-test %s=%d %#x %08X %p %lld %c|%-4u|\n".as_ptr(),
            c"answer".as_ptr(),
            42i32,
            0x1fu32,
            0xbeefu32,
            0x1234usize,
            -7i64,
            i32::from(b'Z'),
            9u32,
        )
    };
    assert_eq!(status, 0);
    let lines = crt::log_lines();
    assert!(
        lines
            .iter()
            .any(|l| l == "kbottle-test answer=42 0x1f 0000BEEF 0000000000001234 -7 Z|9   |"),
        "{lines:?}"
    );
}

#[test]
fn chkstk_probes_a_large_frame_without_moving_rsp() {
    let _s = serial();
    let rsp_before: usize;
    let rsp_after: usize;
    let rax_after: usize;
    // SAFETY: calls __chkstk with RAX = 64 KiB (below the thread's stack
    // size) as a compiler prologue does, and reads RSP around it.
    unsafe {
        std::arch::asm!(
            "mov r12, rsp",
            "mov rax, 0x10000",
            "call {chk}",
            "mov r13, rsp",
            chk = sym crt::__chkstk,
            out("r12") rsp_before,
            out("r13") rsp_after,
            out("rax") rax_after,
            clobber_abi("C"),
        );
    }
    assert_eq!(rsp_before, rsp_after);
    assert_eq!(rax_after, 0x10000, "RAX preserved");
}
