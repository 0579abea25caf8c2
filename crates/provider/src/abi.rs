//! The ABI edge's typed access: where consumer pointers become checked
//! Rust references and values, and where consumer functions are called.
//!
//! The entry points of [`crate::dispatch`] use it on every argument. A
//! pointer to one of our objects is accepted only if it is non-null, its
//! header names the expected object type and its dispatch pointer is our
//! table for that type (a stranger's or a different kind of object fails the
//! check instead of being reinterpreted). Arrays, out-parameters, socket
//! addresses and MDL chains become slices, checked writers and read-only
//! views here; everything behind the edge is safe Rust.
//!
//! Objects are `#[repr(C)]` structs whose first field is the NDK object
//! itself (`NDK_QP` = header + dispatch pointer) inside an [`NdkCell`], so the
//! consumer's `NDK_QP*` is the address of our `Qp`.

use core::cell::UnsafeCell;
use core::ffi::c_void;
use core::fmt;
use core::marker::PhantomData;
use core::net::SocketAddr;

use hwq::{Sge, TryArc};
use ndkpi::{
    MDL, NDK_CONNECTOR, NDK_OBJECT_HEADER, NDK_OBJECT_HEADER_RESERVED_BLOCK, NDK_SGE, NDK_VERSION,
    NTSTATUS, SOCKADDR, STATUS_BUFFER_TOO_SMALL, STATUS_INVALID_PARAMETER, STATUS_SUCCESS,
};

use crate::sockaddr;

/// Holds the consumer-visible NDK object (header and dispatch pointer).
///
/// It is written once, when the object is built and before its address is
/// handed out; afterwards the provider only reads the type and dispatch
/// fields through raw pointers. `NdkReserved` belongs to NDIS and the
/// consumer, who may write it at any time: the `UnsafeCell` makes that
/// legal while we hold `&T` to the rest of the object.
#[repr(transparent)]
pub struct NdkCell<T>(UnsafeCell<T>);

// SAFETY: the provider writes the cell only in `NdkCell::new`, before the
// object is shared (no method hands out `&mut T`); concurrent reads of plain
// data are sound, and consumer writes only touch `NdkReserved`, which the
// provider never reads.
unsafe impl<T> Sync for NdkCell<T> {}
// SAFETY: every `T` stored here is an NDK object struct: plain data (a
// header and a pointer to a `static` dispatch table), which is sound to move
// between threads.
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

/// An NDK object of ours. Implemented next to each kind's dispatch table
/// (in [`crate::dispatch`]).
///
/// # Safety
/// Implementors must be `#[repr(C)]` with an [`NdkCell`] holding
/// [`NdkObject::ndk`]'s value as first field, and every value must live
/// inside a `TryArc` (constructors return only `TryArc<Self>`), which
/// [`arc`] relies on.
pub unsafe trait NdkObject: Sized {
    /// The NDK struct (`NDK_QP`...).
    type Ndk;
    /// `NDK_OBJECT_HEADER.ObjectType` of this kind.
    const TYPE: i32;
    /// The address of this kind's `static` dispatch table.
    fn dispatch_table() -> *const c_void;

    /// The consumer-visible object of a new instance on an adapter that
    /// negotiated `version`: header and dispatch table.
    fn ndk(version: NDK_VERSION) -> Self::Ndk;

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
    // SAFETY: `ptr` is non-null (checked) and readable for a header and a
    // dispatch pointer (this function's contract); no reference is made.
    let object_type = unsafe { type_ptr.read_unaligned() };
    // SAFETY: the dispatch pointer field lies inside that readable range
    // (this function's contract); no reference is made.
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
/// A non-null `out` must be valid for a (suitably aligned) write of `T`.
pub unsafe fn write_out<T>(out: *mut T, value: T) -> bool {
    if out.is_null() {
        return false;
    }
    // SAFETY: `out` is non-null (checked) and valid for a write of `T`
    // (this function's contract).
    unsafe { out.write(value) };
    true
}

/// Reads an in/out argument such as a `ULONG*` size.
///
/// # Safety
/// A non-null `ptr` must be valid for a (suitably aligned) read of `T`.
pub unsafe fn read_in<T: Copy>(ptr: *const T) -> Option<T> {
    if ptr.is_null() {
        return None;
    }
    // SAFETY: `ptr` is non-null (checked) and valid for a read of `T`
    // (this function's contract).
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
    // SAFETY: `ptr` is non-null (checked), aligned and valid for `len`
    // reads for `'a`, unchanged meanwhile (this function's contract).
    Some(unsafe { core::slice::from_raw_parts(ptr, len) })
}

/// Borrows `len` writable bytes at `ptr` (null with zero length is the
/// empty slice).
///
/// # Safety
/// A non-null `ptr` must be valid for writes of `len` bytes for `'a`, and
/// nothing else may access them meanwhile.
pub unsafe fn bytes_mut<'a>(ptr: *mut u8, len: usize) -> Option<&'a mut [u8]> {
    if len == 0 {
        return Some(&mut []);
    }
    if ptr.is_null() {
        return None;
    }
    // SAFETY: `ptr` is non-null (checked) and valid for `len` byte writes
    // for `'a` with no other access (this function's contract); bytes need
    // no alignment.
    Some(unsafe { core::slice::from_raw_parts_mut(ptr, len) })
}

/// The consumer's output array of `len` `T`s, written element by element
/// (unaligned: NDK does not promise the array's alignment).
#[derive(Debug)]
pub struct OutArray<'a, T> {
    ptr: *mut T,
    len: usize,
    _array: PhantomData<&'a mut [T]>,
}

