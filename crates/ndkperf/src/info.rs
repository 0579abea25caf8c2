//! `info`: what an adapter reports (NDK_ADAPTER_INFO), raw values with
//! their names beside them (the RDMA technology, the adapter flags).

use std::process::ExitCode;

use ndkpi::{
    AdapterFlags, NDK_ADAPTER_INFO, NDK_RDMA_TECHNOLOGY, NdkInfiniBand, NdkRoCE, NdkRoCEv2,
    NdkUndefined, NdkiWarp,
};
use serde_json::Value;

use crate::error::Result;
use crate::ndk::Adapter;
use ndkperf_cli::InfoArgs;

/// The name of an `NDK_RDMA_TECHNOLOGY` value (`NdkRoCEv2` is RoCEv2).
pub fn technology_name(t: NDK_RDMA_TECHNOLOGY) -> &'static str {
    [
        (NdkUndefined, "undefined"),
        (NdkiWarp, "iWARP"),
        (NdkInfiniBand, "InfiniBand"),
        (NdkRoCE, "RoCE"),
        (NdkRoCEv2, "RoCEv2"),
    ]
    .iter()
    .find(|(value, _)| *value == t)
    .map_or("unknown", |(_, name)| name)
}

/// The `NDK_ADAPTER_FLAG_*` names of the bits set in `flags`; bits
/// without a name are listed as one hex value.
pub fn flag_names(flags: u32) -> Vec<String> {
    let known = AdapterFlags::from_bits_truncate(flags);
    let mut names: Vec<String> = known
        .iter_names()
        .map(|(name, _)| format!("NDK_ADAPTER_FLAG_{name}"))
        .collect();
    let unknown = flags & !known.bits();
    if unknown != 0 {
        names.push(format!("unknown bits {unknown:#x}"));
    }
    names
}

/// The fields shown, in order: name, raw value, and a readable name
/// where the raw value is a code.
fn fields(i: &NDK_ADAPTER_INFO) -> Vec<(&'static str, String, Option<String>)> {
    let n = |k, v: u32| (k, v.to_string(), None);
    vec![
        (
            "version",
            format!("{}.{}", i.Version.Major, i.Version.Minor),
            None,
        ),
        ("vendor_id", format!("{:#x}", i.VendorId), None),
        ("device_id", format!("{:#x}", i.DeviceId), None),
        (
            "max_registration_size",
            i.MaxRegistrationSize.to_string(),
            None,
        ),
        ("max_window_size", i.MaxWindowSize.to_string(), None),
        n("frmr_page_count", i.FRMRPageCount),
        n("max_initiator_request_sge", i.MaxInitiatorRequestSge),
        n("max_receive_request_sge", i.MaxReceiveRequestSge),
        n("max_read_request_sge", i.MaxReadRequestSge),
        n("max_transfer_length", i.MaxTransferLength),
        n("max_inline_data_size", i.MaxInlineDataSize),
        n("max_inbound_read_limit", i.MaxInboundReadLimit),
        n("max_outbound_read_limit", i.MaxOutboundReadLimit),
        n("max_receive_queue_depth", i.MaxReceiveQueueDepth),
        n("max_initiator_queue_depth", i.MaxInitiatorQueueDepth),
        n("max_srq_depth", i.MaxSrqDepth),
        n("max_cq_depth", i.MaxCqDepth),
        n("large_request_threshold", i.LargeRequestThreshold),
        n("max_caller_data", i.MaxCallerData),
        n("max_callee_data", i.MaxCalleeData),
        (
            "adapter_flags",
            format!("{:#x}", i.AdapterFlags),
            Some(flag_names(i.AdapterFlags).join(" | ")),
        ),
        (
            "rdma_technology",
            i.RdmaTechnology.to_string(),
            Some(technology_name(i.RdmaTechnology).to_owned()),
        ),
    ]
}

/// `info`.
pub fn run(a: &InfoArgs) -> Result<ExitCode> {
    let adapter = Adapter::open(&a.config)?;
    let fields = fields(adapter.info());
    if a.json {
        let mut map = serde_json::Map::new();
        for (k, v, name) in fields {
            map.insert(k.to_owned(), v.into());
            if let Some(name) = name {
                map.insert(format!("{k}_name"), name.into());
            }
        }
        println!("{}", Value::Object(map));
    } else {
        println!("adapter {}", adapter.config());
        for (k, v, name) in fields {
            match name {
                Some(name) => println!("  {k:<28} {v} ({name})"),
                None => println!("  {k:<28} {v}"),
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_get_their_names() {
        assert_eq!(technology_name(4), "RoCEv2");
        assert_eq!(technology_name(1), "iWARP");
        assert_eq!(technology_name(77), "unknown");
        assert_eq!(
            flag_names(0x1_0003),
            [
                "NDK_ADAPTER_FLAG_IN_ORDER_DMA_SUPPORTED",
                "NDK_ADAPTER_FLAG_RDMA_READ_SINK_NOT_REQUIRED",
                "NDK_ADAPTER_FLAG_LOOPBACK_CONNECTIONS_SUPPORTED"
            ]
        );
        assert_eq!(
            flag_names(0x2_0004),
            [
                "NDK_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED",
                "unknown bits 0x20000"
            ]
        );
        assert!(flag_names(0).is_empty());
    }
}
