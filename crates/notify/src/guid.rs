//! GUIDs: the COM `GUID` layout, and the text forms netcfg and the
//! registry use (`{XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX}`, what
//! `StringFromGUID2` writes and NDIS names device objects with).

use alloc::string::String;
use core::fmt;

/// A GUID as COM lays it out (`guiddef.h`): 16 bytes, the first three
/// fields little-endian integers.
#[repr(C)]
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Guid {
    /// The first 8 hex digits.
    pub data1: u32,
    /// The next 4.
    pub data2: u16,
    /// The next 4.
    pub data3: u16,
    /// The last 16 digits, in text order.
    pub data4: [u8; 8],
}

impl Guid {
    /// The GUID whose text form is `8-4-4-4-12` hex digits, given as one
    /// 128-bit number in that order (`0x400c38e6_72d6_4acc_beae_154c2d0f41e9`).
    pub const fn from_u128(value: u128) -> Guid {
        let tail = (value as u64).to_be_bytes();
        Guid {
            data1: (value >> 96) as u32,
            data2: (value >> 80) as u16,
            data3: (value >> 64) as u16,
            data4: tail,
        }
    }

    /// Parses `{8-4-4-4-12}` (braces required, hex digits of either case).
    pub fn parse_braced(text: &str) -> Option<Guid> {
        let inner = text.strip_prefix('{')?.strip_suffix('}')?;
        let bytes = inner.as_bytes();
        if bytes.len() != 36 {
            return None;
        }
        let mut value: u128 = 0;
        for (index, &byte) in bytes.iter().enumerate() {
            if matches!(index, 8 | 13 | 18 | 23) {
                if byte != b'-' {
                    return None;
                }
                continue;
            }
            let digit = char::from(byte).to_digit(16)?;
            value = (value << 4) | u128::from(digit);
        }
        Some(Guid::from_u128(value))
    }

    /// The braced, upper-case text form.
    pub fn braced(&self) -> String {
        alloc::format!("{self}")
    }
}

impl fmt::Display for Guid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = &self.data4;
        write!(
            f,
            "{{{:08X}-{:04X}-{:04X}-{:02X}{:02X}-{:02X}{:02X}{:02X}{:02X}{:02X}{:02X}}}",
            self.data1, self.data2, self.data3, d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]
        )
    }
}

impl fmt::Debug for Guid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::Guid;

    #[test]
    fn text_round_trip() {
        let guid = Guid::from_u128(0x400c38e6_72d6_4acc_beae_154c2d0f41e9);
        assert_eq!(guid.data1, 0x400c_38e6);
        assert_eq!(guid.data2, 0x72d6);
        assert_eq!(guid.data3, 0x4acc);
        assert_eq!(guid.data4, [0xbe, 0xae, 0x15, 0x4c, 0x2d, 0x0f, 0x41, 0xe9]);
        assert_eq!(guid.braced(), "{400C38E6-72D6-4ACC-BEAE-154C2D0F41E9}");
        assert_eq!(
            Guid::parse_braced("{400c38e6-72d6-4acc-beae-154c2d0f41e9}"),
            Some(guid)
        );
    }

    #[test]
    fn malformed_text_is_refused() {
        for text in [
            "400c38e6-72d6-4acc-beae-154c2d0f41e9",
            "{400c38e6-72d6-4acc-beae-154c2d0f41e}",
            "{400c38e6x72d6-4acc-beae-154c2d0f41e9}",
            "{400c38e6-72d6-4acc-beae-154c2d0f41eg}",
            "",
        ] {
            assert_eq!(Guid::parse_braced(text), None, "{text:?}");
        }
    }
}
