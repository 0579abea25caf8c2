//! The provider's consumer-level suite (`testkit::suite`, which the
//! provider's own `suite` binary runs on the host backends) on adapters
//! of the bottled `rsndk.sys`: every `backend_tests!` body of each area
//! runs here as `provider_<area>::<test>::bottle`, through the NDK
//! dispatch tables the driver hands out (win64 code), with the bottle
//! checking the kernel rules underneath. A body marked `bottle_ignore`
//! needs what only the host gives (the checked host platform's pool
//! counters or fault injection inside the provider); the bottle's own
//! sweep (`low_resources`) covers failures for the driver.

#[allow(unused_imports, dead_code)] // their host-only parts are left out
mod provider_adapter {
    testkit::suite_adapter!();
}
#[allow(unused_imports, dead_code)] // their host-only parts are left out
mod provider_audit {
    testkit::suite_audit!();
}
#[allow(unused_imports, dead_code)] // their host-only parts are left out
mod provider_cm {
    testkit::suite_cm!();
}
#[allow(unused_imports, dead_code)] // their host-only parts are left out
mod provider_cq {
    testkit::suite_cq!();
}
#[allow(unused_imports, dead_code)] // their host-only parts are left out
mod provider_liberal {
    testkit::suite_liberal!();
}
#[allow(unused_imports, dead_code)] // their host-only parts are left out
mod provider_objects {
    testkit::suite_objects!();
}
#[allow(unused_imports, dead_code)] // their host-only parts are left out
mod provider_post {
    testkit::suite_post!();
}
#[allow(unused_imports, dead_code)] // their host-only parts are left out
mod provider_v21 {
    testkit::suite_v21!();
}
