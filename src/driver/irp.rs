//! IRPs the driver allocates for Winsock Kernel calls: what the
//! `IoSetCompletionRoutine` macro does, and a synchronous call helper.

use core::ptr;

use ndis::{
    DEVICE_OBJECT, Executive, IO_COMPLETION_ROUTINE, IRP, IoAllocateIrp, IoFreeIrp, KEVENT,
    KeInitializeEvent, KeSetEvent, KeWaitForSingleObject, KernelMode, NotificationEvent,
    SL_INVOKE_ON_CANCEL, SL_INVOKE_ON_ERROR, SL_INVOKE_ON_SUCCESS, STATUS_MORE_PROCESSING_REQUIRED,
};
use ndkpi::{NTSTATUS, PVOID, STATUS_INSUFFICIENT_RESOURCES, STATUS_PENDING};

/// Sets `routine(context)` to run whenever the next lower driver (WSK)
/// completes `irp`, successful, failed or cancelled.
///
/// # Safety
/// `irp` is an IRP the caller owns with a free next stack location (one
/// from `IoAllocateIrp(1, ..)` or `IoReuseIrp`).
pub unsafe fn set_completion(irp: *mut IRP, routine: IO_COMPLETION_ROUTINE, context: PVOID) {
    // SAFETY: the caller owns the IRP; reading its current location.
    let next = unsafe { &*irp }.next_stack_location();
    // SAFETY: a fresh IRP's next location is its first, inside the IRP.
    let location = unsafe { &mut *next };
    location.CompletionRoutine = Some(routine);
    location.Context = context;
    location.Control = SL_INVOKE_ON_SUCCESS | SL_INVOKE_ON_ERROR | SL_INVOKE_ON_CANCEL;
}

/// Signals the event passed as context; keeps the IRP with its owner.
unsafe extern "win64" fn signal(
    _device: *mut DEVICE_OBJECT,
    _irp: *mut IRP,
    context: PVOID,
) -> NTSTATUS {
    // SAFETY: `call` passes its event, which outlives the wait below.
    unsafe { KeSetEvent(context.cast::<KEVENT>(), 0, 0) };
    STATUS_MORE_PROCESSING_REQUIRED
}

/// Runs a WSK call that completes through an IRP and waits for it
/// (`PASSIVE_LEVEL`). Returns `IoStatus.Information` on success.
pub fn call(f: impl FnOnce(*mut IRP) -> NTSTATUS) -> Result<usize, NTSTATUS> {
    Reserved::new()?.call(f)
}

/// An IRP allocated ahead of the call it is for, so that the call itself
/// cannot fail for want of memory (a socket close at halt: a socket left
/// open would keep `WskDeregister` waiting for ever). Freed when used or
/// dropped.
#[derive(Debug)]
pub struct Reserved(ptr::NonNull<IRP>);

// SAFETY: an IRP the driver owns outright (allocated, not handed to any
// lower driver) is plain memory any processor may use or free.
unsafe impl Send for Reserved {}

impl Reserved {
    /// Allocates the IRP (`<= DISPATCH_LEVEL`).
    pub fn new() -> Result<Self, NTSTATUS> {
        // SAFETY: one stack location (WSK's), no quota.
        let irp = unsafe { IoAllocateIrp(1, 0) };
        ptr::NonNull::new(irp)
            .map(Self)
            .ok_or(STATUS_INSUFFICIENT_RESOURCES)
    }

    /// Gives the IRP up to be kept elsewhere; [`Reserved::from_raw`] takes
    /// it back.
    pub fn into_raw(self) -> *mut IRP {
        let irp = self.0.as_ptr();
        core::mem::forget(self);
        irp
    }

    /// Takes back an IRP [`Reserved::into_raw`] gave up.
    ///
    /// # Safety
    /// `irp` came from `into_raw` and is taken back once.
    pub unsafe fn from_raw(irp: ptr::NonNull<IRP>) -> Self {
        Self(irp)
    }

    /// Runs a WSK call that completes through this IRP and waits for it
    /// (`PASSIVE_LEVEL`). Returns `IoStatus.Information` on success.
    pub fn call(self, f: impl FnOnce(*mut IRP) -> NTSTATUS) -> Result<usize, NTSTATUS> {
        let irp = self.0.as_ptr();
        let mut event = KEVENT::zeroed();
        // SAFETY: a local event, waited on below before it goes away.
        unsafe { KeInitializeEvent(&raw mut event, NotificationEvent, 0) };
        // SAFETY: the IRP is ours, fresh from IoAllocateIrp.
        unsafe { set_completion(irp, signal, (&raw mut event).cast()) };
        if f(irp) == STATUS_PENDING {
            // SAFETY: PASSIVE_LEVEL, kernel-mode wait on our event, no
            // timeout: WSK always completes the IRP, which signals the event.
            unsafe {
                KeWaitForSingleObject(
                    (&raw mut event).cast(),
                    Executive,
                    KernelMode,
                    0,
                    ptr::null_mut(),
                )
            };
        }
        // SAFETY: completed (the routine ran), so the IRP is ours again.
        let status = unsafe { (*irp).IoStatus };
        drop(self);
        if status.Status < 0 {
            Err(status.Status)
        } else {
            Ok(status.Information)
        }
    }
}

impl Drop for Reserved {
    fn drop(&mut self) {
        // SAFETY: allocated by IoAllocateIrp in `new`, not (or no longer)
        // with any lower driver.
        unsafe { IoFreeIrp(self.0.as_ptr()) };
    }
}
