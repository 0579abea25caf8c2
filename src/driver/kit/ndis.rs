//! NDIS handles as typed tokens, and the NDIS calls on them that take no
//! NBLs or OID requests: attributes, status and PnP indications, pause
//! completion, IM device instances, opening and closing a binding, the
//! interface stack, the registry configuration and the event log; and the
//! IP Helper's unicast address table.
//!
//! A [`Handle`] is only ever made here, from a value NDIS gave the
//! driver, and names its kind ([`kind`]), so a call on it passes NDIS the
//! kind of handle it wants. How long a handle stays valid is NDIS's
//! protocol (an adapter handle from `MiniportInitializeEx` until
//! `MiniportHaltEx` returns, a binding handle from the open until the
//! close completed); the driver's sequences (rundowns, counts, the halt
//! and unbind orders) keep every use inside it, as each caller's docs say.

use core::ffi::c_void;
use core::marker::PhantomData;
use core::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use core::ptr::{self, NonNull};
use core::sync::atomic::{AtomicPtr, Ordering};

use ndis::{
    AF_UNSPEC, FreeMibTable, GetUnicastIpAddressTable, MIB_UNICASTIPADDRESS_ROW,
    MIB_UNICASTIPADDRESS_TABLE, SOCKADDR_INET,
};
use ndis::{
    DRIVER_OBJECT, NDIS_CONFIGURATION_OBJECT, NDIS_CONFIGURATION_PARAMETER, NDIS_HANDLE,
    NDIS_LINK_STATE, NDIS_MEDIUM, NDIS_MINIPORT_ADAPTER_ATTRIBUTES, NDIS_OPEN_PARAMETERS,
    NDIS_STATUS_INDICATION, NDIS_STATUS_LINK_STATE, NDIS_STRING, NET_IFINDEX,
    NET_PNP_EVENT_NOTIFICATION, NdisCloseAdapterEx, NdisCloseConfiguration,
    NdisIMCancelInitializeDeviceInstance, NdisIMDeInitializeDeviceInstance,
    NdisIMInitializeDeviceInstanceEx, NdisIfAddIfStackEntry, NdisIfDeleteIfStackEntry,
    NdisMIndicateStatusEx, NdisMNetPnPEvent, NdisMPauseComplete, NdisMSetMiniportAttributes,
    NdisMedium802_3, NdisOpenAdapterEx, NdisOpenConfigurationEx, NdisParameterInteger,
    NdisReadConfiguration, NdisWriteEventLogEntry, UINT, UNICODE_STRING,
};
use ndkpi::{AF_INET, AF_INET6, NDIS_STATUS, NDIS_STATUS_SUCCESS, NTSTATUS, PVOID};

/// The kinds of NDIS handle.
pub mod kind {
    /// V's miniport adapter handle (`MiniportAdapterHandle`).
    #[derive(Debug)]
    pub enum Adapter {}
    /// A binding to P (`NdisBindingHandle`).
    #[derive(Debug)]
    pub enum Binding {}
    /// The miniport driver handle of `NdisMRegisterMiniportDriver`.
    #[derive(Debug)]
    pub enum MiniportDriver {}
    /// The protocol driver handle of `NdisRegisterProtocolDriver`.
    #[derive(Debug)]
    pub enum ProtocolDriver {}
}

/// A non-null handle NDIS gave the driver, of kind `K`.
pub struct Handle<K> {
    raw: NDIS_HANDLE,
    kind: PhantomData<K>,
}

/// V's adapter handle.
pub type AdapterHandle = Handle<kind::Adapter>;
/// A binding handle.
pub type BindingHandle = Handle<kind::Binding>;
/// The protocol driver handle.
pub type ProtocolHandle = Handle<kind::ProtocolDriver>;

impl<K> Clone for Handle<K> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<K> Copy for Handle<K> {}

impl<K> PartialEq for Handle<K> {
    fn eq(&self, other: &Self) -> bool {
        self.raw == other.raw
    }
}

impl<K> Eq for Handle<K> {}

impl<K> core::fmt::Debug for Handle<K> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Handle({:p})", self.raw)
    }
}

