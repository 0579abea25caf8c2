//! rsndk's Windows driver package, made on Linux: `cargo run -p
//! rsndk-package` writes `target/rsndk-package/` and
//! `target/rsndk-package.zip` (the images test-signed, the INFs stamped,
//! the install scripts; docs/windows.md, section 3). The catalog,
//! which only inf2cat on Windows makes, is the one part missing.
//!
//! The modules are the steps; `tests/inf.rs` checks the INF sources and
//! the Windows packaging task against Microsoft's documented rules.

pub mod build;
pub mod inf;
pub mod layout;
pub mod makefile;
pub mod pe;
pub mod sign;
pub mod stamp;
pub mod zip;
