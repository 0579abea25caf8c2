//! The Ethernet data path NDIS sees: send lists the bottle hands to
//! `MiniportSendNetBufferLists` come back through
//! `NdisMSendNetBufferListsComplete`; received lists indicated with
//! `NdisMIndicateReceiveNetBufferLists` are returned to the miniport from
//! the system worker thread (at DISPATCH_LEVEL), as a protocol returning
//! them later would.
//!
//! The bottle's `NET_BUFFER_LIST`s carry only what the miniport touches:
//! `Next` (offset 0) and `Status` (offset 0x8C); the rest is zero.

// Each import's safety contract is its WDK documentation, and the caller is
// the driver; the per-function docs say what the bottle checks instead.
#![expect(
    clippy::missing_safety_doc,
    reason = "imports follow the WDK contract of the same name"
)]

use std::ptr;

use ndis::{
    DISPATCH_LEVEL, NDIS_HANDLE, NDIS_PORT_NUMBER, NDIS_RECEIVE_FLAGS_DISPATCH_LEVEL,
    NDIS_RECEIVE_FLAGS_RESOURCES, NDIS_RETURN_FLAGS_DISPATCH_LEVEL,
    NDIS_SEND_COMPLETE_FLAGS_DISPATCH_LEVEL, NET_BUFFER_LIST, NET_BUFFER_LIST_NEXT_OFFSET,
    NET_BUFFER_LIST_STATUS_OFFSET,
};
use ndkpi::{NDIS_STATUS, ULONG};

use super::checks::{guarded, invalid_handle, require_dispatch_or_below};
use super::state;
use super::workitem::run_on_worker;
use crate::cpu;
use crate::verifier::{self, DRIVER_VERIFIER_DETECTED_VIOLATION};

/// Bytes of one bottle NET_BUFFER_LIST (more than the miniport touches).
const NBL_BYTES: usize = 0x100;

/// One NET_BUFFER_LIST's memory, pointer-aligned as NDIS allocates them.
#[repr(C, align(16))]
#[derive(Debug)]
pub struct Nbl([u8; NBL_BYTES]);

impl Nbl {
    fn addr(&mut self) -> usize {
        self.0.as_mut_ptr() as usize
    }
}

/// A chain of bottle NET_BUFFER_LISTs. The vector never grows after
/// [`NblChain::new`], so the lists never move.
#[derive(Debug)]
pub struct NblChain(Vec<Nbl>);

impl NblChain {
    /// `count` zeroed lists linked through `Next`.
    pub fn new(count: usize) -> Self {
        let mut lists: Vec<Nbl> = (0..count).map(|_| Nbl([0; NBL_BYTES])).collect();
        for i in 1..lists.len() {
            let next = lists[i].addr();
            lists[i - 1].0[NET_BUFFER_LIST_NEXT_OFFSET..NET_BUFFER_LIST_NEXT_OFFSET + 8]
                .copy_from_slice(&next.to_ne_bytes());
        }
        Self(lists)
    }

    /// The first list (what the miniport is handed), or null.
    pub fn head(&mut self) -> *mut NET_BUFFER_LIST {
        self.0
            .first_mut()
            .map_or(ptr::null_mut(), |l| l.addr() as *mut NET_BUFFER_LIST)
    }

    /// Every list's address.
    pub fn addrs(&mut self) -> Vec<usize> {
        self.0.iter_mut().map(Nbl::addr).collect()
    }
}

