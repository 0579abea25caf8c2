//! Build script of rsndknotify: the DLL's link arguments.
//!
//! `.cargo/config.toml` gives every `x86_64-pc-windows-msvc` link the
//! kernel image's flags (`/DRIVER`, `/SUBSYSTEM:NATIVE`,
//! `/ENTRY:DriverEntry`, `/NODEFAULTLIB`, ...). This DLL is user mode:
//! its own link arguments come after those on lld-link's command line,
//! and lld-link takes the last `/SUBSYSTEM` and `/ENTRY`. (`/DRIVER`
//! stays; without `:WDM` or `:UPONLY` it changes no header field of a
//! DLL, which `tests/pe.rs` checks.) `/NODEFAULTLIB` is what the DLL wants
//! too: no C runtime, only its `raw-dylib` imports.

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    let target = std::env::var("TARGET").unwrap_or_default();
    if target == "x86_64-pc-windows-msvc" {
        // A Windows DLL (subsystem WINDOWS, version 6.2: Windows 8 /
        // Server 2012 and later), entered at the stub in src/com/entry.rs,
        // which no export table lists.
        for arg in ["/SUBSYSTEM:WINDOWS,6.02", "/ENTRY:rsndknotify_entry"] {
            println!("cargo::rustc-cdylib-link-arg={arg}");
        }
    }
}