// SAFETY: an NDIS handle is an opaque token NDIS allows on any thread; the
// value itself is never dereferenced by the driver.
unsafe impl<K> Send for Handle<K> {}
// SAFETY: as for Send: shared use only copies the token.
unsafe impl<K> Sync for Handle<K> {}

impl<K> Handle<K> {
    /// The handle NDIS gave, `None` for null.
    pub(in crate::driver) fn from_ndis(raw: NDIS_HANDLE) -> Option<Self> {
        (!raw.is_null()).then_some(Self {
            raw,
            kind: PhantomData,
        })
    }

    /// The value NDIS knows it by.
    pub(in crate::driver) fn raw(self) -> NDIS_HANDLE {
        self.raw
    }
}

/// A handle slot shared between threads (set and cleared by the owner of
/// the handle, read anywhere), or written by NDIS itself through
/// [`AtomicHandle::slot`] when a call returns the handle that way.
pub struct AtomicHandle<K> {
    raw: AtomicPtr<c_void>,
    kind: PhantomData<K>,
}

impl<K> core::fmt::Debug for AtomicHandle<K> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_tuple("AtomicHandle").field(&self.load()).finish()
    }
}

// SAFETY: the slot is an atomic word holding an opaque NDIS token.
unsafe impl<K> Send for AtomicHandle<K> {}
// SAFETY: as for Send.
unsafe impl<K> Sync for AtomicHandle<K> {}

impl<K> AtomicHandle<K> {
    /// An empty slot.
    pub const fn empty() -> Self {
        Self {
            raw: AtomicPtr::new(ptr::null_mut()),
            kind: PhantomData,
        }
    }

    /// The handle, if set.
    pub fn load(&self) -> Option<Handle<K>> {
        Handle::from_ndis(self.raw.load(Ordering::Acquire))
    }

    /// Sets or clears the handle.
    pub fn store(&self, handle: Option<Handle<K>>) {
        let raw = handle.map_or(ptr::null_mut(), Handle::raw);
        self.raw.store(raw, Ordering::Release);
    }

    /// Takes the handle out, leaving the slot empty.
    pub fn take(&self) -> Option<Handle<K>> {
        Handle::from_ndis(self.raw.swap(ptr::null_mut(), Ordering::AcqRel))
    }

    /// The slot's address, for NDIS to write the handle into.
    pub(in crate::driver) fn slot(&self) -> *mut NDIS_HANDLE {
        self.raw.as_ptr()
    }
}

/// The miniport driver handle, from `DriverEntry` until unload.
pub static DRIVER_HANDLE: AtomicHandle<kind::MiniportDriver> = AtomicHandle::empty();

/// The protocol driver handle, written by NDIS straight into this slot
/// (binds may start before `NdisRegisterProtocolDriver` returns).
pub static PROTOCOL_HANDLE: AtomicHandle<kind::ProtocolDriver> = AtomicHandle::empty();

/// The driver object `DriverEntry` got: the log handle
/// `NdisWriteEventLogEntry` wants (null outside `DriverEntry`..unload).
pub(in crate::driver) static DRIVER_OBJECT: AtomicPtr<DRIVER_OBJECT> =
    AtomicPtr::new(ptr::null_mut());

fn check(status: NDIS_STATUS) -> Result<(), NDIS_STATUS> {
    if status == NDIS_STATUS_SUCCESS {
        Ok(())
    } else {
        Err(status)
    }
}

/// `NdisMSetMiniportAttributes` (`PASSIVE_LEVEL`, inside
/// `MiniportInitializeEx`). The attribute structures rsndk builds point
/// only to memory that lives across the call (the static OID list, the
/// caller's locals), which NDIS reads before it returns.
pub fn set_attributes(
    adapter: AdapterHandle,
    attributes: impl Into<NDIS_MINIPORT_ADAPTER_ATTRIBUTES>,
) -> Result<(), NDIS_STATUS> {
    let mut attributes = attributes.into();
    // SAFETY: PASSIVE_LEVEL inside MiniportInitializeEx (this function's
    // contract); NDIS reads `Header.Size` bytes of the structure, and
    // what its pointers name, during the call.
    check(unsafe { NdisMSetMiniportAttributes(adapter.raw(), &raw mut attributes) })
}

