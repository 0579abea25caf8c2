//! The provider's consumer-level suite: its test bodies, one macro per
//! area (`suite_adapter!`, `suite_audit!`, ... `suite_v21!`), each
//! expanding to the area's items in the module a test binary gives it.
//! Two binaries expand them all: the provider's `suite`
//! (`crates/provider/tests/suite/main.rs`, `cargo test -p provider`: each
//! body as `<area>::<test>::{scripted, mem, udp}`) and the root's `bottle`
//! (`tests/bottle/suite.rs`: each body as
//! `suite::provider_<area>::<test>::bottle`). Each binary's root names the
//! variants it wants `backend_variants` and the fate of the
//! scripted-device-only items `host_only` (see [`backend`](crate::backend)).
//!
//! They are macros because the tests belong to those binaries, which
//! share them without including each other's files. Lints skip code
//! expanded from another crate's macro, so this crate's own test build
//! expands every area once more, with no variants (`checked` below): that
//! is where clippy and rustc check the bodies.

mod adapter;
mod audit;
mod cm;
mod cq;
mod liberal;
mod objects;
mod post;
mod v21;

/// Every area expanded once in this crate's test build, so that the
/// workspace lints see the bodies; nothing here runs (the crate root
/// names `backend_variants` a macro that writes no test, and `host_only`
/// drops the scripted-only items, as the bottle does: hence the unused
/// imports and helpers).
#[cfg(test)]
#[allow(dead_code, unused_imports)]
mod checked {
    mod adapter {
        crate::suite_adapter!();
    }
    mod audit {
        crate::suite_audit!();
    }
    mod cm {
        crate::suite_cm!();
    }
    mod cq {
        crate::suite_cq!();
    }
    mod liberal {
        crate::suite_liberal!();
    }
    mod objects {
        crate::suite_objects!();
    }
    mod post {
        crate::suite_post!();
    }
    mod v21 {
        crate::suite_v21!();
    }
}
