//! The ABI edge: where consumer pointers become checked Rust references.
//!
//! Every dispatch function starts here. A pointer to one of our objects is
//! accepted only if it is non-null, its header names the expected object
//! type and its dispatch pointer is our table for that type (a stranger's or
//! a different kind of object fails the check instead of being reinterpreted).
//! From then on the dispatch code works with `&T` and safe Rust.
//!
//! Objects are `#[repr(C)]` structs whose first field is the NDK object
//! itself (`NDK_QP` = header + dispatch pointer) inside an [`NdkCell`], so the
//! consumer's `NDK_QP*` is the address of our `Qp`.

use core::cell::UnsafeCell;
use core::ffi::c_void;
use core::fmt;

use hwq::TryArc;
use ndkpi::{NDK_OBJECT_HEADER, NDK_OBJECT_HEADER_RESERVED_BLOCK, NDK_VERSION};

use crate::object::Object;

/// Holds the consumer-visible NDK object (header and dispatch pointer).
///
/// It is written once, when the object is built and before its address is
/// handed out; afterwards the provider only reads the type and dispatch
/// fields through raw pointers. `NdkReserved` belongs to NDIS and the
/// consumer, who may write it at any time: the `UnsafeCell` makes that
/// legal while we hold `&T` to the rest of the object.
#[repr(transparent)]
pub struct NdkCell<T>(UnsafeCell<T>);

// SAFETY: the provider never writes the cell after construction (see above);
// concurrent reads of plain data are sound, and consumer writes only touch
// `NdkReserved`, which the provider never reads.
unsafe impl<T> Sync for NdkCell<T> {}
// SAFETY: the cell holds plain data (a header and a pointer to a `static`
// dispatch table); moving it between threads is sound.
unsafe impl<T> Send for NdkCell<T> {}

impl<T> NdkCell<T> {
    /// Wraps the initial object.
    pub const fn new(value: T) -> Self {
        Self(UnsafeCell::new(value))
    }

    /// The address the consumer sees.
    pub fn as_ptr(&self) -> *mut T {
        self.0.get()
    }
}

impl<T> fmt::Debug for NdkCell<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("NdkCell").field(&self.0.get()).finish()
    }
}

/// The common shape of every NDK object.
#[repr(C)]
struct RawObject {
    header: NDK_OBJECT_HEADER,
    dispatch: *const c_void,
}

/// A fresh header: negotiated version, type, reserved block zeroed.
pub fn header(version: NDK_VERSION, object_type: ndkpi::NDK_OBJECT_TYPE) -> NDK_OBJECT_HEADER {
    NDK_OBJECT_HEADER {
        Version: version,
        ObjectType: object_type,
        NdkReserved: NDK_OBJECT_HEADER_RESERVED_BLOCK {
            rf: [core::ptr::null_mut(); 4],
        },
    }
}

/// An NDK object of ours.
///
/// # Safety
/// Implementors must be `#[repr(C)]` with an [`NdkCell`] of their NDK
/// object as first field, and every value must live inside a `TryArc`
/// (constructors return only `TryArc<Self>`), which [`arc`] relies on.
pub unsafe trait NdkObject: Object {
    /// The NDK struct (`NDK_QP`...).
    type Ndk;
    /// `NDK_OBJECT_HEADER.ObjectType` of this kind.
    const TYPE: i32;
    /// The address of this kind's `static` dispatch table.
    fn dispatch_table() -> *const c_void;

    /// Whether `dispatch` is one of this kind's dispatch tables (a kind
    /// with one table per NDK major version overrides this).
    fn is_dispatch_table(dispatch: *const c_void) -> bool {
        dispatch == Self::dispatch_table()
    }
}

