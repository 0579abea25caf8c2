//! Small helpers for packed big-endian fields in management messages.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

/// A 24-bit big-endian integer (QPNs, PSNs, EECNs in CM messages).
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    Hash,
    FromBytes,
    IntoBytes,
    KnownLayout,
    Immutable,
    Unaligned,
)]
#[repr(transparent)]
pub struct U24([u8; 3]);

impl U24 {
    /// The value.
    pub const fn get(self) -> u32 {
        let [a, b, c] = self.0;
        u32::from_be_bytes([0, a, b, c])
    }

    /// Stores the low 24 bits of `v`.
    pub fn set(&mut self, v: u32) {
        let [_, a, b, c] = v.to_be_bytes();
        self.0 = [a, b, c];
    }
}

/// Reads `width` bits of `byte` starting `shift` bits above bit 0.
#[inline]
pub(crate) const fn get_bits(byte: u8, shift: u32, width: u32) -> u8 {
    (byte >> shift) & (((1u16 << width) - 1) as u8)
}

/// Stores the low `width` bits of `v` at `shift` in `byte`, keeping the
/// other bits.
#[inline]
pub(crate) fn set_bits(byte: &mut u8, shift: u32, width: u32, v: u8) {
    let mask = (((1u16 << width) - 1) as u8) << shift;
    *byte = (*byte & !mask) | ((v << shift) & mask);
}

/// Getter and setter pairs for sub-byte fields stored in a `u8` member.
macro_rules! bit_fields {
    ($( $(#[$doc:meta])* $get:ident, $set:ident: $member:ident[$shift:literal; $width:literal]; )*) => {
        $(
            $(#[$doc])*
            pub const fn $get(&self) -> u8 {
                $crate::wire::fields::get_bits(self.$member, $shift, $width)
            }

            #[doc = concat!("Sets `", stringify!($get), "` (the low ", stringify!($width), " bits of `v`).")]
            pub fn $set(&mut self, v: u8) {
                $crate::wire::fields::set_bits(&mut self.$member, $shift, $width, v);
            }
        )*
    };
}

/// Getter and setter pairs for single-bit flags stored in a `u8` member.
macro_rules! flag_fields {
    ($( $(#[$doc:meta])* $get:ident, $set:ident: $member:ident[$shift:literal]; )*) => {
        $(
            $(#[$doc])*
            pub const fn $get(&self) -> bool {
                $crate::wire::fields::get_bits(self.$member, $shift, 1) != 0
            }

            #[doc = concat!("Sets `", stringify!($get), "`.")]
            pub fn $set(&mut self, v: bool) {
                $crate::wire::fields::set_bits(&mut self.$member, $shift, 1, u8::from(v));
            }
        )*
    };
}

/// Getter and setter pairs for whole big-endian members (`U16`, `U24`,
/// `U32`, `U64`).
macro_rules! int_fields {
    ($( $(#[$doc:meta])* $get:ident, $set:ident: $member:ident -> $ty:ty; )*) => {
        $(
            $(#[$doc])*
            pub fn $get(&self) -> $ty {
                self.$member.get()
            }

            #[doc = concat!("Sets `", stringify!($get), "`.")]
            pub fn $set(&mut self, v: $ty) {
                self.$member.set(v);
            }
        )*
    };
}

/// Getter and setter pairs for plain `u8` members.
macro_rules! byte_fields {
    ($( $(#[$doc:meta])* $get:ident, $set:ident: $member:ident; )*) => {
        $(
            $(#[$doc])*
            pub const fn $get(&self) -> u8 {
                self.$member
            }

            #[doc = concat!("Sets `", stringify!($get), "`.")]
            pub fn $set(&mut self, v: u8) {
                self.$member = v;
            }
        )*
    };
}

pub(crate) use {bit_fields, byte_fields, flag_fields, int_fields};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn u24_round_trip_and_truncation() {
        let mut v = U24::default();
        v.set(0x12_3456);
        assert_eq!(v.as_bytes(), &[0x12, 0x34, 0x56]);
        assert_eq!(v.get(), 0x12_3456);
        v.set(0xFFAB_CDEF);
        assert_eq!(v.get(), 0xAB_CDEF);
    }

    #[test]
    fn bits() {
        let mut b = 0b1010_0101;
        assert_eq!(get_bits(b, 3, 5), 0b10100);
        set_bits(&mut b, 0, 3, 0b010);
        assert_eq!(b, 0b1010_0010);
        set_bits(&mut b, 3, 5, 0xFF);
        assert_eq!(b, 0b1111_1010);
        assert_eq!(get_bits(0xFF, 0, 8), 0xFF);
    }
}
