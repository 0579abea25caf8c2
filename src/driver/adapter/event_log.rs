//! V's entries in the system event log (`NdisWriteEventLogEntry`): the
//! NDKPI INF requirements ask a RoCE provider to log an event when the
//! RoCE frame size it operates with differs from the configured
//! `*NetworkDirectRoCEFrameSize`.
//!
//! rsndk registers no message file, so the event viewer shows the
//! insertion strings (configured size, operational size, P's MTU) and the
//! same three numbers as binary data (little-endian `u32`s), under the
//! event code [`EVENT_ROCE_FRAME_SIZE_CAPPED`].

use core::ptr;
use core::sync::atomic::{AtomicPtr, Ordering};

use ndis::{DRIVER_OBJECT, NdisWriteEventLogEntry};
use ndkpi::{NDIS_STATUS, NDIS_STATUS_SUCCESS};

use crate::driver::log::log_error;

/// Event code of a capped RoCE frame size: severity warning (bits 31-30
/// `10`), customer bit (29) set, code 1.
pub const EVENT_ROCE_FRAME_SIZE_CAPPED: NDIS_STATUS = 0xA000_0001_u32 as NDIS_STATUS;

/// The driver object `DriverEntry` got: the log handle
/// `NdisWriteEventLogEntry` wants.
static DRIVER: AtomicPtr<DRIVER_OBJECT> = AtomicPtr::new(ptr::null_mut());

/// Records the driver object (`DriverEntry`), or forgets it (null, at
/// unload).
pub fn set_driver_object(driver: *mut DRIVER_OBJECT) {
    DRIVER.store(driver, Ordering::Release);
}

/// UTF-16 code units of the decimal digits of `value`, NUL-terminated,
/// appended to `out` at `*at`.
fn push_decimal(out: &mut [u16], at: &mut usize, value: u32) {
    let mut digits = [0u16; 10];
    let mut n = 0;
    let mut rest = value;
    loop {
        digits[n] = u16::from(b'0') + (rest % 10) as u16;
        n += 1;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    for k in (0..n).rev() {
        out[*at] = digits[k];
        *at += 1;
    }
    out[*at] = 0;
    *at += 1;
}

/// Logs that the RoCE frame size is `operational`, not the `configured`
/// one, because P's MTU (`link_mtu`) carries no larger RoCEv2 frame
/// (`<= DISPATCH_LEVEL`). A failure to log is only traced.
pub fn roce_frame_size_capped(configured: u32, operational: u32, link_mtu: u32) {
    let driver = DRIVER.load(Ordering::Acquire);
    if driver.is_null() {
        return;
    }
    // Three numbers of at most 10 digits, each NUL-terminated.
    let mut strings = [0u16; 33];
    let mut at = 0;
    for value in [configured, operational, link_mtu] {
        push_decimal(&mut strings, &mut at, value);
    }
    let mut data = [0u8; 12];
    for (k, value) in [configured, operational, link_mtu].into_iter().enumerate() {
        data[4 * k..4 * k + 4].copy_from_slice(&value.to_le_bytes());
    }
    // SAFETY: <= DISPATCH_LEVEL; the driver object DriverEntry got (the
    // driver is loaded while V exists); three NUL-terminated strings and
    // 12 bytes of data, valid for the call (NDIS copies them).
    let status = unsafe {
        NdisWriteEventLogEntry(
            driver.cast(),
            EVENT_ROCE_FRAME_SIZE_CAPPED,
            1,
            3,
            strings.as_mut_ptr().cast(),
            data.len() as u32,
            data.as_mut_ptr().cast(),
        )
    };
    if status != NDIS_STATUS_SUCCESS {
        log_error!(
            "rsndk: NdisWriteEventLogEntry failed: {:#010x}",
            status as u32
        );
    }
}
