//! The pairing of one binding to a NIC (P) with the one virtual miniport
//! (V) rsndk brings up over it (the MUX sample's `ADAPT` with its single
//! `VELAN`, 1:1): the object NDIS passes as the protocol binding context
//! and as V's `IMDeviceInstanceContext`.
//!
//! [`Virtual`] is V as the protocol edge sees it: its IM device instance
//! (name, initialisation pending or done, NDIS handle), what the receive
//! and status paths may reach while V runs (its handle and the RNIC's L2
//! port, behind a [`Rundown`] opened when `MiniportInitializeEx`
//! succeeded and closed first thing in `MiniportHaltEx`), and V's pause
//! state with its NBLs out ([`PauseGate`]). The NDK side of V (the
//! adapter, [`super::adapter`]) is reached only through the adapter
//! context V registered, by the bind/unbind sequences
//! ([`super::protocol::bind`]).
//!
//! A registry of every live pairing serves the global PnP events
//! (`NetEventReconfigure`, `NetEventIMReEnableDevice`), which name no
//! binding.

use alloc::vec::Vec;
use core::ffi::c_void;
use core::ptr;
use core::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, AtomicU32, Ordering};

mod traffic;

pub use traffic::{Direction, SUPPORTED_STATISTICS, TrafficStats};

use hwq::TryArc;
use ndis::NDIS_LINK_STATE;

use super::binding::Binding;
use super::kit::kernel::{PassiveLock, SpinLock};
use super::kit::ndis::{self as kit_ndis, AdapterHandle, AtomicHandle, kind};
use super::kit::pause_gate::PauseGate;
use super::kit::rundown::Rundown;
use super::l2::L2Port;

/// V's IM device instance: nothing asked of NDIS (or it is gone again).
pub const INSTANCE_NONE: u32 = 0;
/// `NdisIMInitializeDeviceInstanceEx` was called; `MiniportInitializeEx`
/// has not finished.
pub const INSTANCE_INIT_PENDING: u32 = 1;
/// `MiniportInitializeEx` succeeded; V is up.
pub const INSTANCE_UP: u32 = 2;
/// `MiniportHaltEx` runs.
pub const INSTANCE_HALTING: u32 = 3;

/// `NdisDeviceStateD0`.
pub const DEVICE_STATE_D0: i32 = 1;

/// V as the protocol edge sees it.
pub struct Virtual {
    /// `INSTANCE_*`.
    instance: AtomicU32,
    /// V's device name from `UpperBindings` (UTF-16, no terminator), set
    /// at PASSIVE before the instance is initialised.
    name: PassiveLock<Vec<u16>>,
    /// `MiniportInitializeEx` finished, either way (the sample's
    /// `MiniportInitEvent`).
    pub init_done: AtomicBool,
    /// The unbind began: V is being stopped.
    pub deinitializing: AtomicBool,
    /// V's NDIS miniport adapter handle while up.
    miniport: AtomicHandle<kind::Adapter>,
    /// V's adapter context while up (an `adapter::Adapter`'s address, for
    /// the unbind: [`super::entry`]).
    adapter: AtomicPtr<c_void>,
    /// The RNIC's L2 port while V is up.
    port: SpinLock<Option<TryArc<L2Port>>>,
    /// Users of `miniport` and `port` on the receive and status paths.
    pub rundown: Rundown,
    /// V's first `MiniportRestart` ran and its halt has not begun: status
    /// indications on V are allowed (not during `MiniportInitializeEx`).
    pub started: AtomicBool,
    /// V's pause state and NBLs out.
    pub gate: PauseGate,
    /// The packet filter TCP/IP set on V (what P was asked for).
    pub packet_filter: AtomicU32,
    /// The lookahead P last accepted for V.
    pub lookahead: AtomicU32,
    /// V's device power state (`OID_PNP_SET_POWER`).
    pub power_state: AtomicI32,
    /// V's frame counters.
    pub stats: TrafficStats,
}

