//! The interoperability lab: rsndk against Linux's soft-RoCE (`rdma_rxe`)
//! and librdmacm's `rping` in a QEMU guest.
//!
//! - [`image::prepare`] builds the guest image from Debian packages
//!   (`apt-get download`, `dpkg-deb -x`; nothing is installed on the host)
//!   into a cache keyed by their versions ([`cache::cache_dir`]), and
//!   prunes what a newer kernel superseded or nothing used for weeks
//!   ([`prune`]).
//! - [`Lab::start`] creates a network namespace `rsndk-lab-PID-N` with a
//!   bridge (host side 10.77.0.1/24, fd77::1/64; .3-.9 and ::3-::9 free for
//!   rsndk's endpoints) and boots guests on it (10.77.0.2 / fd77::2, then
//!   .10, .11, ...), each with `rxe0` ACTIVE on its eth0.
//! - [`Guest`] runs commands ([`Guest::run`], [`Guest::spawn`]) and reads
//!   rxe's state ([`Guest::rxe_counters`], [`Guest::qp_table`]).
//! - SMB: the image ships `ksmbd.ko` and `cifs.ko` rebuilt with SMB Direct
//!   ([`smb_modules`]), ksmbd-tools and `mount.cifs`;
//!   [`Guest::start_ksmbd`] serves a tmpfs share over TCP and SMB Direct,
//!   [`Guest::mount_cifs`] mounts one, [`Guest::sha256`] checks a file.
//! - [`Netns::run`] runs a closure inside the namespace (sockets opened
//!   there are on the lab's segment); [`Lab::create_tap`] gives a tap on
//!   the bridge; [`Lab::capture`] runs tcpdump; [`decode_check`] runs
//!   tshark over the result.
//!
//! Nothing is skipped: a missing tool, privilege or download is an
//! [`Error`] that says what is missing and how to get it.

mod agent;
pub mod apt;
pub mod cache;
mod capture;
mod cpio;
mod decode;
mod elf;
pub mod error;
mod guest;
mod guest_files;
pub mod host;
pub mod image;
mod lab;
pub mod net;
pub mod netns;
mod ping;
pub mod prune;
mod qemu;
mod rootfs;
mod smb;
pub mod smb_modules;
mod source_edit;

pub use agent::Output;
pub use capture::{Capture, CaptureStats};
pub use decode::{DecodeSummary, decode_check};
pub use error::{Error, Result};
pub use guest::{Background, Console, Guest, GuestConfig, RUN_TIMEOUT, shell_quote};
pub use image::{Image, ImageSpec};
pub use lab::{Lab, LabConfig};
pub use netns::Netns;
pub use ping::ping;
pub use qemu::Accel;
pub use smb::{CifsMount, KsmbdConfig, SHARES_DIR};
pub use smb_modules::SmbModules;
pub use source_edit::SourceEdit;
