//! The `ndis.sys` exports the driver calls, declared as in `ndis.h`, with
//! the IRQL each one requires. They are only declared: `ndis.lib` is linked
//! on Windows targets, and nothing on other targets may call them.
//!
//! This module is the crate's only `unsafe` code: an `extern` block must be
//! spelled `unsafe extern` in edition 2024. Declaring a function runs
//! nothing; every call site needs its own `unsafe` and SAFETY argument.
#![allow(unsafe_code)]

use ndkpi::{BOOLEAN, MDL, NDIS_STATUS, PVOID, ULONG, USHORT};

use crate::attributes::NDIS_MINIPORT_ADAPTER_ATTRIBUTES;
use crate::config::{NDIS_CONFIGURATION_OBJECT, NDIS_CONFIGURATION_PARAMETER, NDIS_PARAMETER_TYPE};
use crate::indicate::{NDIS_STATUS_INDICATION, NET_PNP_EVENT_NOTIFICATION};
use crate::miniport::{
    NDIS_DRIVER_OPTIONAL_HANDLERS, NDIS_IO_WORKITEM_FUNCTION, NDIS_MINIPORT_DRIVER_CHARACTERISTICS,
};
use crate::nbl::{
    NET_BUFFER, NET_BUFFER_ALLOCATE_MDL_HANDLER, NET_BUFFER_FREE_MDL_HANDLER, NET_BUFFER_LIST,
    NET_BUFFER_LIST_POOL_PARAMETERS,
};
use crate::oid::NDIS_OID_REQUEST;
use crate::protocol::{NDIS_OPEN_PARAMETERS, NDIS_PROTOCOL_DRIVER_CHARACTERISTICS};
use crate::types::{
    DRIVER_OBJECT, NDIS_HANDLE, NDIS_PORT_NUMBER, NDIS_STRING, NET_IFINDEX, UNICODE_STRING,
};

