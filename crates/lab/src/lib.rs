//! The interoperability lab: rsndk against Linux's soft-RoCE (`rdma_rxe`)
//! and librdmacm's `rping` in a QEMU guest.
//!
//! - [`image::prepare`] builds the guest image from Debian packages
//!   (`apt-get download`, `dpkg-deb -x`; nothing is installed on the host)
//!   into a cache keyed by their versions.

pub mod apt;
pub mod cache;
mod cpio;
mod elf;
pub mod error;
mod guest_files;
pub mod host;
pub mod image;
mod rootfs;

pub use error::{Error, Result};
pub use image::{Image, ImageSpec};