impl<T> OutArray<'_, T> {
    /// Wraps the array; `None` for a null pointer.
    ///
    /// # Safety
    /// A non-null `ptr` must be valid for writes of `len` `T`s (at any
    /// alignment) for `'a`.
    pub unsafe fn new(ptr: *mut T, len: usize) -> Option<Self> {
        (!ptr.is_null()).then_some(Self {
            ptr,
            len,
            _array: PhantomData,
        })
    }

    /// Writes element `i`; false (writing nothing) if `i` is out of bounds.
    pub fn write(&mut self, i: usize, value: T) -> bool {
        if i >= self.len {
            return false;
        }
        // SAFETY: `i < len` (checked) and `OutArray::new`'s caller
        // promised `len` writable elements for `'a`.
        unsafe { self.ptr.wrapping_add(i).write_unaligned(value) };
        true
    }
}

const _: () = assert!(size_of::<NDK_SGE>() == size_of::<Sge>());
const _: () = assert!(align_of::<NDK_SGE>() == align_of::<Sge>());

/// Borrows the consumer's SGE array as `hwq::Sge`s (`NDK_SGE` and
/// `hwq::Sge` have the same layout: address union, length, token).
///
/// # Safety
/// A non-null `sgl` must point to `count` readable `NDK_SGE`s that stay
/// unchanged for `'a`.
#[inline]
pub unsafe fn sge_list<'a>(sgl: *const NDK_SGE, count: u32) -> Result<&'a [Sge], NTSTATUS> {
    // SAFETY: a non-null `sgl` holds `count` readable `NDK_SGE`s for `'a`
    // (this function's contract); `NDK_SGE` and `Sge` share size and
    // alignment (asserted above) and field layout, and every bit pattern
    // is a valid `Sge`.
    unsafe { slice(sgl.cast::<Sge>(), count as usize) }.ok_or(STATUS_INVALID_PARAMETER)
}

/// Reads a consumer's socket address of `len` bytes.
///
/// # Safety
/// A non-null `addr` must be readable for `len` bytes.
pub unsafe fn read_sockaddr(addr: *const SOCKADDR, len: u32) -> Result<SocketAddr, NTSTATUS> {
    // SAFETY: a non-null `addr` is readable for `len` bytes (this
    // function's contract), and the caller's call is its lifetime.
    let bytes = unsafe { slice(addr.cast::<u8>(), len as usize) };
    match bytes {
        Some(bytes) if !addr.is_null() => sockaddr::parse(bytes),
        _ => Err(STATUS_INVALID_PARAMETER),
    }
}

/// Writes `addr` for a `GetLocalAddress`-style call: `*len` in = buffer
/// size, out = bytes written or required (`STATUS_BUFFER_TOO_SMALL`).
///
/// # Safety
/// A non-null `len` must be valid for read and write; a non-null `out`
/// must be writable for `*len` bytes.
pub unsafe fn write_sockaddr(addr: SocketAddr, out: *mut SOCKADDR, len: *mut u32) -> NTSTATUS {
    // SAFETY: a non-null `len` is readable (this function's contract).
    let Some(have) = (unsafe { read_in(len) }) else {
        return STATUS_INVALID_PARAMETER;
    };
    let need = sockaddr::size_of_addr(&addr);
    // SAFETY: `len` is non-null (read above) and writable (this function's
    // contract).
    unsafe { write_out(len, need) };
    if out.is_null() || have < need {
        return STATUS_BUFFER_TOO_SMALL;
    }
    // SAFETY: `out` is non-null (checked) and writable for `have >= need`
    // bytes (this function's contract).
    let buf = unsafe { bytes_mut(out.cast::<u8>(), need as usize) };
    match buf.map(|buf| sockaddr::encode(addr, buf)) {
        Some(Ok(_)) => STATUS_SUCCESS,
        _ => STATUS_BUFFER_TOO_SMALL,
    }
}

/// A consumer's MDL chain, read (never written) during one call.
#[derive(Clone, Copy, Debug)]
pub struct MdlChain<'a> {
    first: *const MDL,
    _chain: PhantomData<&'a MDL>,
}

impl<'a> MdlChain<'a> {
    /// Wraps the chain starting at `mdl` (null: the empty chain).
    ///
    /// # Safety
    /// `mdl` must be null or the first MDL of a valid chain for `'a`: each
    /// MDL readable, followed by the PFN array its `Size` accounts for, and
    /// its `Next` null or the next such MDL, none modified meanwhile.
    pub unsafe fn new(mdl: *const MDL) -> Self {
        Self {
            first: mdl,
            _chain: PhantomData,
        }
    }

