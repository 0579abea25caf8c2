//! Shared endpoints (`NdkCreateSharedEndpoint`) and the registry of local
//! addresses they reserve.
//!
//! A shared endpoint reserves a local address and ND port that several
//! connectors then connect from (`NdkConnectWithSharedEndpoint`). Port 0
//! picks a free port from the ephemeral range 49152-65535
//! (`STATUS_TOO_MANY_ADDRESSES` when none is left); a taken address is
//! `STATUS_SHARING_VIOLATION`. Whether the IP address belongs to the device
//! is the device's to say, at connect time (`STATUS_INVALID_ADDRESS`). A
//! connector connected through the endpoint keeps it open (its close pends).

use core::net::SocketAddr;

use hwq::{AllocError, TryArc};
use ndkpi::{
    NDK_SHARED_ENDPOINT, NTSTATUS, STATUS_INSUFFICIENT_RESOURCES, STATUS_SHARING_VIOLATION,
    STATUS_TOO_MANY_ADDRESSES,
};

use crate::abi::{self, NdkCell, NdkObject};
use crate::adapter::Adapter;
use crate::lock::SpinLock;
use crate::object::{Dep, Life, Object};
use crate::platform::{LockClass, Platform};
use crate::pool::{self, Charge, PoolVec, tags};
use crate::status;

static PORTS_LOCK: LockClass = LockClass::new("device.ports");

/// First ephemeral port.
pub const EPHEMERAL_FIRST: u16 = 49152;

/// Local addresses reserved by shared endpoints of one device.
#[derive(Debug)]
pub struct PortRegistry {
    platform: &'static dyn Platform,
    used: SpinLock<Option<PoolVec<SocketAddr>>>,
}

impl PortRegistry {
    /// An empty registry.
    pub fn new(platform: &'static dyn Platform) -> Self {
        Self {
            platform,
            used: SpinLock::new(platform, &PORTS_LOCK, None),
        }
    }

    fn ensure_room(&self) -> Result<(), AllocError> {
        loop {
            let capacity = {
                let guard = self.used.lock();
                match guard.as_ref() {
                    Some(v) if v.len() < v.capacity() => return Ok(()),
                    Some(v) => v.capacity() * 2,
                    None => 8,
                }
            };
            let mut bigger = PoolVec::with_capacity(self.platform, tags::TABLE, capacity)?;
            let mut guard = self.used.lock();
            if guard.as_ref().map_or(0, PoolVec::capacity) < capacity {
                if let Some(v) = guard.as_ref() {
                    for a in v.iter() {
                        let _ = bigger.push(*a);
                    }
                }
                // The old vector holds plain addresses: dropping it under
                // the lock calls no one.
                *guard = Some(bigger);
            }
        }
    }

    /// Reserves `addr` (port 0: a free ephemeral port); returns the address
    /// reserved.
    pub fn reserve(&self, addr: SocketAddr) -> Result<SocketAddr, NTSTATUS> {
        loop {
            self.ensure_room()
                .map_err(|_| STATUS_INSUFFICIENT_RESOURCES)?;
            let mut guard = self.used.lock();
            let Some(used) = guard.as_mut() else { continue };
            let taken = |a: &SocketAddr| {
                used.iter()
                    .any(|u| u.ip() == a.ip() && u.port() == a.port())
            };
            let chosen = if addr.port() == 0 {
                let mut found = None;
                for port in EPHEMERAL_FIRST..=u16::MAX {
                    let mut candidate = addr;
                    candidate.set_port(port);
                    if !taken(&candidate) {
                        found = Some(candidate);
                        break;
                    }
                }
                found.ok_or(STATUS_TOO_MANY_ADDRESSES)?
            } else if taken(&addr) {
                return Err(STATUS_SHARING_VIOLATION);
            } else {
                addr
            };
            if used.push(chosen).is_err() {
                continue;
            }
            return Ok(chosen);
        }
    }

    /// Calls `visit` with each reserved address under the registry lock
    /// (so at `DISPATCH_LEVEL`; `visit` must not block or take a lock).
    pub(crate) fn for_each(&self, mut visit: impl FnMut(SocketAddr)) {
        let guard = self.used.lock();
        for addr in guard.as_deref().unwrap_or(&[]) {
            visit(*addr);
        }
    }

    /// Releases a reservation.
    pub fn release(&self, addr: SocketAddr) {
        let mut guard = self.used.lock();
        if let Some(used) = guard.as_mut() {
            if let Some(i) = used.iter().position(|a| *a == addr) {
                used.remove(i);
            }
        }
    }
}

/// A shared endpoint.
#[repr(C)]
pub struct SharedEndpoint {
    ndk: NdkCell<NDK_SHARED_ENDPOINT>,
    life: Life,
    adapter: Dep<Adapter>,
    addr: SocketAddr,
    _charge: Charge,
}

impl Object for SharedEndpoint {
    fn life(&self) -> &Life {
        &self.life
    }

    fn platform(&self) -> &'static dyn Platform {
        self.adapter.get().platform()
    }

    fn teardown(&self) {
        self.adapter.get().ctx().ports.release(self.addr);
    }

    fn release_antecedents(&self) {
        self.adapter.release();
    }
}

impl core::fmt::Debug for SharedEndpoint {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SharedEndpoint")
            .field("addr", &self.addr)
            .field("life", &self.life)
            .finish_non_exhaustive()
    }
}

impl SharedEndpoint {
    pub(crate) fn create(adapter: &Adapter, addr: SocketAddr) -> Result<TryArc<Self>, NTSTATUS> {
        let ports = &adapter.ctx().ports;
        let addr = ports.reserve(addr)?;
        let platform = adapter.platform();
        pool::try_arc(platform, tags::SHARED_ENDPOINT, |charge| Self {
            ndk: NdkCell::new(SharedEndpoint::ndk(adapter.version())),
            life: Life::new(platform),
            adapter: Dep::new(&abi::arc(adapter)),
            addr,
            _charge: charge,
        })
        .map_err(|e| {
            ports.release(addr);
            status::alloc_error(e)
        })
    }

    /// The reserved local address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The adapter.
    pub fn adapter(&self) -> &TryArc<Adapter> {
        self.adapter.get()
    }
}