/// Indicates `state` up on V (`NdisMIndicateStatusEx`,
/// `NDIS_STATUS_LINK_STATE`, `<= DISPATCH_LEVEL`).
pub fn indicate_link_state(adapter: AdapterHandle, state: NDIS_LINK_STATE) {
    let mut state = state;
    let mut indication = NDIS_STATUS_INDICATION::new(
        adapter.raw(),
        NDIS_STATUS_LINK_STATE,
        (&raw mut state).cast(),
        size_of::<NDIS_LINK_STATE>() as u32,
    );
    // SAFETY: <= DISPATCH_LEVEL; V's handle (its users keep it valid: the
    // rundown); the indication and its buffer live across the call.
    unsafe { NdisMIndicateStatusEx(adapter.raw(), &raw mut indication) };
}

/// Completes V's pended pause (`NdisMPauseComplete`, `<= DISPATCH_LEVEL`);
/// the caller is the one that completed it ([`super::pause_gate`]).
pub fn pause_complete(adapter: AdapterHandle) {
    // SAFETY: <= DISPATCH_LEVEL; V's handle (V cannot halt before its
    // pause completed); the pause pended and the caller completes it once
    // (the pause gate's compare-exchange).
    unsafe { NdisMPauseComplete(adapter.raw()) };
}

/// Raises a network PnP event on V (`NdisMNetPnPEvent`, `PASSIVE_LEVEL`,
/// never from inside an OID request of V's).
pub fn net_pnp_event(adapter: AdapterHandle, event: i32) -> Result<(), NDIS_STATUS> {
    let mut notification = NET_PNP_EVENT_NOTIFICATION::new(event);
    // SAFETY: PASSIVE_LEVEL, outside any OID request (this function's
    // contract); a valid notification for the call.
    check(unsafe { NdisMNetPnPEvent(adapter.raw(), &raw mut notification) })
}

/// Records that interface `upper` runs over `lower`
/// (`NdisIfAddIfStackEntry`, `PASSIVE_LEVEL`).
pub fn add_if_stack_entry(upper: NET_IFINDEX, lower: NET_IFINDEX) -> Result<(), NDIS_STATUS> {
    // SAFETY: PASSIVE_LEVEL; two interface indexes (plain numbers).
    check(unsafe { NdisIfAddIfStackEntry(upper, lower) })
}

/// Removes an interface stack entry (`NdisIfDeleteIfStackEntry`,
/// `PASSIVE_LEVEL`).
pub fn delete_if_stack_entry(upper: NET_IFINDEX, lower: NET_IFINDEX) {
    // SAFETY: PASSIVE_LEVEL; two interface indexes (plain numbers).
    unsafe { NdisIfDeleteIfStackEntry(upper, lower) };
}

/// A device name kept for NDIS's IM calls (UTF-16, no terminator).
fn ndis_string(name: &[u16]) -> NDIS_STRING {
    let bytes = (name.len() * 2).min(usize::from(u16::MAX) - 1) as u16;
    UNICODE_STRING {
        Length: bytes,
        MaximumLength: bytes,
        Buffer: name.as_ptr().cast_mut(),
    }
}

/// Asks NDIS for V's device instance `name`
/// (`NdisIMInitializeDeviceInstanceEx`, `PASSIVE_LEVEL`); NDIS calls
/// `MiniportInitializeEx` with `context` as `IMDeviceInstanceContext`,
/// which must stay alive until V's halt (the bind/unbind sequences).
pub fn initialize_device_instance<T>(name: &[u16], context: &T) -> Result<(), NDIS_STATUS> {
    let Some(driver) = DRIVER_HANDLE.load() else {
        return Err(ndkpi::NDIS_STATUS_FAILURE);
    };
    let mut name = ndis_string(name);
    let context: NDIS_HANDLE = ptr::from_ref(context).cast_mut().cast();
    // SAFETY: PASSIVE_LEVEL; the miniport driver handle of DriverEntry; the
    // name lives across the call (NDIS copies it); the context's life is
    // the caller's (this function's contract).
    check(unsafe { NdisIMInitializeDeviceInstanceEx(driver.raw(), &raw mut name, context) })
}

