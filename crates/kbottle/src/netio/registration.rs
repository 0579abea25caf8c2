//! WSK client registration: `WskRegister`, `WskDeregister`,
//! `WskCaptureProviderNPI`, `WskReleaseProviderNPI`, and the provider's
//! availability (WSK may come up after its clients, as at boot).
//!
//! Registrations are kept in a side table keyed by the address of the
//! client's `WSK_REGISTRATION` block. The client handle in a captured
//! provider NPI is a heap tag of the registration, so `WskSocket` can tell
//! a captured client from anything else.

use std::collections::BTreeMap;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use ndis::{
    DISPATCH_LEVEL, PASSIVE_LEVEL, WSK_CLIENT_DISPATCH, WSK_CLIENT_NPI, WSK_INFINITE_WAIT,
    WSK_NO_WAIT, WSK_PROVIDER_NPI, WSK_REGISTRATION,
};
use ndkpi::{NTSTATUS, PVOID, STATUS_DEVICE_NOT_READY, STATUS_SUCCESS};

use super::checks::{bad_object, irql_at_most};
use super::provider::PROVIDER_DISPATCH;
use crate::verifier::firewall;

/// `STATUS_NOINTERFACE`: the client asked for a WSK version the provider
/// does not support.
pub const STATUS_NOINTERFACE: NTSTATUS = 0xC000_02B9_u32 as i32;
/// The WSK major version the provider implements (1.0).
const PROVIDER_MAJOR: u16 = 1;
/// How often a waiting `WskDeregister` says what it waits for.
const DEREGISTER_REPORT: Duration = Duration::from_secs(10);
/// Marker `WskRegister` leaves in `ReservedRegistrationState`.
const REGISTERED: u64 = 0x5753_4B52; // "WSKR"

/// One registered client.
#[derive(Debug)]
struct Registration {
    /// The client handle of captured NPIs: this tag's address.
    tag: Box<u64>,
    /// `WSK_CLIENT_DISPATCH.Version` of the client.
    version: u16,
    /// Provider NPIs captured and not released.
    captured: u32,
    /// Sockets created and not yet fully closed.
    sockets: u32,
    /// Provider-dispatch calls running now.
    calls: u32,
    /// `WskDeregister` has begun.
    deregistering: bool,
}

#[derive(Debug)]
struct Registry {
    /// WSK is up.
    available: bool,
    next_tag: u64,
    /// Keyed by the address of the `WSK_REGISTRATION` block.
    clients: BTreeMap<usize, Registration>,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    available: true,
    next_tag: 1,
    clients: BTreeMap::new(),
});
/// Signalled whenever a registration's counts or the availability change.
static CHANGED: Condvar = Condvar::new();

fn registry() -> MutexGuard<'static, Registry> {
    REGISTRY.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Makes the WSK provider available or not: while it is not,
/// `WskCaptureProviderNPI` waits (up to its timeout) and then fails with
/// `STATUS_DEVICE_NOT_READY`, as during boot before WSK comes up. It is
/// available unless told otherwise.
pub fn set_provider_available(available: bool) {
    registry().available = available;
    CHANGED.notify_all();
}

/// WSK clients registered and not (or not yet fully) deregistered: a
/// driver unloaded with one left never called `WskDeregister`.
pub fn open_registrations() -> usize {
    registry().clients.len()
}

/// A provider-dispatch call of the client `client` begins: the key of its
/// registration, if `client` is the handle of a captured provider NPI.
pub(super) fn begin_call(client: PVOID) -> Option<usize> {
    let mut r = registry();
    let (key, reg) = r
        .clients
        .iter_mut()
        .find(|(_, reg)| std::ptr::from_ref::<u64>(&reg.tag).cast_mut().cast() == client)?;
    if reg.captured == 0 {
        return None;
    }
    reg.calls += 1;
    Some(*key)
}

/// The call begun by [`begin_call`] returned.
pub(super) fn end_call(key: usize) {
    if let Some(reg) = registry().clients.get_mut(&key) {
        reg.calls -= 1;
    }
    CHANGED.notify_all();
}

