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
use core::cell::UnsafeCell;
use core::ffi::c_void;
use core::ptr::{self, NonNull};
use core::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, AtomicU32, Ordering};

mod traffic;

pub use traffic::{Direction, SUPPORTED_STATISTICS, TrafficStats};

use ndis::{
    NDIS_HANDLE, NDIS_LINK_STATE, NDIS_STATUS_INDICATION, NDIS_STATUS_LINK_STATE, NDIS_STRING,
    NdisMIndicateStatusEx, NdisMPauseComplete, UNICODE_STRING,
};

use super::binding::Binding;
use super::l2::L2Port;
use super::protocol::pause_gate::PauseGate;
use super::protocol::rundown::Rundown;

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
    /// V's device name from `UpperBindings` (UTF-16, no terminator kept
    /// in the length), set at PASSIVE before the instance is initialised.
    name: UnsafeCell<Vec<u16>>,
    /// `MiniportInitializeEx` finished, either way (the sample's
    /// `MiniportInitEvent`).
    pub init_done: AtomicBool,
    /// The unbind began: V is being stopped.
    pub deinitializing: AtomicBool,
    /// V's NDIS miniport adapter handle while up.
    miniport: AtomicPtr<c_void>,
    /// V's adapter context while up (an `adapter::Adapter`).
    adapter: AtomicPtr<c_void>,
    /// The RNIC's L2 port while V is up.
    port: AtomicPtr<L2Port>,
    /// Users of `miniport` and `port` on the receive and status paths.
    pub rundown: Rundown,
    /// V's first `MiniportRestart` ran and its halt has not begun: status
    /// indications on V are allowed (not during `MiniportInitializeEx`).
    pub started: AtomicBool,
    /// V's pause state and NBLs out.
    pub gate: PauseGate,
    /// The packet filter TCP/IP set on V (what P was asked for).
    pub packet_filter: AtomicU32,
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
    /// The open on P.
    pub binding: Binding,
    /// V.
    pub virt: Virtual,
}

// SAFETY: `Virtual::name` is written only at PASSIVE_LEVEL by the bind and
// reconfigure sequences, which the registry lock serialises, and read by
// the same sequences and the unbind, which runs after the pairing left the
// registry; everything else is atomic or the (Send + Sync) binding.
unsafe impl Send for Mux {}
// SAFETY: shared use reads atomics, the Sync binding, and `name`, which is
// written only while no other thread reads it (the registry lock and the
// instance state order the two, see `Send`).
unsafe impl Sync for Mux {}

impl Mux {
    /// A pairing for a new binding, V not yet asked for.
    pub fn new(binding: Binding) -> Self {
        Self {
            binding,
            virt: Virtual {
                instance: AtomicU32::new(INSTANCE_NONE),
                name: UnsafeCell::new(Vec::new()),
                init_done: AtomicBool::new(false),
                deinitializing: AtomicBool::new(false),
                miniport: AtomicPtr::new(ptr::null_mut()),
                adapter: AtomicPtr::new(ptr::null_mut()),
                port: AtomicPtr::new(ptr::null_mut()),
                rundown: Rundown::closed(),
                started: AtomicBool::new(false),
                gate: PauseGate::paused(),
                packet_filter: AtomicU32::new(0),
                power_state: AtomicI32::new(DEVICE_STATE_D0),
                stats: TrafficStats::default(),
            },
        }
    }

    /// The pairing behind a protocol binding context or an
    /// `IMDeviceInstanceContext`.
    ///
    /// # Safety
    /// `context` is a pairing's address that rsndk handed NDIS, and the
    /// pairing is not freed before the returned reference's last use (the
    /// unbind frees it only after V halted and the binding closed).
    pub unsafe fn from_context<'a>(context: NDIS_HANDLE) -> &'a Self {
        // SAFETY: a live pairing's address (this function's contract),
        // shared only through `&`.
        unsafe { &*context.cast::<Self>() }
    }