/// Cancels the initialisation of V's instance `name`
/// (`NdisIMCancelInitializeDeviceInstance`, `PASSIVE_LEVEL`).
pub fn cancel_device_instance(name: &[u16]) -> Result<(), NDIS_STATUS> {
    let Some(driver) = DRIVER_HANDLE.load() else {
        return Err(ndkpi::NDIS_STATUS_FAILURE);
    };
    let mut name = ndis_string(name);
    // SAFETY: PASSIVE_LEVEL; the driver handle and a name valid for the
    // call.
    check(unsafe { NdisIMCancelInitializeDeviceInstance(driver.raw(), &raw mut name) })
}

/// Halts and removes V (`NdisIMDeInitializeDeviceInstance`,
/// `PASSIVE_LEVEL`, V initialised and not deinitialised yet).
pub fn deinitialize_device_instance(adapter: AdapterHandle) -> Result<(), NDIS_STATUS> {
    // SAFETY: PASSIVE_LEVEL; V's handle, initialised and not yet
    // deinitialised (this function's contract: only the unbind calls it,
    // once, while the instance is up).
    check(unsafe { NdisIMDeInitializeDeviceInstance(adapter.raw()) })
}

/// Opens the adapter `adapter_name` on behalf of `protocol`
/// (`NdisOpenAdapterEx`, `PASSIVE_LEVEL` inside `ProtocolBindAdapterEx`
/// with NDIS's `bind_context`, which `bind_context` is). NDIS writes the
/// binding handle into `slot` (possibly after returning
/// `NDIS_STATUS_PENDING`) and passes `context` to every protocol handler
/// of the binding, so both must stay put until the close completed.
pub fn open_adapter<T>(
    protocol: ProtocolHandle,
    context: &T,
    bind_context: BindContext,
    adapter_name: *mut NDIS_STRING,
    slot: &AtomicHandle<kind::Binding>,
) -> NDIS_STATUS {
    let mut medium: [NDIS_MEDIUM; 1] = [NdisMedium802_3];
    let mut selected: UINT = 0;
    // No frame type array: every frame type (the sample's choice).
    let mut params = NDIS_OPEN_PARAMETERS::new(
        adapter_name,
        medium.as_mut_ptr(),
        1,
        &raw mut selected,
        ptr::null_mut(),
        0,
    );
    // SAFETY: PASSIVE_LEVEL inside ProtocolBindAdapterEx with NDIS's bind
    // context; the parameters and the medium array live across the call
    // (NDIS reads them before returning, even when the open pends); the
    // handle slot and the context stay put until the close completed
    // (this function's contract).
    unsafe {
        NdisOpenAdapterEx(
            protocol.raw(),
            ptr::from_ref(context).cast_mut().cast(),
            &raw mut params,
            bind_context.0,
            slot.slot(),
        )
    }
}

/// The bind context of one `ProtocolBindAdapterEx` call.
#[derive(Clone, Copy, Debug)]
pub struct BindContext(NDIS_HANDLE);

impl BindContext {
    /// NDIS's bind context of the running bind.
    pub(in crate::driver) fn new(raw: NDIS_HANDLE) -> Self {
        Self(raw)
    }
}

/// Closes a binding (`NdisCloseAdapterEx`, `PASSIVE_LEVEL`, nothing sent
/// or requested on it outstanding); `NDIS_STATUS_PENDING` completes
/// through `ProtocolCloseAdapterCompleteEx`.
pub fn close_adapter(binding: BindingHandle) -> NDIS_STATUS {
    // SAFETY: PASSIVE_LEVEL; the handle NdisOpenAdapterEx gave, closed
    // once, with no request or send outstanding (this function's
    // contract: the binding waits for both first).
    unsafe { NdisCloseAdapterEx(binding.raw()) }
}

/// Passes a send cancel down to P (`NdisCancelSendNetBufferLists`,
/// `<= DISPATCH_LEVEL`).
pub fn cancel_sends(binding: BindingHandle, cancel_id: PVOID) {
    // SAFETY: <= DISPATCH_LEVEL; the open binding (V's halt precedes the
    // close); NDIS only compares the identifier.
    unsafe { ndis::NdisCancelSendNetBufferLists(binding.raw(), cancel_id) };
}

