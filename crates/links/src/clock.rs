//! The clock of a link that holds datagrams back for a while.

/// Monotonic time, read by a link that holds datagrams back for a
/// while (a [`crate::FaultLink`]'s injected delays, the in-memory
/// [`crate::fabric::FabricEndpoint`]'s due times); never by the device.
pub trait Clock: Send + Sync {
    /// Microseconds since an arbitrary fixed origin.
    fn now_us(&self) -> u64;
}
