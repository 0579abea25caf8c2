//! What a miniport tells NDIS on its own initiative (`ndis.h`,
//! `ntddndis.h`, `netpnp.h` as included by `ndis.h`): status indications
//! (`NdisMIndicateStatusEx`, e.g. the link state) and network PnP events
//! (`NdisMNetPnPEvent`, e.g. NDK enable/disable).

use core::ptr;

use ndkpi::{GUID, NDIS_STATUS, PVOID, UCHAR, ULONG, ULONG_PTR};

use crate::attributes::{NDIS_MEDIA_CONNECT_STATE, NDIS_MEDIA_DUPLEX_STATE};
use crate::object::{
    NDIS_OBJECT_HEADER, NDIS_OBJECT_TYPE_DEFAULT, NDIS_OBJECT_TYPE_STATUS_INDICATION,
};
use crate::types::{
    NDIS_DEFAULT_PORT_NUMBER, NDIS_HANDLE, NDIS_NIC_SWITCH_ID, NDIS_NIC_SWITCH_VPORT_ID,
    NDIS_PORT_NUMBER, ULONG64,
};

// ---------------------------------------------------------------------
// Status indications.

/// `NDIS_STATUS_INDICATION` revision.
pub const NDIS_STATUS_INDICATION_REVISION_1: UCHAR = 1;
/// `RTL_SIZEOF_THROUGH_FIELD(NDIS_STATUS_INDICATION, NdisReserved)`.
pub const NDIS_SIZEOF_STATUS_INDICATION_REVISION_1: u16 =
    crate::sizeof_through_field!(NDIS_STATUS_INDICATION, NdisReserved);

/// A status indication (`NdisMIndicateStatusEx`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct NDIS_STATUS_INDICATION {
    /// `NDIS_OBJECT_TYPE_STATUS_INDICATION`, revision 1.
    pub Header: NDIS_OBJECT_HEADER,
    /// The miniport adapter handle.
    pub SourceHandle: NDIS_HANDLE,
    /// Port the status concerns.
    pub PortNumber: NDIS_PORT_NUMBER,
    /// `NDIS_STATUS_*` indication code.
    pub StatusCode: NDIS_STATUS,
    /// `NDIS_STATUS_INDICATION_FLAGS_*`.
    pub Flags: ULONG,
    /// Handle of a specific recipient, or null for all.
    pub DestinationHandle: NDIS_HANDLE,
    /// Request the indication answers, or null.
    pub RequestId: PVOID,
    /// Code-specific payload.
    pub StatusBuffer: PVOID,
    /// Bytes at `StatusBuffer`.
    pub StatusBufferSize: ULONG,
    /// Only for `NDIS_STATUS_MEDIA_SPECIFIC_INDICATION`.
    pub Guid: GUID,
    /// Owned by NDIS.
    pub NdisReserved: [PVOID; 4],
}

impl NDIS_STATUS_INDICATION {
    /// A revision-1 indication of `StatusCode` from `SourceHandle` on the
    /// default port, with `StatusBufferSize` bytes at `StatusBuffer`.
    pub const fn new(
        SourceHandle: NDIS_HANDLE,
        StatusCode: NDIS_STATUS,
        StatusBuffer: PVOID,
        StatusBufferSize: ULONG,
    ) -> Self {
        Self {
            Header: NDIS_OBJECT_HEADER::new(
                NDIS_OBJECT_TYPE_STATUS_INDICATION,
                NDIS_STATUS_INDICATION_REVISION_1,
                NDIS_SIZEOF_STATUS_INDICATION_REVISION_1,
            ),
            SourceHandle,
            PortNumber: NDIS_DEFAULT_PORT_NUMBER,
            StatusCode,
            Flags: 0,
            DestinationHandle: ptr::null_mut(),
            RequestId: ptr::null_mut(),
            StatusBuffer,
            StatusBufferSize,
            Guid: GUID {
                Data1: 0,
                Data2: 0,
                Data3: 0,
                Data4: [0; 8],
            },
            NdisReserved: [ptr::null_mut(); 4],
        }
    }
}

