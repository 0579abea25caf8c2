//! ntoskrnl.exe, with the HAL's IRQL routines: the processors and their
//! IRQL, Ke (DPCs, timers, dispatcher objects, spin locks, time,
//! `KeBugCheckEx`), Ex/Mm (pool, special pool, MDLs), Io (IRPs), the C
//! runtime ntoskrnl exports, the trap handler that turns what driver code
//! executes that user space cannot into a bugcheck, and Driver Verifier,
//! which Windows builds into ntoskrnl too: the rules' outcome
//! ([`verifier`]) and the DPC watchdog.
//!
//! Rule: the kernel imports the loader (to name driver code: an address's
//! image and function, the driver frames on a stack) and the leaves
//! ([`crate::export`](mod@crate::export), `sync`), nothing of NDIS, NETIO, TCP/IP, the world
//! or the machine. Inside, each file imports only floors below its own,
//! bottom up:
//!
//! 1. `signals` (the alternate signal stack, the park signal), `ke`'s
//!    `layout` (the x64 object layouts);
//! 2. `processor` (the processors: registry, identity, IRQL state);
//! 3. [`verifier`] (bugchecks, the fault plan, watchdog limits),
//!    [`special_pool`];
//! 4. [`trap`], `dpc_queue` (each processor's DPC queue and its drain),
//!    [`crt`];
//! 5. `watchdog` (the DPC watchdog thread);
//! 6. [`cpu`] (`KfRaiseIrql`, `KeLowerIrql`, `run_at_dispatch`);
//! 7. [`ke`] (the Ke imports), then [`io`], [`pool`] and [`mm`], each over
//!    the one before.

pub mod cpu;
pub mod crt;
mod dpc_queue;
pub mod io;
pub mod ke;
pub mod mm;
pub mod pool;
mod processor;
mod signals;
pub mod special_pool;
pub mod trap;
pub mod verifier;
mod watchdog;
