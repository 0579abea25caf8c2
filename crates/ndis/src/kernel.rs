//! The `ntoskrnl.exe` services the rsndk driver shell uses besides NDIS
//! (`wdm.h`, `ntddk.h`), declared by hand for x64 so that the shell
//! type-checks without wdk-sys: spin locks, DPCs, timers, events, pool,
//! IRPs and MDLs, the performance counter, bug checks
//! and debugger output.
//!
//! Dispatcher objects the driver only hands to the kernel (`KDPC`,
//! `KTIMER`, `KEVENT`) are opaque blocks of the right size and alignment.
//! `IRP` and `IO_STACK_LOCATION` are declared field by field because the
//! driver must do what the `IoSetCompletionRoutine` and
//! `IoGetNextIrpStackLocation` macros do and read `IoStatus`.
//!
//! Where the x64 values come from: the sizes and offsets of `KDPC` (0x40),
//! `KTIMER` (0x40), `IRP` (0xD0, `IoStatus` at 0x30,
//! `CurrentStackLocation` at 0xB8) and `IO_STACK_LOCATION` (0x48,
//! `CompletionRoutine` at 0x38) match the type dumps of the Windows 10 x64
//! kernel in the public `ntdiff/headers` repository
//! (`Win10_20H1_18885/x64/System32/ntoskrnl.exe/...`); the `POOL_FLAG_*`
//! and `SL_INVOKE_ON_*` values match `wdm.h` copies in public
//! repositories. The first Windows build compares every declaration here
//! with wdk-sys's bindgen output (`src/driver/wdk_check.rs` in the driver
//! package), so a wrong value fails that build.
//!
//! IRQL: for Windows 8 and later targets `wdm.h` declares `KfRaiseIrql`
//! and `KeLowerIrql` as `NTKERNELAPI` imports for drivers (`_NTDRIVER_`,
//! `_NTDDK_`, `_NTIFS_`), and ntoskrnl exports `KeGetCurrentIrql`; only
//! pre-Windows 8 or `NT_INLINE_IRQL` builds get the inline forms that
//! write CR8 (`KzRaiseIrql`/`KzLowerIrql`). The driver imports all three,
//! so Driver Verifier's IRQL checks see every transition.
//!
//! Functions that are inline in the WDK headers (`KeInitializeSpinLock`
//! stores 0; `MmGetSystemAddressForMdlSafe` tests `MdlFlags`) have no
//! export to declare: the driver implements them.
#![allow(unsafe_code)]

use core::ffi::c_char;

use ndkpi::{BOOLEAN, MDL, NTSTATUS, PVOID, UCHAR, ULONG, ULONG_PTR};

/// Interrupt request level.
pub type KIRQL = UCHAR;
/// `PASSIVE_LEVEL`.
pub const PASSIVE_LEVEL: KIRQL = 0;
/// `APC_LEVEL`.
pub const APC_LEVEL: KIRQL = 1;
/// `DISPATCH_LEVEL`: DPCs run here; spin locks raise to it.
pub const DISPATCH_LEVEL: KIRQL = 2;

/// A spin lock (`ULONG_PTR`; 0 = free, which `KeInitializeSpinLock` stores).
pub type KSPIN_LOCK = ULONG_PTR;
/// A reader/writer spin lock (`volatile LONG`, wdm.h:27111; 0 = free,
/// which the driver stores: there is no initialiser).
pub type EX_SPIN_LOCK = i32;
/// `KernelMode` / `UserMode` (`CCHAR`).
pub type KPROCESSOR_MODE = i8;
/// `KernelMode`.
pub const KernelMode: KPROCESSOR_MODE = 0;
/// `LARGE_INTEGER`, modelled as its `QuadPart` (same size, alignment and
/// return convention on x64).
pub type LARGE_INTEGER = i64;
/// `PHYSICAL_ADDRESS` (a `LARGE_INTEGER`).
pub type PHYSICAL_ADDRESS = LARGE_INTEGER;
/// `POOL_FLAGS` of `ExAllocatePool2`.
pub type POOL_FLAGS = u64;

