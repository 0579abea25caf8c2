//! The first Windows build's comparison of our hand declarations (crate
//! `ndis`, module `kernel`) with wdk-sys's bindgen output of the installed
//! WDK: a mismatch fails the `--features wdk` build. Only compiled with
//! that feature, i.e. never on Linux, so keep it to plain sizes and
//! `#define` values (compared through `as i64`, whatever integer type
//! bindgen chose). NDIS and the IP Helper have no wdk-sys bindings to compare with;
//! their values are checked against the headers by reading (see the
//! `ndis` crate's module docs).

use core::mem::size_of;

macro_rules! same_size {
    ($($ours:ty = $theirs:ty;)*) => {
        $(const _: () = assert!(size_of::<$ours>() == size_of::<$theirs>(), stringify!($ours));)*
    };
}

macro_rules! same_value {
    ($($ours:expr => $theirs:expr;)*) => {
        $(const _: () = assert!($ours as i64 == $theirs as i64, stringify!($ours));)*
    };
}

same_size! {
    ndis::KDPC = wdk_sys::KDPC;
    ndis::KTIMER = wdk_sys::KTIMER;
    ndis::KEVENT = wdk_sys::KEVENT;
    ndis::IRP = wdk_sys::IRP;
    ndis::IO_STACK_LOCATION = wdk_sys::IO_STACK_LOCATION;
    ndis::IO_STATUS_BLOCK = wdk_sys::IO_STATUS_BLOCK;
    ndis::LIST_ENTRY = wdk_sys::LIST_ENTRY;
    ndis::KSPIN_LOCK = wdk_sys::KSPIN_LOCK;
    ndis::UNICODE_STRING = wdk_sys::UNICODE_STRING;
    ndkpi::MDL = wdk_sys::MDL;
}

same_value! {
    ndis::PASSIVE_LEVEL => wdk_sys::PASSIVE_LEVEL;
    ndis::DISPATCH_LEVEL => wdk_sys::DISPATCH_LEVEL;
    ndis::POOL_FLAG_NON_PAGED => wdk_sys::POOL_FLAG_NON_PAGED;
    ndis::SL_INVOKE_ON_CANCEL => wdk_sys::SL_INVOKE_ON_CANCEL;
    ndis::SL_INVOKE_ON_SUCCESS => wdk_sys::SL_INVOKE_ON_SUCCESS;
    ndis::SL_INVOKE_ON_ERROR => wdk_sys::SL_INVOKE_ON_ERROR;
    ndis::MdlMappingNoExecute => wdk_sys::MdlMappingNoExecute;
    ndis::STATUS_MORE_PROCESSING_REQUIRED => wdk_sys::STATUS_MORE_PROCESSING_REQUIRED;
    ndkpi::STATUS_NOT_SUPPORTED => wdk_sys::STATUS_NOT_SUPPORTED;
    ndkpi::STATUS_PENDING => wdk_sys::STATUS_PENDING;
}

// The offsets the IoSetCompletionRoutine equivalent relies on.
const _: () = assert!(
    core::mem::offset_of!(ndis::IO_STACK_LOCATION, CompletionRoutine)
        == core::mem::offset_of!(wdk_sys::IO_STACK_LOCATION, CompletionRoutine)
);
const _: () = assert!(
    core::mem::offset_of!(ndis::IRP, IoStatus) == core::mem::offset_of!(wdk_sys::IRP, IoStatus)
);
