//! The adapter object: version negotiation, open and close, and the adapter
//! dispatch table.
//!
//! An adapter is the parent of CQs, PDs, connectors, listeners, shared
//! endpoints and LAMs. Each child holds a reference on the adapter's life,
//! so closing the adapter (a blocking call at `PASSIVE_LEVEL`) waits until
//! every child has finished, i.e. until every callback the consumer could
//! receive has returned.
//!
//! Several adapters may be open on one device, and their objects combine
//! ([`Adapter::same_device`]). Each object belongs to the adapter it was
//! created on (its parent, whose close waits for it); a combination is an
//! antecedent edge like any other (a connector holds its QP, a QP its PD
//! and CQs), so an object used by another instance's object finishes only
//! after that user, and its own adapter's close waits for both. Pool
//! charges follow the device's platform, which all instances share.

use core::sync::atomic::{AtomicBool, Ordering};

use hwq::TryArc;
use ndkpi::{NDK_ADAPTER, NDK_VERSION, NTSTATUS};

use crate::abi::{self, NdkCell, NdkObject};
use crate::device::DeviceContext;
use crate::object::{Life, Object};
use crate::platform::Platform;
use crate::pool::{self, Charge, tags};
use crate::status;

/// `NDIS_STATUS_BAD_VERSION`: the requested NDK version is not offered.
pub use ndkpi::NDIS_STATUS_BAD_VERSION;

/// The highest version this provider implements: NDKPI 2.1, the current
/// `ndkpi.h` (what the driver advertises in its NDK capabilities).
pub const PROVIDER_VERSION: NDK_VERSION = ndkpi::NDK_VERSION_2_1;

/// The version an adapter opened at `major` runs at: the highest minor of
/// that major this provider implements (1.2 for NDKPI 1, 2.1 for NDKPI 2),
/// or `None` for a major it does not implement.
pub fn highest_minor(major: u16) -> Option<NDK_VERSION> {
    match major {
        1 => Some(ndkpi::NDK_VERSION_1_2),
        2 => Some(ndkpi::NDK_VERSION_2_1),
        _ => None,
    }
}

/// Version negotiation: the consumer names a major version and the lowest
/// minor it accepts; minors of one major are supersets, so any minor up to
/// our highest of that major is served at that highest (1.0-1.2 at 1.2,
/// 2.0-2.1 at 2.1). The two majors differ only in the connector table:
/// 2.x adds `NdkCompleteConnectEx`/`NdkAcceptEx`, and a 1.x adapter's
/// connectors carry the 1.x table (see [`crate::connector`]). 2.0 is served
/// at 2.1 because the only 2.0/2.1 difference, `NDK_RESULT_EX`'s
/// `ProviderErrorCode`, lies in what was padding on x64. Anything else
/// (major 0 or 3+, 1.3+, 2.2+) is `NDIS_STATUS_BAD_VERSION`.
pub fn negotiate(requested: NDK_VERSION) -> Result<NDK_VERSION, NTSTATUS> {
    match highest_minor(requested.Major) {
        Some(v) if requested.Minor <= v.Minor => Ok(v),
        _ => Err(NDIS_STATUS_BAD_VERSION),
    }
}

/// An open adapter.
#[repr(C)]
pub struct Adapter {
    ndk: NdkCell<NDK_ADAPTER>,
    life: Life,
    ctx: TryArc<DeviceContext>,
    version: NDK_VERSION,
    /// Set once the last child finished after the adapter close began.
    done: AtomicBool,
    _charge: Charge,
}

impl Object for Adapter {
    fn life(&self) -> &Life {
        &self.life
    }

    fn platform(&self) -> &'static dyn Platform {
        self.ctx.platform()
    }

    fn teardown(&self) {}

    fn release_antecedents(&self) {
        self.done.store(true, Ordering::Release);
    }
}

impl Adapter {
    /// The device context.
    pub fn ctx(&self) -> &TryArc<DeviceContext> {
        &self.ctx
    }

    /// The negotiated version (every child's header carries it).
    pub fn version(&self) -> NDK_VERSION {
        self.version
    }

    /// Whether `other` is an adapter of the same device. Objects of all the
    /// `NDK_ADAPTER` instances of one device combine freely (a QP of one
    /// instance's PD with another's CQs, connector or listener), as they
    /// do on Windows, where each NDK consumer opens its own instance of
    /// one RNIC; objects of different devices never do.
    pub fn same_device(&self, other: &Adapter) -> bool {
        TryArc::ptr_eq(&self.ctx, &other.ctx)
    }

    /// Whether the consumer negotiated NDKPI 2.x (the 2.1 connector table,
    /// provider error codes in `NDK_RESULT_EX`).
    pub fn is_v2(&self) -> bool {
        self.version.Major >= 2
    }

    /// Shorthand for the platform.
    pub fn platform(&self) -> &'static dyn Platform {
        self.ctx.platform()
    }

    /// Takes a reference for a child that is not a `Dep` (a LAM).
    pub(crate) fn hold(&self) {
        self.life.acquire();
    }

    /// Gives back a reference taken by [`Adapter::hold`].
    pub(crate) fn unhold(&self) {
        if self.life.release() {
            self.finish();
        }
    }

    /// The consumer's close, with its reference: waits (at
    /// `PASSIVE_LEVEL`) until every child has finished.
    pub(crate) fn close(adapter: &TryArc<Adapter>) {
        if adapter.life.begin_close(None) {
            adapter.finish();
        }
        while !adapter.done.load(Ordering::Acquire) {
            adapter.platform().wait_briefly();
        }
    }
}

impl core::fmt::Debug for Adapter {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Adapter")
            .field("version", &(self.version.Major, self.version.Minor))
            .field("life", &self.life)
            .finish_non_exhaustive()
    }
}

/// Opens an adapter on `ctx` for a consumer asking for `requested`.
/// Several adapters may be open on one device context.
pub fn open_adapter(
    ctx: &TryArc<DeviceContext>,
    requested: NDK_VERSION,
) -> Result<*mut NDK_ADAPTER, NTSTATUS> {
    let version = negotiate(requested)?;
    let platform = ctx.platform();
    let adapter = pool::try_arc(platform, tags::ADAPTER, |charge| Adapter {
        ndk: NdkCell::new(Adapter::ndk(version)),
        life: Life::new(platform),
        ctx: ctx.clone(),
        version,
        done: AtomicBool::new(false),
        _charge: charge,
    })
    .map_err(status::alloc_error)?;
    Ok(abi::into_handle(adapter))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minors_up_to_ours_run_at_ours() {
        for (major, minor, runs_at) in [
            (1, 0, (1, 2)),
            (1, 1, (1, 2)),
            (1, 2, (1, 2)),
            (2, 0, (2, 1)),
            (2, 1, (2, 1)),
        ] {
            let v = negotiate(NDK_VERSION {
                Major: major,
                Minor: minor,
            })
            .unwrap();
            assert_eq!((v.Major, v.Minor), runs_at, "{major}.{minor}");
        }
        for (major, minor) in [(1, 3), (2, 2), (0, 1), (3, 0), (0xFFFF, 0)] {
            assert_eq!(
                negotiate(NDK_VERSION {
                    Major: major,
                    Minor: minor
                })
                .err(),
                Some(NDIS_STATUS_BAD_VERSION)
            );
        }
        assert_eq!(PROVIDER_VERSION, highest_minor(2).unwrap());
    }
}
