//! The protocol stack above each virtual miniport V (TCP/IP on Windows):
//! the bottle's NDIS tells it when a V is bound (after V's
//! `MiniportRestart`), when it goes away (before V is paused and
//! halted), and when V indicates a link state. Frames V indicates reach it
//! through [`UpperProtocol::receive`], called by V's receive edge
//! ([`super::datapath`]).
//!
//! One stack serves every V of the process ([`set_upper`]); without one,
//! nothing is told (the adapters still run, their indications are
//! returned unread).

use std::sync::{Arc, RwLock};

use crate::ids::AdapterId;

/// What the stack learns about a V when it binds to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VInfo {
    /// The bottle's number for V.
    pub adapter: AdapterId,
    /// V's `NET_LUID` value: `(IfType << 48) | (NetLuidIndex << 24)`.
    pub luid: u64,
    /// V's interface index.
    pub if_index: u32,
    /// The MAC address V reported (`CurrentMacAddress` of its general
    /// attributes).
    pub mac: [u8; 6],
    /// V's MTU (`MtuSize` of its general attributes).
    pub mtu: u32,
}

/// The stack above the virtual miniports.
pub trait UpperProtocol: Send + Sync {
    /// V is running and bound: the stack may send on it.
    fn bound(&self, info: VInfo);
    /// V is about to be paused and halted: the stack stops sending on it
    /// and forgets it.
    fn unbound(&self, adapter: AdapterId);
    /// V indicated an Ethernet frame (called by V's receive edge).
    fn receive(&self, adapter: AdapterId, frame: &[u8]);
    /// V indicated `NDIS_STATUS_LINK_STATE`: connected or not.
    fn link_state(&self, adapter: AdapterId, up: bool);
}

static UPPER: RwLock<Option<Arc<dyn UpperProtocol>>> = RwLock::new(None);

/// Installs the stack every V of this process binds to (replacing any
/// earlier one; `None` removes it).
pub fn set_upper(upper: Option<Arc<dyn UpperProtocol>>) {
    *UPPER
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = upper;
}

/// The installed stack, if any.
pub fn upper() -> Option<Arc<dyn UpperProtocol>> {
    UPPER
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone()
}
