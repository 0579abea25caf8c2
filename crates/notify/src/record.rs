//! The registry record of one muxed adapter P, under the protocol's
//! configuration key where the driver's bind reads it
//! (`src/driver/protocol/upper_bindings.rs`, through
//! `NdisOpenConfigurationEx` on the binding):
//!
//! `HKLM\SYSTEM\CurrentControlSet\Services\rsndkp\Parameters\Adapters\{P}`
//! - `UpperBindings` (`REG_SZ`): `\Device\{V}`, V's device name, the form
//!   the MUX sample writes in 1:1 (`PASSTHRU_NOTIFY`) mode; the driver
//!   takes the first name of a `REG_SZ` or `REG_MULTI_SZ`.
//! - `DisabledPaths` (`REG_MULTI_SZ`): the tokens of the other
//!   components' binding paths to P this notify object disabled (or
//!   refused to enable), so that removing V enables exactly those again.

use alloc::string::String;
use alloc::vec::Vec;

use crate::guid::Guid;

/// The key of the records, under `HKEY_LOCAL_MACHINE`; the service name
/// is the INF's `AddService = rsndkp`.
pub const ADAPTERS_KEY: &str = "SYSTEM\\CurrentControlSet\\Services\\rsndkp\\Parameters\\Adapters";
/// The value the driver reads.
pub const UPPER_BINDINGS: &str = "UpperBindings";
/// The value of the disabled paths' tokens.
pub const DISABLED_PATHS: &str = "DisabledPaths";
/// The prefix of an NDIS device name.
pub const DEVICE_PREFIX: &str = "\\Device\\";

/// What the notify object knows about one muxed adapter P.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Record {
    /// V's instance GUID.
    pub virtual_miniport: Guid,
    /// Tokens of the paths to P to enable again when V goes.
    pub disabled_paths: Vec<String>,
}

impl Record {
    /// A record of V with no path disabled yet.
    pub fn new(virtual_miniport: Guid) -> Record {
        Record {
            virtual_miniport,
            disabled_paths: Vec::new(),
        }
    }

    /// The `UpperBindings` text: `\Device\{V}`.
    pub fn upper_bindings(&self) -> String {
        alloc::format!("{DEVICE_PREFIX}{}", self.virtual_miniport)
    }

    /// Rebuilds a record from its values: `upper_bindings` is the
    /// `REG_SZ` (or a `REG_MULTI_SZ`'s first name). `None` when it does
    /// not name a `\Device\{GUID}`.
    pub fn from_values(upper_bindings: &str, disabled_paths: Vec<String>) -> Option<Record> {
        let name = upper_bindings.get(..DEVICE_PREFIX.len())?;
        if !name.eq_ignore_ascii_case(DEVICE_PREFIX) {
            return None;
        }
        let guid = Guid::parse_braced(upper_bindings.get(DEVICE_PREFIX.len()..)?)?;
        Some(Record {
            virtual_miniport: guid,
            disabled_paths,
        })
    }

    /// Notes that the path `token` to P was disabled by us (once).
    /// Returns whether the record changed.
    pub fn remember(&mut self, token: &str) -> bool {
        if self.disabled_paths.iter().any(|t| t == token) {
            return false;
        }
        self.disabled_paths.push(String::from(token));
        true
    }
}

#[cfg(test)]
mod tests {
    use super::{Guid, Record};
    use alloc::vec;

    #[test]
    fn upper_bindings_names_the_device_and_parses_back() {
        let v = Guid::from_u128(0x0123_4567_89ab_cdef_0011_2233_4455_6677);
        let record = Record::new(v);
        let text = record.upper_bindings();
        assert_eq!(text, "\\Device\\{01234567-89AB-CDEF-0011-223344556677}");
        assert_eq!(Record::from_values(&text, vec![]), Some(record));
        assert_eq!(
            Record::from_values("\\device\\{01234567-89ab-cdef-0011-223344556677}", vec![])
                .map(|r| r.virtual_miniport),
            Some(v)
        );
        assert_eq!(
            Record::from_values("{01234567-89AB-CDEF-0011-223344556677}", vec![]),
            None
        );
        assert_eq!(Record::from_values("\\Device\\lab", vec![]), None);
    }

    #[test]
    fn remember_keeps_each_token_once() {
        let mut record = Record::new(Guid::default());
        assert!(record.remember("ms_tcpip->{P}"));
        assert!(!record.remember("ms_tcpip->{P}"));
        assert!(record.remember("ms_tcpip6->{P}"));
        assert_eq!(record.disabled_paths, ["ms_tcpip->{P}", "ms_tcpip6->{P}"]);
    }
}
