//! The PE loader, what Wine keeps in ntdll and Windows in Mm's
//! `MmLoadSystemImage`: [`pe`] maps the image at a random base, binds its
//! imports to the bottle's exports, protects its sections, and registers
//! its code ranges so that a bugcheck or a fault can name driver code;
//! [`image`] finds or builds the image under test.
//!
//! Rule: the loader imports only the leaves ([`crate::export`](mod@crate::export), `sync`).
//! The kernel names driver code through it, so it never reaches into the
//! kernel: the image's owner ([`crate::machine`]) tells ke to forget the
//! kernel objects the driver kept in the image before unmapping it.

pub mod image;
pub mod pe;
