//! Binding to a NIC and bringing V up over it, and the reverse: the MUX
//! sample's `PtBindAdapter`, `PtBootStrapVElans`/`PtCreateAndStartVElan`,
//! `PtUnbindAdapter` and `PtStopVElan`, for one V per binding.
//!
//! Lifetime of a pairing ([`Mux`]): boxed and opened on P here, handed to
//! NDIS as the protocol binding context and V's `IMDeviceInstanceContext`,
//! registered for the global PnP events; the unbind takes it out of the
//! registry, stops V (which halts V: V references the pairing only until
//! its `MiniportHaltEx` ends), closes P and frees it.

use alloc::boxed::Box;
use core::ptr::NonNull;

use ndis::{
    NDIS_BIND_PARAMETERS, NDIS_BIND_PARAMETERS_REVISION_1, NDIS_HANDLE,
    NDIS_OBJECT_TYPE_BIND_PARAMETERS, NDIS_SIZEOF_BIND_PARAMETERS_REVISION_1, NDIS_STRING,
    NdisIMCancelInitializeDeviceInstance, NdisIMDeInitializeDeviceInstance,
    NdisIMInitializeDeviceInstanceEx,
};
use ndkpi::{
    NDIS_STATUS, NDIS_STATUS_INVALID_PARAMETER, NDIS_STATUS_NOT_SUPPORTED, NDIS_STATUS_RESOURCES,
    NDIS_STATUS_SUCCESS,
};

use super::upper_bindings;
use crate::driver::adapter::Adapter;
use crate::driver::alloc::try_box;
use crate::driver::binding::Binding;
use crate::driver::log::{log_error, log_info};
use crate::driver::mux::{
    INSTANCE_HALTING, INSTANCE_INIT_PENDING, INSTANCE_NONE, INSTANCE_UP, Mux, RegistryGuard,
};

/// `ProtocolBindAdapterEx` (`PASSIVE_LEVEL`): open P, copy what P is,
/// bring V up (`UpperBindings`, `NdisIMInitializeDeviceInstanceEx`).
pub fn bind(bind_context: NDIS_HANDLE, params: &NDIS_BIND_PARAMETERS) -> NDIS_STATUS {
    if params.Header.Type != NDIS_OBJECT_TYPE_BIND_PARAMETERS
        || params.Header.Revision < NDIS_BIND_PARAMETERS_REVISION_1
        || params.Header.Size < NDIS_SIZEOF_BIND_PARAMETERS_REVISION_1
    {
        return NDIS_STATUS_INVALID_PARAMETER;
    }
    let Some(binding) = Binding::new(params) else {
        log_error!("rsndk: not binding to a NIC that is not Ethernet with a 6-byte MAC");
        return NDIS_STATUS_NOT_SUPPORTED;
    };
    let Ok(mux) = try_box(Mux::new(binding)) else {
        return NDIS_STATUS_RESOURCES;
    };
    let status = mux.binding.open(
        super::handle(),
        mux.as_context(),
        bind_context,
        params.AdapterName,
    );
    if status != NDIS_STATUS_SUCCESS {
        log_error!("rsndk: NdisOpenAdapterEx failed: {:#010x}", status as u32);
        return status;
    }
    let guard = RegistryGuard::lock();
    let status = if guard.add(&mux) {
        start_virtual(&mux, None)
    } else {
        log_error!(
            "rsndk: more than {} bindings",
            crate::driver::mux::MAX_BINDINGS
        );
        NDIS_STATUS_RESOURCES
    };
    if status != NDIS_STATUS_SUCCESS {
        guard.remove(&mux);
        drop(guard);
        mux.binding.close();
        return status;
    }
    drop(guard);
    log_info!("rsndk: bound to a NIC, MTU {}", mux.binding.mtu());
    // NDIS holds the context until ProtocolUnbindAdapterEx (`unbind`).
    let _ = Box::into_raw(mux);
    NDIS_STATUS_SUCCESS
}

/// Brings V up over `mux` unless it is up, coming up or being stopped
/// (`PASSIVE_LEVEL`, registry lock held). With `instance`, only if V's
/// device name is that one (`NetEventIMReEnableDevice`).
fn start_virtual(mux: &Mux, instance: Option<&NDIS_STRING>) -> NDIS_STATUS {
    let virt = &mux.virt;
    if virt.instance() != INSTANCE_NONE
        || virt
            .deinitializing
            .load(core::sync::atomic::Ordering::SeqCst)
    {
        return NDIS_STATUS_SUCCESS;
    }
    let name = match upper_bindings::read(mux.binding.handle()) {
        Ok(Some(name)) => name,
        // The value names nothing: no V over this NIC (the sample's bind
        // succeeds without a virtual miniport).
        Ok(None) => return NDIS_STATUS_SUCCESS,
        Err(status) => {
            log_error!(
                "rsndk: no UpperBindings for the binding: {:#010x}",
                status as u32
            );
            return status;
        }
    };
    if let Some(wanted) = instance
        && !same_name(&name, wanted)
    {
        return NDIS_STATUS_SUCCESS;
    }
    virt.set_name(name);
    virt.init_done
        .store(false, core::sync::atomic::Ordering::SeqCst);
    virt.set_instance(INSTANCE_INIT_PENDING);
    let mut name = virt.name();
    // SAFETY: PASSIVE_LEVEL; the miniport driver handle of DriverEntry;
    // the name lives in the pairing (kept for the cancel); the context is
    // the pairing, which outlives V (the unbind waits for V's halt).
    let status = unsafe {
        NdisIMInitializeDeviceInstanceEx(
            crate::driver::driver_handle(),
            &raw mut name,
            mux.as_context(),
        )
    };
    if status != NDIS_STATUS_SUCCESS {
        log_error!(
            "rsndk: NdisIMInitializeDeviceInstanceEx failed: {:#010x}",
            status as u32
        );
        virt.move_instance(INSTANCE_INIT_PENDING, INSTANCE_NONE);
    }
    status
}