/// Where a configuration is read from.
#[derive(Clone, Copy, Debug)]
pub enum ConfigurationOf {
    /// V's driver key.
    Adapter(AdapterHandle),
    /// The protocol section of a binding.
    Binding(BindingHandle),
}

/// An open registry configuration (`NdisOpenConfigurationEx`), closed on
/// drop; `PASSIVE_LEVEL` throughout.
#[derive(Debug)]
pub struct Configuration {
    handle: NDIS_HANDLE,
}

impl Configuration {
    /// Opens the configuration of `of`; NDIS's status on failure.
    pub fn open(of: ConfigurationOf) -> Result<Self, NDIS_STATUS> {
        let raw = match of {
            ConfigurationOf::Adapter(h) => h.raw(),
            ConfigurationOf::Binding(h) => h.raw(),
        };
        let mut object = NDIS_CONFIGURATION_OBJECT::new(raw);
        let mut handle: NDIS_HANDLE = ptr::null_mut();
        // SAFETY: PASSIVE_LEVEL; a revision-1 object naming a live adapter
        // or open binding; a valid out-pointer.
        let status = unsafe { NdisOpenConfigurationEx(&raw mut object, &raw mut handle) };
        if status != NDIS_STATUS_SUCCESS {
            return Err(status);
        }
        Ok(Self { handle })
    }

    /// Reads one keyword; `None` if absent or of another type.
    fn read(&self, keyword: &'static [u16], kind: i32) -> Option<NDIS_CONFIGURATION_PARAMETER> {
        let mut name: NDIS_STRING = UNICODE_STRING::from_static(keyword);
        let mut status: NDIS_STATUS = NDIS_STATUS_SUCCESS;
        let mut value: *mut NDIS_CONFIGURATION_PARAMETER = ptr::null_mut();
        // SAFETY: an open handle (this value), valid out-pointers and
        // keyword.
        unsafe {
            NdisReadConfiguration(
                &raw mut status,
                &raw mut value,
                self.handle,
                &raw mut name,
                kind,
            );
        };
        if status != NDIS_STATUS_SUCCESS || value.is_null() {
            return None;
        }
        // SAFETY: NDIS returned a parameter valid until the handle closes.
        let value = unsafe { *value };
        (value.ParameterType == kind).then_some(value)
    }

    /// An integer keyword.
    pub fn integer(&self, keyword: &'static [u16]) -> Option<u32> {
        let value = self.read(keyword, NdisParameterInteger)?;
        // SAFETY: an integer parameter's live member is IntegerData.
        Some(unsafe { value.ParameterData.IntegerData })
    }

    /// Runs `f` on a string keyword of type `kind`
    /// (`NdisParameterString` or `NdisParameterMultiString`): its UTF-16
    /// code units (none for a null buffer); `None` if absent or of
    /// another type.
    pub fn string<R>(
        &self,
        keyword: &'static [u16],
        kind: i32,
        f: impl FnOnce(&[u16]) -> R,
    ) -> Option<R> {
        let value = self.read(keyword, kind)?;
        // SAFETY: a string parameter's live member is StringData (the
        // callers ask for string types only, and `read` checked the type).
        let text = unsafe { value.ParameterData.StringData };
        if text.Buffer.is_null() {
            return Some(f(&[]));
        }
        // SAFETY: NDIS's string of `Length` bytes, valid until the
        // configuration handle closes (after `f`, which borrows `self`).
        let units =
            unsafe { core::slice::from_raw_parts(text.Buffer, usize::from(text.Length) / 2) };
        Some(f(units))
    }
}

impl Drop for Configuration {
    fn drop(&mut self) {
        // SAFETY: opened in `open`, closed once; nothing read from it is
        // kept (strings are copied).
        unsafe { NdisCloseConfiguration(self.handle) };
    }
}