/// A socket of registration `key` was created.
pub(super) fn socket_opened(key: usize) {
    if let Some(reg) = registry().clients.get_mut(&key) {
        reg.sockets += 1;
    }
}

/// A socket of registration `key` is closed and NETIO runs no more driver
/// code for it.
pub(super) fn socket_closed(key: usize) {
    if let Some(reg) = registry().clients.get_mut(&key) {
        reg.sockets -= 1;
    }
    CHANGED.notify_all();
}

/// `WskRegister` (`PASSIVE_LEVEL`): copies the client NPI and initialises
/// the registration block.
///
/// # Safety
/// Called by the driver with its client NPI and registration block.
pub unsafe extern "win64" fn WskRegister(
    WskClientNpi: *mut WSK_CLIENT_NPI,
    WskRegistration: *mut WSK_REGISTRATION,
) -> NTSTATUS {
    let routine = WskRegister as *const () as usize;
    firewall("WskRegister", || {
        irql_at_most("WskRegister", PASSIVE_LEVEL);
        if WskClientNpi.is_null() {
            bad_object("WskRegister", routine, 0, "null client NPI");
        }
        if WskRegistration.is_null() {
            bad_object("WskRegister", routine, 0, "null registration block");
        }
        // SAFETY: a non-null client NPI the driver passes for this call.
        let npi = unsafe { WskClientNpi.read_unaligned() };
        if npi.Dispatch.is_null() {
            bad_object(
                "WskRegister",
                routine,
                WskClientNpi as usize,
                "client NPI without a dispatch table",
            );
        }
        // SAFETY: the client's dispatch table, which it keeps for the life
        // of the registration.
        let dispatch: WSK_CLIENT_DISPATCH = unsafe { npi.Dispatch.read_unaligned() };
        let key = WskRegistration as usize;
        let mut r = registry();
        if r.clients.contains_key(&key) {
            drop(r);
            bad_object(
                "WskRegister",
                routine,
                key,
                "registration block already registered (no WskDeregister)",
            );
        }
        let tag = r.next_tag;
        r.next_tag += 1;
        let reg = Registration {
            tag: Box::new(tag),
            version: dispatch.Version,
            captured: 0,
            sockets: 0,
            calls: 0,
            deregistering: false,
        };
        let tag_address = std::ptr::from_ref::<u64>(&reg.tag).cast_mut().cast();
        r.clients.insert(key, reg);
        drop(r);
        let block = WSK_REGISTRATION {
            ReservedRegistrationState: REGISTERED,
            ReservedRegistrationContext: tag_address,
            ReservedRegistrationLock: 0,
        };
        // SAFETY: the driver's registration block, which WSK initialises.
        unsafe { WskRegistration.write_unaligned(block) };
        STATUS_SUCCESS
    })
}

