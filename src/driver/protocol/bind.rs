//! Binding to a NIC and bringing V up over it, and the reverse: the MUX
//! sample's `PtBindAdapter`, `PtBootStrapVElans`/`PtCreateAndStartVElan`,
//! `PtUnbindAdapter` and `PtStopVElan`, for one V per binding.
//!
//! Lifetime of a pairing ([`Mux`]): boxed and opened on P here, handed to
//! NDIS as the protocol binding context and V's `IMDeviceInstanceContext`,
//! registered for the global PnP events; the unbind takes it out of the
//! registry, stops V (which halts V: V references the pairing only until
//! its `MiniportHaltEx` ends), closes P and frees it.

use hwq::TryArc;
use ndis::{
    NDIS_BIND_PARAMETERS, NDIS_BIND_PARAMETERS_REVISION_1, NDIS_OBJECT_TYPE_BIND_PARAMETERS,
    NDIS_SIZEOF_BIND_PARAMETERS_REVISION_1,
};
use ndkpi::{
    NDIS_STATUS, NDIS_STATUS_INVALID_PARAMETER, NDIS_STATUS_NOT_SUPPORTED, NDIS_STATUS_RESOURCES,
    NDIS_STATUS_SUCCESS,
};

use super::upper_bindings;
use crate::driver::binding::Binding;
use crate::driver::kit::kernel::wait_briefly;
use crate::driver::kit::ndis::{self as kit_ndis, BindContext, PROTOCOL_HANDLE};
use crate::driver::log::{log_error, log_info};
use crate::driver::mux::{
    INSTANCE_HALTING, INSTANCE_INIT_PENDING, INSTANCE_NONE, INSTANCE_UP, MAX_BINDINGS, Mux,
    RegistryGuard, Virtual,
};

/// `ProtocolBindAdapterEx` (`PASSIVE_LEVEL`): open P, copy what P is,
/// bring V up (`UpperBindings`, `NdisIMInitializeDeviceInstanceEx`). The
/// pairing, whose reference NDIS holds as the binding context until the
/// unbind.
pub fn bind(
    bind_context: BindContext,
    params: &NDIS_BIND_PARAMETERS,
) -> Result<TryArc<Mux>, NDIS_STATUS> {
    if params.Header.Type != NDIS_OBJECT_TYPE_BIND_PARAMETERS
        || params.Header.Revision < NDIS_BIND_PARAMETERS_REVISION_1
        || params.Header.Size < NDIS_SIZEOF_BIND_PARAMETERS_REVISION_1
    {
        return Err(NDIS_STATUS_INVALID_PARAMETER);
    }
    let Some(binding) = Binding::new(params) else {
        log_error!("rsndk: not binding to a NIC that is not Ethernet with a 6-byte MAC");
        return Err(NDIS_STATUS_NOT_SUPPORTED);
    };
    let Ok(binding) = TryArc::try_new_or_drop(binding) else {
        return Err(NDIS_STATUS_RESOURCES);
    };
    let Ok(mux) = TryArc::try_new_or_drop(Mux::new(binding)) else {
        return Err(NDIS_STATUS_RESOURCES);
    };
    let Some(protocol) = PROTOCOL_HANDLE.load() else {
        return Err(ndkpi::NDIS_STATUS_FAILURE);
    };
    let status = mux
        .binding
        .open(protocol, &*mux, bind_context, params.AdapterName);
    if status != NDIS_STATUS_SUCCESS {
        log_error!("rsndk: NdisOpenAdapterEx failed: {:#010x}", status as u32);
        return Err(status);
    }
    let mut guard = RegistryGuard::lock();
    let status = if guard.add(&mux) {
        start_virtual(&mux, None)
    } else {
        log_error!("rsndk: more than {MAX_BINDINGS} bindings");
        NDIS_STATUS_RESOURCES
    };
    if status != NDIS_STATUS_SUCCESS {
        guard.remove(&mux);
        drop(guard);
        mux.binding.close();
        return Err(status);
    }
    drop(guard);
    log_info!("rsndk: bound to a NIC, MTU {}", mux.binding.mtu());
    Ok(mux)
}

