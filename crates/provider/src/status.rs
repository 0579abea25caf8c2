//! Translations from device terms to NDK terms: completion statuses,
//! operation types and command errors.

use hwq::{AllocError, CqeOpcode, CqeStatus, DeviceError};
use ndkpi::{
    NDK_OPERATION_TYPE, NTSTATUS, NdkOperationTypeBind, NdkOperationTypeFastRegister,
    NdkOperationTypeInvalidate, NdkOperationTypeRead, NdkOperationTypeReceive,
    NdkOperationTypeReceiveAndInvalidate, NdkOperationTypeSend, NdkOperationTypeWrite,
    STATUS_ACCESS_VIOLATION, STATUS_ADDRESS_ALREADY_EXISTS, STATUS_BUFFER_OVERFLOW,
    STATUS_CANCELLED, STATUS_DEVICE_REMOVED, STATUS_INSUFFICIENT_RESOURCES, STATUS_INTERNAL_ERROR,
    STATUS_INVALID_ADDRESS, STATUS_INVALID_DEVICE_STATE, STATUS_INVALID_PARAMETER,
    STATUS_IO_TIMEOUT, STATUS_REMOTE_RESOURCES, STATUS_SHARING_VIOLATION, STATUS_SUCCESS,
    STATUS_TOO_MANY_ADDRESSES,
};

/// The NTSTATUS of a completion (`NDK_RESULT.Status`).
///
/// Remote access and remote invalid-request errors both become
/// `STATUS_REMOTE_RESOURCES`: NDK documents that code for an `NdkRead`
/// beyond the peer's region, and the peer reports that as either.
pub fn completion_status(status: CqeStatus) -> NTSTATUS {
    match status {
        CqeStatus::Success => STATUS_SUCCESS,
        CqeStatus::Flushed => STATUS_CANCELLED,
        CqeStatus::LocalLength => STATUS_BUFFER_OVERFLOW,
        CqeStatus::LocalProtection | CqeStatus::MemoryManagement => STATUS_ACCESS_VIOLATION,
        CqeStatus::RemoteAccess
        | CqeStatus::RemoteInvalidRequest
        | CqeStatus::RemoteOperational => STATUS_REMOTE_RESOURCES,
        CqeStatus::RetryExceeded | CqeStatus::RnrRetryExceeded => STATUS_IO_TIMEOUT,
        CqeStatus::LocalQpOperation => STATUS_INTERNAL_ERROR,
    }
}

/// `NDK_RESULT_EX.ProviderErrorCode` of a completion (NDKPI 2.1): 0 for a
/// success, as NDK requires; otherwise the device's own completion status
/// (`hwq::CqeStatus`, 1 to 10), which tells apart what one NTSTATUS merges
/// (local protection and memory-management errors are both
/// `STATUS_ACCESS_VIOLATION`; remote access, invalid request and
/// operational errors are all `STATUS_REMOTE_RESOURCES`; exhausted
/// transport and RNR retries are both `STATUS_IO_TIMEOUT`).
pub fn provider_error_code(status: CqeStatus) -> u32 {
    status as u32
}

/// `NDK_RESULT_EX.Type` of a completion. An opcode byte the device should
/// never write reads as a send (the initiator side), which is at least a
/// valid NDK type.
pub fn operation_type(opcode: Option<CqeOpcode>) -> NDK_OPERATION_TYPE {
    match opcode {
        Some(CqeOpcode::Receive) => NdkOperationTypeReceive,
        Some(CqeOpcode::ReceiveInvalidate) => NdkOperationTypeReceiveAndInvalidate,
        Some(CqeOpcode::Read) => NdkOperationTypeRead,
        Some(CqeOpcode::Write) => NdkOperationTypeWrite,
        Some(CqeOpcode::FastRegister) => NdkOperationTypeFastRegister,
        Some(CqeOpcode::Bind) => NdkOperationTypeBind,
        Some(CqeOpcode::LocalInvalidate) => NdkOperationTypeInvalidate,
        Some(CqeOpcode::Send) | None => NdkOperationTypeSend,
    }
}

/// The NTSTATUS of a failed device command.
pub fn device_error(error: DeviceError) -> NTSTATUS {
    match error {
        DeviceError::NoResources => STATUS_INSUFFICIENT_RESOURCES,
        DeviceError::InvalidParameter => STATUS_INVALID_PARAMETER,
        DeviceError::NoSuchObject | DeviceError::InvalidState => STATUS_INVALID_DEVICE_STATE,
        DeviceError::InvalidAddress => STATUS_INVALID_ADDRESS,
        DeviceError::AddressInUse => STATUS_SHARING_VIOLATION,
        DeviceError::NoPortAvailable => STATUS_TOO_MANY_ADDRESSES,
        DeviceError::DeviceFailed => STATUS_DEVICE_REMOVED,
    }
}

/// The NTSTATUS of an allocation failure.
pub fn alloc_error(_: AllocError) -> NTSTATUS {
    STATUS_INSUFFICIENT_RESOURCES
}

/// `STATUS_ADDRESS_ALREADY_EXISTS` for a connect whose 4-tuple is taken
/// (the device reports that as address-in-use on a connect).
pub const CONNECT_ADDRESS_IN_USE: NTSTATUS = STATUS_ADDRESS_ALREADY_EXISTS;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_cqe_status_maps_as_documented() {
        let table = [
            (CqeStatus::Success, STATUS_SUCCESS),
            (CqeStatus::Flushed, STATUS_CANCELLED),
            (CqeStatus::LocalLength, STATUS_BUFFER_OVERFLOW),
            (CqeStatus::LocalProtection, STATUS_ACCESS_VIOLATION),
            (CqeStatus::LocalQpOperation, STATUS_INTERNAL_ERROR),
            (CqeStatus::RemoteAccess, STATUS_REMOTE_RESOURCES),
            (CqeStatus::RemoteInvalidRequest, STATUS_REMOTE_RESOURCES),
            (CqeStatus::RemoteOperational, STATUS_REMOTE_RESOURCES),
            (CqeStatus::RetryExceeded, STATUS_IO_TIMEOUT),
            (CqeStatus::RnrRetryExceeded, STATUS_IO_TIMEOUT),
            (CqeStatus::MemoryManagement, STATUS_ACCESS_VIOLATION),
        ];
        for (cqe, nt) in table {
            assert_eq!(completion_status(cqe), nt, "{cqe:?}");
        }
    }

    #[test]
    fn operation_types_match_the_header() {
        assert_eq!(operation_type(Some(CqeOpcode::Receive)), 1);
        assert_eq!(operation_type(Some(CqeOpcode::Send)), 2);
        assert_eq!(operation_type(Some(CqeOpcode::FastRegister)), 4);
        assert_eq!(operation_type(Some(CqeOpcode::Bind)), 8);
        assert_eq!(operation_type(Some(CqeOpcode::LocalInvalidate)), 16);
        assert_eq!(operation_type(Some(CqeOpcode::Read)), 32);
        assert_eq!(operation_type(Some(CqeOpcode::Write)), 64);
        assert_eq!(operation_type(Some(CqeOpcode::ReceiveInvalidate)), 0x8001);
    }
}