/// Checks a consumer pointer and turns it into a reference.
///
/// # Safety
/// If `ptr` is non-null it must be readable for the size of an NDK object
/// header and dispatch pointer (the consumer's side of the NDK contract:
/// it passes objects it got from us and has not closed).
pub unsafe fn object<'a, T: NdkObject>(ptr: *const T::Ndk) -> Option<&'a T> {
    let raw = ptr.cast::<RawObject>();
    if raw.is_null() {
        return None;
    }
    // The type is read as a plain i32 so that a garbage value cannot be an
    // invalid enum.
    let type_ptr = raw
        .wrapping_byte_add(
            core::mem::offset_of!(RawObject, header)
                + core::mem::offset_of!(NDK_OBJECT_HEADER, ObjectType),
        )
        .cast::<i32>();
    let dispatch_ptr = raw
        .wrapping_byte_add(core::mem::offset_of!(RawObject, dispatch))
        .cast::<*const c_void>();
    // SAFETY: readable per this function's contract; no reference is made.
    let object_type = unsafe { type_ptr.read_unaligned() };
    // SAFETY: as above, for the dispatch pointer field.
    let dispatch = unsafe { dispatch_ptr.read_unaligned() };
    if object_type != T::TYPE || !T::is_dispatch_table(dispatch) {
        return None;
    }
    // SAFETY: the header names a dispatch table of ours for `T`, which only
    // our `T` objects carry (each is built with it as first field), and the
    // consumer guarantees the object is open for the duration of the call.
    Some(unsafe { &*ptr.cast::<T>() })
}

/// A new counted handle to an object we hold a reference to.
pub fn arc<T: NdkObject>(object: &T) -> TryArc<T> {
    // SAFETY: `NdkObject` values only exist inside a `TryArc` (trait
    // contract), and `object` borrows a live one, so its count is >= 1.
    unsafe { TryArc::clone_from_raw(object) }
}

/// Hands the consumer its reference: the address of the NDK object.
pub fn into_handle<T: NdkObject>(object: TryArc<T>) -> *mut T::Ndk {
    TryArc::into_raw(object).cast_mut().cast()
}

/// Takes the consumer's reference back (at close).
///
/// # Safety
/// `object` must be the object the consumer closes, whose reference was
/// given out by [`into_handle`] and not taken back yet (the NDK contract:
/// an object is closed once).
pub unsafe fn from_handle<T: NdkObject>(object: &T) -> TryArc<T> {
    // SAFETY: per the contract, `object` carries the reference `into_handle`
    // gave up.
    unsafe { TryArc::from_raw(object) }
}

/// Writes `value` to an out-parameter if it is non-null.
///
/// # Safety
/// A non-null `out` must be valid for a write of `T`.
pub unsafe fn write_out<T>(out: *mut T, value: T) -> bool {
    if out.is_null() {
        return false;
    }
    // SAFETY: non-null and valid for writes per the contract.
    unsafe { out.write(value) };
    true
}

/// Reads an in/out `ULONG*` size argument.
///
/// # Safety
/// A non-null `ptr` must be valid for a read of `u32`.
pub unsafe fn read_in<T: Copy>(ptr: *const T) -> Option<T> {
    if ptr.is_null() {
        return None;
    }
    // SAFETY: non-null and valid for reads per the contract.
    Some(unsafe { ptr.read() })
}

/// Borrows `len` elements at `ptr` (null with zero length is the empty
/// slice).
///
/// # Safety
/// A non-null `ptr` must be valid for reads of `len` elements for `'a`.
pub unsafe fn slice<'a, T>(ptr: *const T, len: usize) -> Option<&'a [T]> {
    if len == 0 {
        return Some(&[]);
    }
    if ptr.is_null() {
        return None;
    }
    // SAFETY: non-null, valid for `len` reads per the contract, and the
    // consumer does not modify the array during the call.
    Some(unsafe { core::slice::from_raw_parts(ptr, len) })
}

/// The common close: object-specific start of the close
/// ([`Object::on_close`]: flush, disconnect, stop listening), then drop the
/// consumer's reference. `STATUS_SUCCESS` if that finished the object
/// (no callback), `STATUS_PENDING` if successors or callbacks keep it alive
/// (the completion follows once they are gone).
///
/// # Safety
/// `header` must be null or the header of an object of ours the consumer is
/// closing for the first time, with no other call on it running.
pub unsafe fn close<T: NdkObject>(
    header: *mut ndkpi::NDK_OBJECT_HEADER,
    completion: ndkpi::NDK_FN_CLOSE_COMPLETION,
    context: *mut c_void,
) -> ndkpi::NTSTATUS {
    // SAFETY: forwarded from this function's contract.
    let Some(object) = (unsafe { object::<T>(header.cast()) }) else {
        return ndkpi::STATUS_INVALID_HANDLE;
    };
    object.on_close();
    // SAFETY: first close of this object (contract).
    let arc = unsafe { from_handle(object) };
    if arc
        .life()
        .begin_close(crate::callout::close_from(completion, context))
    {
        arc.finish();
        ndkpi::STATUS_SUCCESS
    } else {
        ndkpi::STATUS_PENDING
    }
}
