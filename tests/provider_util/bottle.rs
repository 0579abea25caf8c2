//! The bottle backend of the consumer-level suite: an adapter of the real
//! `rsndk.sys` in this process's kernel bottle (`kbottle::shared`), opened
//! through the driver's own `OpenNDKAdapterHandler`.

use std::net::Ipv4Addr;
use std::time::Duration;

use kbottle::machine::{AdapterId, Keyword};
use ndkpi::{NDK_ADAPTER, NDK_VERSION, NTSTATUS, STATUS_SUCCESS};

/// How long a new adapter may take to open its socket and enable NDK.
const READY: Duration = Duration::from_secs(10);
/// The RoCE path MTU the suite's bottled adapters are given
/// (`*NetworkDirectRoCEFrameSize`).
pub const PMTU: u32 = 1024;

/// One bottled miniport adapter (an RNIC of the driver).
#[derive(Clone, Copy, Debug)]
pub struct Bottled {
    pub id: AdapterId,
    pub ip: Ipv4Addr,
}

/// A new miniport adapter at a fresh loopback address, NDK ready, and an
/// `NDK_ADAPTER` on it at version 1.2.
pub fn open() -> (Bottled, *mut NDK_ADAPTER) {
    let machine = kbottle::shared::machine();
    let ip = kbottle::shared::fresh_address();
    let keywords = [
        ("*NetworkDirect", Keyword::Int(1)),
        ("RsNdkIPv4Address", Keyword::Str(ip.to_string())),
        ("*NetworkDirectRoCEFrameSize", Keyword::Int(PMTU)),
    ];
    let id = machine
        .add_adapter(&keywords)
        .unwrap_or_else(|s| panic!("MiniportInitializeEx at {ip}: {:#010x}", s as u32));
    assert!(
        machine.wait_ndk_ready(id, READY),
        "bottled adapter at {ip} never became NDK-ready"
    );
    let bottled = Bottled { id, ip };
    let adapter = open_another(bottled, 1, 2).expect("OpenNDKAdapter 1.2");
    (bottled, adapter)
}

/// The capabilities of the software RNIC a bottled adapter at `ip` runs:
/// the driver builds it from the same configuration.
pub fn caps(ip: Ipv4Addr) -> hwq::device::DeviceCaps {
    softrnic::device::DeviceConfig::new(ip, PMTU).caps()
}

/// Another `NDK_ADAPTER` on the same miniport adapter, at `major.minor`.
pub fn open_another(b: Bottled, major: u16, minor: u16) -> Result<*mut NDK_ADAPTER, NTSTATUS> {
    let version = NDK_VERSION {
        Major: major,
        Minor: minor,
    };
    kbottle::shared::machine().open_ndk(b.id, version)
}

/// Closes an `NDK_ADAPTER` through the driver's `CloseNDKAdapterHandler`
/// (which returns nothing: NDIS closes unconditionally).
pub fn close(b: Bottled, adapter: *mut NDK_ADAPTER) -> NTSTATUS {
    kbottle::shared::machine().close_ndk(b.id, adapter);
    STATUS_SUCCESS
}

/// Halts the miniport adapter (its NDK adapters all closed).
pub fn halt(b: Bottled) {
    kbottle::shared::machine().halt(b.id);
}

/// Runs `f` at DISPATCH_LEVEL on this processor, as a DPC-level consumer
/// would call; DPCs the driver queues meanwhile run when it returns.
pub fn at_dispatch<R>(f: impl FnOnce() -> R) -> R {
    kbottle::cpu::run_at_dispatch(f)
}

/// The calling processor's IRQL, as the provider's two levels.
pub fn irql() -> provider::Irql {
    if kbottle::cpu::current() >= 2 {
        provider::Irql::Dispatch
    } else {
        provider::Irql::Passive
    }
}

/// The physical page of host page number `host_pfn` in the bottle's model.
pub fn pfn_offset() -> u64 {
    kbottle::mm::PHYS_OFFSET >> 12
}
