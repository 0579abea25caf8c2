//! NETIO.SYS's IP Helper routines for unicast addresses (netioapi.h):
//! `NotifyUnicastIpAddressChange`, `CancelMibChangeNotify2`,
//! `GetUnicastIpAddressTable`, `GetUnicastIpAddressEntry` and
//! `FreeMibTable`, over the bottle's TCP/IP ([`crate::tcpip`]): the
//! loopback interface's addresses and those of every bound V.
//!
//! - IRQL: each routine is documented for `< DISPATCH_LEVEL`, but
//!   `CancelMibChangeNotify2` for `PASSIVE_LEVEL` (it waits); above is
//!   0xC4 / 0xE5.
//! - Bad arguments get the documented `STATUS_INVALID_PARAMETER`;
//!   allocations are fault points failing with
//!   `STATUS_INSUFFICIENT_RESOURCES` (the documentation's
//!   "STATUS_NOT_ENOUGH_MEMORY" is no NTSTATUS).
//! - A handle or table NETIO never gave out, or took back already, is a
//!   bugcheck: cancelling a handle twice is 0x1E (a stale object)
//!   (`checks::bad_object`); freeing a table twice or one that is
//!   no table is 0xC4 / 0x13 or 0x10, as for pool.
//! - Tables live in the bottle's memory until `FreeMibTable`; those never
//!   freed and notification handles never cancelled are counted for the
//!   unload report ([`tables_outstanding`], [`notifications_open`]).

// Each import's safety contract is its WDK documentation, and the caller is
// the driver; the per-function docs say what the bottle checks instead.
#![expect(
    clippy::missing_safety_doc,
    reason = "imports follow the WDK contract of the same name"
)]

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Mutex, MutexGuard, PoisonError};

use ndis::{
    APC_LEVEL, HANDLE, MIB_UNICASTIPADDRESS_ROW, MIB_UNICASTIPADDRESS_TABLE, PASSIVE_LEVEL,
    PUNICAST_IPADDRESS_CHANGE_CALLBACK,
};
use ndkpi::{
    ADDRESS_FAMILY, BOOLEAN, NTSTATUS, PVOID, STATUS_INSUFFICIENT_RESOURCES,
    STATUS_INVALID_PARAMETER, STATUS_NOT_FOUND, STATUS_SUCCESS,
};

use super::checks::{bad_object, irql_at_most};
use super::iphelper_notify::{self, CancelError};
use super::iphelper_rows::{Family as AddressFamily, full_row, ip_of};
use crate::kernel::verifier::{self, DRIVER_VERIFIER_DETECTED_VIOLATION, firewall};
use crate::tcpip::{self, AddressRow};

/// Bytes before the first row of a table (`NumEntries` and the padding
/// to the row's 8-byte alignment).
const TABLE_HEADER: usize = std::mem::offset_of!(MIB_UNICASTIPADDRESS_TABLE, Table);
/// Bytes of one row.
const ROW: usize = size_of::<MIB_UNICASTIPADDRESS_ROW>();
const _: () =
    assert!(TABLE_HEADER % 8 == 0 && ROW % 8 == 0 && align_of::<MIB_UNICASTIPADDRESS_ROW>() == 8);
/// Freed tables whose memory stays allocated, so a second free is told
/// from a free of memory that was never a table.
const FREED_KEPT: usize = 64;

/// The tables handed out, by address: their memory, in 8-byte units (the
/// rows' alignment).
#[derive(Default)]
struct Tables {
    live: BTreeMap<usize, Box<[u64]>>,
    freed: VecDeque<(usize, Box<[u64]>)>,
}

static TABLES: Mutex<Option<Tables>> = Mutex::new(None);

fn tables() -> MutexGuard<'static, Option<Tables>> {
    TABLES.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Tables `GetUnicastIpAddressTable` returned that were never passed to
/// `FreeMibTable`.
pub fn tables_outstanding() -> usize {
    tables().as_ref().map_or(0, |t| t.live.len())
}

/// Notification handles never passed to `CancelMibChangeNotify2`.
pub fn notifications_open() -> usize {
    iphelper_notify::open()
}

/// Every row of the unicast address table of `family`.
fn rows(family: AddressFamily) -> Vec<AddressRow> {
    tcpip::all_rows()
        .into_iter()
        .filter(|r| family.holds(r.address.ip))
        .collect()
}