/// `NdisMSendNetBufferListsComplete` (<= DISPATCH_LEVEL, with
/// `NDIS_SEND_COMPLETE_FLAGS_DISPATCH_LEVEL` exactly when at
/// DISPATCH_LEVEL): returns send lists, their `Status` set, to NDIS.
pub unsafe extern "win64" fn NdisMSendNetBufferListsComplete(
    MiniportAdapterHandle: NDIS_HANDLE,
    NetBufferList: *mut NET_BUFFER_LIST,
    SendCompleteFlags: ULONG,
) {
    const API: &str = "NdisMSendNetBufferListsComplete";
    guarded(API, || {
        require_dispatch_or_below(API, NdisMSendNetBufferListsComplete as *const ());
        let handle = MiniportAdapterHandle as usize;
        let Some(outstanding) =
            state::with(|n| n.live_adapter(handle).map(|a| a.sends_outstanding.clone()))
        else {
            invalid_handle(API, handle, "miniport adapter");
        };
        let irql = cpu::current();
        if SendCompleteFlags & NDIS_SEND_COMPLETE_FLAGS_DISPATCH_LEVEL != 0
            && irql != DISPATCH_LEVEL
        {
            verifier::bugcheck(
                DRIVER_VERIFIER_DETECTED_VIOLATION,
                [0xE5, u64::from(irql), 0, 0],
                format!(
                    "{API} with NDIS_SEND_COMPLETE_FLAGS_DISPATCH_LEVEL at IRQL {irql} \
                     (NDIS takes its locks as if at DISPATCH_LEVEL)"
                ),
            );
        }
        let mut completed: Vec<(usize, NDIS_STATUS)> = Vec::new();
        let mut at = NetBufferList as usize;
        while at != 0 {
            if !outstanding.contains(&at) || completed.iter().any(|(l, _)| *l == at) {
                invalid_handle(
                    API,
                    at,
                    "NET_BUFFER_LIST sent to this miniport and not completed",
                );
            }
            let base = at as *const u8;
            let status_field = base
                .wrapping_add(NET_BUFFER_LIST_STATUS_OFFSET)
                .cast::<[u8; 4]>();
            let next_field = base
                .wrapping_add(NET_BUFFER_LIST_NEXT_OFFSET)
                .cast::<[u8; 8]>();
            // SAFETY: `at` is one of the bottle's outstanding lists (checked),
            // NBL_BYTES long; `Status` is 4 bytes inside it.
            let status = NDIS_STATUS::from_ne_bytes(unsafe { status_field.read() });
            // SAFETY: `at` is one of the bottle's outstanding lists (checked),
            // NBL_BYTES long; `Next` is the 8-byte pointer at offset 0.
            let next = usize::from_ne_bytes(unsafe { next_field.read() });
            completed.push((at, status));
            at = next;
        }
        state::with(|n| {
            if let Some(a) = n.live_adapter(handle) {
                for (list, status) in &completed {
                    a.sends_outstanding.retain(|l| l != list);
                    a.send_completions.push(*status);
                }
            }
        });
        state::changed();
    });
}

/// `NdisMIndicateReceiveNetBufferLists` (<= DISPATCH_LEVEL). Lists
/// indicated with `NDIS_RECEIVE_FLAGS_RESOURCES` are the miniport's again
/// when the call returns; the others go back through
/// `MiniportReturnNetBufferLists`, called from the worker thread at
/// DISPATCH_LEVEL.
pub unsafe extern "win64" fn NdisMIndicateReceiveNetBufferLists(
    MiniportAdapterHandle: NDIS_HANDLE,
    NetBufferList: *mut NET_BUFFER_LIST,
    _PortNumber: NDIS_PORT_NUMBER,
    NumberOfNetBufferLists: ULONG,
    ReceiveFlags: ULONG,
) {
    const API: &str = "NdisMIndicateReceiveNetBufferLists";
    guarded(API, || {
        require_dispatch_or_below(API, NdisMIndicateReceiveNetBufferLists as *const ());
        let handle = MiniportAdapterHandle as usize;
        let Some(context) = state::with(|n| {
            n.live_adapter(handle)
                .map(|a| a.registration.map_or(0, |r| r.context))
        }) else {
            invalid_handle(API, handle, "miniport adapter");
        };
        let irql = cpu::current();
        if ReceiveFlags & NDIS_RECEIVE_FLAGS_DISPATCH_LEVEL != 0 && irql != DISPATCH_LEVEL {
            verifier::bugcheck(
                DRIVER_VERIFIER_DETECTED_VIOLATION,
                [0xE5, u64::from(irql), 0, 0],
                format!("{API} with NDIS_RECEIVE_FLAGS_DISPATCH_LEVEL at IRQL {irql}"),
            );
        }
        if NetBufferList.is_null() || NumberOfNetBufferLists == 0 {
            invalid_handle(
                API,
                NetBufferList as usize,
                "received NET_BUFFER_LIST chain",
            );
        }
        if ReceiveFlags & NDIS_RECEIVE_FLAGS_RESOURCES != 0 {
            return;
        }
        let returner = state::with(|n| {
            n.driver
                .as_ref()
                .and_then(|d| d.characteristics.ReturnNetBufferListsHandler)
        });
        let Some(returner) = returner else { return };
        let lists = NetBufferList as usize;
        run_on_worker(move || {
            cpu::run_at_dispatch(|| {
                // SAFETY: the miniport's MiniportReturnNetBufferLists, called
                // at DISPATCH_LEVEL with the flag saying so, with the chain
                // it indicated and its adapter context.
                unsafe {
                    returner(
                        context as NDIS_HANDLE,
                        lists as *mut NET_BUFFER_LIST,
                        NDIS_RETURN_FLAGS_DISPATCH_LEVEL,
                    );
                }
            });
        });
    });
}