/// `PauseFunctions` of a link (C enum).
pub type NDIS_SUPPORTED_PAUSE_FUNCTIONS = i32;
/// No 802.3x pause frames.
pub const NdisPauseFunctionsUnsupported: NDIS_SUPPORTED_PAUSE_FUNCTIONS = 0;
/// Sends pause frames only.
pub const NdisPauseFunctionsSendOnly: NDIS_SUPPORTED_PAUSE_FUNCTIONS = 1;
/// Receives pause frames only.
pub const NdisPauseFunctionsReceiveOnly: NDIS_SUPPORTED_PAUSE_FUNCTIONS = 2;
/// Sends and receives pause frames.
pub const NdisPauseFunctionsSendAndReceive: NDIS_SUPPORTED_PAUSE_FUNCTIONS = 3;
/// Unknown.
pub const NdisPauseFunctionsUnknown: NDIS_SUPPORTED_PAUSE_FUNCTIONS = 4;

/// `NDIS_LINK_STATE` revision.
pub const NDIS_LINK_STATE_REVISION_1: UCHAR = 1;
/// `RTL_SIZEOF_THROUGH_FIELD(NDIS_LINK_STATE, AutoNegotiationFlags)`.
pub const NDIS_SIZEOF_LINK_STATE_REVISION_1: u16 =
    crate::sizeof_through_field!(NDIS_LINK_STATE, AutoNegotiationFlags);

/// Link state: the payload of `NDIS_STATUS_LINK_STATE` and the answer to
/// `OID_GEN_LINK_STATE`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NDIS_LINK_STATE {
    /// `NDIS_OBJECT_TYPE_DEFAULT`, revision 1.
    pub Header: NDIS_OBJECT_HEADER,
    /// Connect state.
    pub MediaConnectState: NDIS_MEDIA_CONNECT_STATE,
    /// Duplex state.
    pub MediaDuplexState: NDIS_MEDIA_DUPLEX_STATE,
    /// Transmit speed, bit/s.
    pub XmitLinkSpeed: ULONG64,
    /// Receive speed, bit/s.
    pub RcvLinkSpeed: ULONG64,
    /// 802.3x pause support.
    pub PauseFunctions: NDIS_SUPPORTED_PAUSE_FUNCTIONS,
    /// `NDIS_LINK_STATE_*_AUTO_NEGOTIATED`.
    pub AutoNegotiationFlags: ULONG,
}

impl NDIS_LINK_STATE {
    /// A revision-1 link state.
    pub const fn new(
        MediaConnectState: NDIS_MEDIA_CONNECT_STATE,
        MediaDuplexState: NDIS_MEDIA_DUPLEX_STATE,
        XmitLinkSpeed: ULONG64,
        RcvLinkSpeed: ULONG64,
    ) -> Self {
        Self {
            Header: NDIS_OBJECT_HEADER::new(
                NDIS_OBJECT_TYPE_DEFAULT,
                NDIS_LINK_STATE_REVISION_1,
                NDIS_SIZEOF_LINK_STATE_REVISION_1,
            ),
            MediaConnectState,
            MediaDuplexState,
            XmitLinkSpeed,
            RcvLinkSpeed,
            PauseFunctions: NdisPauseFunctionsUnsupported,
            AutoNegotiationFlags: 0,
        }
    }
}

// ---------------------------------------------------------------------
// Network PnP events.

