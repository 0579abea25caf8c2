//! Intermediate driver services (PASSIVE_LEVEL): starting and stopping a
//! virtual miniport (`NdisIMInitializeDeviceInstanceEx`,
//! `NdisIMCancelInitializeDeviceInstance`,
//! `NdisIMDeInitializeDeviceInstance`), the interface stack
//! (`NdisIfAddIfStackEntry`, `NdisIfDeleteIfStackEntry`) and `NdisMSleep`.
//!
//! `NdisIMInitializeDeviceInstanceEx` records the request: the device
//! instance must be the one a NIC's `UpperBindings` names, the driver an
//! intermediate driver (`NDIS_INTERMEDIATE_DRIVER`) associated with its
//! protocol. NDIS then starts the device, calling `MiniportInitializeEx`
//! with `IMDeviceInstanceContext` from another thread after the bind
//! (see [`super::bindflow`]); until then the request can be cancelled.
//! `NdisIMDeInitializeDeviceInstance` pauses and halts the virtual
//! miniport before it returns (the stack above unbinds first).

// Each import's safety contract is its WDK documentation, and the caller is
// the driver; the per-function docs say what the bottle checks instead.
#![expect(
    clippy::missing_safety_doc,
    reason = "imports follow the WDK contract of the same name"
)]

use ndis::{
    NDIS_HANDLE, NDIS_INTERMEDIATE_DRIVER, NDIS_STATUS_ADAPTER_NOT_FOUND, NDIS_STATUS_FAILURE,
    NDIS_STATUS_INVALID_PARAMETER, NDIS_STATUS_NOT_SUPPORTED, NDIS_STATUS_SUCCESS, NDIS_STRING,
    NET_IFINDEX,
};
use ndkpi::{NDIS_STATUS, ULONG};

use super::checks::{
    NDIS_BUGCHECK_IFSTACK_LOOP, guarded, invalid_handle, ndis_bugcheck, require_passive,
};
use super::config::text_of;
use super::state::{self, AdapterState, ImDevice, ImState};

/// `NdisIMInitializeDeviceInstanceEx`.
pub unsafe extern "win64" fn NdisIMInitializeDeviceInstanceEx(
    DriverHandle: NDIS_HANDLE,
    DriverInstance: *mut NDIS_STRING,
    DeviceContext: NDIS_HANDLE,
) -> NDIS_STATUS {
    const API: &str = "NdisIMInitializeDeviceInstanceEx";
    guarded(API, || {
        require_passive(API, NdisIMInitializeDeviceInstanceEx as *const ());
        let driver = DriverHandle as usize;
        let Some((intermediate, associated)) = state::with(|n| {
            let d = n.driver.as_ref().filter(|d| d.handle.addr() == driver)?;
            let associated = n
                .protocol
                .as_ref()
                .is_some_and(|p| p.associated == Some(driver));
            Some((
                d.characteristics.Flags & NDIS_INTERMEDIATE_DRIVER != 0,
                associated,
            ))
        }) else {
            invalid_handle(API, driver, "miniport driver");
        };
        if !intermediate || !associated {
            return NDIS_STATUS_NOT_SUPPORTED;
        }
        // SAFETY: the driver's device instance string (its contract).
        let Some(name) = (unsafe { text_of(DriverInstance) }) else {
            return NDIS_STATUS_INVALID_PARAMETER;
        };
        state::with(|n| {
            let Some(nic) = n
                .nics
                .values()
                .find(|x| !x.removed && x.upper_binding.eq_ignore_ascii_case(&name))
                .map(|x| x.id)
            else {
                return NDIS_STATUS_ADAPTER_NOT_FOUND;
            };
            let live = n.im_devices.iter().any(|d| {
                d.name.eq_ignore_ascii_case(&name)
                    && matches!(
                        d.state,
                        ImState::Requested | ImState::Initializing | ImState::Up(_)
                    )
            });
            if live {
                return NDIS_STATUS_FAILURE;
            }
            n.im_devices.push(ImDevice {
                name,
                nic,
                context: DeviceContext as usize,
                state: ImState::Requested,
            });
            NDIS_STATUS_SUCCESS
        })
    })
}

/// `NdisIMCancelInitializeDeviceInstance`: success only while
/// `MiniportInitializeEx` has not started.
pub unsafe extern "win64" fn NdisIMCancelInitializeDeviceInstance(
    DriverHandle: NDIS_HANDLE,
    DeviceInstance: *mut NDIS_STRING,
) -> NDIS_STATUS {
    const API: &str = "NdisIMCancelInitializeDeviceInstance";
    guarded(API, || {
        require_passive(API, NdisIMCancelInitializeDeviceInstance as *const ());
        let driver = DriverHandle as usize;
        if !state::with(|n| n.is_driver(driver)) {
            invalid_handle(API, driver, "miniport driver");
        }
        // SAFETY: the driver's device instance string (its contract).
        let Some(name) = (unsafe { text_of(DeviceInstance) }) else {
            return NDIS_STATUS_INVALID_PARAMETER;
        };
        let cancelled = state::with(|n| {
            let d = n
                .im_devices
                .iter_mut()
                .find(|d| d.name.eq_ignore_ascii_case(&name) && d.state == ImState::Requested)?;
            d.state = ImState::Cancelled;
            Some(())
        });
        state::changed();
        if cancelled.is_some() {
            NDIS_STATUS_SUCCESS
        } else {
            NDIS_STATUS_FAILURE
        }
    })
}