/// Non-paged, no-execute pool (`POOL_FLAG_NON_PAGED`). Allocations of
/// `PAGE_SIZE` or more are page-aligned; smaller ones are 16-byte aligned.
pub const POOL_FLAG_NON_PAGED: POOL_FLAGS = 0x0000_0000_0000_0040;
/// Leave the memory uninitialised (`POOL_FLAG_UNINITIALIZED`); without it
/// `ExAllocatePool2` zeroes.
pub const POOL_FLAG_UNINITIALIZED: POOL_FLAGS = 0x0000_0000_0000_0002;
/// Cache-line-aligned allocation (`POOL_FLAG_CACHE_ALIGNED`).
pub const POOL_FLAG_CACHE_ALIGNED: POOL_FLAGS = 0x0000_0000_0000_0008;

/// `MEMORY_CACHING_TYPE` (C enum).
pub type MEMORY_CACHING_TYPE = i32;
/// `MmCached`.
pub const MmCached: MEMORY_CACHING_TYPE = 1;
/// `MM_PAGE_PRIORITY` value `NormalPagePriority`, the `Priority` argument
/// of `MmMapLockedPagesSpecifyCache` (ORed with the flags below).
pub const NormalPagePriority: ULONG = 16;
/// Map without execute permission (`MdlMappingNoExecute`).
pub const MdlMappingNoExecute: ULONG = 0x4000_0000;

/// `EVENT_TYPE` (C enum).
pub type EVENT_TYPE = i32;
/// Stays signalled until cleared.
pub const NotificationEvent: EVENT_TYPE = 0;
/// `KWAIT_REASON` value `Executive`.
pub const Executive: i32 = 0;
/// `TIMER_TYPE` (C enum).
pub type TIMER_TYPE = i32;
/// A timer that stays signalled (its DPC runs once per `KeSetTimer`).
pub const NotificationTimer: TIMER_TYPE = 0;

/// `IO_STACK_LOCATION.Control`: call the completion routine on cancel.
pub const SL_INVOKE_ON_CANCEL: UCHAR = 0x20;
/// `IO_STACK_LOCATION.Control`: call it on success.
pub const SL_INVOKE_ON_SUCCESS: UCHAR = 0x40;
/// `IO_STACK_LOCATION.Control`: call it on error.
pub const SL_INVOKE_ON_ERROR: UCHAR = 0x80;
/// What a completion routine returns to keep an IRP it owns
/// (`STATUS_MORE_PROCESSING_REQUIRED`).
pub const STATUS_MORE_PROCESSING_REQUIRED: NTSTATUS = 0xC000_0016_u32 as i32;

/// `DbgPrintEx` component of network drivers (`DPFLTR_IHVNETWORK_ID`).
pub const DPFLTR_IHVNETWORK_ID: ULONG = 80;
/// `DbgPrintEx` level: errors, always shown.
pub const DPFLTR_ERROR_LEVEL: ULONG = 0;
/// `DbgPrintEx` level: information, shown when the filter mask allows.
pub const DPFLTR_INFO_LEVEL: ULONG = 3;

