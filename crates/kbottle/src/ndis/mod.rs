//! NDIS.SYS for the bottled miniport: every NDIS export the driver
//! imports, with real semantics and NDIS's checks, and the side of NDIS
//! that calls the miniport ([`miniport`]), used by [`crate::machine`].
//!
//! Rule: ndis imports the kernel, the world (a NIC's port on a segment)
//! and the leaves ([`crate::ids`], [`crate::export`](mod@crate::export)); never TCP/IP, NETIO
//! or the machine: TCP/IP binds above a virtual miniport through
//! [`upper`], and the machine drives NDIS from above.
//!
//! - [`registration`] holds `NdisMRegisterMiniportDriver` (characteristics
//!   checked for the declared NDIS version; `MiniportSetOptions` called
//!   before it returns), `NdisMDeregisterMiniportDriver` and
//!   `NdisSetOptionalHandlers` (NDK provider characteristics).
//! - [`attributes`] holds `NdisMSetMiniportAttributes` (headers, order,
//!   registration/general/NDK attributes recorded).
//! - [`config`] holds `NdisOpenConfigurationEx`, `NdisReadConfiguration`
//!   and `NdisCloseConfiguration` over the adapter's keyword store.
//! - [`workitem`] holds `NdisAllocateIoWorkItem`, `NdisQueueIoWorkItem`,
//!   `NdisFreeIoWorkItem` and the PASSIVE system worker thread.
//! - [`pnp`] holds `NdisMNetPnPEvent` (NDK enable/disable) and
//!   `NdisMIndicateStatusEx`.
//! - [`completions`] holds `NdisMOidRequestComplete`,
//!   `NdisMDirectOidRequestComplete`, `NdisMPauseComplete`,
//!   `NdisMRestartComplete` and `NdisMResetComplete`.
//! - [`eventlog`] holds `NdisWriteEventLogEntry` and the entries written.
//! - [`datapath`] holds `NdisMSendNetBufferListsComplete` and
//!   `NdisMIndicateReceiveNetBufferLists`.
//! - [`checks`] holds the IRQL, header and handle rules and the bug checks
//!   they end in; [`state`] what NDIS knows about the driver and its
//!   adapters.
//!
//! An intermediate (MUX) driver's protocol edge and the NICs below it:
//!
//! - [`protocol`] holds `NdisRegisterProtocolDriver`,
//!   `NdisDeregisterProtocolDriver`, `NdisIMAssociateMiniport`.
//! - [`bindflow`] plays NDIS's side of a bind, unbind, binding pause and
//!   restart, each on a PASSIVE `ndis-pnp` thread; [`binding`] the imports
//!   of opening and closing a binding and completing pended binds,
//!   unbinds and PnP events; [`im`] `NdisIMInitializeDeviceInstanceEx`
//!   and friends, the interface stack, `NdisMSleep`.
//! - [`nic`] runs the NICs the bottle plays, each with a thread, on a
//!   [`crate::world::segment`]; [`lower`] the binding's data path
//!   (`NdisSendNetBufferLists`, `NdisReturnNetBufferLists`); [`lower_oid`]
//!   `NdisOidRequest` on a binding.
//! - [`nbl`] holds `NET_BUFFER_LIST`s with the real layouts and the ledger of
//!   who holds each; [`nblpool`] the pool and list imports; [`upper`] the
//!   stack above each virtual miniport.
//!
//! Every import checks its IRQL first (0xC4 / 0xE5 when wrong), looks up
//! its handles (0x50 for one NDIS never gave out or already took back),
//! and turns a panic of the bottle's own code into 0x4F
//! (`NDIS_INTERNAL_ERROR`) instead of unwinding into driver frames.
//! Allocating imports are fault points of the low-resources simulation:
//! `NdisMRegisterMiniportDriver`, `NdisSetOptionalHandlers`,
//! `NdisOpenConfigurationEx`, `NdisReadConfiguration`,
//! `NdisRegisterProtocolDriver`, `NdisOpenAdapterEx`,
//! `NdisAllocateNetBufferListContext` (each failing with
//! `NDIS_STATUS_RESOURCES`), `NdisAllocateIoWorkItem`,
//! `NdisAllocateNetBufferListPool` and the list allocations (null).

pub mod attributes;
pub mod bindflow;
pub mod binding;
pub mod checks;
pub mod completions;
pub mod config;
pub mod config_value;
pub mod datapath;
pub mod eventlog;
pub mod im;
pub mod lower;
pub mod lower_oid;
pub mod miniport;
pub mod nbl;
pub mod nblpool;
pub mod nic;
pub mod pnp;
pub mod protocol;
pub mod registration;
pub mod state;
pub mod upper;
pub mod workitem;

#[cfg(test)]
mod mux_tests;
#[cfg(test)]
mod nbl_tests;
#[cfg(test)]
mod tests;

