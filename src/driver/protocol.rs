//! The protocol edge of the MUX: rsndk's NDIS protocol driver (`rsndkp`,
//! the service name of the protocol INF), registered in `DriverEntry` and
//! tied to the miniport driver with `NdisIMAssociateMiniport`
//! ([`super::entry`], whose handlers turn NDIS's raw pointers into
//! checked references once), and where each handler hands over to the
//! file that does the work:
//!
//! * bind / unbind and V's IM device instance: [`bind`] (the MUX
//!   sample's `PtBindAdapter`, `PtBootStrapVElans`, `PtUnbindAdapter`,
//!   `PtStopVElan`);
//! * the open, pause/restart, requests and close on P:
//!   [`super::binding`];
//! * status: [`super::mux`] (`NDIS_STATUS_LINK_STATE` passes up on V and
//!   to the RNIC's L2 port);
//! * the data path: [`super::passthrough`];
//! * V's OID requests forwarded to P complete through [`oid_forward`].
//!
//! Call sequences (all at PASSIVE_LEVEL unless noted):
//!
//! ```text
//! bind:    ProtocolBindAdapterEx -> NdisOpenAdapterEx [-> OpenAdapterCompleteEx]
//!          -> UpperBindings -> NdisIMInitializeDeviceInstanceEx
//!          -> (NDIS, any thread) V's MiniportInitializeEx (IMDeviceInstanceContext)
//!          -> NetEventRestart (binding runs)
//! unbind:  (NDIS pauses the binding: NetEventPause) ProtocolUnbindAdapterEx
//!          -> NDK disabled, NDK adapters closed -> NdisIMCancelInitializeDeviceInstance
//!             or NdisIMDeInitializeDeviceInstance -> V's pause + MiniportHaltEx
//!          -> filter 0, multicast list empty, requests waited out
//!          -> NdisCloseAdapterEx [-> CloseAdapterCompleteEx]
//! data:    (<= DISPATCH) V send -> NdisSendNetBufferLists -> SendNetBufferListsComplete
//!          -> NdisMSendNetBufferListsComplete;  ReceiveNetBufferLists -> L2 port
//!          or NdisMIndicateReceiveNetBufferLists -> V's ReturnNetBufferLists
//!          -> NdisReturnNetBufferLists
//! ```

pub mod bind;
pub mod oid_forward;
pub mod upper_bindings;

use ndkpi::{NDIS_STATUS, NDIS_STATUS_INVALID_PARAMETER, NDIS_STATUS_SUCCESS};

use super::mux::Mux;

/// A network PnP event (`ProtocolNetPnPEvent`), decoded.
#[derive(Clone, Copy, Debug)]
pub enum PnpEvent<'a> {
    /// `NetEventReconfigure`.
    Reconfigure,
    /// `NetEventIMReEnableDevice` with the instance name (`None`: the
    /// name's buffer is null).
    ReEnable(Option<&'a [u16]>),
    /// `NetEventPause`.
    Pause,
    /// `NetEventRestart`.
    Restart,
    /// `NetEventSetPower` with the device power state (`None`: no valid
    /// buffer).
    SetPower(Option<i32>),
    /// Anything else (succeeds, nothing to do).
    Other,
}

/// `ProtocolNetPnPEvent` (`PASSIVE_LEVEL`): the sample's `PtPNPHandler`.
/// Global events (reconfigure, re-enable) come without a binding
/// (`mux` `None`).
pub fn net_pnp_event(mux: Option<&Mux>, event: PnpEvent<'_>) -> NDIS_STATUS {
    match (event, mux) {
        (PnpEvent::Reconfigure, _) => {
            bind::bootstrap_all(None);
            NDIS_STATUS_SUCCESS
        }
        (PnpEvent::ReEnable(name), _) => {
            bind::bootstrap_all(Some(name.unwrap_or(&[])));
            NDIS_STATUS_SUCCESS
        }
        (PnpEvent::Pause | PnpEvent::Restart | PnpEvent::SetPower(_), None) => {
            NDIS_STATUS_INVALID_PARAMETER
        }
        (PnpEvent::Pause, Some(mux)) => {
            mux.binding.pause();
            NDIS_STATUS_SUCCESS
        }
        (PnpEvent::Restart, Some(mux)) => {
            mux.binding.restart();
            NDIS_STATUS_SUCCESS
        }
        (PnpEvent::SetPower(state), Some(mux)) => {
            let Some(state) = state else {
                return NDIS_STATUS_INVALID_PARAMETER;
            };
            mux.binding.set_power(state);
            if mux.binding.is_powered() {
                // Back in D0: P may have changed its link meanwhile.
                mux.indicate_link_state();
            }
            NDIS_STATUS_SUCCESS
        }
        (PnpEvent::Other, _) => NDIS_STATUS_SUCCESS,
    }
}
