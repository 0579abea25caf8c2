//! Build script of the driver package.
//!
//! Only the Windows kernel build (`--features wdk`) needs the WDK: wdk-build
//! locates it, emits the kernel linker arguments and checks `+crt-static`.
//! On any other configuration this script does nothing.

#[cfg(all(feature = "wdk", windows))]
fn main() -> Result<(), wdk_build::ConfigError> {
    wdk_build::configure_wdk_binary_build()
}

#[cfg(not(all(feature = "wdk", windows)))]
fn main() {
    println!("cargo::rerun-if-changed=build.rs");
}
