//! The kernel bottle: the real `rsndk.sys`, linked for
//! `x86_64-pc-windows-msvc`, loaded into a Linux x86-64 process and run
//! there the way Windows runs it, under checks at least as strict as
//! Driver Verifier's.
//!
//! It is laid out as Wine lays out its DLLs: one room per emulated Windows
//! module, each a folder whose `mod.rs` says what it emulates and what it
//! may import, with one-way imports between rooms (bottom up; `.ci/
//! module_cycles.py crates/kbottle/src`, with and without `--top`, finds
//! no cycle):
//!
//! - Leaves, which import nothing of the crate: [`export`](mod@export) (the [`Export`
//!   ](export::Export) every module's export table lists, and `export!`),
//!   [`ids`] (an adapter's number, a registry keyword), `sync`.
//! - [`loader`], the PE loader: [`pe`] maps the image, applies its base
//!   relocations, binds every import to a Rust implementation with the
//!   Windows x64 calling convention (`extern "win64"`), and refuses to
//!   load with the full list of imports it cannot bind; [`image`] finds
//!   or builds the image under test.
//! - [`kernel`], ntoskrnl.exe: [`cpu`] (each processor's IRQL; its DPC
//!   queue), [`ke`] (DPCs, timers, events, waits, spin locks, time,
//!   `KeBugCheckEx`), [`pool`] (tagged pool with leak, double-free and
//!   live-object checks, and low-resources simulation) and
//!   [`special_pool`], [`mm`] (MDLs and the physical address model), [`io`]
//!   (IRPs and their completion), [`crt`] (the C runtime routines
//!   ntoskrnl exports, `DbgPrintEx`), [`trap`] (what the image executes
//!   that user space cannot, privileged instructions, `int 29h`, `ud2`,
//!   faults in driver code, turned into a bugcheck report) and
//!   [`verifier`] (the rules' outcome: a would-be bugcheck is recorded
//!   with its code and parameters and ends the test; the DPC watchdog).
//! - [`world`], below the NICs: [`segment`], the emulated Ethernet the
//!   NICs sit on (a learning switch with pcap capture; nothing leaves the
//!   process unless [`tap`] joins a segment to a Linux tap device).
//! - [`ndis`], NDIS.SYS: miniport registration, configuration keywords,
//!   attributes, OIDs, work items, PnP events, and the adapter lifecycle;
//!   for an intermediate driver also the protocol edge (registration,
//!   binds and unbinds, the binding's data path, OIDs and PnP events), the
//!   NICs below it and the virtual miniports over them, and
//!   `NET_BUFFER_LIST`s with an ownership ledger.
//! - [`tcpip`], tcpip.sys above each virtual miniport: the interface's
//!   addresses (duplicate address detection, the EUI-64 link-local), ARP
//!   and IPv6 neighbor discovery, ICMP echo and port unreachable, and the
//!   receive filter it sets on V.
//! - [`netio`], NETIO.SYS's IP Helper: the unicast address table and its
//!   change notifications, over [`tcpip`].
//! - [`machine`] ties them together: load, `DriverEntry`, adapters, NDK
//!   open/close, halt, unload, and the final leak report; [`shared`] is
//!   the one machine of a test process.
//!
//! The kernel's, the loader's and the world's modules are also at the
//! crate root (`kbottle::cpu`, `kbottle::pe`, `kbottle::segment`, ...), the
//! paths tests and harnesses use.
//!
//! The model, in short:
//! - A *processor* is an OS thread that runs driver code: the test thread,
//!   the timer thread, the system worker thread (work items), the TCP/IP
//!   thread (`tcpip`), one thread per IP Helper notification
//!   registration, each NIC's thread (`nic-<n>`: receives,
//!   deferred send and OID completions, link changes, all at
//!   DISPATCH_LEVEL) and NDIS's PnP threads (`ndis-pnp`: binds, unbinds,
//!   binding pause and restart, at PASSIVE_LEVEL). Each has its own IRQL and DPC queue. A DPC
//!   queued at PASSIVE_LEVEL on the current processor runs at once, on
//!   that thread, at DISPATCH_LEVEL, as it would when that processor's
//!   IRQL drops below DISPATCH; one queued at DISPATCH runs when the
//!   processor lowers its IRQL. This makes lock-preemption deadlocks
//!   deterministic.
//! - Physical addresses are virtual addresses plus [`mm::PHYS_OFFSET`], so
//!   a driver that confuses the two faults instead of working by luck.
//! - Time is real (`CLOCK_MONOTONIC`); the performance counter runs at
//!   10 MHz. The DPC watchdog counts a processor's time at DISPATCH_LEVEL
//!   in its thread's CPU time (see [`cpu`]): Linux may deschedule a
//!   bottle processor, which a Windows processor at DISPATCH_LEVEL never
//!   is.
#![cfg(all(target_os = "linux", target_arch = "x86_64"))]
// The bottle is the other side of the kernel ABI: raw pointers from the
// driver are its daily bread. Each block still says why it is sound.
#![allow(unsafe_code)]
// Kernel names are kept verbatim (KeInsertQueueDpc, IRP, MDL).
#![allow(non_snake_case, non_camel_case_types, clippy::upper_case_acronyms)]

pub mod export;
pub mod ids;
pub mod kernel;
pub mod loader;
pub mod machine;
pub mod ndis;
pub mod netio;
mod sync;
pub mod tcpip;
pub mod world;

pub use kernel::{cpu, crt, io, ke, mm, pool, special_pool, trap, verifier};
pub use loader::{image, pe};
pub use machine::{Machine, shared};
pub use world::{segment, tap};
