//! The Windows kernel shell of rsndk: an NDIS 6.50 MUX intermediate
//! driver, 1:1 over a NIC (docs/windows.md section 1b). Its protocol edge
//! (`rsndkp`) binds to the NIC (P); over each binding it brings up one
//! virtual Ethernet miniport (V) with P's MAC address, which is the IP
//! interface of that link and an NDK provider whose RNIC is the software
//! RoCEv2 engine of `softrnic`. Frames pass through V <-> P both ways; the
//! RNIC sends and receives RoCEv2 as Ethernet frames through its L2 port
//! on the binding.
//!
//! Compiled for every Windows target, with or without the `wdk` feature:
//! it uses only the hand declarations of crate `ndis` (NDIS, ntoskrnl,
//! NETIO's IP Helper), so `cargo check --target x86_64-pc-windows-msvc` type-checks all
//! of it on Linux. The `wdk` feature adds only the final link (wdk-sys's
//! link glue, wdk-build's linker arguments) and [`wdk_check`], which
//! compares the hand declarations with wdk-sys's bindgen output.
//!
//! Map: [`miniport`] (V's registration and handlers), [`adapter`] (V's
//! state and attributes), [`protocol`] (the protocol edge: registration,
//! handlers, bind/unbind, forwarded OIDs), [`binding`] (the open on P),
//! [`mux`] (a binding paired with its V), [`passthrough`] (the data path
//! V <-> P), [`oid`], [`ndk`] (NDK registration, open/close,
//! counters), [`ndk_tables`] (the connection and endpoint OIDs),
//! [`config`] (registry keywords), [`device`] (the RNIC, its engine and
//! L2 port), [`engine`] (DPC, timer and PASSIVE_LEVEL continuation), [`l2`] (the
//! RNIC's Ethernet port on the binding), [`addresses`] (V's IP addresses
//! from the IP stack), [`platform`] (the provider's `Platform`), [`dma`]
//! (device access to memory), [`alloc`] (global allocator, fallible and
//! aligned allocation), [`panic`] (bugchecking panic handler), [`irql`],
//! [`clock`], [`log`].

pub mod adapter;
pub mod addresses;
pub mod alloc;
pub mod binding;
pub mod clock;
pub mod config;
pub mod device;
pub mod dma;
pub mod dma_map;
pub mod engine;
mod glue;
pub mod irql;
pub mod l2;
pub mod log;
pub mod miniport;
pub mod mux;
pub mod ndk;
pub mod ndk_tables;
pub mod oid;
pub mod panic;
pub mod passthrough;
pub mod platform;
pub mod protocol;
#[cfg(feature = "wdk")]
mod wdk_check;

use core::ptr::{self, NonNull};
use core::sync::atomic::{AtomicPtr, Ordering};

use ndis::{DRIVER_OBJECT, NDIS_HANDLE, UNICODE_STRING};
use ndkpi::{NTSTATUS, STATUS_INSUFFICIENT_RESOURCES, STATUS_SUCCESS};
use provider::platform::Platform;

use self::alloc::try_box;
use self::dma::KernelDma;
use self::log::{log_error, log_info};
use self::platform::{KernelPlatform, KernelSpinLocks};

/// The provider's platform, from `DriverEntry` until `MiniportDriverUnload`.
static PLATFORM: AtomicPtr<KernelPlatform> = AtomicPtr::new(ptr::null_mut());
/// The NDIS driver handle, for deregistration.
static DRIVER_HANDLE: AtomicPtr<core::ffi::c_void> = AtomicPtr::new(ptr::null_mut());

/// The platform every device context uses.
///
/// # Panics
/// Before `DriverEntry` set it up (never: NDIS calls no handler before).
pub fn platform() -> &'static KernelPlatform {
    let p = NonNull::new(PLATFORM.load(Ordering::Acquire)).expect("rsndk platform not initialised");
    // SAFETY: set once in DriverEntry before any handler can run and freed
    // in MiniportDriverUnload after every adapter (hence every provider
    // object using it) is gone: it outlives all its users, which is what
    // the provider's `'static` asks for.
    unsafe { p.as_ref() }
}

