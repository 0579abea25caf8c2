//! IRPs: `IoAllocateIrp`, `IoFreeIrp`, `IoReuseIrp` with the exact x64
//! `IRP` / `IO_STACK_LOCATION` layout of crate `ndis`, and what a lower
//! driver does with an IRP it was handed ([`complete_as_lower_driver`]:
//! `IoCallDriver`'s stack step, then `IoCompleteRequest`'s walk of the
//! completion routines).

// Each import's safety contract is its WDK documentation, and the caller is
// the driver; the per-function docs say what the bottle checks instead.
#![expect(
    clippy::missing_safety_doc,
    reason = "imports follow the WDK contract of the same name"
)]

use std::collections::HashMap;
use std::sync::Mutex;

use ndis::{
    IO_STACK_LOCATION, IRP, SL_INVOKE_ON_CANCEL, SL_INVOKE_ON_ERROR, SL_INVOKE_ON_SUCCESS,
    STATUS_MORE_PROCESSING_REQUIRED,
};
use ndkpi::NTSTATUS;

use crate::export;
use crate::export::Export;
use crate::kernel::cpu::{self, DISPATCH_LEVEL};
use crate::kernel::verifier::{
    self, DRIVER_VERIFIER_DETECTED_VIOLATION, DRIVER_VERIFIER_IOMANAGER_VIOLATION,
    NO_MORE_IRP_STACK_LOCATIONS, firewall,
};
use crate::sync::lock;

/// `IO_TYPE_IRP`.
const IO_TYPE_IRP: i16 = 6;
/// `SL_PENDING_RETURNED`.
const SL_PENDING_RETURNED: u8 = 0x01;

/// IRPs from `IoAllocateIrp`: address → allocation layout.
static IRPS: Mutex<Option<HashMap<usize, std::alloc::Layout>>> = Mutex::new(None);

/// Whether `addr` is an IRP from `IoAllocateIrp` not yet freed.
pub fn is_irp(addr: usize) -> bool {
    lock(&IRPS).as_ref().is_some_and(|m| m.contains_key(&addr))
}

/// IRPs from `IoAllocateIrp` not yet freed.
pub fn outstanding_irps() -> usize {
    lock(&IRPS).as_ref().map_or(0, HashMap::len)
}

fn irp_size(stack: usize) -> usize {
    size_of::<IRP>() + stack * size_of::<IO_STACK_LOCATION>()
}

/// `IoInitializeIrp`: zeroes the IRP and its `stack` locations and points
/// `CurrentStackLocation` one past the last.
///
/// # Safety
/// `irp` is writable for `irp_size(stack)` bytes.
unsafe fn initialize(irp: *mut IRP, stack: usize) {
    // SAFETY: per the contract.
    unsafe { std::ptr::write_bytes(irp.cast::<u8>(), 0, irp_size(stack)) };
    // SAFETY: per the contract; zeroed memory is a valid IRP value.
    let r = unsafe { &mut *irp };
    r.Type = IO_TYPE_IRP;
    r.Size = irp_size(stack) as u16;
    r.StackCount = stack as i8;
    r.CurrentLocation = stack as i8 + 1;
    r.Tail_CurrentStackLocation = irp
        .wrapping_add(1)
        .cast::<IO_STACK_LOCATION>()
        .wrapping_add(stack);
}

/// `IoAllocateIrp` (`<= DISPATCH_LEVEL`); null on failure.
pub unsafe extern "win64" fn IoAllocateIrp(StackSize: i8, ChargeQuota: u8) -> *mut IRP {
    let _ = ChargeQuota;
    firewall("IoAllocateIrp", || {
        crate::kernel::ke::require_irql_at_most(DISPATCH_LEVEL, "IoAllocateIrp");
        if StackSize < 1 || verifier::fault_point("IoAllocateIrp") {
            return std::ptr::null_mut();
        }
        let stack = StackSize as usize;
        let Ok(layout) = std::alloc::Layout::from_size_align(irp_size(stack), 16) else {
            return std::ptr::null_mut();
        };
        #[expect(clippy::cast_ptr_alignment, reason = "the layout is 16-byte aligned")]
        // SAFETY: a non-zero-size layout.
        let irp = unsafe { std::alloc::alloc(layout) }.cast::<IRP>();
        if irp.is_null() {
            return irp;
        }
        // SAFETY: fresh memory of irp_size(stack) bytes.
        unsafe { initialize(irp, stack) };
        lock(&IRPS)
            .get_or_insert_with(HashMap::new)
            .insert(irp as usize, layout);
        irp
    })
}

