//! The backends a consumer-level test body runs on, and the macros that
//! write one test per backend from one body. A test binary's root names
//! the variants it wants `backend_variants` ([`host_variants!`](crate::host_variants) in the
//! host suites, [`bottle_variants!`](crate::bottle_variants) in the kernel bottle's binary) and
//! the fate of its scripted-device-only items `host_only`
//! ([`keep_items!`](crate::keep_items) or [`drop_items!`](crate::drop_items)); each body module then names a
//! `run(Backend)` that opens the adapter under test on the given backend.

/// What the adapter under test runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// `testkit::scripted::ScriptedDevice`: nothing happens until told.
    Scripted,
    /// The software RNIC on its own in-memory fabric.
    Mem,
    /// The software RNIC on RoCEv2/UDP over loopback.
    Udp,
    /// An adapter of the real `rsndk.sys` running in the kernel bottle
    /// (`crates/kbottle`): the same provider and RNIC, built for Windows,
    /// in the driver's virtual miniport over an emulated NIC, RoCEv2 carried
    /// as Ethernet frames over the bottle's emulated segment, its address
    /// given to its interface in the bottle's TCP/IP.
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    Bottle,
}

/// Generates the tests of each test body, one per backend of the binary:
/// `name::scripted`, `name::mem`, `name::udp` in the host suites, and
/// `name::bottle` in the bottle's binary (`tests/bottle.rs`). Which set a
/// binary gets is the macro its root names `backend_variants`
/// ([`host_variants!`](crate::host_variants) or [`bottle_variants!`](crate::bottle_variants)). A body written
/// `fn name(b: Backend) rnic_ignore("bug: ...") { ... }` has its RNIC and
/// bottle variants ignored with that reason (for RNIC bugs owned
/// elsewhere); `bottle_ignore("why")` ignores only the bottle variant (a
/// test that needs what only the host gives: the checked host platform's
/// pool counters or fault injection inside the provider).
// `crate::backend_variants` is meant: the calling binary's root picks the
// variants.
#[allow(clippy::crate_in_macro_def)]
#[macro_export]
macro_rules! backend_tests {
    ($($(#[$attr:meta])* fn $name:ident($b:ident: Backend)
        $(rnic_ignore($why:literal))? $(bottle_ignore($bwhy:literal))? $body:block)*) => {$(
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            // Test bodies, exempt like `#[test]` functions.
            #[allow(clippy::too_many_lines)]
            $(#[$attr])*
            fn run($b: $crate::backend::Backend) $body

            crate::backend_variants!(rnic($($why)?) bottle($($why)? $($bwhy)?));
        }
    )*};
}

/// The host suites' variants of a [`backend_tests!`] body.
#[macro_export]
macro_rules! host_variants {
    (rnic($($why:literal)?) bottle($($bwhy:literal)*)) => {
        #[test]
        fn scripted() {
            run($crate::backend::Backend::Scripted);
        }

        #[test]
        $(#[ignore = $why])?
        fn mem() {
            run($crate::backend::Backend::Mem);
        }

        #[test]
        $(#[ignore = $why])?
        fn udp() {
            run($crate::backend::Backend::Udp);
        }
    };
}

/// Items of a suite file that run on the host backends only (tests of
/// the scripted device): kept in the host binaries...
#[macro_export]
macro_rules! keep_items {
    ($($item:item)*) => { $($item)* };
}

/// ...and left out of the bottle's binary, which includes the same files.
#[macro_export]
macro_rules! drop_items {
    ($($item:item)*) => {};
}

/// The bottle's variant of a [`backend_tests!`] body.
#[macro_export]
macro_rules! bottle_variants {
    (rnic($($why:literal)?) bottle()) => {
        #[test]
        fn bottle() {
            run($crate::backend::Backend::Bottle);
        }
    };
    (rnic($($why:literal)?) bottle($bwhy:literal $($more:literal)*)) => {
        #[test]
        #[ignore = $bwhy]
        fn bottle() {
            run($crate::backend::Backend::Bottle);
        }
    };
}