/// Brings V up over `mux` unless it is up, coming up or being stopped
/// (`PASSIVE_LEVEL`, registry lock held). With `instance`, only if V's
/// device name is that one (`NetEventIMReEnableDevice`).
fn start_virtual(mux: &Mux, instance: Option<&[u16]>) -> NDIS_STATUS {
    let virt = &mux.virt;
    if virt.instance() != INSTANCE_NONE
        || virt
            .deinitializing
            .load(core::sync::atomic::Ordering::SeqCst)
    {
        return NDIS_STATUS_SUCCESS;
    }
    let Some(binding) = mux.binding.handle() else {
        return ndkpi::NDIS_STATUS_FAILURE;
    };
    let name = match upper_bindings::read(binding) {
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
    // The context is the pairing, which outlives V (the unbind waits for
    // V's halt); the name lives in the pairing (kept for the cancel).
    let status = virt.with_name(|name| kit_ndis::initialize_device_instance(name, mux));
    if let Err(status) = status {
        log_error!(
            "rsndk: NdisIMInitializeDeviceInstanceEx failed: {:#010x}",
            status as u32
        );
        virt.move_instance(INSTANCE_INIT_PENDING, INSTANCE_NONE);
        return status;
    }
    NDIS_STATUS_SUCCESS
}

/// Case-insensitive comparison of device names (ASCII letters; NDIS
/// compares them with `NdisEqualString(.., TRUE)`).
fn same_name(name: &[u16], other: &[u16]) -> bool {
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
pub fn bootstrap_all(instance: Option<&[u16]>) {
    let guard = RegistryGuard::lock();
    guard.for_each(|mux| {
        let status = start_virtual(mux, instance);
        if status != NDIS_STATUS_SUCCESS {
            log_error!("rsndk: bringing V up failed: {:#010x}", status as u32);
        }
    });
}

/// `ProtocolUnbindAdapterEx` (`PASSIVE_LEVEL`; NDIS paused the binding):
/// stop V and close P; `disable_ndk` disables NDK on V and waits for its
/// NDK adapters while V is up. The caller lets go of NDIS's reference to
/// the pairing afterwards (it is freed with the last one).
pub fn unbind(mux: &Mux, disable_ndk: fn(&Virtual)) {
    RegistryGuard::lock().remove(mux);
    stop_virtual(mux, disable_ndk);
    mux.binding.close();
    log_info!("rsndk: unbound from a NIC");
}

/// The sample's `PtStopVElan` plus the NDK rule (`PASSIVE_LEVEL`): NDK is
/// disabled and every NDK adapter closed before V is deinitialised; an
/// initialisation that has not run is cancelled or waited for; returns
/// once V is halted (or was never initialised).
fn stop_virtual(mux: &Mux, disable_ndk: fn(&Virtual)) {
    let virt = &mux.virt;
    virt.deinitializing
        .store(true, core::sync::atomic::Ordering::SeqCst);
    if virt.instance() == INSTANCE_INIT_PENDING {
        // The driver handle and the name the initialisation was asked
        // with.
        let cancelled = virt.with_name(kit_ndis::cancel_device_instance);
        if cancelled.is_ok() && virt.move_instance(INSTANCE_INIT_PENDING, INSTANCE_NONE) {
            return;
        }
        // MiniportInitializeEx will run (or runs now): wait for it.
        while !virt.init_done.load(core::sync::atomic::Ordering::SeqCst) {
            wait_briefly();
        }
    }
    if virt.instance() == INSTANCE_UP {
        disable_ndk(virt);
        // V's miniport handle, initialised and not deinitialised yet (the
        // instance is up).
        if let Some(miniport) = virt.miniport()
            && let Err(status) = kit_ndis::deinitialize_device_instance(miniport)
        {
            log_error!(
                "rsndk: NdisIMDeInitializeDeviceInstance failed: {:#010x}",
                status as u32
            );
        }
    }
    // Halt (ours or one NDIS started) ends with the instance back at NONE.
    while matches!(virt.instance(), INSTANCE_UP | INSTANCE_HALTING) {
        wait_briefly();
    }
}