    /// The first MDL, if the chain is not empty.
    pub fn first(&self) -> Option<MdlEntry<'a>> {
        // SAFETY: `first` is null or a valid MDL of the chain for `'a`
        // (`MdlChain::new`'s contract).
        unsafe { MdlEntry::read(self.first) }
    }
}

/// One MDL of an [`MdlChain`]: its header, read once, and its PFN array.
#[derive(Clone, Copy, Debug)]
pub struct MdlEntry<'a> {
    header: MDL,
    pfns: *const u64,
    room: usize,
    _chain: PhantomData<&'a MDL>,
}

impl<'a> MdlEntry<'a> {
    /// # Safety
    /// `mdl` must be null or a valid MDL of an [`MdlChain`] for `'a`.
    unsafe fn read(mdl: *const MDL) -> Option<Self> {
        if mdl.is_null() {
            return None;
        }
        // SAFETY: `mdl` is non-null (checked) and a valid, readable MDL
        // (this function's contract); a plain copy of its header.
        let header = unsafe { mdl.read_unaligned() };
        // `Size` covers the header and the PFN array.
        let room = usize::try_from(header.Size)
            .unwrap_or(0)
            .saturating_sub(size_of::<MDL>())
            / size_of::<u64>();
        Some(Self {
            header,
            // The PFN array follows the header.
            pfns: mdl.wrapping_add(1).cast::<u64>(),
            room,
            _chain: PhantomData,
        })
    }

    /// The MDL's header.
    pub fn header(&self) -> &MDL {
        &self.header
    }

    /// How many PFNs the MDL's `Size` has room for.
    pub fn room(&self) -> usize {
        self.room
    }

    /// PFN `i`, if the MDL has room for it.
    pub fn pfn(&self, i: usize) -> Option<u64> {
        if i >= self.room {
            return None;
        }
        // SAFETY: `i < room`, and the MDL is followed by the `room` PFNs
        // its `Size` accounts for (`MdlChain::new`'s contract).
        Some(unsafe { self.pfns.wrapping_add(i).read_unaligned() })
    }

    /// The next MDL of the chain.
    pub fn next(&self) -> Option<MdlEntry<'a>> {
        // SAFETY: `Next` of a valid chain member is null or the next valid
        // member for `'a` (`MdlChain::new`'s contract).
        unsafe { MdlEntry::read(self.header.Next.cast_const()) }
    }
}

/// Calls a consumer callback of the `(context, status)` shape: a request
/// completion or a CQ or SRQ notification.
///
/// Only [`crate::callout`] calls it, with a function and context the
/// consumer passed to an entry point for this callback, while the object
/// they belong to is held open.
pub(crate) fn call_with_status(
    func: unsafe extern "win64" fn(*mut c_void, NTSTATUS),
    context: *mut c_void,
    status: NTSTATUS,
) {
    // SAFETY: `func`/`context` are what the consumer passed for this
    // callback (recorded by the entry point that received them), and NDK
    // keeps them valid until the owning object's close completes, which
    // waits for this call (the caller holds the object open).
    unsafe { func(context, status) };
}

/// Calls a consumer callback that takes only its context: a close
/// completion or a disconnect event. Only [`crate::callout`] calls it, as
/// [`call_with_status`].
pub(crate) fn call_with_context(func: unsafe extern "win64" fn(*mut c_void), context: *mut c_void) {
    // SAFETY: `func`/`context` are what the consumer passed for this
    // callback (the close entry or NdkAccept/NdkCompleteConnect), valid
    // until the object's close completes; a close completion is called
    // once, as that completion.
    unsafe { func(context) };
}

/// Calls an extended disconnect event callback with its reason. Only
/// [`crate::callout`] calls it, as [`call_with_status`].
pub(crate) fn call_with_reason(
    func: unsafe extern "win64" fn(*mut c_void, u32),
    context: *mut c_void,
    reason: u32,
) {
    // SAFETY: `func`/`context` are what the consumer passed to
    // NdkAcceptEx or NdkCompleteConnectEx, valid until the connector's close
    // completes, which waits for this call (the caller holds it open).
    unsafe { func(context, reason) };
}

/// Calls a listener's connect event callback, handing the consumer the
/// new connector's reference. Only [`crate::callout`] calls it, as
/// [`call_with_status`].
pub(crate) fn call_with_connector<T: NdkObject<Ndk = NDK_CONNECTOR>>(
    func: unsafe extern "win64" fn(*mut c_void, *mut NDK_CONNECTOR),
    context: *mut c_void,
    connector: TryArc<T>,
) {
    let handle = into_handle(connector);
    // SAFETY: `func`/`context` are what the consumer passed to
    // NdkCreateListener, valid until the listener's close completes, which
    // waits for this call (the caller holds it open); `handle` carries the
    // reference `into_handle` just gave up, now the consumer's.
    unsafe { func(context, handle) };
}