#[cfg_attr(
    target_os = "windows",
    link(name = "NDIS.SYS", kind = "raw-dylib", modifiers = "+verbatim")
)]
unsafe extern "system" {
    /// Registers the miniport driver (`PASSIVE_LEVEL`, from `DriverEntry`).
    /// NDIS calls `MiniportSetOptions` before it returns.
    pub fn NdisMRegisterMiniportDriver(
        DriverObject: *mut DRIVER_OBJECT,
        RegistryPath: *mut UNICODE_STRING,
        MiniportDriverContext: NDIS_HANDLE,
        MiniportDriverCharacteristics: *mut NDIS_MINIPORT_DRIVER_CHARACTERISTICS,
        NdisMiniportDriverHandle: *mut NDIS_HANDLE,
    ) -> NDIS_STATUS;

    /// Undoes `NdisMRegisterMiniportDriver` (`PASSIVE_LEVEL`).
    pub fn NdisMDeregisterMiniportDriver(NdisMiniportDriverHandle: NDIS_HANDLE);

    /// Registers optional services, e.g. NDK provider characteristics
    /// (`PASSIVE_LEVEL`, from `MiniportSetOptions`).
    pub fn NdisSetOptionalHandlers(
        NdisHandle: NDIS_HANDLE,
        OptionalHandlers: *mut NDIS_DRIVER_OPTIONAL_HANDLERS,
    ) -> NDIS_STATUS;

    /// Sets one attribute structure of an adapter (`PASSIVE_LEVEL`, from
    /// `MiniportInitializeEx`); NDIS reads `Header.Size` bytes.
    pub fn NdisMSetMiniportAttributes(
        NdisMiniportHandle: NDIS_HANDLE,
        MiniportAttributes: *mut NDIS_MINIPORT_ADAPTER_ATTRIBUTES,
    ) -> NDIS_STATUS;

    /// Raises a status indication (`<= DISPATCH_LEVEL`).
    pub fn NdisMIndicateStatusEx(
        MiniportAdapterHandle: NDIS_HANDLE,
        StatusIndication: *mut NDIS_STATUS_INDICATION,
    );

    /// Raises a network PnP event such as `NetEventNDKEnable`
    /// (`PASSIVE_LEVEL`; not from inside `MiniportOidRequest`).
    pub fn NdisMNetPnPEvent(
        MiniportAdapterHandle: NDIS_HANDLE,
        NetPnPEventNotification: *mut NET_PNP_EVENT_NOTIFICATION,
    ) -> NDIS_STATUS;

    /// Completes an OID request that returned `NDIS_STATUS_PENDING`
    /// (`<= DISPATCH_LEVEL`).
    pub fn NdisMOidRequestComplete(
        MiniportAdapterHandle: NDIS_HANDLE,
        OidRequest: *mut NDIS_OID_REQUEST,
        Status: NDIS_STATUS,
    );

    /// Completes a pended direct OID request (`<= DISPATCH_LEVEL`).
    pub fn NdisMDirectOidRequestComplete(
        MiniportAdapterHandle: NDIS_HANDLE,
        OidRequest: *mut NDIS_OID_REQUEST,
        Status: NDIS_STATUS,
    );

    /// Returns sent lists to NDIS (`<= DISPATCH_LEVEL`).
    pub fn NdisMSendNetBufferListsComplete(
        MiniportAdapterHandle: NDIS_HANDLE,
        NetBufferList: *mut NET_BUFFER_LIST,
        SendCompleteFlags: ULONG,
    );

    /// Indicates received lists (`<= DISPATCH_LEVEL`).
    pub fn NdisMIndicateReceiveNetBufferLists(
        MiniportAdapterHandle: NDIS_HANDLE,
        NetBufferList: *mut NET_BUFFER_LIST,
        PortNumber: NDIS_PORT_NUMBER,
        NumberOfNetBufferLists: ULONG,
        ReceiveFlags: ULONG,
    );

    /// Completes a pended `MiniportPause` (`<= DISPATCH_LEVEL`).
    pub fn NdisMPauseComplete(MiniportAdapterHandle: NDIS_HANDLE);

    /// Completes a pended `MiniportRestart`.
    pub fn NdisMRestartComplete(MiniportAdapterHandle: NDIS_HANDLE, Status: NDIS_STATUS);

    /// Completes a pended `MiniportResetEx` (`<= DISPATCH_LEVEL`).
    pub fn NdisMResetComplete(
        MiniportAdapterHandle: NDIS_HANDLE,
        Status: NDIS_STATUS,
        AddressingReset: BOOLEAN,
    );

    /// Allocates a work item bound to an NDIS handle (`<= DISPATCH_LEVEL`);
    /// null on failure.
    pub fn NdisAllocateIoWorkItem(NdisObjectHandle: NDIS_HANDLE) -> NDIS_HANDLE;

    /// Queues a work item; `Routine` runs at `PASSIVE_LEVEL`
    /// (`<= DISPATCH_LEVEL`).
    pub fn NdisQueueIoWorkItem(
        NdisIoWorkItemHandle: NDIS_HANDLE,
        Routine: NDIS_IO_WORKITEM_FUNCTION,
        WorkItemContext: PVOID,
    );

    /// Frees a work item (`<= DISPATCH_LEVEL`).
    pub fn NdisFreeIoWorkItem(NdisIoWorkItemHandle: NDIS_HANDLE);

    /// Opens the adapter's registry configuration (`PASSIVE_LEVEL`).
    pub fn NdisOpenConfigurationEx(
        ConfigObject: *mut NDIS_CONFIGURATION_OBJECT,
        ConfigurationHandle: *mut NDIS_HANDLE,
    ) -> NDIS_STATUS;

    /// Reads one keyword (`PASSIVE_LEVEL`); the value stays valid until
    /// the handle is closed. The outcome is written to `*Status`.
    pub fn NdisReadConfiguration(
        Status: *mut NDIS_STATUS,
        ParameterValue: *mut *mut NDIS_CONFIGURATION_PARAMETER,
        ConfigurationHandle: NDIS_HANDLE,
        Keyword: *mut NDIS_STRING,
        ParameterType: NDIS_PARAMETER_TYPE,
    );

    /// Closes a configuration handle (`PASSIVE_LEVEL`).
    pub fn NdisCloseConfiguration(ConfigurationHandle: NDIS_HANDLE);

    // ------------------------------------------------------------------
    // NET_BUFFER_LIST pools and buffers (ndis/nblapi.h, NDIS_EXPORTED_ROUTINE).

    /// Allocates a pool of lists (`<= DISPATCH_LEVEL`); null on failure.
    /// NDIS reads `Parameters.Header.Size` bytes.
    pub fn NdisAllocateNetBufferListPool(
        NdisHandle: NDIS_HANDLE,
        Parameters: *const NET_BUFFER_LIST_POOL_PARAMETERS,
    ) -> NDIS_HANDLE;

    /// Frees a pool whose lists are all freed (`<= DISPATCH_LEVEL`).
    pub fn NdisFreeNetBufferListPool(PoolHandle: NDIS_HANDLE);

    /// Allocates one list, with its `NET_BUFFER` (and data) if the pool
    /// preallocates them (`<= DISPATCH_LEVEL`); null on failure.
    pub fn NdisAllocateNetBufferList(
        PoolHandle: NDIS_HANDLE,
        ContextSize: USHORT,
        ContextBackFill: USHORT,
    ) -> *mut NET_BUFFER_LIST;

    /// Allocates a list with one `NET_BUFFER` over `MdlChain` from a pool
    /// made with `fAllocateNetBuffer` and `DataSize == 0`
    /// (`<= DISPATCH_LEVEL`); null on failure.
    pub fn NdisAllocateNetBufferAndNetBufferList(
        PoolHandle: NDIS_HANDLE,
        ContextSize: USHORT,
        ContextBackFill: USHORT,
        MdlChain: *mut MDL,
        DataOffset: ULONG,
        DataLength: usize,
    ) -> *mut NET_BUFFER_LIST;

    /// Returns a list (and its preallocated buffer) to its pool
    /// (`<= DISPATCH_LEVEL`).
    pub fn NdisFreeNetBufferList(NetBufferList: *mut NET_BUFFER_LIST);

    /// The pool a list came from (`<= DISPATCH_LEVEL`).
    pub fn NdisGetPoolFromNetBufferList(NetBufferList: *const NET_BUFFER_LIST) -> NDIS_HANDLE;

    /// A pointer to `BytesNeeded` contiguous bytes at the buffer's data
    /// start: into the MDL if they are contiguous and aligned as asked,
    /// else copied to `Storage` (which may be null: then null is
    /// returned) (`<= DISPATCH_LEVEL`).
    pub fn NdisGetDataBuffer(
        NetBuffer: *mut NET_BUFFER,
        BytesNeeded: ULONG,
        Storage: PVOID,
        AlignMultiple: ULONG,
        AlignOffset: ULONG,
    ) -> PVOID;

    /// Moves the data start back by `DataOffsetDelta` bytes, allocating an
    /// MDL (with `DataBackFill` extra bytes) if the used space runs out
    /// (`<= DISPATCH_LEVEL`).
    pub fn NdisRetreatNetBufferDataStart(
        NetBuffer: *mut NET_BUFFER,
        DataOffsetDelta: ULONG,
        DataBackFill: ULONG,
        AllocateMdlHandler: NET_BUFFER_ALLOCATE_MDL_HANDLER,
    ) -> NDIS_STATUS;

    /// Moves the data start forward by `DataOffsetDelta` bytes, freeing
    /// MDLs a retreat allocated if `FreeMdl` (`<= DISPATCH_LEVEL`).
    pub fn NdisAdvanceNetBufferDataStart(
        NetBuffer: *mut NET_BUFFER,
        DataOffsetDelta: ULONG,
        FreeMdl: BOOLEAN,
        FreeMdlHandler: NET_BUFFER_FREE_MDL_HANDLER,
    );

    /// Adds `ContextSize` bytes (a multiple of
    /// `MEMORY_ALLOCATION_ALIGNMENT`) in front of the list's used context
    /// area, allocating a new context block with `ContextBackFill` more if
    /// needed (`<= DISPATCH_LEVEL`).
    pub fn NdisAllocateNetBufferListContext(
        NetBufferList: *mut NET_BUFFER_LIST,
        ContextSize: USHORT,
        ContextBackFill: USHORT,
        PoolTag: ULONG,
    ) -> NDIS_STATUS;

    /// Releases `ContextSize` bytes that `NdisAllocateNetBufferListContext`
    /// added (`<= DISPATCH_LEVEL`).
    pub fn NdisFreeNetBufferListContext(NetBufferList: *mut NET_BUFFER_LIST, ContextSize: USHORT);

    /// Sleeps for at least `MicrosecondsToSleep` (`<= APC_LEVEL`).
    pub fn NdisMSleep(MicrosecondsToSleep: ULONG);

    // ------------------------------------------------------------------
    // Protocol edge (ndis.h:7941-8880).

    /// Registers a protocol driver (`PASSIVE_LEVEL`, from `DriverEntry`).
    pub fn NdisRegisterProtocolDriver(
        ProtocolDriverContext: NDIS_HANDLE,
        ProtocolCharacteristics: *mut NDIS_PROTOCOL_DRIVER_CHARACTERISTICS,
        NdisProtocolHandle: *mut NDIS_HANDLE,
    ) -> NDIS_STATUS;

    /// Undoes `NdisRegisterProtocolDriver` (`PASSIVE_LEVEL`); every binding
    /// must be closed.
    pub fn NdisDeregisterProtocolDriver(NdisProtocolHandle: NDIS_HANDLE);

    /// Opens the adapter of a bind request (`PASSIVE_LEVEL`, from
    /// `ProtocolBindAdapterEx`); `NDIS_STATUS_PENDING` completes through
    /// `ProtocolOpenAdapterCompleteEx`.
    pub fn NdisOpenAdapterEx(
        NdisProtocolHandle: NDIS_HANDLE,
        ProtocolBindingContext: NDIS_HANDLE,
        OpenParameters: *mut NDIS_OPEN_PARAMETERS,
        BindContext: NDIS_HANDLE,
        NdisBindingHandle: *mut NDIS_HANDLE,
    ) -> NDIS_STATUS;

    /// Completes a bind that `ProtocolBindAdapterEx` pended
    /// (`<= DISPATCH_LEVEL`).
    pub fn NdisCompleteBindAdapterEx(BindAdapterContext: NDIS_HANDLE, Status: NDIS_STATUS);

    /// Closes a binding (`PASSIVE_LEVEL`); `NDIS_STATUS_PENDING` completes
    /// through `ProtocolCloseAdapterCompleteEx`.
    pub fn NdisCloseAdapterEx(NdisBindingHandle: NDIS_HANDLE) -> NDIS_STATUS;

    /// Completes an unbind that `ProtocolUnbindAdapterEx` pended
    /// (`<= DISPATCH_LEVEL`).
    pub fn NdisCompleteUnbindAdapterEx(UnbindContext: NDIS_HANDLE);

    /// Sends lists down a binding (`<= DISPATCH_LEVEL`); each completes
    /// through `ProtocolSendNetBufferListsComplete`.
    pub fn NdisSendNetBufferLists(
        NdisBindingHandle: NDIS_HANDLE,
        NetBufferLists: *mut NET_BUFFER_LIST,
        PortNumber: NDIS_PORT_NUMBER,
        SendFlags: ULONG,
    );

    /// Returns received lists to the miniport below (`<= DISPATCH_LEVEL`).
    pub fn NdisReturnNetBufferLists(
        NdisBindingHandle: NDIS_HANDLE,
        NetBufferLists: *mut NET_BUFFER_LIST,
        ReturnFlags: ULONG,
    );

    /// Cancels sends whose cancel ID is `CancelId` (`<= DISPATCH_LEVEL`).
    pub fn NdisCancelSendNetBufferLists(NdisBindingHandle: NDIS_HANDLE, CancelId: PVOID);

    /// Issues an OID request on a binding (`<= DISPATCH_LEVEL`);
    /// `NDIS_STATUS_PENDING` completes through `ProtocolOidRequestComplete`.
    pub fn NdisOidRequest(
        NdisBindingHandle: NDIS_HANDLE,
        OidRequest: *mut NDIS_OID_REQUEST,
    ) -> NDIS_STATUS;

    /// Cancels a pended OID request by its `RequestId` (`<= DISPATCH_LEVEL`).
    pub fn NdisCancelOidRequest(NdisBindingHandle: NDIS_HANDLE, RequestId: PVOID);

    /// Writes an entry to the system event log (`<= DISPATCH_LEVEL`):
    /// `LogHandle` is the driver object `DriverEntry` got; `StringsList`
    /// holds `NumStrings` NUL-terminated UTF-16 strings one after another
    /// (null and 0 for none), `Data` `DataSize` bytes of binary data (null
    /// and 0 for none). `NDIS_STATUS_BUFFER_TOO_SHORT` when strings and
    /// data exceed `MAX_EVENT_LOG_DATA_SIZE`.
    pub fn NdisWriteEventLogEntry(
        LogHandle: PVOID,
        EventCode: NDIS_STATUS,
        UniqueEventValue: ULONG,
        NumStrings: USHORT,
        StringsList: PVOID,
        DataSize: ULONG,
        Data: PVOID,
    ) -> NDIS_STATUS;

    /// Completes a network PnP event that `ProtocolNetPnPEvent` pended
    /// (`PASSIVE_LEVEL`).
    pub fn NdisCompleteNetPnPEvent(
        NdisBindingHandle: NDIS_HANDLE,
        NetPnPEventNotification: *mut NET_PNP_EVENT_NOTIFICATION,
        Status: NDIS_STATUS,
    );

    // ------------------------------------------------------------------
    // Intermediate drivers and the interface stack (ndis.h:11301-11620,
    // 15141-15149).

    /// Ties an intermediate driver's miniport and protocol together
    /// (`PASSIVE_LEVEL`, from `DriverEntry`).
    pub fn NdisIMAssociateMiniport(DriverHandle: NDIS_HANDLE, ProtocolHandle: NDIS_HANDLE);

    /// Starts the virtual miniport named `DriverInstance`; NDIS passes
    /// `DeviceContext` to its `MiniportInitializeEx` as
    /// `IMDeviceInstanceContext` (`PASSIVE_LEVEL`).
    pub fn NdisIMInitializeDeviceInstanceEx(
        DriverHandle: NDIS_HANDLE,
        DriverInstance: *mut NDIS_STRING,
        DeviceContext: NDIS_HANDLE,
    ) -> NDIS_STATUS;

    /// Cancels an `NdisIMInitializeDeviceInstanceEx` whose
    /// `MiniportInitializeEx` has not run (`PASSIVE_LEVEL`).
    pub fn NdisIMCancelInitializeDeviceInstance(
        DriverHandle: NDIS_HANDLE,
        DeviceInstance: *mut NDIS_STRING,
    ) -> NDIS_STATUS;

    /// Halts and removes an initialised virtual miniport (`PASSIVE_LEVEL`).
    pub fn NdisIMDeInitializeDeviceInstance(NdisMiniportHandle: NDIS_HANDLE) -> NDIS_STATUS;

    /// The protocol binding context of the intermediate driver bound to
    /// this binding's virtual miniport (`<= APC_LEVEL`).
    pub fn NdisIMGetBindingContext(NdisBindingHandle: NDIS_HANDLE) -> NDIS_HANDLE;

    /// Records that interface `HigherLayerIfIndex` runs over
    /// `LowerLayerIfIndex` (`PASSIVE_LEVEL`).
    pub fn NdisIfAddIfStackEntry(
        HigherLayerIfIndex: NET_IFINDEX,
        LowerLayerIfIndex: NET_IFINDEX,
    ) -> NDIS_STATUS;

    /// Removes an interface stack entry (`PASSIVE_LEVEL`).
    pub fn NdisIfDeleteIfStackEntry(
        HigherLayerIfIndex: NET_IFINDEX,
        LowerLayerIfIndex: NET_IFINDEX,
    );
}