    /// This pairing as an NDIS context.
    pub fn as_context(&self) -> NDIS_HANDLE {
        ptr::from_ref(self).cast_mut().cast()
    }

    /// `NDIS_STATUS_LINK_STATE` from P (`ProtocolStatusEx`,
    /// `<= DISPATCH_LEVEL`): record it, pass it up on V, tell the L2 port.
    /// Other indications are not passed up (the sample passes only this
    /// one).
    pub fn status(&self, indication: &NDIS_STATUS_INDICATION) {
        if indication.StatusCode != NDIS_STATUS_LINK_STATE
            || indication.StatusBuffer.is_null()
            || (indication.StatusBufferSize as usize) < size_of::<NDIS_LINK_STATE>()
        {
            return;
        }
        // SAFETY: NDIS's buffer of at least an NDIS_LINK_STATE (checked),
        // valid for the call; read unaligned, it is the indicator's memory.
        let state = unsafe {
            indication
                .StatusBuffer
                .cast::<NDIS_LINK_STATE>()
                .read_unaligned()
        };
        self.binding.link.update(&state);
        self.indicate_link_state();
    }

    /// Passes P's current link state up on V (once V started, in D0) and to
    /// the L2 port (`<= DISPATCH_LEVEL`); nothing before V is up.
    pub fn indicate_link_state(&self) {
        if !self.virt.rundown.enter() {
            return;
        }
        let mut state = self.binding.link.get();
        if self.virt.started.load(Ordering::SeqCst)
            && self.virt.power_state.load(Ordering::SeqCst) == DEVICE_STATE_D0
        {
            let miniport = self.virt.miniport();
            let mut indication = NDIS_STATUS_INDICATION::new(
                miniport,
                NDIS_STATUS_LINK_STATE,
                (&raw mut state).cast(),
                size_of::<NDIS_LINK_STATE>() as u32,
            );
            // SAFETY: <= DISPATCH_LEVEL; V's handle, valid while the
            // rundown is held (halt closes it first); the indication and
            // its buffer live across the call.
            unsafe { NdisMIndicateStatusEx(miniport, &raw mut indication) };
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
        // SAFETY: the only writer, serialised (see `Mux`'s Send/Sync), and
        // no reader runs meanwhile: the instance is not initialised.
        unsafe { *self.name.get() = name };
    }

    /// V's device name as an `NDIS_STRING` over the recorded name (valid
    /// until the next [`Virtual::set_name`]).
    pub fn name(&self) -> NDIS_STRING {
        // SAFETY: read at PASSIVE_LEVEL by the bind and unbind sequences,
        // never concurrently with `set_name` (see `Mux`'s Send/Sync).
        let name = unsafe { &*self.name.get() };
        let bytes = (name.len() * 2).min(usize::from(u16::MAX) - 1) as u16;
        UNICODE_STRING {
            Length: bytes,
            MaximumLength: bytes,
            Buffer: name.as_ptr().cast_mut(),
        }
    }

    /// V's NDIS handle (null unless up).
    pub fn miniport(&self) -> NDIS_HANDLE {
        self.miniport.load(Ordering::Acquire)
    }

    /// V's adapter context (null unless up).
    pub fn adapter(&self) -> NDIS_HANDLE {
        self.adapter.load(Ordering::Acquire)
    }

    /// The L2 port, while V is up; valid while the caller holds the
    /// rundown, or while the binding counts one of the port's sends.
    pub fn port(&self) -> Option<&L2Port> {
        let port = NonNull::new(self.port.load(Ordering::Acquire))?;
        // SAFETY: set by `attach` from a port V keeps alive until after
        // `detach_port` cleared it, which happens only once no rundown
        // holder and no send of the port's is left (`MiniportHaltEx`).
        Some(unsafe { port.as_ref() })
    }

    /// `MiniportInitializeEx` succeeded: V's handle, adapter context and
    /// port become reachable from the receive and status paths.
    pub fn attach(&self, miniport: NDIS_HANDLE, adapter: NDIS_HANDLE, port: &L2Port) {
        self.miniport.store(miniport, Ordering::Release);
        self.adapter.store(adapter, Ordering::Release);
        self.port
            .store(ptr::from_ref(port).cast_mut(), Ordering::Release);
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
        self.port.store(ptr::null_mut(), Ordering::Release);
    }

    /// Last step of `MiniportHaltEx`: V's handle and context are gone.
    pub fn forget_miniport(&self) {
        self.adapter.store(ptr::null_mut(), Ordering::Release);
        self.miniport.store(ptr::null_mut(), Ordering::Release);
    }

    /// `count` of V's NBLs came back (`<= DISPATCH_LEVEL`); completes a
    /// pending pause of V when they were the last.
    pub fn nbls_returned(&self, count: u32) {
        if self.gate.leave(count) {
            // SAFETY: <= DISPATCH_LEVEL; V's handle (V cannot halt before
            // its pause completed); the pause pended and this is its one
            // completion (`PauseGate::leave`).
            unsafe { NdisMPauseComplete(self.miniport()) };
        }
    }

    /// Counts `count` of V's NBLs going out; `false` when V is not running
    /// (nothing counted).
    pub fn nbls_out(&self, count: u32) -> bool {
        match self.gate.enter(count) {
            Ok(()) => true,
            Err(completed_pause) => {
                if completed_pause {
                    // SAFETY: <= DISPATCH_LEVEL; V's handle (V cannot halt
                    // before its pause completed); `enter` reported that
                    // this call completed the pending pause, once.
                    unsafe { NdisMPauseComplete(self.miniport()) };
                }
                false
            }
        }
    }
}

// ---------------------------------------------------------------------
// Registry (PASSIVE_LEVEL only).

/// Bindings rsndk keeps at most (NICs it is bound to at once).
pub const MAX_BINDINGS: usize = 64;

static REGISTRY: [AtomicPtr<Mux>; MAX_BINDINGS] =
    [const { AtomicPtr::new(ptr::null_mut()) }; MAX_BINDINGS];
static REGISTRY_LOCK: AtomicBool = AtomicBool::new(false);

/// The registry's lock, held across bootstraps of V and registry changes
/// (`PASSIVE_LEVEL`; it waits by sleeping, never spins at DISPATCH).
#[derive(Debug)]
pub struct RegistryGuard(());

#[allow(
    clippy::unused_self,
    reason = "the guard is the proof that the registry lock is held"
)]
impl RegistryGuard {
    /// Takes the lock (`PASSIVE_LEVEL`).
    pub fn lock() -> Self {
        while REGISTRY_LOCK
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            super::platform_wait();
        }
        Self(())
    }

    /// Adds a pairing; `false` if the registry is full.
    pub fn add(&self, mux: &Mux) -> bool {
        let ptr = ptr::from_ref(mux).cast_mut();
        REGISTRY.iter().any(|slot| {
            slot.compare_exchange(ptr::null_mut(), ptr, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        })
    }

    /// Removes a pairing (no-op if absent).
    pub fn remove(&self, mux: &Mux) {
        let ptr = ptr::from_ref(mux).cast_mut();
        for slot in &REGISTRY {
            let _ =
                slot.compare_exchange(ptr, ptr::null_mut(), Ordering::AcqRel, Ordering::Relaxed);
        }
    }

    /// Every registered pairing.
    pub fn for_each(&self, mut f: impl FnMut(&Mux)) {
        for slot in &REGISTRY {
            if let Some(mux) = NonNull::new(slot.load(Ordering::Acquire)) {
                // SAFETY: a registered pairing; the unbind removes it under
                // this lock (held by `self`) before it frees it.
                f(unsafe { mux.as_ref() });
            }
        }
    }
}

impl Drop for RegistryGuard {
    fn drop(&mut self) {
        REGISTRY_LOCK.store(false, Ordering::Release);
    }
}
