//! Names the rooms of the bottle share: an adapter's number and a
//! registry keyword's value. A leaf: it imports nothing of the crate, so
//! NDIS, TCP/IP and the machine can all name an adapter without reaching
//! into each other.

/// A registry keyword of an adapter, as the INF would store it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Keyword {
    /// A `REG_DWORD` value.
    Int(u32),
    /// A `REG_SZ` value.
    Str(String),
}

/// The bottle's number for one adapter of a machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AdapterId(pub u32);
