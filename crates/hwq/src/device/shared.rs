//! [`SharedDevice`]: the device as the driver holds it, whatever keeps it
//! alive. A host shares its device in an `Arc` with the threads that run
//! it, the kernel driver in a `TryArc` or a `Box`; the driver sees one
//! `dyn Device` either way, reached with one load as through a
//! `Box<dyn Device>`, and dropping the handle drops its share.

use alloc::boxed::Box;
use alloc::sync::Arc;
use core::fmt;
use core::ops::Deref;
use core::ptr::NonNull;

use super::Device;
use crate::mem::TryArc;

/// A shared (or owned) device, its owner's type erased.
pub struct SharedDevice {
    /// The device, inside the allocation of the owner `release` drops.
    device: NonNull<dyn Device>,
    /// Gives the owner back: rebuilds it from `device` and drops it.
    release: unsafe fn(NonNull<dyn Device>),
}

// SAFETY: the handle stands for an owner of a `Device`, which is `Send +
// Sync`; moving the handle to another thread moves that owner (an `Arc`,
// `TryArc` or `Box` of a `Send + Sync` value may be dropped anywhere).
unsafe impl Send for SharedDevice {}
// SAFETY: sharing the handle shares only `&dyn Device` (`Deref`), and
// `Device` is `Sync`.
unsafe impl Sync for SharedDevice {}

impl SharedDevice {
    /// A share of `device` held in an `Arc`.
    pub fn from_arc<D: Device + 'static>(device: Arc<D>) -> Self {
        unsafe fn release<D: Device + 'static>(device: NonNull<dyn Device>) {
            // SAFETY: `device` is the pointer `from_arc` got from
            // `Arc::into_raw` of an `Arc<D>` (its address, with `D`'s
            // metadata dropped by the cast), and `Drop` releases once.
            drop(unsafe { Arc::from_raw(device.cast::<D>().as_ptr()) });
        }
        let raw = Arc::into_raw(device).cast_mut();
        // SAFETY: `Arc::into_raw` returns the address of the value inside
        // its allocation, never null.
        let device: NonNull<D> = unsafe { NonNull::new_unchecked(raw) };
        Self {
            device,
            release: release::<D>,
        }
    }

    /// A share of `device` held in a fallible `TryArc` (the kernel's).
    pub fn from_try_arc<D: Device + 'static>(device: TryArc<D>) -> Self {
        unsafe fn release<D: Device + 'static>(device: NonNull<dyn Device>) {
            // SAFETY: `device` is the pointer `from_try_arc` got from
            // `TryArc::into_raw` of a `TryArc<D>`, and `Drop` releases once.
            drop(unsafe { TryArc::from_raw(device.cast::<D>().as_ptr()) });
        }
        let raw = TryArc::into_raw(device).cast_mut();
        // SAFETY: `TryArc::into_raw` returns the address of the value
        // inside its allocation, never null.
        let device: NonNull<D> = unsafe { NonNull::new_unchecked(raw) };
        Self {
            device,
            release: release::<D>,
        }
    }

    /// A device owned alone, in a `Box` (allocated fallibly by the caller
    /// where that matters).
    pub fn from_box<D: Device + 'static>(device: Box<D>) -> Self {
        unsafe fn release<D: Device + 'static>(device: NonNull<dyn Device>) {
            // SAFETY: `device` is the pointer `from_box` got from
            // `Box::leak` of a `Box<D>`, and `Drop` releases once.
            drop(unsafe { Box::from_raw(device.cast::<D>().as_ptr()) });
        }
        let device: NonNull<D> = NonNull::from(Box::leak(device));
        Self {
            device,
            release: release::<D>,
        }
    }
}

impl Deref for SharedDevice {
    type Target = dyn Device;

    fn deref(&self) -> &Self::Target {
        // SAFETY: the owner keeps the device alive until `Drop` releases
        // it, and the device is only ever borrowed shared.
        unsafe { self.device.as_ref() }
    }
}

impl Drop for SharedDevice {
    fn drop(&mut self) {
        // SAFETY: `release` is the function the constructor paired with
        // `device`, and this is the only call to it.
        unsafe { (self.release)(self.device) };
    }
}

impl fmt::Debug for SharedDevice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedDevice")
            .field("caps", &self.caps())
            .finish_non_exhaustive()
    }
}
