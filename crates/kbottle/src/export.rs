//! What the bottle offers a driver image: one [`Export`] per function,
//! the import (module and name) it answers and the Rust function behind
//! it. Every emulated module's `exports()` returns them, as a Windows
//! module's export table (Wine's `.spec` file) lists its functions; the
//! loader binds an image's imports to them. A leaf: the rooms that export
//! and the loader that binds meet here without importing each other.

/// One function the bottle exports to the image.
#[derive(Clone, Copy, Debug)]
pub struct Export {
    /// Module the image imports it from (`ntoskrnl.exe`, `NDIS.SYS`, ...),
    /// compared case-insensitively.
    pub module: &'static str,
    /// Import name, compared exactly.
    pub name: &'static str,
    /// Address of the `unsafe extern "win64" fn` implementing it.
    pub addr: *const (),
}

// SAFETY: `addr` is the address of a function (code), immutable and valid
// for the whole process; sharing it between threads is harmless.
unsafe impl Send for Export {}
// SAFETY: as for Send: the address of immutable code.
unsafe impl Sync for Export {}

/// Builds an [`Export`] from an `unsafe extern "win64" fn` item named as
/// the import (`export!("ntoskrnl.exe", KeInsertQueueDpc)`), or from any
/// function under another name (`export!("NDIS.SYS", "NdisFoo" => foo)`).
#[macro_export]
macro_rules! export {
    ($module:literal, $name:ident) => {
        $crate::export::Export {
            module: $module,
            name: stringify!($name),
            addr: $name as *const (),
        }
    };
    ($module:literal, $name:literal => $f:expr) => {
        $crate::export::Export {
            module: $module,
            name: $name,
            addr: $f as *const (),
        }
    };
}