/// `NotifyUnicastIpAddressChange` (`< DISPATCH_LEVEL`): registers
/// `Callback` for the unicast address changes of `Family` on every
/// interface; with `InitialNotification`, a first call with
/// `MibInitialNotification` and no row is queued at once.
pub unsafe extern "win64" fn NotifyUnicastIpAddressChange(
    Family: ADDRESS_FAMILY,
    Callback: PUNICAST_IPADDRESS_CHANGE_CALLBACK,
    CallerContext: PVOID,
    InitialNotification: BOOLEAN,
    NotificationHandle: *mut HANDLE,
) -> NTSTATUS {
    firewall("NotifyUnicastIpAddressChange", || {
        irql_at_most("NotifyUnicastIpAddressChange", APC_LEVEL);
        if NotificationHandle.is_null() {
            return STATUS_INVALID_PARAMETER;
        }
        let put = |handle: usize| {
            // SAFETY: the caller's non-null out-pointer for the handle.
            unsafe { NotificationHandle.write_unaligned(handle as HANDLE) };
        };
        let (Some(family), Some(callback)) = (AddressFamily::of(Family), Callback) else {
            put(0);
            return STATUS_INVALID_PARAMETER;
        };
        if verifier::fault_point("NotifyUnicastIpAddressChange") {
            put(0);
            return STATUS_INSUFFICIENT_RESOURCES;
        }
        let handle = iphelper_notify::register(
            family,
            callback,
            CallerContext as usize,
            InitialNotification != 0,
        );
        put(handle);
        STATUS_SUCCESS
    })
}

/// `CancelMibChangeNotify2` (`PASSIVE_LEVEL`): no more callbacks for the
/// handle; waits for one that runs. Null is `STATUS_INVALID_PARAMETER`;
/// from the handle's own callback it would deadlock (reported as 0xC4 /
/// 0x1000, the self-deadlock case); a handle not live is 0x1E.
pub unsafe extern "win64" fn CancelMibChangeNotify2(NotificationHandle: HANDLE) -> NTSTATUS {
    let routine = CancelMibChangeNotify2 as *const () as usize;
    firewall("CancelMibChangeNotify2", || {
        irql_at_most("CancelMibChangeNotify2", PASSIVE_LEVEL);
        let handle = NotificationHandle as usize;
        if handle == 0 {
            return STATUS_INVALID_PARAMETER;
        }
        match iphelper_notify::cancel(handle) {
            Ok(()) => STATUS_SUCCESS,
            Err(CancelError::Unknown) => bad_object(
                "CancelMibChangeNotify2",
                routine,
                handle,
                "not a live notification handle (never registered, or cancelled already)",
            ),
            Err(CancelError::FromOwnCallback) => verifier::bugcheck(
                DRIVER_VERIFIER_DETECTED_VIOLATION,
                [0x1000, handle as u64, 0, 0],
                format!(
                    "CancelMibChangeNotify2({handle:#x}) from that handle's own callback: it \
                     waits for the running callback to return, i.e. for itself (deadlock)"
                ),
            ),
        }
    })
}