impl core::fmt::Debug for Virtual {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Virtual")
            .field("instance", &self.instance.load(Ordering::Relaxed))
            .field("gate", &self.gate)
            .finish_non_exhaustive()
    }
}

/// One binding and its V.
#[derive(Debug)]
pub struct Mux {
    /// The open on P (shared with the RNIC's L2 port, which sends on it).
    pub binding: TryArc<Binding>,
    /// V.
    pub virt: Virtual,
}

impl Mux {
    /// A pairing for a new binding, V not yet asked for.
    pub fn new(binding: TryArc<Binding>) -> Self {
        let lookahead = binding.lower.lookahead;
        Self {
            binding,
            virt: Virtual {
                instance: AtomicU32::new(INSTANCE_NONE),
                name: PassiveLock::new(Vec::new()),
                init_done: AtomicBool::new(false),
                deinitializing: AtomicBool::new(false),
                miniport: AtomicHandle::empty(),
                adapter: AtomicPtr::new(ptr::null_mut()),
                port: SpinLock::new(None),
                rundown: Rundown::closed(),
                started: AtomicBool::new(false),
                gate: PauseGate::paused(),
                packet_filter: AtomicU32::new(0),
                lookahead: AtomicU32::new(lookahead),
                power_state: AtomicI32::new(DEVICE_STATE_D0),
                stats: TrafficStats::default(),
            },
        }
    }

    /// `NDIS_STATUS_LINK_STATE` from P (`ProtocolStatusEx`,
    /// `<= DISPATCH_LEVEL`): record it, pass it up on V, tell the L2 port.
    /// Other indications are not passed up (the sample passes only this
    /// one).
    pub fn link_state(&self, state: &NDIS_LINK_STATE) {
        self.binding.link.update(state);
        self.indicate_link_state();
    }

    /// Passes P's current link state up on V (once V started, in D0) and to
    /// the L2 port (`<= DISPATCH_LEVEL`); nothing before V is up.
    pub fn indicate_link_state(&self) {
        if !self.virt.rundown.enter() {
            return;
        }
        if self.virt.started.load(Ordering::SeqCst)
            && self.virt.power_state.load(Ordering::SeqCst) == DEVICE_STATE_D0
            && let Some(miniport) = self.virt.miniport()
        {
            // V's handle, valid while the rundown is held (halt closes it
            // first).
            kit_ndis::indicate_link_state(miniport, self.binding.link.get());
        }
        if let Some(port) = self.virt.port() {
            port.set_link(
                self.binding.link.is_up(),
                self.binding.mtu(),
                self.binding.link.xmit_speed(),
            );
        }
        self.virt.rundown.leave();
    }
}

impl Virtual {
    /// `INSTANCE_*` now.
    pub fn instance(&self) -> u32 {
        self.instance.load(Ordering::SeqCst)
    }

    /// Moves the instance state.
    pub fn set_instance(&self, state: u32) {
        self.instance.store(state, Ordering::SeqCst);
    }

