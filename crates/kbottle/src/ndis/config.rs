//! The adapter's registry keywords: `NdisOpenConfigurationEx`,
//! `NdisReadConfiguration` and `NdisCloseConfiguration` over the keyword
//! store the test gave `Machine::add_adapter`.
//!
//! Keyword names compare case-insensitively, as registry value names do.
//! An integer keyword reads as `NdisParameterInteger` or
//! `NdisParameterHexInteger` (returned as `NdisParameterInteger`, as
//! documented); a string keyword reads as `NdisParameterString`, and as an
//! integer when its text is a number in the requested base (INF keywords
//! are `REG_SZ` values, which NDIS converts). Any other combination, and a
//! missing keyword, is `NDIS_STATUS_FAILURE`. Values and their strings
//! stay valid until the handle is closed.
//!
//! Opened on a binding handle, the configuration is the protocol's key
//! for that adapter, which holds one value: `UpperBindings`, the device
//! instance of the virtual miniport the notify object created over the
//! NIC (a `REG_SZ` in the MUX's 1:1 mode; read as a string, or as a
//! multi-string of one entry as the MUX sample reads it).

// Each import's safety contract is its WDK documentation, and the caller is
// the driver; the per-function docs say what the bottle checks instead.
#![expect(
    clippy::missing_safety_doc,
    reason = "imports follow the WDK contract of the same name"
)]
// The C enum constants keep their C names (NdisParameterInteger).
#![allow(non_upper_case_globals)]

use ndis::{
    NDIS_CONFIGURATION_OBJECT, NDIS_CONFIGURATION_PARAMETER, NDIS_HANDLE,
    NDIS_OBJECT_TYPE_CONFIGURATION_OBJECT, NDIS_PARAMETER_TYPE,
    NDIS_SIZEOF_CONFIGURATION_OBJECT_REVISION_1, NDIS_STATUS_FAILURE, NDIS_STATUS_RESOURCES,
    NDIS_STATUS_SUCCESS, NDIS_STRING, NdisParameterHexInteger, NdisParameterInteger,
    NdisParameterMultiString, NdisParameterString, UNICODE_STRING,
};
use ndkpi::NDIS_STATUS;

use super::checks::{bad_header, check_header, guarded, invalid_handle, require_passive};
use super::config_value::Value;
use super::state::{self, Configuration, Handle};
use crate::ids::Keyword;
use crate::kernel::verifier;

/// The value of `keyword` read as `kind`, or `None` (NDIS_STATUS_FAILURE).
pub fn lookup(
    keywords: &[(String, Keyword)],
    keyword: &str,
    kind: NDIS_PARAMETER_TYPE,
) -> Option<Value> {
    let (_, value) = keywords
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(keyword))?;
    match (value, kind) {
        (Keyword::Int(v), NdisParameterInteger | NdisParameterHexInteger) => {
            Some(Value::integer(*v))
        }
        (Keyword::Str(s), NdisParameterInteger) => s.trim().parse().ok().map(Value::integer),
        (Keyword::Str(s), NdisParameterHexInteger) => {
            let digits = s.trim();
            let digits = digits
                .strip_prefix("0x")
                .or_else(|| digits.strip_prefix("0X"))
                .unwrap_or(digits);
            u32::from_str_radix(digits, 16).ok().map(Value::integer)
        }
        (Keyword::Str(s), NdisParameterString) => Some(Value::string(s)),
        (Keyword::Str(s), NdisParameterMultiString) => Some(Value::multi_string(s)),
        _ => None,
    }
}

/// The text of a counted UTF-16 string.
///
/// # Safety
/// `s` is null or points to a `UNICODE_STRING` whose buffer holds
/// `Length` bytes.
pub(crate) unsafe fn text_of(s: *const UNICODE_STRING) -> Option<String> {
    if s.is_null() {
        return None;
    }
    // SAFETY: non-null (checked), a UNICODE_STRING (caller).
    let s = unsafe { s.read_unaligned() };
    if s.Buffer.is_null() || s.Length % 2 != 0 {
        return None;
    }
    // SAFETY: `Length` bytes of UTF-16 at `Buffer` (caller).
    let units = unsafe { std::slice::from_raw_parts(s.Buffer, usize::from(s.Length) / 2) };
    Some(String::from_utf16_lossy(units))
}