/// `GetUnicastIpAddressTable` (`< DISPATCH_LEVEL`): allocates the table
/// of `Family`'s unicast addresses (the loopback interface's and every
/// bound V's) into `*Table`, to be freed with `FreeMibTable`;
/// `STATUS_NOT_FOUND` (and null) when there is none.
pub unsafe extern "win64" fn GetUnicastIpAddressTable(
    Family: ADDRESS_FAMILY,
    Table: *mut *mut MIB_UNICASTIPADDRESS_TABLE,
) -> NTSTATUS {
    firewall("GetUnicastIpAddressTable", || {
        irql_at_most("GetUnicastIpAddressTable", APC_LEVEL);
        if Table.is_null() {
            return STATUS_INVALID_PARAMETER;
        }
        let put = |table: *mut MIB_UNICASTIPADDRESS_TABLE| {
            // SAFETY: the caller's non-null out-pointer for the table.
            unsafe { Table.write_unaligned(table) };
        };
        let Some(family) = AddressFamily::of(Family) else {
            put(std::ptr::null_mut());
            return STATUS_INVALID_PARAMETER;
        };
        let rows = rows(family);
        if rows.is_empty() {
            put(std::ptr::null_mut());
            return STATUS_NOT_FOUND;
        }
        if verifier::fault_point("GetUnicastIpAddressTable") {
            put(std::ptr::null_mut());
            return STATUS_INSUFFICIENT_RESOURCES;
        }
        let units = (TABLE_HEADER + rows.len() * ROW) / 8;
        let mut memory = vec![0u64; units].into_boxed_slice();
        // `NumEntries` (a ULONG, then padding up to the first row): the
        // low half of the first unit, little-endian.
        memory[0] = rows.len() as u64;
        let base = memory.as_mut_ptr();
        for (i, row) in rows.iter().enumerate() {
            let at = base.wrapping_add((TABLE_HEADER + i * ROW) / 8);
            // SAFETY: `memory` holds TABLE_HEADER + n * ROW bytes in u64
            // units (the row's alignment); row i's slot starts at unit
            // (TABLE_HEADER + i * ROW) / 8, inside it.
            unsafe { at.cast::<MIB_UNICASTIPADDRESS_ROW>().write(full_row(row)) };
        }
        let address = base as usize;
        tables()
            .get_or_insert_with(Tables::default)
            .live
            .insert(address, memory);
        put(address as *mut MIB_UNICASTIPADDRESS_TABLE);
        STATUS_SUCCESS
    })
}

/// `GetUnicastIpAddressEntry` (`< DISPATCH_LEVEL`): fills `*Row` for its
/// `Address` on the interface its `InterfaceLuid` (or, if that is zero,
/// `InterfaceIndex`) names.
pub unsafe extern "win64" fn GetUnicastIpAddressEntry(
    Row: *mut MIB_UNICASTIPADDRESS_ROW,
) -> NTSTATUS {
    firewall("GetUnicastIpAddressEntry", || {
        irql_at_most("GetUnicastIpAddressEntry", APC_LEVEL);
        if Row.is_null() {
            return STATUS_INVALID_PARAMETER;
        }
        // SAFETY: the caller's non-null row.
        let key = unsafe { Row.read_unaligned() };
        let Some(ip) = ip_of(&key.Address) else {
            return STATUS_INVALID_PARAMETER;
        };
        let (luid, index) = (key.InterfaceLuid.Value, key.InterfaceIndex);
        if luid == 0 && index == 0 {
            return STATUS_INVALID_PARAMETER;
        }
        let all = tcpip::all_rows();
        let on_interface = |r: &&AddressRow| {
            if luid != 0 {
                r.luid == luid
            } else {
                r.if_index == index
            }
        };
        if !all.iter().any(|r| on_interface(&r)) {
            return STATUS_NOT_FOUND;
        }
        let Some(found) = all.iter().filter(on_interface).find(|r| r.address.ip == ip) else {
            return STATUS_NOT_FOUND;
        };
        // SAFETY: the caller's non-null row (checked on entry), read above
        // and now written whole.
        unsafe { Row.write_unaligned(full_row(found)) };
        STATUS_SUCCESS
    })
}

/// `FreeMibTable` (`< DISPATCH_LEVEL`): frees a table a `Get*Table`
/// routine returned (null: nothing).
pub unsafe extern "win64" fn FreeMibTable(Memory: PVOID) {
    firewall("FreeMibTable", || {
        irql_at_most("FreeMibTable", APC_LEVEL);
        let address = Memory as usize;
        if address == 0 {
            return;
        }
        let mut guard = tables();
        let t = guard.get_or_insert_with(Tables::default);
        if let Some(table) = t.live.remove(&address) {
            t.freed.push_back((address, table));
            while t.freed.len() > FREED_KEPT {
                t.freed.pop_front();
            }
            return;
        }
        let twice = t.freed.iter().any(|(a, _)| *a == address);
        drop(guard);
        if twice {
            verifier::bugcheck(
                DRIVER_VERIFIER_DETECTED_VIOLATION,
                [0x13, 0, address as u64, 0],
                format!("FreeMibTable: double free of MIB table {address:#x}"),
            );
        }
        verifier::bugcheck(
            DRIVER_VERIFIER_DETECTED_VIOLATION,
            [0x10, address as u64, 0, 0],
            format!("FreeMibTable({address:#x}): not a table a Get*Table routine returned"),
        );
    });
}
