//! `NdisWriteEventLogEntry` (`<= DISPATCH_LEVEL`): the bottle's system
//! event log, which tests read ([`entries`]).
//!
//! The entry is checked as NDIS would build its I/O error log packet:
//! `LogHandle` is the driver object `DriverEntry` got; `StringsList` holds
//! `NumStrings` NUL-terminated UTF-16 strings one after another (null with
//! 0); `Data` holds `DataSize` bytes (null with 0). Strings and data
//! (padded to 4 bytes) longer than `MAX_EVENT_LOG_DATA_SIZE` get
//! `NDIS_STATUS_BUFFER_TOO_SHORT` and nothing is logged. A pointer and
//! count that disagree end in a bug check of the bottle's own (0xC4 with
//! parameter 1 [`EVENT_LOG_MISUSE`], not a Windows code: NDIS would build
//! a packet from whatever the pointers hold).

// Each import's safety contract is its WDK documentation, and the caller is
// the driver; the per-function docs say what the bottle checks instead.
#![expect(
    clippy::missing_safety_doc,
    reason = "imports follow the WDK contract of the same name"
)]

use std::sync::{Mutex, PoisonError};

use ndis::{NDIS_STATUS_BUFFER_TOO_SHORT, NDIS_STATUS_SUCCESS};
use ndkpi::{NDIS_STATUS, PVOID, ULONG, USHORT};

use super::checks::{guarded, invalid_handle, require_dispatch_or_below};
use super::state;
use crate::kernel::verifier::{self, DRIVER_VERIFIER_DETECTED_VIOLATION};

/// `MAX_EVENT_LOG_DATA_SIZE` on x64: `(ERROR_LOG_MAXIMUM_SIZE (240) -
/// sizeof(IO_ERROR_LOG_PACKET) (48) + sizeof(ULONG)) & ~3`.
pub const MAX_EVENT_LOG_DATA_SIZE: usize = 196;

/// Parameter 1 of the bottle's 0xC4 for inconsistent arguments.
pub const EVENT_LOG_MISUSE: u64 = 0x1000_0001;

/// One entry the driver wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventLogEntry {
    /// `EventCode`.
    pub code: NDIS_STATUS,
    /// `UniqueEventValue`.
    pub unique: u32,
    /// The insertion strings.
    pub strings: Vec<String>,
    /// The binary data.
    pub data: Vec<u8>,
}

static LOG: Mutex<Vec<EventLogEntry>> = Mutex::new(Vec::new());

/// Every entry written so far, oldest first.
pub fn entries() -> Vec<EventLogEntry> {
    LOG.lock().unwrap_or_else(PoisonError::into_inner).clone()
}

/// Arguments that disagree (see the module docs).
fn misuse(why: &str) -> ! {
    verifier::bugcheck(
        DRIVER_VERIFIER_DETECTED_VIOLATION,
        [EVENT_LOG_MISUSE, 0, 0, 0],
        format!("NdisWriteEventLogEntry: {why}"),
    )
}

/// `NdisWriteEventLogEntry`.
pub unsafe extern "win64" fn NdisWriteEventLogEntry(
    LogHandle: PVOID,
    EventCode: NDIS_STATUS,
    UniqueEventValue: ULONG,
    NumStrings: USHORT,
    StringsList: PVOID,
    DataSize: ULONG,
    Data: PVOID,
) -> NDIS_STATUS {
    const API: &str = "NdisWriteEventLogEntry";
    guarded(API, || {
        require_dispatch_or_below(API, NdisWriteEventLogEntry as *const ());
        let driver_object = state::with(|n| n.driver_object);
        if LogHandle as usize != driver_object || driver_object == 0 {
            invalid_handle(API, LogHandle as usize, "driver object");
        }
        if StringsList.is_null() != (NumStrings == 0) {
            misuse(&format!(
                "StringsList {StringsList:?} with NumStrings {NumStrings}"
            ));
        }
        if Data.is_null() != (DataSize == 0) {
            misuse(&format!("Data {Data:?} with DataSize {DataSize}"));
        }
        let mut strings = Vec::new();
        let mut at = StringsList.cast::<u16>().cast_const();
        let mut total = 0usize;
        for _ in 0..NumStrings {
            let mut units = Vec::new();
            loop {
                if total + 2 * (units.len() + 1) > MAX_EVENT_LOG_DATA_SIZE {
                    return NDIS_STATUS_BUFFER_TOO_SHORT;
                }
                // SAFETY: the driver's strings (the call's contract), read
                // up to their terminators, bounded by the maximum size.
                let unit = unsafe { at.read_unaligned() };
                at = at.wrapping_add(1);
                if unit == 0 {
                    break;
                }
                units.push(unit);
            }
            total += 2 * (units.len() + 1);
            strings.push(String::from_utf16_lossy(&units));
        }
        let padded = (DataSize as usize).next_multiple_of(4);
        if total + padded > MAX_EVENT_LOG_DATA_SIZE {
            return NDIS_STATUS_BUFFER_TOO_SHORT;
        }
        let data = if Data.is_null() {
            Vec::new()
        } else {
            // SAFETY: `DataSize` readable bytes at `Data` (the contract),
            // at most MAX_EVENT_LOG_DATA_SIZE (checked).
            unsafe { std::slice::from_raw_parts(Data.cast::<u8>(), DataSize as usize) }.to_vec()
        };
        LOG.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(EventLogEntry {
                code: EventCode,
                unique: UniqueEventValue,
                strings,
                data,
            });
        NDIS_STATUS_SUCCESS
    })
}
