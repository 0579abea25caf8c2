//! The in-process COM server netcfg loads (`Ndi\ComponentDll`,
//! `Ndi\ClsID`): the only place with `unsafe`.
//!
//! - [`server`]: the exports (`DllGetClassObject`, `DllCanUnloadNow`,
//!   `DllRegisterServer`, `DllUnregisterServer`) and the class factory.
//! - [`object`]: the notify object, its four interfaces over
//!   [`crate::Notify`].
//! - [`host`]: [`crate::NetCfg`] and [`crate::AdapterRegistry`] over the
//!   `INetCfg` netcfg passes to `Initialize` and the registry.
//! - [`ptr`], [`registry`], [`imports`]: owned interface pointers and
//!   strings, registry keys, the `raw-dylib` imports.
//! - [`runtime`]: what a `no_std` DLL without a C runtime needs (heap,
//!   panic, entry point).

mod host;
mod imports;
mod object;
mod ptr;
mod registry;
mod runtime;
mod server;