/// Declares opaque kernel objects: the right size and 8-byte alignment,
/// contents only touched by the kernel.
macro_rules! opaque_objects {
    ($( $(#[$doc:meta])* $name:ident: $words:literal; )*) => {
        $(
            $(#[$doc])*
            #[repr(C)]
            #[derive(Debug)]
            pub struct $name {
                /// Owned by the kernel once initialised.
                pub Opaque: [u64; $words],
            }

            impl $name {
                /// An all-zero block, ready for its `KeInitialize*` call.
                pub const fn zeroed() -> Self {
                    Self { Opaque: [0; $words] }
                }
            }
        )*
    };
}

opaque_objects! {
    /// A deferred procedure call object (`KDPC`, 0x40 bytes).
    KDPC: 8;
    /// A kernel timer (`KTIMER`, 0x40 bytes).
    KTIMER: 8;
    /// A kernel event (`KEVENT`: a `DISPATCHER_HEADER`, 0x18 bytes).
    KEVENT: 3;
}

/// A doubly linked list link (`LIST_ENTRY`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct LIST_ENTRY {
    /// Next entry.
    pub Flink: *mut LIST_ENTRY,
    /// Previous entry.
    pub Blink: *mut LIST_ENTRY,
}

/// Outcome of an I/O request (`IO_STATUS_BLOCK`). In C `Status` shares
/// its 8 bytes with `PVOID Pointer`; only `Status` is read here, the upper
/// half is `Reserved`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct IO_STATUS_BLOCK {
    /// Completion status.
    pub Status: NTSTATUS,
    /// Upper half of the `Status`/`Pointer` union.
    pub Reserved: ULONG,
    /// Request-specific value (what the request's completion reports).
    pub Information: ULONG_PTR,
}

/// Opaque `DEVICE_OBJECT`; completion routines receive one (null for an
/// IRP the driver allocated itself with one stack location).
#[repr(C)]
#[derive(Debug)]
pub struct DEVICE_OBJECT {
    _private: [u8; 0],
}

/// `IO_COMPLETION_ROUTINE`: runs when a lower driver completes an IRP, at
/// `<= DISPATCH_LEVEL`. Returning [`STATUS_MORE_PROCESSING_REQUIRED`]
/// keeps the IRP with its allocator.
pub type IO_COMPLETION_ROUTINE = unsafe extern "win64" fn(
    DeviceObject: *mut DEVICE_OBJECT,
    Irp: *mut IRP,
    Context: PVOID,
) -> NTSTATUS;

/// An I/O stack location (`IO_STACK_LOCATION`, 0x48 bytes). `Parameters`
/// is a union of per-request layouts, 4 pointers wide on x64.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct IO_STACK_LOCATION {
    /// `IRP_MJ_*`.
    pub MajorFunction: UCHAR,
    /// `IRP_MN_*`.
    pub MinorFunction: UCHAR,
    /// `SL_*` request flags.
    pub Flags: UCHAR,
    /// `SL_INVOKE_ON_*` and `SL_PENDING_RETURNED`.
    pub Control: UCHAR,
    /// Request parameters (the C union, as raw words).
    pub Parameters: [PVOID; 4],
    /// Target device of this location.
    pub DeviceObject: *mut DEVICE_OBJECT,
    /// File object of the request.
    pub FileObject: PVOID,
    /// Called when the next lower location completes.
    pub CompletionRoutine: Option<IO_COMPLETION_ROUTINE>,
    /// Passed to `CompletionRoutine`.
    pub Context: PVOID,
}

