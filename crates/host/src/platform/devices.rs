//! The platform instance of each device address, and the lease through
//! which a running device holds it.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::atomic::Ordering;
use std::sync::{LazyLock, Mutex, PoisonError};

use super::HostPlatform;

impl HostPlatform {
    /// The instance serving the device at `addr` (adapters opened by
    /// configuration string): one per address for the life of the process,
    /// so a test can read the accounting of its own devices, arm fault
    /// injection before opening one, or share an instance between several
    /// addresses with [`HostPlatform::use_for_device`].
    pub fn for_device(addr: Ipv4Addr) -> &'static Self {
        Self::for_address(addr.into())
    }

    /// [`HostPlatform::for_device`] of a device at an address of either
    /// family.
    pub fn for_address(addr: IpAddr) -> &'static Self {
        devices().entry(addr).or_insert_with(Self::leaked)
    }

    /// Makes the device at `addr` use `platform` from its next start on.
    pub fn use_for_device(addr: Ipv4Addr, platform: &'static Self) {
        devices().insert(addr.into(), platform);
    }
}

/// A running device's hold on the platform of its address: when the last
/// device on an instance goes (the lease is the last thing a device drops),
/// no pool may remain charged on it ([`HostPlatform::check_no_leaks`]).
#[derive(Debug)]
pub struct DeviceLease {
    platform: &'static HostPlatform,
    addr: IpAddr,
}

impl DeviceLease {
    /// A lease on [`HostPlatform::for_address`]`(addr)`.
    pub fn new(addr: IpAddr) -> Self {
        let platform = HostPlatform::for_address(addr);
        platform.devices.fetch_add(1, Ordering::SeqCst);
        Self { platform, addr }
    }

    /// The platform the device uses.
    pub fn platform(&self) -> &'static HostPlatform {
        self.platform
    }
}

impl Drop for DeviceLease {
    fn drop(&mut self) {
        if self.platform.devices.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.platform.check_no_leaks(&format!(
                "device {} stopped (last adapter closed)",
                self.addr
            ));
        }
    }
}

fn devices() -> std::sync::MutexGuard<'static, HashMap<IpAddr, &'static HostPlatform>> {
    static DEVICES: LazyLock<Mutex<HashMap<IpAddr, &'static HostPlatform>>> =
        LazyLock::new(Mutex::default);
    DEVICES.lock().unwrap_or_else(PoisonError::into_inner)
}