pub use attributes::NdisMSetMiniportAttributes;
pub use binding::{
    NdisCloseAdapterEx, NdisCompleteBindAdapterEx, NdisCompleteNetPnPEvent,
    NdisCompleteUnbindAdapterEx, NdisOpenAdapterEx,
};
pub use completions::{
    NdisMDirectOidRequestComplete, NdisMOidRequestComplete, NdisMPauseComplete, NdisMResetComplete,
    NdisMRestartComplete,
};
pub use config::{NdisCloseConfiguration, NdisOpenConfigurationEx, NdisReadConfiguration};
pub use datapath::{NdisMIndicateReceiveNetBufferLists, NdisMSendNetBufferListsComplete};
pub use eventlog::NdisWriteEventLogEntry;
pub use im::{
    NdisIMCancelInitializeDeviceInstance, NdisIMDeInitializeDeviceInstance,
    NdisIMInitializeDeviceInstanceEx, NdisIfAddIfStackEntry, NdisIfDeleteIfStackEntry, NdisMSleep,
};
pub use lower::{NdisCancelSendNetBufferLists, NdisReturnNetBufferLists, NdisSendNetBufferLists};
pub use lower_oid::{NdisCancelOidRequest, NdisOidRequest};
pub use nblpool::{
    NdisAllocateNetBufferAndNetBufferList, NdisAllocateNetBufferList,
    NdisAllocateNetBufferListContext, NdisAllocateNetBufferListPool, NdisFreeNetBufferList,
    NdisFreeNetBufferListContext, NdisFreeNetBufferListPool, NdisGetDataBuffer,
    NdisGetPoolFromNetBufferList,
};
pub use pnp::{NdisMIndicateStatusEx, NdisMNetPnPEvent};
pub use protocol::{
    NdisDeregisterProtocolDriver, NdisIMAssociateMiniport, NdisRegisterProtocolDriver,
};
pub use registration::{
    NdisMDeregisterMiniportDriver, NdisMRegisterMiniportDriver, NdisSetOptionalHandlers,
};
pub use state::{GeneralAttributes, NdkAttributes, RegistrationAttributes};
pub use workitem::{NdisAllocateIoWorkItem, NdisFreeIoWorkItem, NdisQueueIoWorkItem};

/// The hand-declared NDIS types and constants (crate `ndis`) the bottle
/// implements, for tests that build requests and read answers.
pub use ::ndis as types;

use crate::export;
use crate::export::Export;

/// Every NDIS.SYS export the bottle binds (all the imports `crates/ndis`
/// declares).
pub fn exports() -> Vec<Export> {
    vec![
        export!("NDIS.SYS", NdisMRegisterMiniportDriver),
        export!("NDIS.SYS", NdisMDeregisterMiniportDriver),
        export!("NDIS.SYS", NdisSetOptionalHandlers),
        export!("NDIS.SYS", NdisMSetMiniportAttributes),
        export!("NDIS.SYS", NdisMIndicateStatusEx),
        export!("NDIS.SYS", NdisMNetPnPEvent),
        export!("NDIS.SYS", NdisMOidRequestComplete),
        export!("NDIS.SYS", NdisMDirectOidRequestComplete),
        export!("NDIS.SYS", NdisMSendNetBufferListsComplete),
        export!("NDIS.SYS", NdisMIndicateReceiveNetBufferLists),
        export!("NDIS.SYS", NdisMPauseComplete),
        export!("NDIS.SYS", NdisMRestartComplete),
        export!("NDIS.SYS", NdisMResetComplete),
        export!("NDIS.SYS", NdisAllocateIoWorkItem),
        export!("NDIS.SYS", NdisQueueIoWorkItem),
        export!("NDIS.SYS", NdisFreeIoWorkItem),
        export!("NDIS.SYS", NdisOpenConfigurationEx),
        export!("NDIS.SYS", NdisReadConfiguration),
        export!("NDIS.SYS", NdisCloseConfiguration),
        export!("NDIS.SYS", NdisAllocateNetBufferListPool),
        export!("NDIS.SYS", NdisFreeNetBufferListPool),
        export!("NDIS.SYS", NdisAllocateNetBufferList),
        export!("NDIS.SYS", NdisAllocateNetBufferAndNetBufferList),
        export!("NDIS.SYS", NdisFreeNetBufferList),
        export!("NDIS.SYS", NdisGetPoolFromNetBufferList),
        export!("NDIS.SYS", NdisGetDataBuffer),
        export!("NDIS.SYS", NdisAllocateNetBufferListContext),
        export!("NDIS.SYS", NdisFreeNetBufferListContext),
        export!("NDIS.SYS", NdisRegisterProtocolDriver),
        export!("NDIS.SYS", NdisDeregisterProtocolDriver),
        export!("NDIS.SYS", NdisIMAssociateMiniport),
        export!("NDIS.SYS", NdisOpenAdapterEx),
        export!("NDIS.SYS", NdisCloseAdapterEx),
        export!("NDIS.SYS", NdisCompleteBindAdapterEx),
        export!("NDIS.SYS", NdisCompleteUnbindAdapterEx),
        export!("NDIS.SYS", NdisCompleteNetPnPEvent),
        export!("NDIS.SYS", NdisSendNetBufferLists),
        export!("NDIS.SYS", NdisReturnNetBufferLists),
        export!("NDIS.SYS", NdisCancelSendNetBufferLists),
        export!("NDIS.SYS", NdisOidRequest),
        export!("NDIS.SYS", NdisCancelOidRequest),
        export!("NDIS.SYS", NdisIMInitializeDeviceInstanceEx),
        export!("NDIS.SYS", NdisIMCancelInitializeDeviceInstance),
        export!("NDIS.SYS", NdisIMDeInitializeDeviceInstance),
        export!("NDIS.SYS", NdisIfAddIfStackEntry),
        export!("NDIS.SYS", NdisIfDeleteIfStackEntry),
        export!("NDIS.SYS", NdisMSleep),
        export!("NDIS.SYS", NdisWriteEventLogEntry),
    ]
}