/// An I/O request packet (`IRP`, 0xD0 bytes on x64). The C unions are
/// flattened to their first members; `Tail_*` fields are the members of
/// `Tail.Overlay`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct IRP {
    /// `IO_TYPE_IRP`.
    pub Type: i16,
    /// Bytes of the IRP and its stack locations.
    pub Size: u16,
    /// Processor the IRP was allocated on.
    pub AllocationProcessorNumber: u16,
    /// Reserved.
    pub Reserved: u16,
    /// MDL of a direct-I/O request.
    pub MdlAddress: *mut MDL,
    /// `IRP_*` flags.
    pub Flags: ULONG,
    /// `AssociatedIrp` union (`SystemBuffer`).
    pub AssociatedIrp: PVOID,
    /// Link in the issuing thread's IRP list.
    pub ThreadListEntry: LIST_ENTRY,
    /// Final status and information.
    pub IoStatus: IO_STATUS_BLOCK,
    /// Mode of the requester.
    pub RequestorMode: KPROCESSOR_MODE,
    /// A lower driver returned `STATUS_PENDING`.
    pub PendingReturned: BOOLEAN,
    /// Number of stack locations.
    pub StackCount: i8,
    /// Index of the current stack location (1-based).
    pub CurrentLocation: i8,
    /// The IRP was cancelled.
    pub Cancel: BOOLEAN,
    /// IRQL at which the cancel spin lock was taken.
    pub CancelIrql: KIRQL,
    /// APC environment.
    pub ApcEnvironment: i8,
    /// Allocation flags.
    pub AllocationFlags: UCHAR,
    /// User I/O status block.
    pub UserIosb: *mut IO_STATUS_BLOCK,
    /// User event.
    pub UserEvent: *mut KEVENT,
    /// `Overlay` union (APC routine and context, or allocation size).
    pub Overlay: [u64; 2],
    /// Cancel routine.
    pub CancelRoutine: PVOID,
    /// User buffer.
    pub UserBuffer: PVOID,
    /// `Tail.Overlay.DriverContext` (union with `DeviceQueueEntry`).
    pub Tail_DriverContext: [PVOID; 4],
    /// `Tail.Overlay.Thread`.
    pub Tail_Thread: PVOID,
    /// `Tail.Overlay.AuxiliaryBuffer`.
    pub Tail_AuxiliaryBuffer: *mut c_char,
    /// `Tail.Overlay.ListEntry`.
    pub Tail_ListEntry: LIST_ENTRY,
    /// `Tail.Overlay.CurrentStackLocation`; the next lower location
    /// (`IoGetNextIrpStackLocation`) is the one before it in memory.
    pub Tail_CurrentStackLocation: *mut IO_STACK_LOCATION,
    /// `Tail.Overlay.OriginalFileObject`.
    pub Tail_OriginalFileObject: PVOID,
    /// `Tail.Overlay.IrpExtension`.
    pub Tail_IrpExtension: PVOID,
}

impl IRP {
    /// `IoGetNextIrpStackLocation`: the stack location below the current
    /// one, which the driver that owns the IRP fills for the driver it
    /// calls (for an IRP from `IoAllocateIrp(1, ..)`, its only location).
    /// Only computes the address.
    pub const fn next_stack_location(&self) -> *mut IO_STACK_LOCATION {
        self.Tail_CurrentStackLocation.wrapping_sub(1)
    }
}

/// `KDEFERRED_ROUTINE`: a DPC or timer routine (`DISPATCH_LEVEL`).
pub type KDEFERRED_ROUTINE = unsafe extern "win64" fn(
    Dpc: *mut KDPC,
    DeferredContext: PVOID,
    SystemArgument1: PVOID,
    SystemArgument2: PVOID,
);

