//! Owned COM interface pointers, and the strings netcfg hands out.

use alloc::string::String;
use alloc::vec::Vec;
use core::ffi::c_void;
use core::marker::PhantomData;
use core::ptr::NonNull;

use super::imports::CoTaskMemFree;
use crate::guid::Guid;
use crate::netcfg::Failure;
use crate::sys::{HRESULT, IUnknownVtbl};

/// The vtable of the COM object at `this`, read as `V`.
///
/// # Safety
/// `this` is a live interface pointer whose vtable has `V`'s layout, and
/// the vtable outlives `'a` (COM vtables are static).
pub unsafe fn vtable<'a, V>(this: *mut c_void) -> &'a V {
    // SAFETY: an interface pointer points at its vtable pointer (the
    // caller's contract).
    let vtbl = unsafe { *this.cast::<*const V>() };
    // SAFETY: a live object's vtable pointer is valid for 'a (contract).
    unsafe { &*vtbl }
}

/// One counted reference to a COM interface whose vtable has the layout
/// `V` (a `sys::*Vtbl`, which begins with `IUnknownVtbl`).
pub struct ComPtr<V> {
    raw: NonNull<c_void>,
    interface: PhantomData<V>,
}

impl<V> ComPtr<V> {
    /// Adopts the reference an out-parameter returned (null: `None`).
    ///
    /// # Safety
    /// `raw` is null or a live interface pointer of layout `V` that
    /// carries one reference, which the `ComPtr` now owns.
    pub unsafe fn adopt(raw: *mut c_void) -> Option<ComPtr<V>> {
        NonNull::new(raw).map(|raw| ComPtr {
            raw,
            interface: PhantomData,
        })
    }

    /// Takes a reference of its own on a pointer borrowed from a caller
    /// (a callback's argument).
    ///
    /// # Safety
    /// `raw` is null or a live interface pointer of layout `V` for the
    /// duration of this call.
    pub unsafe fn borrow(raw: *mut c_void) -> Option<ComPtr<V>> {
        let raw = NonNull::new(raw)?;
        // SAFETY: a live interface pointer (contract); every vtable
        // begins with IUnknown's slots.
        let unknown: &IUnknownVtbl = unsafe { vtable(raw.as_ptr()) };
        // SAFETY: AddRef on a live interface.
        unsafe { (unknown.AddRef)(raw.as_ptr()) };
        Some(ComPtr {
            raw,
            interface: PhantomData,
        })
    }

    /// The interface pointer, to pass as `this`.
    pub fn as_raw(&self) -> *mut c_void {
        self.raw.as_ptr()
    }

    /// The vtable.
    pub fn vtbl(&self) -> &V {
        // SAFETY: the type's invariant: a live interface of layout V, kept
        // alive by the reference this value owns.
        unsafe { vtable(self.raw.as_ptr()) }
    }

    /// `QueryInterface` for `iid`, whose vtable layout is `W`.
    pub fn query<W>(&self, iid: &Guid, operation: &'static str) -> Result<ComPtr<W>, Failure> {
        let unknown: &IUnknownVtbl = self.unknown();
        let mut out: *mut c_void = core::ptr::null_mut();
        // SAFETY: QueryInterface on a live interface with valid pointers;
        // on success `out` holds a referenced pointer of interface `iid`.
        let hr = unsafe { (unknown.QueryInterface)(self.as_raw(), iid, &raw mut out) };
        check(hr, operation)?;
        // SAFETY: S_OK: `out` is the interface `iid` (layout W, the
        // caller's choice of W for `iid`) with one reference for us.
        unsafe { ComPtr::adopt(out) }.ok_or(Failure {
            operation,
            hresult: crate::sys::E_POINTER,
        })
    }

    fn unknown(&self) -> &IUnknownVtbl {
        // SAFETY: the invariant (a live interface), and every vtable
        // begins with IUnknown's slots.
        unsafe { vtable(self.raw.as_ptr()) }
    }
}

impl<V> Clone for ComPtr<V> {
    fn clone(&self) -> ComPtr<V> {
        // SAFETY: a live interface of layout V (the invariant).
        unsafe { ComPtr::borrow(self.as_raw()) }.expect("a ComPtr is never null")
    }
}

impl<V> Drop for ComPtr<V> {
    fn drop(&mut self) {
        let unknown: &IUnknownVtbl = self.unknown();
        // SAFETY: gives back the one reference this value owns; the
        // pointer is not used after.
        unsafe { (unknown.Release)(self.raw.as_ptr()) };
    }
}

impl<V> core::fmt::Debug for ComPtr<V> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "ComPtr({:p})", self.raw)
    }
}

/// `Err` for a failed HRESULT (success codes such as `S_FALSE` pass).
pub fn check(hresult: HRESULT, operation: &'static str) -> Result<HRESULT, Failure> {
    if hresult < 0 {
        Err(Failure { operation, hresult })
    } else {
        Ok(hresult)
    }
}

/// Copies a NUL-terminated UTF-16 string netcfg allocated with
/// `CoTaskMemAlloc`, and frees it.
///
/// # Safety
/// `text` is null or a NUL-terminated string from `CoTaskMemAlloc` that
/// nothing else frees.
pub unsafe fn take_co_string(text: *mut u16) -> String {
    if text.is_null() {
        return String::new();
    }
    let mut units = Vec::new();
    let mut at = text;
    loop {
        // SAFETY: within the string up to and including its NUL
        // (contract); the loop stops at the NUL.
        let unit = unsafe { *at };
        if unit == 0 {
            break;
        }
        units.push(unit);
        at = at.wrapping_add(1);
    }
    // SAFETY: netcfg's CoTaskMem string, freed once (contract).
    unsafe { CoTaskMemFree(text.cast::<c_void>()) };
    String::from_utf16_lossy(&units)
}

/// `text` as a NUL-terminated UTF-16 string.
pub fn wide(text: &str) -> Vec<u16> {
    text.encode_utf16().chain(core::iter::once(0)).collect()
}