/// `NdisOpenConfigurationEx` (PASSIVE_LEVEL).
pub unsafe extern "win64" fn NdisOpenConfigurationEx(
    ConfigObject: *mut NDIS_CONFIGURATION_OBJECT,
    ConfigurationHandle: *mut NDIS_HANDLE,
) -> NDIS_STATUS {
    const API: &str = "NdisOpenConfigurationEx";
    guarded(API, || {
        require_passive(API, NdisOpenConfigurationEx as *const ());
        if ConfigObject.is_null() || ConfigurationHandle.is_null() {
            return NDIS_STATUS_FAILURE;
        }
        // SAFETY: non-null; the driver's configuration object.
        let object = unsafe { ConfigObject.read_unaligned() };
        let owner = object.NdisHandle as usize;
        let keywords = state::with(|n| {
            if n.is_driver(owner) || n.is_protocol(owner) {
                // The driver's own Parameters key: the bottle keeps none.
                return Some(Vec::new());
            }
            if let Some(nic) = n.live_binding(owner).map(|b| b.nic) {
                // The protocol's key for the adapter (Parameters\Adapters\
                // {P}): the notify object's UpperBindings.
                let upper = n.nics.get(&nic)?.upper_binding.clone();
                return Some(vec![("UpperBindings".to_owned(), Keyword::Str(upper))]);
            }
            n.live_adapter(owner).map(|a| a.keywords.clone())
        });
        let Some(keywords) = keywords else {
            invalid_handle(API, owner, "miniport adapter, binding, or driver");
        };
        if let Err(fault) = check_header(
            object.Header,
            NDIS_OBJECT_TYPE_CONFIGURATION_OBJECT,
            &[NDIS_SIZEOF_CONFIGURATION_OBJECT_REVISION_1],
        ) {
            bad_header(
                API,
                owner,
                ConfigObject as usize,
                "NDIS_CONFIGURATION_OBJECT",
                object.Header,
                fault,
            );
        }
        // Filter-instance configuration is for filter drivers only.
        if object.Flags != 0 {
            return NDIS_STATUS_FAILURE;
        }
        if verifier::fault_point(API) {
            return NDIS_STATUS_RESOURCES;
        }
        let handle = Handle::new();
        let addr = handle.addr();
        state::with(|n| {
            n.configurations.insert(
                addr,
                Configuration {
                    handle,
                    owner,
                    keywords,
                    values: Vec::new(),
                },
            );
        });
        // SAFETY: the driver's out-pointer (checked non-null).
        unsafe { ConfigurationHandle.write(addr as NDIS_HANDLE) };
        NDIS_STATUS_SUCCESS
    })
}

/// `NdisReadConfiguration` (PASSIVE_LEVEL). The outcome goes to `*Status`.
pub unsafe extern "win64" fn NdisReadConfiguration(
    Status: *mut NDIS_STATUS,
    ParameterValue: *mut *mut NDIS_CONFIGURATION_PARAMETER,
    ConfigurationHandle: NDIS_HANDLE,
    Keyword: *mut NDIS_STRING,
    ParameterType: NDIS_PARAMETER_TYPE,
) {
    const API: &str = "NdisReadConfiguration";
    guarded(API, || {
        require_passive(API, NdisReadConfiguration as *const ());
        let handle = ConfigurationHandle as usize;
        if !state::with(|n| n.configurations.contains_key(&handle)) {
            invalid_handle(API, handle, "configuration");
        }
        if Status.is_null() {
            return;
        }
        // SAFETY: null or the driver's keyword string (its contract).
        let keyword = unsafe { text_of(Keyword) };
        let outcome = match keyword {
            Some(keyword) if !ParameterValue.is_null() => {
                if verifier::fault_point(API) {
                    Err(NDIS_STATUS_RESOURCES)
                } else {
                    state::with(|n| {
                        let config = n.configurations.get_mut(&handle)?;
                        let mut value = lookup(&config.keywords, &keyword, ParameterType)?;
                        let ptr = value.as_ptr();
                        config.values.push(value);
                        Some(ptr)
                    })
                    .ok_or(NDIS_STATUS_FAILURE)
                }
            }
            _ => Err(NDIS_STATUS_FAILURE),
        };
        let status = match outcome {
            Ok(ptr) => {
                // SAFETY: the driver's out-pointer (checked non-null).
                unsafe { ParameterValue.write(ptr) };
                NDIS_STATUS_SUCCESS
            }
            Err(status) => status,
        };
        // SAFETY: the driver's status out-pointer (checked non-null).
        unsafe { Status.write(status) };
    });
}

