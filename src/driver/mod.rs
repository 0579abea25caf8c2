//! The Windows kernel shell of rsndk: `DriverEntry`, the kernel allocator and
//! the panic handler (windows-drivers-rs, WDM model).
//!
//! Compiled only for `all(feature = "wdk", target_os = "windows")`: the kernel
//! driver `rsndk.sys` that `cargo make` builds on a Windows host with the WDK
//! (see `docs/windows.md`). Nothing here is built or tested on Linux; the NDK
//! provider itself lives in the portable crates.
//!
//! Status: an NDK provider is an NDIS 6.30+ miniport, registered from
//! `DriverEntry` with `NdisMRegisterMiniportDriver` (MiniportSetOptions then
//! registers the NDK open/close handlers). That registration is issue #7 and is
//! not written yet. Until it is, `DriverEntry` says so on the debugger and
//! fails the load with `STATUS_NOT_SUPPORTED` instead of pretending to be a
//! network adapter.

// The panic handler. wdk-panic 0.4.1 spins forever (`loop {}`) on a panic,
// which hangs a processor instead of producing a crash dump. A later issue
// replaces it with our own `#[panic_handler]` that bugchecks (KeBugCheckEx).
// Excluded under `cfg(test)`, where the test harness brings std's handler.
#[cfg(not(test))]
extern crate wdk_panic;

use ndkpi::STATUS_NOT_SUPPORTED;
#[cfg(not(test))]
use wdk_alloc::WdkAllocator;
use wdk_sys::{NTSTATUS, PCUNICODE_STRING, PDRIVER_OBJECT};

/// The kernel allocator behind `alloc`: non-paged pool (`ExAllocatePool2`,
/// tag `'rust'`), usable at IRQL <= DISPATCH_LEVEL. It ignores `Layout`
/// alignment beyond the pool's 16 bytes, so page-aligned memory (rings) must
/// be allocated explicitly, never through `alloc`.
#[cfg(not(test))]
#[global_allocator]
static GLOBAL_ALLOCATOR: WdkAllocator = WdkAllocator;

// The hand-written ABI mirror (ndkpi) must agree with the WDK's headers: the
// first Windows build checks it for the one status this shell returns.
const _: () = assert!(STATUS_NOT_SUPPORTED == wdk_sys::STATUS_NOT_SUPPORTED);

/// The driver's entry point, called once by the I/O manager at PASSIVE_LEVEL
/// when `rsndk.sys` is loaded.
///
/// Until the NDIS miniport registration exists (issue #7) it refuses to load:
/// it prints why and returns `STATUS_NOT_SUPPORTED`. A failed `DriverEntry`
/// unloads the image without calling `DriverUnload`, so there is nothing to
/// undo and no unload routine to set.
///
/// # Safety
///
/// Only the kernel calls this, exactly once per load, with `_driver` pointing
/// to the driver object being initialised and `_registry_path` to the driver's
/// service key; both stay valid for the duration of the call. It must never be
/// called from Rust.
#[unsafe(
    // SAFETY: `DriverEntry` is the symbol named by the `/ENTRY:DriverEntry`
    // linker argument that wdk-build emits for WDM drivers. No other item in
    // this image exports that name, so the export cannot clash.
    export_name = "DriverEntry"
)]
pub unsafe extern "system" fn driver_entry(
    _driver: PDRIVER_OBJECT,
    _registry_path: PCUNICODE_STRING,
) -> NTSTATUS {
    wdk::println!("rsndk: NDIS miniport registration is not implemented yet; refusing to load");
    STATUS_NOT_SUPPORTED
}
