//! One value `NdisReadConfiguration` hands out: the parameter and, for a
//! string, the UTF-16 text its `NDIS_STRING` points into. It lives in the
//! configuration handle's table ([`super::state::Configuration`]) until
//! `NdisCloseConfiguration`; [`super::config`] makes them. A leaf of the
//! ndis room: the handle table and the imports both name it.

use ndis::{
    NDIS_CONFIGURATION_PARAMETER, NDIS_CONFIGURATION_PARAMETER_DATA, NDIS_PARAMETER_TYPE,
    NDIS_STRING, NdisParameterInteger, NdisParameterMultiString, NdisParameterString,
};

/// One value handed out by `NdisReadConfiguration`: the parameter and, for
/// a string, the UTF-16 text its `NDIS_STRING` points into.
#[derive(Debug)]
pub struct Value {
    pub(super) parameter: Box<NDIS_CONFIGURATION_PARAMETER>,
    _text: Option<Vec<u16>>,
}

// SAFETY: the parameter's only pointer is a string value's `Buffer`, into
// `_text`, which the Value owns and moves with it; nothing else aliases it
// but the driver, which may read it from any thread until the close.
unsafe impl Send for Value {}

impl Value {
    pub(super) fn integer(value: u32) -> Self {
        Self {
            parameter: Box::new(NDIS_CONFIGURATION_PARAMETER {
                ParameterType: NdisParameterInteger,
                ParameterData: NDIS_CONFIGURATION_PARAMETER_DATA { IntegerData: value },
            }),
            _text: None,
        }
    }

    pub(super) fn string(text: &str) -> Self {
        Self::unicode(text.encode_utf16().collect(), NdisParameterString)
    }

    /// A `REG_MULTI_SZ` of the one string `text`: the buffer holds
    /// `text`, its NUL and the list's final NUL; `Length` covers `text`
    /// and its NUL.
    pub(super) fn multi_string(text: &str) -> Self {
        let units = text.encode_utf16().chain([0]).collect();
        Self::unicode(units, NdisParameterMultiString)
    }

    /// A parameter of type `ty` whose `NDIS_STRING` covers `units`,
    /// followed in its buffer by a NUL that `Length` does not count.
    fn unicode(mut units: Vec<u16>, ty: NDIS_PARAMETER_TYPE) -> Self {
        let length = (units.len() * 2) as u16;
        units.push(0);
        let string = NDIS_STRING {
            Length: length,
            MaximumLength: length + 2,
            Buffer: units.as_mut_ptr(),
        };
        Self {
            parameter: Box::new(NDIS_CONFIGURATION_PARAMETER {
                ParameterType: ty,
                ParameterData: NDIS_CONFIGURATION_PARAMETER_DATA { StringData: string },
            }),
            // The Vec's heap buffer does not move when the Vec does.
            _text: Some(units),
        }
    }

    pub(super) fn as_ptr(&mut self) -> *mut NDIS_CONFIGURATION_PARAMETER {
        &raw mut *self.parameter
    }
}