/// `NdisCloseConfiguration` (PASSIVE_LEVEL): frees every value read
/// through the handle.
pub unsafe extern "win64" fn NdisCloseConfiguration(ConfigurationHandle: NDIS_HANDLE) {
    const API: &str = "NdisCloseConfiguration";
    guarded(API, || {
        require_passive(API, NdisCloseConfiguration as *const ());
        let handle = ConfigurationHandle as usize;
        let closed = state::with(|n| {
            let config = n.configurations.remove(&handle)?;
            n.retired.push(config.handle);
            Some(())
        });
        if closed.is_none() {
            invalid_handle(API, handle, "configuration");
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store() -> Vec<(String, Keyword)> {
        vec![
            ("*NetworkDirect".to_owned(), Keyword::Int(1)),
            (
                "RsNdkIPv4Address".to_owned(),
                Keyword::Str("127.0.40.1".to_owned()),
            ),
            ("Frame".to_owned(), Keyword::Str("2048".to_owned())),
            ("Mask".to_owned(), Keyword::Str("0x1F".to_owned())),
        ]
    }

    fn integer(v: &Value) -> (i32, u32) {
        // SAFETY: read only for integer values, whose live member is IntegerData.
        (v.parameter.ParameterType, unsafe {
            v.parameter.ParameterData.IntegerData
        })
    }

    #[test]
    fn integers_read_in_both_bases_and_report_integer() {
        let s = store();
        let v = lookup(&s, "*networkdirect", NdisParameterInteger).unwrap();
        assert_eq!(integer(&v), (NdisParameterInteger, 1));
        let v = lookup(&s, "*NetworkDirect", NdisParameterHexInteger).unwrap();
        assert_eq!(integer(&v), (NdisParameterInteger, 1));
        let v = lookup(&s, "Frame", NdisParameterInteger).unwrap();
        assert_eq!(integer(&v), (NdisParameterInteger, 2048));
        let v = lookup(&s, "Mask", NdisParameterHexInteger).unwrap();
        assert_eq!(integer(&v), (NdisParameterInteger, 0x1F));
    }

    #[test]
    fn strings_are_counted_utf16_with_a_terminator_beyond_length() {
        let s = store();
        let v = lookup(&s, "rsndkipv4address", NdisParameterString).unwrap();
        assert_eq!(v.parameter.ParameterType, NdisParameterString);
        // SAFETY: a string value; its live member is StringData.
        let string = unsafe { v.parameter.ParameterData.StringData };
        assert_eq!(string.Length, 20);
        assert_eq!(string.MaximumLength, 22);
        // SAFETY: the value's own text, Length bytes plus the terminator.
        let text = unsafe { std::slice::from_raw_parts(string.Buffer, 11) };
        assert_eq!(String::from_utf16_lossy(&text[..10]), "127.0.40.1");
        assert_eq!(text[10], 0);
    }

    #[test]
    fn wrong_types_and_missing_keywords_fail() {
        let s = store();
        assert!(lookup(&s, "*NetworkDirect", NdisParameterString).is_none());
        assert!(lookup(&s, "RsNdkIPv4Address", NdisParameterInteger).is_none());
        assert!(lookup(&s, "Absent", NdisParameterInteger).is_none());
        assert!(lookup(&s, "Frame", ndis::NdisParameterBinary).is_none());
    }
}
