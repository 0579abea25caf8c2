//! The provider's consumer-level suite: adapters driven only through the
//! NDK dispatch tables, as a kernel consumer drives them. The test bodies
//! live in the test kit (`testkit::suite`, one macro per area), each
//! expanded here into its area's module: the `backend_tests!` bodies run
//! as `<area>::<test>::{scripted, mem, udp}` (the scripted device and the
//! software RNIC on the in-memory fabric and on UDP over loopback); the
//! bottle's binary (`tests/bottle.rs` at the repository root) expands the
//! same macros and runs those bodies on the bottled driver as `::bottle`.

// The host backends' variants of each body, and the scripted-device-only
// items kept (the bottle's binary names its own macros so).
#[allow(unused_imports)]
use testkit::host_variants as backend_variants;
#[allow(unused_imports)]
use testkit::keep_items as host_only;

mod adapter {
    testkit::suite_adapter!();
}
mod audit {
    testkit::suite_audit!();
}
mod cm {
    testkit::suite_cm!();
}
mod cq {
    testkit::suite_cq!();
}
mod liberal {
    testkit::suite_liberal!();
}
mod objects {
    testkit::suite_objects!();
}
mod post {
    testkit::suite_post!();
}
mod v21 {
    testkit::suite_v21!();
}