fn known_irp(irp: *mut IRP, api: &str) -> std::alloc::Layout {
    let addr = irp as usize;
    lock(&IRPS)
        .as_ref()
        .and_then(|m| m.get(&addr).copied())
        .unwrap_or_else(|| {
            verifier::bugcheck(
                DRIVER_VERIFIER_DETECTED_VIOLATION,
                [0x16, 0, addr as u64, 0],
                format!("{api} of {addr:#x}, which IoAllocateIrp did not return (or it was freed)"),
            )
        })
}

/// `IoFreeIrp` (`<= DISPATCH_LEVEL`).
pub unsafe extern "win64" fn IoFreeIrp(Irp: *mut IRP) {
    firewall("IoFreeIrp", || {
        crate::kernel::ke::require_irql_at_most(DISPATCH_LEVEL, "IoFreeIrp");
        let layout = known_irp(Irp, "IoFreeIrp");
        let addr = Irp as usize;
        lock(&IRPS).as_mut().map(|m| m.remove(&addr));
        crate::kernel::ke::forget_objects_in(addr..addr + layout.size());
        // SAFETY: allocated by IoAllocateIrp with this layout; removed from
        // the table, so freed once.
        unsafe { std::alloc::dealloc(Irp.cast(), layout) };
    });
}

/// `IoReuseIrp`: reinitialises (keeping `AllocationFlags`) and sets
/// `IoStatus.Status`.
pub unsafe extern "win64" fn IoReuseIrp(Irp: *mut IRP, Iostatus: NTSTATUS) {
    firewall("IoReuseIrp", || {
        known_irp(Irp, "IoReuseIrp");
        // SAFETY: a live IRP from IoAllocateIrp.
        let old = unsafe { Irp.read() };
        let (stack, flags) = (old.StackCount as usize, old.AllocationFlags);
        // SAFETY: its allocation holds `stack` locations.
        unsafe { initialize(Irp, stack) };
        // SAFETY: `Irp` is a live IRP from IoAllocateIrp (`known_irp` checked
        // the table), just reinitialised; no other reference to it exists here.
        let r = unsafe { &mut *Irp };
        r.AllocationFlags = flags;
        r.IoStatus.Status = Iostatus;
    });
}

