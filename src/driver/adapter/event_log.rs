//! V's entries in the system event log (`NdisWriteEventLogEntry`): the
//! NDKPI INF requirements ask a RoCE provider to log an event when the
//! RoCE frame size it operates with differs from the configured
//! `*NetworkDirectRoCEFrameSize`.
//!
//! rsndk registers no message file, so the event viewer shows the
//! insertion strings (configured size, operational size, P's MTU) and the
//! same three numbers as binary data (little-endian `u32`s), under the
//! event code [`EVENT_ROCE_FRAME_SIZE_CAPPED`].

use ndkpi::NDIS_STATUS;

use crate::driver::kit::ndis::write_event_log;
use crate::driver::log::log_error;

/// Event code of a capped RoCE frame size: severity warning (bits 31-30
/// `10`), customer bit (29) set, code 1.
pub const EVENT_ROCE_FRAME_SIZE_CAPPED: NDIS_STATUS = 0xA000_0001_u32 as NDIS_STATUS;

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
    if let Err(status) =
        write_event_log(EVENT_ROCE_FRAME_SIZE_CAPPED, 1, &mut strings, 3, &mut data)
    {
        log_error!(
            "rsndk: NdisWriteEventLogEntry failed: {:#010x}",
            status as u32
        );
    }
}
