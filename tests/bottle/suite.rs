//! The provider's consumer-level suite (`crates/provider/tests/suite/`) on
//! adapters of the bottled `rsndk.sys`: every `backend_tests!` body of
//! those files runs here as `provider_<file>::<test>::bottle`, through the NDK dispatch tables the
//! driver hands out (win64 code), with the bottle checking the kernel
//! rules underneath. A body marked `bottle_ignore` needs what only the
//! host gives (the checked host platform's pool counters or fault
//! injection inside the provider); the bottle's own sweep
//! (`low_resources`) covers failures for the driver.

#[allow(unused_imports, dead_code)] // their host-only parts are left out
#[path = "../../crates/provider/tests/suite/adapter.rs"]
mod provider_adapter;
#[allow(unused_imports, dead_code)] // their host-only parts are left out
#[path = "../../crates/provider/tests/suite/audit.rs"]
mod provider_audit;
#[allow(unused_imports, dead_code)] // their host-only parts are left out
#[path = "../../crates/provider/tests/suite/cm.rs"]
mod provider_cm;
#[allow(unused_imports, dead_code)] // their host-only parts are left out
#[path = "../../crates/provider/tests/suite/cq.rs"]
mod provider_cq;
#[allow(unused_imports, dead_code)] // their host-only parts are left out
#[path = "../../crates/provider/tests/suite/liberal.rs"]
mod provider_liberal;
#[allow(unused_imports, dead_code)] // their host-only parts are left out
#[path = "../../crates/provider/tests/suite/objects.rs"]
mod provider_objects;
#[allow(unused_imports, dead_code)] // their host-only parts are left out
#[path = "../../crates/provider/tests/suite/post.rs"]
mod provider_post;
#[allow(unused_imports, dead_code)] // their host-only parts are left out
#[path = "../../crates/provider/tests/suite/v21.rs"]
mod provider_v21;