/// Waits a moment at PASSIVE_LEVEL (teardown loops).
pub fn platform_wait() {
    platform().wait_briefly();
}

/// The miniport driver handle (`NdisIMInitializeDeviceInstanceEx` and its
/// cancel name it); null outside `DriverEntry`..unload.
pub fn driver_handle() -> NDIS_HANDLE {
    DRIVER_HANDLE.load(Ordering::Acquire)
}

fn take_driver_handle() -> Option<NDIS_HANDLE> {
    let h = DRIVER_HANDLE.swap(ptr::null_mut(), Ordering::AcqRel);
    (!h.is_null()).then_some(h)
}

fn free_platform() {
    if let Some(p) = NonNull::new(PLATFORM.swap(ptr::null_mut(), Ordering::AcqRel)) {
        // SAFETY: the live platform, read before it is freed.
        let (blocks, bytes) = unsafe { p.as_ref() }.pool_outstanding();
        if blocks != 0 {
            log_error!(
                "rsndk: provider pool outstanding at unload: {blocks} blocks, {bytes} bytes"
            );
        }
        // SAFETY: allocated by `try_box` in DriverEntry; no user is left.
        drop(unsafe { ::alloc::boxed::Box::from_raw(p.as_ptr()) });
    }
}

/// The driver's entry point, called once by the I/O manager at
/// PASSIVE_LEVEL when `rsndk.sys` is loaded: builds the provider's
/// platform, registers the miniport driver (`NDIS_INTERMEDIATE_DRIVER`),
/// the protocol driver, and associates the two (`NdisIMAssociateMiniport`),
/// as the MUX sample's `DriverEntry`. A failed `DriverEntry` unloads the
/// image without calling any unload routine, so it undoes its own work.
///
/// # Safety
/// Only the kernel calls this, once per load, with `driver` pointing to
/// the driver object being initialised and `registry_path` to the driver's
/// service key; both stay valid for the call. Never called from Rust.
#[unsafe(
    // SAFETY: `DriverEntry` is the symbol named by the `/ENTRY:DriverEntry`
    // linker argument that wdk-build emits for WDM drivers. No other item in
    // this image exports that name, so the export cannot clash.
    export_name = "DriverEntry"
)]
pub unsafe extern "win64" fn driver_entry(
    driver: *mut DRIVER_OBJECT,
    registry_path: *mut UNICODE_STRING,
) -> NTSTATUS {
    // The device's locks are kernel spin locks from its first lock on
    // (`false` only for a second DriverEntry of this image, when they
    // already are).
    softrnic::sync::use_lock_ops(&KernelSpinLocks);
    let Some(dma) = KernelDma::new() else {
        return STATUS_INSUFFICIENT_RESOURCES;
    };
    let Ok(platform) = try_box(KernelPlatform::new(dma)) else {
        return STATUS_INSUFFICIENT_RESOURCES;
    };
    PLATFORM.store(::alloc::boxed::Box::into_raw(platform), Ordering::Release);
    // SAFETY: DriverEntry's own arguments.
    let miniport_handle = match unsafe { miniport::register(driver, registry_path) } {
        Ok(handle) => handle,
        Err(status) => {
            log_error!(
                "rsndk: NdisMRegisterMiniportDriver failed: {:#010x}",
                status as u32
            );
            free_platform();
            return status;
        }
    };
    DRIVER_HANDLE.store(miniport_handle, Ordering::Release);
    let protocol_handle = match protocol::register() {
        Ok(handle) => handle,
        Err(status) => {
            log_error!(
                "rsndk: NdisRegisterProtocolDriver failed: {:#010x}",
                status as u32
            );
            if let Some(handle) = take_driver_handle() {
                // SAFETY: PASSIVE_LEVEL; registered above, no adapter yet
                // (V only comes up through the protocol edge).
                unsafe { ndis::NdisMDeregisterMiniportDriver(handle) };
            }
            free_platform();
            return status;
        }
    };
    // SAFETY: PASSIVE_LEVEL; both handles of this DriverEntry.
    unsafe { ndis::NdisIMAssociateMiniport(miniport_handle, protocol_handle) };
    log_info!("rsndk: intermediate driver registered (miniport and protocol rsndkp)");
    STATUS_SUCCESS
}
