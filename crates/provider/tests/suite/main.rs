//! The provider's consumer-level suite: adapters driven only through the
//! NDK dispatch tables, as a kernel consumer drives them. Each module's
//! `backend_tests!` bodies run here as `<module>::<test>::{scripted, mem,
//! udp}` (the scripted device and the software RNIC on the in-memory
//! fabric and on UDP over loopback); the bottle's binary
//! (`tests/bottle.rs` at the repository root) includes the same modules
//! and runs those bodies on the bottled driver as `::bottle`.

// The host backends' variants of each body, and the scripted-device-only
// items kept (the bottle's binary names its own macros so).
#[allow(unused_imports)]
use testkit::host_variants as backend_variants;
#[allow(unused_imports)]
use testkit::keep_items as host_only;

mod adapter;
mod audit;
mod cm;
mod cq;
mod liberal;
mod objects;
mod post;
mod v21;