/// `NdisIMDeInitializeDeviceInstance`: pauses and halts the virtual
/// miniport before returning.
pub unsafe extern "win64" fn NdisIMDeInitializeDeviceInstance(
    NdisMiniportHandle: NDIS_HANDLE,
) -> NDIS_STATUS {
    const API: &str = "NdisIMDeInitializeDeviceInstance";
    guarded(API, || {
        require_passive(API, NdisIMDeInitializeDeviceInstance as *const ());
        let handle = NdisMiniportHandle as usize;
        let Some((id, adapter_state, nic)) =
            state::with(|n| n.live_adapter(handle).map(|a| (a.id, a.state, a.nic)))
        else {
            invalid_handle(API, handle, "miniport adapter");
        };
        if nic.is_none()
            || matches!(
                adapter_state,
                AdapterState::Halting | AdapterState::Initializing
            )
        {
            return NDIS_STATUS_FAILURE;
        }
        super::miniport::halt(id);
        state::with(|n| {
            for d in &mut n.im_devices {
                if d.state == ImState::Up(id) {
                    d.state = ImState::Gone;
                }
            }
        });
        state::changed();
        NDIS_STATUS_SUCCESS
    })
}

/// Whether `lower` is already above `higher` in the stack (adding
/// `higher` over `lower` would close a loop).
fn reaches(entries: &[(u32, u32)], from: u32, to: u32) -> bool {
    let mut seen = vec![from];
    let mut at = 0;
    while let Some(&x) = seen.get(at) {
        if x == to {
            return true;
        }
        for &(hi, lo) in entries {
            if lo == x && !seen.contains(&hi) {
                seen.push(hi);
            }
        }
        at += 1;
    }
    false
}

/// `NdisIfAddIfStackEntry`: `HigherLayerIfIndex` over
/// `LowerLayerIfIndex`; both must be interfaces NDIS gave out
/// (`NDIS_STATUS_INVALID_PARAMETER` otherwise); a loop is 0x7C / 0x1B.
pub unsafe extern "win64" fn NdisIfAddIfStackEntry(
    HigherLayerIfIndex: NET_IFINDEX,
    LowerLayerIfIndex: NET_IFINDEX,
) -> NDIS_STATUS {
    const API: &str = "NdisIfAddIfStackEntry";
    guarded(API, || {
        require_passive(API, NdisIfAddIfStackEntry as *const ());
        let (hi, lo) = (HigherLayerIfIndex, LowerLayerIfIndex);
        state::with(|n| {
            let known = |i: u32| {
                n.adapters
                    .values()
                    .any(|a| a.state != AdapterState::Gone && a.if_index == i)
                    || n.nics.values().any(|x| !x.removed && x.if_index == i)
            };
            if hi == lo || !known(hi) || !known(lo) {
                return NDIS_STATUS_INVALID_PARAMETER;
            }
            if reaches(&n.if_stack, hi, lo) {
                ndis_bugcheck(
                    NDIS_BUGCHECK_IFSTACK_LOOP,
                    hi as usize,
                    lo as usize,
                    format!("{API}: interface {hi} over {lo} makes a loop in the interface stack"),
                );
            }
            if !n.if_stack.contains(&(hi, lo)) {
                n.if_stack.push((hi, lo));
            }
            NDIS_STATUS_SUCCESS
        })
    })
}

/// `NdisIfDeleteIfStackEntry`.
pub unsafe extern "win64" fn NdisIfDeleteIfStackEntry(
    HigherLayerIfIndex: NET_IFINDEX,
    LowerLayerIfIndex: NET_IFINDEX,
) {
    const API: &str = "NdisIfDeleteIfStackEntry";
    guarded(API, || {
        require_passive(API, NdisIfDeleteIfStackEntry as *const ());
        state::with(|n| {
            n.if_stack
                .retain(|e| *e != (HigherLayerIfIndex, LowerLayerIfIndex));
        });
    });
}

/// `NdisMSleep` (PASSIVE_LEVEL): sleeps the calling thread.
pub unsafe extern "win64" fn NdisMSleep(MicrosecondsToSleep: ULONG) {
    const API: &str = "NdisMSleep";
    guarded(API, || {
        require_passive(API, NdisMSleep as *const ());
        std::thread::sleep(std::time::Duration::from_micros(u64::from(
            MicrosecondsToSleep,
        )));
    });
}

#[cfg(test)]
mod tests {
    use super::reaches;

    #[test]
    fn a_loop_is_seen_through_several_layers() {
        let stack = [(10, 5), (20, 10)];
        // 5 over 20 would loop: 20 is above 10, which is above 5.
        assert!(reaches(&stack, 5, 20));
        assert!(!reaches(&stack, 20, 5));
        assert!(!reaches(&stack, 30, 5));
    }
}
