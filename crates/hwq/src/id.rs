//! The numbers that name device objects, one type each, so that a QP
//! number cannot be passed where a CQ number is meant.
//!
//! Each is the 32-bit number the device hands out (`#[repr(transparent)]`,
//! so a ring slot or a handle holds it as a plain `u32`). Code converts only
//! at the edges: [`from_raw`](Qpn::from_raw) where a number arrives from the
//! wire, an NDK handle or a table index, [`raw`](Qpn::raw) where it leaves.

macro_rules! object_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[repr(transparent)]
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(u32);

        impl $name {
            /// The id numbered `raw` (from the wire, a handle or a table).
            #[must_use]
            pub const fn from_raw(raw: u32) -> Self {
                Self(raw)
            }

            /// Its number (for the wire, a handle or a table).
            #[must_use]
            pub const fn raw(self) -> u32 {
                self.0
            }
        }

        impl core::fmt::Display for $name {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                core::fmt::Display::fmt(&self.0, f)
            }
        }
    };
}

object_id!(
    /// A queue pair number (the BTH's destination QP).
    Qpn
);
object_id!(
    /// A completion queue number.
    Cqn
);
object_id!(
    /// A shared receive queue number.
    Srqn
);
object_id!(
    /// A protection domain number.
    Pdn
);
object_id!(
    /// A connection-management connection id (one handshake and what
    /// follows it, on either side).
    ConnId
);
object_id!(
    /// A connection-management listener id.
    ListenId
);