/// Network PnP event code (`NET_PNP_EVENT_CODE`, C enum, `netpnp.h:13`):
/// the values a miniport raises and a protocol receives in
/// `ProtocolNetPnPEvent` are named.
pub type NET_PNP_EVENT_CODE = i32;
/// Power state change; `Buffer` holds a [`NET_DEVICE_POWER_STATE`].
pub const NetEventSetPower: NET_PNP_EVENT_CODE = 0;
/// Power state query; `Buffer` holds a [`NET_DEVICE_POWER_STATE`].
pub const NetEventQueryPower: NET_PNP_EVENT_CODE = 1;
/// The adapter may be removed.
pub const NetEventQueryRemoveDevice: NET_PNP_EVENT_CODE = 2;
/// A query-remove was cancelled.
pub const NetEventCancelRemoveDevice: NET_PNP_EVENT_CODE = 3;
/// Configuration changed.
pub const NetEventReconfigure: NET_PNP_EVENT_CODE = 4;
/// The bind list changed.
pub const NetEventBindList: NET_PNP_EVENT_CODE = 5;
/// All initial bindings are done.
pub const NetEventBindsComplete: NET_PNP_EVENT_CODE = 6;
/// Wake-on-LAN capabilities changed.
pub const NetEventPnPCapabilities: NET_PNP_EVENT_CODE = 7;
/// The binding is to pause (NDIS 6).
pub const NetEventPause: NET_PNP_EVENT_CODE = 8;
/// The binding restarts; `Buffer` holds an
/// [`crate::NDIS_PROTOCOL_RESTART_PARAMETERS`].
pub const NetEventRestart: NET_PNP_EVENT_CODE = 9;
/// Ports were activated.
pub const NetEventPortActivation: NET_PNP_EVENT_CODE = 10;
/// Ports were deactivated.
pub const NetEventPortDeactivation: NET_PNP_EVENT_CODE = 11;
/// An intermediate driver's virtual miniport may be re-enabled.
pub const NetEventIMReEnableDevice: NET_PNP_EVENT_CODE = 12;
/// NDK functionality was enabled (NDIS 6.30).
pub const NetEventNDKEnable: NET_PNP_EVENT_CODE = 13;
/// NDK functionality was disabled (NDIS 6.30).
pub const NetEventNDKDisable: NET_PNP_EVENT_CODE = 14;
/// A filter is about to detach.
pub const NetEventFilterPreDetach: NET_PNP_EVENT_CODE = 15;
/// A binding failed.
pub const NetEventBindFailed: NET_PNP_EVENT_CODE = 16;
/// A Hyper-V switch was activated.
pub const NetEventSwitchActivate: NET_PNP_EVENT_CODE = 17;
/// Bindings above are allowed again.
pub const NetEventAllowBindsAbove: NET_PNP_EVENT_CODE = 18;
/// Bindings above are inhibited.
pub const NetEventInhibitBindsAbove: NET_PNP_EVENT_CODE = 19;
/// The miniport may start.
pub const NetEventAllowStart: NET_PNP_EVENT_CODE = 20;
/// A pause is required.
pub const NetEventRequirePause: NET_PNP_EVENT_CODE = 21;
/// GFT flow entries are to be uploaded.
pub const NetEventUploadGftFlowEntries: NET_PNP_EVENT_CODE = 22;

/// Device power state carried by `NetEventSetPower`/`NetEventQueryPower`
/// (`NET_DEVICE_POWER_STATE`, C enum, `netpnp.h:76`).
pub type NET_DEVICE_POWER_STATE = i32;
/// Unspecified.
pub const NetDeviceStateUnspecified: NET_DEVICE_POWER_STATE = 0;
/// Working (D0).
pub const NetDeviceStateD0: NET_DEVICE_POWER_STATE = 1;
/// D1.
pub const NetDeviceStateD1: NET_DEVICE_POWER_STATE = 2;
/// D2.
pub const NetDeviceStateD2: NET_DEVICE_POWER_STATE = 3;
/// Off (D3).
pub const NetDeviceStateD3: NET_DEVICE_POWER_STATE = 4;

/// A network PnP event (`netpnp.h`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct NET_PNP_EVENT {
    /// The event code.
    pub NetEvent: NET_PNP_EVENT_CODE,
    /// Event-specific data (none for the NDK events).
    pub Buffer: PVOID,
    /// Bytes at `Buffer`.
    pub BufferLength: ULONG,
    /// Owned by NDIS.
    pub NdisReserved: [ULONG_PTR; 4],
    /// Owned by the transport.
    pub TransportReserved: [ULONG_PTR; 4],
    /// Owned by TDI.
    pub TdiReserved: [ULONG_PTR; 4],
    /// Owned by TDI clients.
    pub TdiClientReserved: [ULONG_PTR; 4],
}

