//! The harness is a console program entered at `harness_main`; these
//! arguments come after `.cargo/config.toml`'s kernel-image flags, and
//! lld-link takes the last `/SUBSYSTEM` and `/ENTRY`.

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    for arg in ["/SUBSYSTEM:CONSOLE,6.02", "/ENTRY:harness_main"] {
        println!("cargo::rustc-link-arg-bins={arg}");
    }
}