#[cfg_attr(
    target_os = "windows",
    link(name = "ntoskrnl.exe", kind = "raw-dylib", modifiers = "+verbatim")
)]
unsafe extern "system" {
    /// The current processor's IRQL (any IRQL).
    pub fn KeGetCurrentIrql() -> KIRQL;
    /// Raises the IRQL to `NewIrql`, which must not be below the current
    /// level; returns the previous level (`KeRaiseIrql(a, b)` is the macro
    /// `*(b) = KfRaiseIrql(a)`).
    pub fn KfRaiseIrql(NewIrql: KIRQL) -> KIRQL;
    /// Lowers the IRQL to `NewIrql`, which must not be above the current
    /// level: the value a matching `KfRaiseIrql` returned.
    pub fn KeLowerIrql(NewIrql: KIRQL);

    /// Takes a spin lock, raising to `DISPATCH_LEVEL`; returns the old IRQL.
    pub fn KeAcquireSpinLockRaiseToDpc(SpinLock: *mut KSPIN_LOCK) -> KIRQL;
    /// Releases a spin lock and returns to `NewIrql`.
    pub fn KeReleaseSpinLock(SpinLock: *mut KSPIN_LOCK, NewIrql: KIRQL);

    /// Takes a reader/writer spin lock for shared access, raising to
    /// `DISPATCH_LEVEL` (from `<= DISPATCH_LEVEL`); returns the old IRQL.
    /// Waits while a writer holds or waits for it (writers are preferred).
    pub fn ExAcquireSpinLockShared(SpinLock: *mut EX_SPIN_LOCK) -> KIRQL;
    /// Releases a shared hold and returns to `OldIrql` (at `DISPATCH_LEVEL`).
    pub fn ExReleaseSpinLockShared(SpinLock: *mut EX_SPIN_LOCK, OldIrql: KIRQL);
    /// Takes a reader/writer spin lock for exclusive access, raising to
    /// `DISPATCH_LEVEL` (from `<= DISPATCH_LEVEL`); returns the old IRQL.
    pub fn ExAcquireSpinLockExclusive(SpinLock: *mut EX_SPIN_LOCK) -> KIRQL;
    /// Releases an exclusive hold and returns to `OldIrql` (at
    /// `DISPATCH_LEVEL`).
    pub fn ExReleaseSpinLockExclusive(SpinLock: *mut EX_SPIN_LOCK, OldIrql: KIRQL);

    /// Initialises a DPC object (any IRQL).
    pub fn KeInitializeDpc(
        Dpc: *mut KDPC,
        DeferredRoutine: KDEFERRED_ROUTINE,
        DeferredContext: PVOID,
    );
    /// Queues a DPC; FALSE if it was already queued (`<= HIGH_LEVEL`).
    pub fn KeInsertQueueDpc(
        Dpc: *mut KDPC,
        SystemArgument1: PVOID,
        SystemArgument2: PVOID,
    ) -> BOOLEAN;
    /// Removes a queued DPC; TRUE if it was queued.
    pub fn KeRemoveQueueDpc(Dpc: *mut KDPC) -> BOOLEAN;
    /// Waits until every queued DPC has run (`PASSIVE_LEVEL`).
    pub fn KeFlushQueuedDpcs();

    /// Initialises a timer (`<= DISPATCH_LEVEL`).
    pub fn KeInitializeTimerEx(Timer: *mut KTIMER, Type: TIMER_TYPE);
    /// Arms a timer; negative `DueTime` is relative, in 100 ns units. TRUE
    /// if it was already armed.
    pub fn KeSetTimer(Timer: *mut KTIMER, DueTime: LARGE_INTEGER, Dpc: *mut KDPC) -> BOOLEAN;
    /// Disarms a timer; TRUE if it was armed.
    pub fn KeCancelTimer(Timer: *mut KTIMER) -> BOOLEAN;

    /// Initialises an event (any IRQL).
    pub fn KeInitializeEvent(Event: *mut KEVENT, Type: EVENT_TYPE, State: BOOLEAN);
    /// Signals an event (`<= DISPATCH_LEVEL`); returns the previous state.
    pub fn KeSetEvent(Event: *mut KEVENT, Increment: i32, Wait: BOOLEAN) -> i32;
    /// Waits for an object (`PASSIVE_LEVEL` with a null/nonzero timeout).
    pub fn KeWaitForSingleObject(
        Object: PVOID,
        WaitReason: i32,
        WaitMode: KPROCESSOR_MODE,
        Alertable: BOOLEAN,
        Timeout: *mut LARGE_INTEGER,
    ) -> NTSTATUS;
    /// Sleeps the calling thread (`<= APC_LEVEL`); negative = relative,
    /// 100 ns units.
    pub fn KeDelayExecutionThread(
        WaitMode: KPROCESSOR_MODE,
        Alertable: BOOLEAN,
        Interval: *mut LARGE_INTEGER,
    ) -> NTSTATUS;

    /// The current processor's system-wide index; also its group and
    /// in-group number in `*ProcNumber` when that is not null (any IRQL).
    pub fn KeGetCurrentProcessorNumberEx(ProcNumber: PVOID) -> ULONG;

    /// Stops the system with a bug check; never returns.
    pub fn KeBugCheckEx(
        BugCheckCode: ULONG,
        BugCheckParameter1: ULONG_PTR,
        BugCheckParameter2: ULONG_PTR,
        BugCheckParameter3: ULONG_PTR,
        BugCheckParameter4: ULONG_PTR,
    ) -> !;
    /// Breaks into the kernel debugger (an exception if none is attached:
    /// only call it when one is, or in debug builds on a test machine).
    pub fn DbgBreakPoint();

    /// Allocates pool (`<= DISPATCH_LEVEL` for non-paged); null on failure.
    /// Zeroed unless `POOL_FLAG_UNINITIALIZED`. Windows 10 2004 and later.
    pub fn ExAllocatePool2(Flags: POOL_FLAGS, NumberOfBytes: usize, Tag: ULONG) -> PVOID;
    /// Frees pool allocated with the same tag (`<= DISPATCH_LEVEL`).
    pub fn ExFreePoolWithTag(P: PVOID, Tag: ULONG);

    /// Allocates an IRP with `StackSize` locations (`<= DISPATCH_LEVEL`).
    pub fn IoAllocateIrp(StackSize: i8, ChargeQuota: BOOLEAN) -> *mut IRP;
    /// Frees an IRP from `IoAllocateIrp` (`<= DISPATCH_LEVEL`).
    pub fn IoFreeIrp(Irp: *mut IRP);
    /// Reinitialises an IRP for another request (`<= DISPATCH_LEVEL`).
    pub fn IoReuseIrp(Irp: *mut IRP, Iostatus: NTSTATUS);

    /// Allocates an MDL for `Length` bytes at `VirtualAddress`
    /// (`<= DISPATCH_LEVEL`); null on failure.
    pub fn IoAllocateMdl(
        VirtualAddress: PVOID,
        Length: ULONG,
        SecondaryBuffer: BOOLEAN,
        ChargeQuota: BOOLEAN,
        Irp: *mut IRP,
    ) -> *mut MDL;
    /// Frees an MDL from `IoAllocateMdl`.
    pub fn IoFreeMdl(Mdl: *mut MDL);
    /// Fills an MDL's page array for non-paged pool (`<= DISPATCH_LEVEL`).
    pub fn MmBuildMdlForNonPagedPool(MemoryDescriptorList: *mut MDL);
    /// Maps an MDL's locked pages into system space (`<= DISPATCH_LEVEL`
    /// for `KernelMode`); null on failure when `BugCheckOnFailure` is 0.
    pub fn MmMapLockedPagesSpecifyCache(
        MemoryDescriptorList: *mut MDL,
        AccessMode: KPROCESSOR_MODE,
        CacheType: MEMORY_CACHING_TYPE,
        RequestedAddress: PVOID,
        BugCheckOnFailure: ULONG,
        Priority: ULONG,
    ) -> PVOID;
    /// Undoes `MmMapLockedPagesSpecifyCache` (`<= DISPATCH_LEVEL`).
    pub fn MmUnmapLockedPages(BaseAddress: PVOID, MemoryDescriptorList: *mut MDL);
    /// The physical address of a valid, resident system virtual address
    /// (`<= DISPATCH_LEVEL`).
    pub fn MmGetPhysicalAddress(BaseAddress: PVOID) -> PHYSICAL_ADDRESS;
}

// `wdm.h` declares the performance counter NTHALAPI: HAL.dll exports it on
// every Windows 10 and Server release, ntoskrnl.exe only from 10.0.19041.
#[cfg_attr(
    target_os = "windows",
    link(name = "HAL.dll", kind = "raw-dylib", modifiers = "+verbatim")
)]
unsafe extern "system" {
    /// The performance counter; its frequency in `*PerformanceFrequency`
    /// when that is not null (any IRQL).
    pub fn KeQueryPerformanceCounter(PerformanceFrequency: *mut LARGE_INTEGER) -> LARGE_INTEGER;
}

#[cfg_attr(
    target_os = "windows",
    link(name = "ntoskrnl.exe", kind = "raw-dylib", modifiers = "+verbatim")
)]
unsafe extern "C" {
    /// Formatted debugger output, filtered by component and level
    /// (`<= DIRQL`). `Format` is a C format string.
    pub fn DbgPrintEx(ComponentId: ULONG, Level: ULONG, Format: *const c_char, ...) -> ULONG;
}