/// `NET_PNP_EVENT_NOTIFICATION.Flags`: halt the miniport on low power.
pub const NET_EVENT_HALT_MINIPORT_ON_LOW_POWER: ULONG = 0x0000_0001;
/// `NET_PNP_EVENT_NOTIFICATION.Flags`: `VPortId` is valid (NDIS 6.50).
pub const NET_EVENT_FLAGS_VPORT_ID_VALID: ULONG = 0x0000_0002;
/// `NET_PNP_EVENT_NOTIFICATION` revision of NDIS 6.0.
pub const NET_PNP_EVENT_NOTIFICATION_REVISION_1: UCHAR = 1;
/// `NET_PNP_EVENT_NOTIFICATION` revision of NDIS 6.50 (switch fields).
pub const NET_PNP_EVENT_NOTIFICATION_REVISION_2: UCHAR = 2;
/// `RTL_SIZEOF_THROUGH_FIELD(NET_PNP_EVENT_NOTIFICATION, Flags)`.
pub const NDIS_SIZEOF_NET_PNP_EVENT_NOTIFICATION_REVISION_1: u16 =
    crate::sizeof_through_field!(NET_PNP_EVENT_NOTIFICATION, Flags);
/// `RTL_SIZEOF_THROUGH_FIELD(NET_PNP_EVENT_NOTIFICATION, VPortId)`.
pub const NDIS_SIZEOF_NET_PNP_EVENT_NOTIFICATION_REVISION_2: u16 =
    crate::sizeof_through_field!(NET_PNP_EVENT_NOTIFICATION, VPortId);

/// Argument of `NdisMNetPnPEvent`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct NET_PNP_EVENT_NOTIFICATION {
    /// `NDIS_OBJECT_TYPE_DEFAULT`, revision 1 or 2.
    pub Header: NDIS_OBJECT_HEADER,
    /// Port the event concerns.
    pub PortNumber: NDIS_PORT_NUMBER,
    /// The event.
    pub NetPnPEvent: NET_PNP_EVENT,
    /// `NET_EVENT_*` flags.
    pub Flags: ULONG,
    /// NIC switch (revision 2).
    pub SwitchId: NDIS_NIC_SWITCH_ID,
    /// Virtual port (revision 2).
    pub VPortId: NDIS_NIC_SWITCH_VPORT_ID,
}

impl NET_PNP_EVENT_NOTIFICATION {
    /// A revision-1 notification of `NetEvent` on the default port with no
    /// event data (the shape of `NetEventNDKEnable`/`NetEventNDKDisable`).
    ///
    /// Header: `NDIS_OBJECT_TYPE_DEFAULT`, `NET_PNP_EVENT_NOTIFICATION_REVISION_1`,
    /// `NDIS_SIZEOF_NET_PNP_EVENT_NOTIFICATION_REVISION_1` (164 bytes), as
    /// the `NET_PNP_EVENT_NOTIFICATION` reference page documents and as
    /// Microsoft's own test miniport (fnmp's port activation) fills it.
    /// ndis.h's comment on the structure says `sizeof` (176 at NDIS 6.50,
    /// with `SwitchId`/`VPortId`); those two fields belong to revision 2
    /// (`NDIS_SIZEOF_NET_PNP_EVENT_NOTIFICATION_REVISION_2`, 172), which a
    /// notification for the default VPort does not need. NDIS takes any
    /// size at least the revision's (ReactOS's NdisMNetPnPEvent checks
    /// `Size >= NDIS_SIZEOF_NET_PNP_EVENT_NOTIFICATION_REVISION_1`; what
    /// Windows checks is not published).
    pub const fn new(NetEvent: NET_PNP_EVENT_CODE) -> Self {
        Self {
            Header: NDIS_OBJECT_HEADER::new(
                NDIS_OBJECT_TYPE_DEFAULT,
                NET_PNP_EVENT_NOTIFICATION_REVISION_1,
                NDIS_SIZEOF_NET_PNP_EVENT_NOTIFICATION_REVISION_1,
            ),
            PortNumber: NDIS_DEFAULT_PORT_NUMBER,
            NetPnPEvent: NET_PNP_EVENT {
                NetEvent,
                Buffer: ptr::null_mut(),
                BufferLength: 0,
                NdisReserved: [0; 4],
                TransportReserved: [0; 4],
                TdiReserved: [0; 4],
                TdiClientReserved: [0; 4],
            },
            Flags: 0,
            SwitchId: 0,
            VPortId: 0,
        }
    }
}