/// Case-insensitive comparison of device names (ASCII letters; NDIS
/// compares them with `NdisEqualString(.., TRUE)`).
fn same_name(name: &[u16], other: &NDIS_STRING) -> bool {
    if other.Buffer.is_null() {
        return false;
    }
    // SAFETY: NDIS's string of `Length` bytes, valid for the PnP event.
    let other = unsafe { core::slice::from_raw_parts(other.Buffer, usize::from(other.Length) / 2) };
    let upper = |c: u16| {
        if (u16::from(b'a')..=u16::from(b'z')).contains(&c) {
            c - 32
        } else {
            c
        }
    };
    name.len() == other.len() && name.iter().zip(other).all(|(&a, &b)| upper(a) == upper(b))
}

/// `NetEventReconfigure` / `NetEventIMReEnableDevice` (`PASSIVE_LEVEL`):
/// bring V up over every binding that has none (or only the named one).
pub fn bootstrap_all(instance: Option<&NDIS_STRING>) {
    let guard = RegistryGuard::lock();
    guard.for_each(|mux| {
        let status = start_virtual(mux, instance);
        if status != NDIS_STATUS_SUCCESS {
            log_error!("rsndk: bringing V up failed: {:#010x}", status as u32);
        }
    });
}

/// `ProtocolUnbindAdapterEx` (`PASSIVE_LEVEL`; NDIS paused the binding):
/// stop V, close P, free the pairing.
///
/// # Safety
/// `mux` is a pairing `bind` leaked and NDIS's last call for it: no other
/// protocol handler runs for the binding meanwhile or afterwards.
pub unsafe fn unbind(mux: NonNull<Mux>) -> NDIS_STATUS {
    {
        // SAFETY: live until freed below (this function's contract).
        let mux = unsafe { mux.as_ref() };
        RegistryGuard::lock().remove(mux);
        stop_virtual(mux);
        mux.binding.close();
    }
    // SAFETY: `bind`'s box, handed back once; V is halted and P closed,
    // so nothing refers to it any more.
    drop(unsafe { Box::from_raw(mux.as_ptr()) });
    log_info!("rsndk: unbound from a NIC");
    NDIS_STATUS_SUCCESS
}

/// The sample's `PtStopVElan` plus the NDK rule (`PASSIVE_LEVEL`): NDK is
/// disabled and every NDK adapter closed before V is deinitialised; an
/// initialisation that has not run is cancelled or waited for; returns
/// once V is halted (or was never initialised).
fn stop_virtual(mux: &Mux) {
    let virt = &mux.virt;
    virt.deinitializing
        .store(true, core::sync::atomic::Ordering::SeqCst);
    if virt.instance() == INSTANCE_INIT_PENDING {
        let mut name = virt.name();
        // SAFETY: PASSIVE_LEVEL; the driver handle and the name the
        // initialisation was asked with.
        let status = unsafe {
            NdisIMCancelInitializeDeviceInstance(crate::driver::driver_handle(), &raw mut name)
        };
        if status == NDIS_STATUS_SUCCESS && virt.move_instance(INSTANCE_INIT_PENDING, INSTANCE_NONE)
        {
            return;
        }
        // MiniportInitializeEx will run (or runs now): wait for it.
        while !virt.init_done.load(core::sync::atomic::Ordering::SeqCst) {
            crate::driver::platform_wait();
        }
    }
    if virt.instance() == INSTANCE_UP {
        let context = virt.adapter();
        if !context.is_null() {
            // SAFETY: V's adapter context, live while the instance is up
            // and not halting; only this unbind deinitialises it, below.
            unsafe { Adapter::from_context(context) }.disable_ndk_and_wait();
        }
        // SAFETY: PASSIVE_LEVEL; V's miniport handle, initialised and not
        // deinitialised yet (the instance is up).
        let status = unsafe { NdisIMDeInitializeDeviceInstance(virt.miniport()) };
        if status != NDIS_STATUS_SUCCESS {
            log_error!(
                "rsndk: NdisIMDeInitializeDeviceInstance failed: {:#010x}",
                status as u32
            );
        }
    }
    // Halt (ours or one NDIS started) ends with the instance back at NONE.
    while matches!(virt.instance(), INSTANCE_UP | INSTANCE_HALTING) {
        crate::driver::platform_wait();
    }
}