/// `WskDeregister` (`PASSIVE_LEVEL`): wakes captures waiting for WSK
/// (they fail with `STATUS_DEVICE_NOT_READY`), then waits until every
/// captured NPI is released, every provider call has returned and every
/// socket is closed.
///
/// # Safety
/// Called by the driver with a block it registered.
pub unsafe extern "win64" fn WskDeregister(WskRegistration: *mut WSK_REGISTRATION) {
    let routine = WskDeregister as *const () as usize;
    firewall("WskDeregister", || {
        irql_at_most("WskDeregister", PASSIVE_LEVEL);
        let key = WskRegistration as usize;
        let mut r = registry();
        match r.clients.get_mut(&key) {
            Some(reg) if !reg.deregistering => reg.deregistering = true,
            Some(_) => {
                drop(r);
                bad_object("WskDeregister", routine, key, "deregistered twice");
            }
            None => {
                drop(r);
                bad_object(
                    "WskDeregister",
                    routine,
                    key,
                    "registration block not registered",
                );
            }
        }
        CHANGED.notify_all();
        let started = Instant::now();
        let mut next_report = started + DEREGISTER_REPORT;
        loop {
            let Some(reg) = r.clients.get(&key) else {
                return;
            };
            if reg.captured == 0 && reg.sockets == 0 && reg.calls == 0 {
                r.clients.remove(&key);
                return;
            }
            let (captured, sockets, calls) = (reg.captured, reg.sockets, reg.calls);
            let now = Instant::now();
            if now >= next_report {
                eprintln!(
                    "[kbottle netio] WskDeregister has waited {:?}: {captured} captured NPI(s), \
                     {sockets} open socket(s), {calls} running call(s)",
                    now - started
                );
                next_report = now + DEREGISTER_REPORT;
            }
            r = CHANGED
                .wait_timeout(r, next_report - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    });
}

/// `WskCaptureProviderNPI` (`PASSIVE_LEVEL`, or `<= DISPATCH_LEVEL` with
/// `WSK_NO_WAIT`): waits up to `WaitTimeout` ms for WSK, then hands out the
/// provider NPI.
///
/// # Safety
/// Called by the driver with a registered block and an NPI to fill.
pub unsafe extern "win64" fn WskCaptureProviderNPI(
    WskRegistration: *mut WSK_REGISTRATION,
    WaitTimeout: u32,
    WskProviderNpi: *mut WSK_PROVIDER_NPI,
) -> NTSTATUS {
    let routine = WskCaptureProviderNPI as *const () as usize;
    firewall("WskCaptureProviderNPI", || {
        let max = if WaitTimeout == WSK_NO_WAIT {
            DISPATCH_LEVEL
        } else {
            PASSIVE_LEVEL
        };
        irql_at_most("WskCaptureProviderNPI", max);
        if WskProviderNpi.is_null() {
            bad_object("WskCaptureProviderNPI", routine, 0, "null provider NPI");
        }
        let key = WskRegistration as usize;
        let deadline = (WaitTimeout != WSK_INFINITE_WAIT)
            .then(|| Instant::now() + Duration::from_millis(u64::from(WaitTimeout)));
        let mut r = registry();
        loop {
            let available = r.available;
            let Some(reg) = r.clients.get_mut(&key) else {
                drop(r);
                bad_object(
                    "WskCaptureProviderNPI",
                    routine,
                    key,
                    "registration block not registered",
                );
            };
            if reg.deregistering {
                return STATUS_DEVICE_NOT_READY;
            }
            if reg.version >> 8 != PROVIDER_MAJOR {
                return STATUS_NOINTERFACE;
            }
            if available {
                reg.captured += 1;
                let npi = WSK_PROVIDER_NPI {
                    Client: std::ptr::from_ref::<u64>(&reg.tag).cast_mut().cast(),
                    Dispatch: (&raw const PROVIDER_DISPATCH).cast(),
                };
                drop(r);
                // SAFETY: the driver's NPI to fill, checked non-null.
                unsafe { WskProviderNpi.write_unaligned(npi) };
                return STATUS_SUCCESS;
            }
            let wait = match deadline {
                None => Duration::from_secs(30),
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        return STATUS_DEVICE_NOT_READY;
                    }
                    d - now
                }
            };
            r = CHANGED
                .wait_timeout(r, wait)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    })
}

/// `WskReleaseProviderNPI` (`<= DISPATCH_LEVEL`).
///
/// # Safety
/// Called by the driver with a block whose NPI it captured.
pub unsafe extern "win64" fn WskReleaseProviderNPI(WskRegistration: *mut WSK_REGISTRATION) {
    let routine = WskReleaseProviderNPI as *const () as usize;
    firewall("WskReleaseProviderNPI", || {
        irql_at_most("WskReleaseProviderNPI", DISPATCH_LEVEL);
        let key = WskRegistration as usize;
        let mut r = registry();
        match r.clients.get_mut(&key) {
            Some(reg) if reg.captured > 0 => reg.captured -= 1,
            Some(_) => {
                drop(r);
                bad_object(
                    "WskReleaseProviderNPI",
                    routine,
                    key,
                    "provider NPI released more often than captured",
                );
            }
            None => {
                drop(r);
                bad_object(
                    "WskReleaseProviderNPI",
                    routine,
                    key,
                    "registration block not registered",
                );
            }
        }
        drop(r);
        CHANGED.notify_all();
    });
}