/// Writes an event log entry with `code`, the NUL-terminated UTF-16
/// `strings` (`count` of them, one after another) and `data`
/// (`NdisWriteEventLogEntry`, `<= DISPATCH_LEVEL`); `Ok(())` when there is
/// no driver object to log for (outside `DriverEntry`..unload), and
/// `NDIS_STATUS_INVALID_PARAMETER` when `strings` holds fewer than `count`
/// terminated strings.
pub fn write_event_log(
    code: NDIS_STATUS,
    unique: u32,
    strings: &mut [u16],
    count: u16,
    data: &mut [u8],
) -> Result<(), NDIS_STATUS> {
    let driver = DRIVER_OBJECT.load(Ordering::Acquire);
    if driver.is_null() {
        return Ok(());
    }
    if strings.iter().filter(|&&c| c == 0).count() < usize::from(count) {
        return Err(ndkpi::NDIS_STATUS_INVALID_PARAMETER);
    }
    // SAFETY: <= DISPATCH_LEVEL; the driver object DriverEntry got (the
    // slot is cleared at unload); the strings and data are the caller's,
    // valid for the call (NDIS copies them).
    check(unsafe {
        NdisWriteEventLogEntry(
            driver.cast(),
            code,
            unique,
            count,
            strings.as_mut_ptr().cast(),
            data.len() as u32,
            data.as_mut_ptr().cast(),
        )
    })
}

/// Runs `f` on the rows of the IP Helper's unicast address table, IPv4
/// and IPv6 (`GetUnicastIpAddressTable`, `AF_UNSPEC`, `PASSIVE_LEVEL`);
/// the routine's NTSTATUS when the table cannot be read, `Ok(false)` (and
/// `f` not run) when it succeeded without a table.
pub fn with_unicast_addresses(
    f: impl FnOnce(&[MIB_UNICASTIPADDRESS_ROW]),
) -> Result<bool, NTSTATUS> {
    let mut table: *mut MIB_UNICASTIPADDRESS_TABLE = ptr::null_mut();
    // SAFETY: PASSIVE_LEVEL; on success the routine stores a table it
    // allocated, which is freed below with FreeMibTable.
    let status = unsafe { GetUnicastIpAddressTable(AF_UNSPEC, &raw mut table) };
    if status < 0 {
        return Err(status);
    }
    let Some(table) = NonNull::new(table) else {
        return Ok(false);
    };
    {
        // SAFETY: a table GetUnicastIpAddressTable returned: a count
        // followed by that many rows, valid until FreeMibTable.
        let header = unsafe { table.as_ref() };
        let first = table
            .as_ptr()
            .wrapping_byte_add(core::mem::offset_of!(MIB_UNICASTIPADDRESS_TABLE, Table))
            .cast::<MIB_UNICASTIPADDRESS_ROW>();
        // SAFETY: `NumEntries` rows follow the count (the table's layout),
        // inside the allocation, until FreeMibTable below.
        let rows = unsafe { core::slice::from_raw_parts(first, header.NumEntries as usize) };
        f(rows);
    }
    // SAFETY: the table GetUnicastIpAddressTable allocated, no longer
    // borrowed (the block above ended), freed once.
    unsafe { FreeMibTable(table.as_ptr().cast()) };
    Ok(true)
}

/// The IP address of a `SOCKADDR_INET`, if IPv4 or IPv6.
pub fn ip_of(address: &SOCKADDR_INET) -> Option<IpAddr> {
    // SAFETY: the family tag is the first two bytes of every member, all
    // initialised in a row the IP helper filled (or a value built by
    // crate ndis's conversions); any bit pattern is a valid u16.
    let family = unsafe { address.si_family };
    match family {
        AF_INET => {
            // SAFETY: AF_INET: the IPv4 member is the one written, and a
            // SOCKADDR_IN of plain integers is valid for any bytes.
            let v4 = unsafe { address.Ipv4 };
            Some(IpAddr::V4(Ipv4Addr::from(v4.sin_addr.S_un)))
        }
        AF_INET6 => {
            // SAFETY: AF_INET6: the IPv6 member is the one written, and a
            // SOCKADDR_IN6 of plain integers is valid for any bytes.
            let v6 = unsafe { address.Ipv6 };
            Some(IpAddr::V6(Ipv6Addr::from(v6.sin6_addr.u)))
        }
        _ => None,
    }
}