/// What a lower driver does with an IRP it was handed: `IoCallDriver`'s
/// step to the next stack location, then `IoCompleteRequest`: set
/// `IoStatus`, and walk the locations upward calling each completion
/// routine whose `SL_INVOKE_ON_*` flags match, at the current IRQL;
/// stop when one returns `STATUS_MORE_PROCESSING_REQUIRED`. A routine
/// that returns at another IRQL is 0xC4/0xFA. Completing past the top of
/// an IRP that has no issuing thread (one from `IoAllocateIrp`) without
/// that status is a violation too (the I/O manager has nowhere to send it).
///
/// # Safety
/// `irp` is a valid IRP whose next stack location the driver filled.
pub unsafe fn complete_as_lower_driver(irp: *mut IRP, status: NTSTATUS, information: usize) {
    let irql = cpu::current();
    if irql > DISPATCH_LEVEL {
        verifier::bugcheck(
            DRIVER_VERIFIER_DETECTED_VIOLATION,
            [0xE5, u64::from(irql), 0, 0],
            format!("IoCompleteRequest at IRQL {irql}"),
        );
    }
    // No reference into the IRP lives across a completion routine (which
    // may change or free it): every access is a raw read or write.
    // SAFETY: a valid IRP (contract).
    let h = unsafe { irp.read() };
    // IoCallDriver: step to the lower driver's location.
    let mut location = h.CurrentLocation - 1;
    let mut current = h.Tail_CurrentStackLocation.wrapping_sub(1);
    if location <= 0 {
        verifier::bugcheck(
            NO_MORE_IRP_STACK_LOCATIONS,
            [irp as u64, 0, 0, 0],
            format!(
                "IRP {:#x} passed down with no stack location left",
                irp as usize
            ),
        );
    }
    // IoCompleteRequest.
    // SAFETY: a valid IRP; plain field stores.
    unsafe {
        irp.write(IRP {
            CurrentLocation: location,
            Tail_CurrentStackLocation: current,
            IoStatus: ndis::IO_STATUS_BLOCK {
                Status: status,
                Reserved: 0,
                Information: information,
            },
            ..h
        });
    };
    let ok = status >= 0;
    while location <= h.StackCount {
        let here_ptr = current;
        location += 1;
        current = current.wrapping_add(1);
        // SAFETY: a valid IRP (a completion routine that freed it returned
        // STATUS_MORE_PROCESSING_REQUIRED and ended the walk).
        unsafe { (*irp).CurrentLocation = location };
        // SAFETY: `irp` is still allocated (caller contract): a completion
        // routine may free it only by returning STATUS_MORE_PROCESSING_REQUIRED,
        // which ended the walk.
        unsafe { (*irp).Tail_CurrentStackLocation = current };
        // SAFETY: `here_ptr` is a stack location of this IRP (its index
        // was <= StackCount).
        let here = unsafe { here_ptr.read() };
        // Irp->PendingReturned follows each location being completed.
        let pending = here.Control & SL_PENDING_RETURNED != 0;
        // SAFETY: `irp` is still allocated (caller contract): a completion
        // routine may free it only by returning STATUS_MORE_PROCESSING_REQUIRED,
        // which ended the walk.
        unsafe { (*irp).PendingReturned = u8::from(pending) };
        // SAFETY: `irp` is still allocated (caller contract): a completion
        // routine may free it only by returning STATUS_MORE_PROCESSING_REQUIRED,
        // which ended the walk.
        let cancel = unsafe { (*irp).Cancel } != 0;
        let invoke = here.CompletionRoutine.filter(|_| {
            (ok && here.Control & SL_INVOKE_ON_SUCCESS != 0)
                || (!ok && here.Control & SL_INVOKE_ON_ERROR != 0)
                || (cancel && here.Control & SL_INVOKE_ON_CANCEL != 0)
        });
        // IopClearStackLocation.
        // SAFETY: `here_ptr` is a stack location of this still-allocated IRP
        // (its index was <= StackCount; no completion routine has run since).
        unsafe { (*here_ptr).Control = 0 };
        if let Some(routine) = invoke {
            let device = if location == h.StackCount + 1 {
                std::ptr::null_mut()
            } else {
                // SAFETY: the new current location is inside the IRP.
                unsafe { (*current).DeviceObject }
            };
            // SAFETY: the driver's completion routine, called as the I/O
            // manager does.
            let result = unsafe { routine(device, irp, here.Context) };
            let after = cpu::current();
            if after != irql {
                verifier::bugcheck(
                    DRIVER_VERIFIER_DETECTED_VIOLATION,
                    [
                        0xFA,
                        routine as usize as u64,
                        u64::from(irql),
                        u64::from(after),
                    ],
                    format!(
                        "completion routine {} returned at IRQL {after}, called at {irql}",
                        crate::loader::pe::describe(routine as usize)
                    ),
                );
            }
            if result == STATUS_MORE_PROCESSING_REQUIRED {
                return;
            }
        } else if location <= h.StackCount && pending {
            // IoMarkIrpPending on the new current location.
            // SAFETY: inside the IRP (location <= StackCount).
            unsafe { (*current).Control |= SL_PENDING_RETURNED };
        }
    }
    // SAFETY: a valid IRP that completed to the top.
    if unsafe { (*irp).Tail_Thread }.is_null() {
        verifier::bugcheck(
            DRIVER_VERIFIER_IOMANAGER_VIOLATION,
            [0, irp as u64, 0, 0],
            format!(
                "IRP {:#x} has no thread and its completion routines let it complete to the I/O manager (an IRP from IoAllocateIrp must be kept with STATUS_MORE_PROCESSING_REQUIRED)",
                irp as usize
            ),
        );
    }
}

/// Every io import.
pub fn exports() -> Vec<Export> {
    vec![
        export!("ntoskrnl.exe", IoAllocateIrp),
        export!("ntoskrnl.exe", IoFreeIrp),
        export!("ntoskrnl.exe", IoReuseIrp),
    ]
}
