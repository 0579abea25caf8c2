//! ntoskrnl.exe: the processors and their IRQL, Ke (DPCs, timers,
//! dispatcher objects, spin locks, time, bugchecks), Ex/Mm pool and MDLs,
//! Io (IRPs), the C runtime ntoskrnl exports, the trap handler that turns
//! a fault of driver code into a bugcheck, and Driver Verifier's rules and
//! their outcome.

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