    /// Moves the instance state from `from` to `to`; `false` if it was not
    /// `from`.
    pub fn move_instance(&self, from: u32, to: u32) -> bool {
        self.instance
            .compare_exchange(from, to, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
    }

    /// Records V's device name (`PASSIVE_LEVEL`, before the instance is
    /// initialised; serialised by the registry lock).
    pub fn set_name(&self, name: Vec<u16>) {
        *self.name.lock() = name;
    }

    /// Runs `f` on V's device name (`PASSIVE_LEVEL`).
    pub fn with_name<R>(&self, f: impl FnOnce(&[u16]) -> R) -> R {
        f(&self.name.lock())
    }

    /// V's NDIS handle (`None` unless up).
    pub fn miniport(&self) -> Option<AdapterHandle> {
        self.miniport.load()
    }

    /// V's adapter context's address (null unless up).
    pub fn adapter(&self) -> *mut c_void {
        self.adapter.load(Ordering::Acquire)
    }

    /// The L2 port, while V is up: until `detach_port`, which comes only
    /// once no rundown holder and no send of the port's is left
    /// (`MiniportHaltEx`).
    pub fn port(&self) -> Option<TryArc<L2Port>> {
        self.port.locked(|port| port.clone())
    }

    /// `MiniportInitializeEx` succeeded: V's handle, adapter context and
    /// port become reachable from the receive and status paths.
    pub fn attach<A>(&self, miniport: AdapterHandle, adapter: &A, port: &TryArc<L2Port>) {
        self.miniport.store(Some(miniport));
        self.adapter
            .store(ptr::from_ref(adapter).cast_mut().cast(), Ordering::Release);
        let port = port.clone();
        // The old value is None (V was not up); dropped after the lock.
        let old = self.port.locked(|slot| slot.replace(port));
        drop(old);
        self.rundown.open();
    }

    /// First step of `MiniportHaltEx` (`PASSIVE_LEVEL`): nothing on the
    /// receive and status paths reaches V any more once this returns.
    pub fn detach(&self) {
        self.started.store(false, Ordering::SeqCst);
        self.rundown.close_and_wait();
    }

    /// After the binding's port sends drained (`MiniportHaltEx`): the port
    /// may go.
    pub fn detach_port(&self) {
        let port = self.port.locked(Option::take);
        drop(port);
    }

    /// Last step of `MiniportHaltEx`: V's handle and context are gone.
    pub fn forget_miniport(&self) {
        self.adapter.store(ptr::null_mut(), Ordering::Release);
        self.miniport.store(None);
    }

    /// `count` of V's NBLs came back (`<= DISPATCH_LEVEL`); completes a
    /// pending pause of V when they were the last.
    pub fn nbls_returned(&self, count: u32) {
        if self.gate.leave(count) {
            self.pause_complete();
        }
    }

    /// Counts `count` of V's NBLs going out; `false` when V is not running
    /// (nothing counted).
    pub fn nbls_out(&self, count: u32) -> bool {
        match self.gate.enter(count) {
            Ok(()) => true,
            Err(completed_pause) => {
                if completed_pause {
                    self.pause_complete();
                }
                false
            }
        }
    }

    /// Completes V's pending pause: the caller's count completed it, once
    /// (`PauseGate`); V cannot halt before that, so its handle is valid.
    fn pause_complete(&self) {
        if let Some(miniport) = self.miniport() {
            kit_ndis::pause_complete(miniport);
        }
    }
}

// ---------------------------------------------------------------------
// Registry (PASSIVE_LEVEL only).

/// Bindings rsndk keeps at most (NICs it is bound to at once).
pub const MAX_BINDINGS: usize = 64;

/// Every live pairing.
static REGISTRY: PassiveLock<[Option<TryArc<Mux>>; MAX_BINDINGS]> =
    PassiveLock::new([const { None }; MAX_BINDINGS]);

/// The registry's lock, held across bootstraps of V and registry changes
/// (`PASSIVE_LEVEL`; it waits by sleeping, never spins at DISPATCH).
#[derive(Debug)]
pub struct RegistryGuard(
    super::kit::kernel::PassiveGuard<'static, [Option<TryArc<Mux>>; MAX_BINDINGS]>,
);

impl RegistryGuard {
    /// Takes the lock (`PASSIVE_LEVEL`).
    pub fn lock() -> Self {
        Self(REGISTRY.lock())
    }

    /// Adds a pairing; `false` if the registry is full.
    pub fn add(&mut self, mux: &TryArc<Mux>) -> bool {
        let Some(slot) = self.0.iter_mut().find(|slot| slot.is_none()) else {
            return false;
        };
        *slot = Some(mux.clone());
        true
    }

    /// Removes a pairing (no-op if absent).
    pub fn remove(&mut self, mux: &Mux) {
        for slot in self.0.iter_mut() {
            if slot
                .as_ref()
                .is_some_and(|m| ptr::eq(TryArc::as_ptr(m), mux))
            {
                *slot = None;
            }
        }
    }

    /// Every registered pairing.
    pub fn for_each(&self, mut f: impl FnMut(&Mux)) {
        for mux in self.0.iter().flatten() {
            f(mux);
        }
    }
}
