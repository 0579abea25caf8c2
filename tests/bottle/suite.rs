//! The consumer-level suite (`tests/provider_*.rs`) on adapters of the
//! bottled `rsndk.sys`: every `backend_tests!` body of those files runs
//! here as `<file>::<test>::bottle`, through the NDK dispatch tables the
//! driver hands out (win64 code), with the bottle checking the kernel
//! rules underneath. A body marked `bottle_ignore` needs what only the
//! host gives (the checked host platform's pool counters or fault
//! injection inside the provider); the bottle's own sweep
//! (`low_resources`) covers failures for the driver.

#[allow(unused_imports, dead_code)] // their host-only parts are left out
#[path = "../provider_adapter.rs"]
mod provider_adapter;
#[allow(unused_imports, dead_code)] // their host-only parts are left out
#[path = "../provider_audit.rs"]
mod provider_audit;
#[allow(unused_imports, dead_code)] // their host-only parts are left out
#[path = "../provider_cm.rs"]
mod provider_cm;
#[allow(unused_imports, dead_code)] // their host-only parts are left out
#[path = "../provider_cq.rs"]
mod provider_cq;
#[allow(unused_imports, dead_code)] // their host-only parts are left out
#[path = "../provider_liberal.rs"]
mod provider_liberal;
#[allow(unused_imports, dead_code)] // their host-only parts are left out
#[path = "../provider_objects.rs"]
mod provider_objects;
#[allow(unused_imports, dead_code)] // their host-only parts are left out
#[path = "../provider_post.rs"]
mod provider_post;
#[allow(unused_imports, dead_code)] // their host-only parts are left out
#[path = "../provider_v21.rs"]
mod provider_v21;
