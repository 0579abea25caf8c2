//! The driver's one global object: the provider's platform, installed by
//! `DriverEntry` and freed at unload (both in [`super::entry`]). A
//! leaf: everything that needs the platform reaches it here. (The NDIS
//! driver handles are the kit's: [`super::kit::ndis::DRIVER_HANDLE`].)

use super::kit::memory::GlobalBox;
use super::platform::KernelPlatform;

/// The provider's platform, from `DriverEntry` until `MiniportDriverUnload`.
pub static PLATFORM: GlobalBox<KernelPlatform> = GlobalBox::new();

/// The platform every device context uses.
///
/// # Panics
/// Before `DriverEntry` set it up (never: NDIS calls no handler before).
pub fn platform() -> &'static KernelPlatform {
    PLATFORM.get().expect("rsndk platform not initialised")
}
