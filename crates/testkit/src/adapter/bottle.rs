//! The bottle backend of the consumer-level suite: an adapter of the real
//! `rsndk.sys` in this process's kernel bottle (`kbottle::shared`), opened
//! through the driver's own `OpenNDKAdapterHandler`.
//!
//! A bottled adapter is the driver's virtual miniport V over an emulated
//! NIC on the machine's default Ethernet segment. It has no address of its
//! own: the test gives V's interface one in the bottle's TCP/IP
//! ([`give_address`]) and the driver learns it through the IP helper
//! notifications, as it would on Windows. Until the driver serves an
//! address, `NdkListen` on it is refused (`STATUS_INVALID_ADDRESS`), which
//! is how [`give_address`] sees that it has.

use std::net::{IpAddr, Ipv4Addr};
use std::ptr;
use std::time::{Duration, Instant};

use kbottle::Machine;
use kbottle::machine::{AdapterId, Keyword};
use kbottle::ndis::types::{NetEventNDKDisable, NetEventNDKEnable};
use ndkpi::{
    NDK_ADAPTER, NDK_LISTENER, NDK_VERSION, NDK_VERSION_1_2, NTSTATUS, STATUS_INVALID_ADDRESS,
    STATUS_PENDING, STATUS_SUCCESS,
};

use super::{Recorder, SockAddr, adapter_table, close, connect_cb, create_cb, listener_table};

pub mod tap;

/// How long a new adapter, or a new address of one, may take to become
/// usable (a hang guard).
pub const READY: Duration = Duration::from_secs(10);
/// The RoCE path MTU the suite's bottled adapters are given
/// (`*NetworkDirectRoCEFrameSize`).
pub const PMTU: u32 = 1024;
/// On-link prefix of the IPv4 addresses `kbottle::shared::fresh_address`
/// hands out (all in 198.18.0.0/16).
pub const PREFIX_V4: u8 = 16;
/// On-link prefix of `kbottle::shared::fresh_address_v6`'s addresses.
pub const PREFIX_V6: u8 = 64;

/// One bottled miniport adapter (an RNIC of the driver) and the one
/// address the test gave its interface.
#[derive(Clone, Copy, Debug)]
pub struct Bottled {
    /// The miniport adapter.
    pub id: AdapterId,
    /// The address its interface was given.
    pub ip: IpAddr,
}

/// The on-link prefix length a fresh address of `ip`'s family takes.
pub fn prefix_of(ip: IpAddr) -> u8 {
    match ip {
        IpAddr::V4(_) => PREFIX_V4,
        IpAddr::V6(_) => PREFIX_V6,
    }
}

/// Whether NDK is enabled on `a` now: its latest NDK PnP event, or with
/// none yet the NDK attributes its `MiniportInitializeEx` set.
pub fn ndk_enabled(machine: &Machine, a: AdapterId) -> bool {
    let last = machine
        .pnp_events(a)
        .into_iter()
        .rev()
        .find(|e| *e == NetEventNDKEnable || *e == NetEventNDKDisable);
    match last {
        Some(e) => e == NetEventNDKEnable,
        None => machine.ndk_attributes(a).is_some_and(|n| n.enabled),
    }
}

/// A new V of `machine` with `keywords` on the default segment, NDK
/// enabled, no address yet.
pub fn add_v(machine: &Machine, keywords: &[(&str, Keyword)]) -> AdapterId {
    let id = machine
        .add_adapter(keywords)
        .unwrap_or_else(|s| panic!("bind and MiniportInitializeEx: {:#010x}", s as u32));
    assert!(ndk_enabled(machine, id), "V came up with NDK disabled");
    id
}

/// A new V of `machine` with `keywords` on `segment`, NDK enabled, no
/// address yet.
pub fn add_v_on(
    machine: &Machine,
    segment: kbottle::segment::SegmentId,
    keywords: &[(&str, Keyword)],
) -> AdapterId {
    let id = machine
        .add_adapter_on(segment, keywords)
        .unwrap_or_else(|s| panic!("bind and MiniportInitializeEx: {:#010x}", s as u32));
    assert!(ndk_enabled(machine, id), "V came up with NDK disabled");
    id
}

/// Gives `a`'s interface `ip` (the fresh blocks' prefix) and waits until
/// the stack prefers it and the driver serves it.
pub fn give_address(machine: &Machine, a: AdapterId, ip: IpAddr) {
    give_address_on_link(machine, a, ip, prefix_of(ip));
}

/// Gives `a`'s interface `ip` with on-link prefix `prefix_len` and waits
/// until the stack prefers it (IPv6: its duplicate address detection
/// passed) and the driver serves it.
pub fn give_address_on_link(machine: &Machine, a: AdapterId, ip: IpAddr, prefix_len: u8) {
    machine
        .add_address(a, ip, prefix_len)
        .unwrap_or_else(|e| panic!("add_address {ip}/{prefix_len}: {e}"));
    assert!(
        machine.wait_address_preferred(a, ip, READY),
        "{ip} never became preferred: {:?}",
        machine.address_states(a)
    );
    assert!(
        wait_served(machine, a, ip, true, READY),
        "the driver never served {ip}, a preferred address of its interface"
    );
}

/// Waits until `NdkListen` at `ip` on `a` succeeds (`serving`) or is
/// refused with `STATUS_INVALID_ADDRESS` (not `serving`): whether it did
/// within `timeout`. Any other answer fails.
pub fn wait_served(
    machine: &Machine,
    a: AdapterId,
    ip: IpAddr,
    serving: bool,
    timeout: Duration,
) -> bool {
    let adapter = machine
        .open_ndk(a, NDK_VERSION_1_2)
        .unwrap_or_else(|s| panic!("open NDK to look for {ip}: {:#010x}", s as u32));
    let deadline = Instant::now() + timeout;
    let done = loop {
        let status = try_listen(adapter, ip);
        assert!(
            status == STATUS_SUCCESS || status == STATUS_INVALID_ADDRESS,
            "NdkListen at {ip}: {:#010x}",
            status as u32
        );
        if (status == STATUS_SUCCESS) == serving {
            break true;
        }
        if Instant::now() >= deadline {
            break false;
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    machine.close_ndk(a, adapter);
    done
}

/// `NdkListen` at `ip`, any port, on a new listener of `adapter`, closed
/// again; the listen's final status.
fn try_listen(adapter: *mut NDK_ADAPTER, ip: IpAddr) -> NTSTATUS {
    let events = Recorder::new();
    let created = Recorder::new();
    let mut l: *mut NDK_LISTENER = ptr::null_mut();
    let f = adapter_table(adapter).NdkCreateListener.unwrap();
    // SAFETY: an open adapter of the bottled provider, a valid
    // out-pointer; the recorders live for the whole test binary.
    let status = unsafe {
        f(
            adapter,
            Some(connect_cb),
            events.ctx(),
            Some(create_cb),
            created.ctx(),
            &raw mut l,
        )
    };
    let status = settled(status, created, "create listener");
    assert_eq!(status, STATUS_SUCCESS, "NdkCreateListener");
    let listened = Recorder::new();
    let at = SockAddr::ip(ip, 0);
    let f = listener_table(l).NdkListen.unwrap();
    // SAFETY: our listener and a valid address.
    let status = unsafe {
        f(
            l,
            at.ptr(),
            at.len(),
            Some(super::request_cb),
            listened.ctx(),
        )
    };
    let status = settled(status, listened, "listen");
    let closed = Recorder::new();
    let close_status = settled(close(l, closed), closed, "close listener");
    assert_eq!(close_status, STATUS_SUCCESS, "close of the probe listener");
    status
}

/// The final status of a call that may pend (bounded wait).
fn settled(status: NTSTATUS, rec: &Recorder, what: &str) -> NTSTATUS {
    if status != STATUS_PENDING {
        return status;
    }
    let deadline = Instant::now() + READY;
    while rec.count() == 0 {
        assert!(Instant::now() < deadline, "{what} never completed");
        std::thread::sleep(Duration::from_micros(200));
    }
    rec.statuses()[0]
}

/// A new V at a fresh IPv4 address (or, `v6`, only a fresh IPv6 one),
/// served by the driver, and an `NDK_ADAPTER` on it at version 1.2.
pub fn open(v6: bool) -> (Bottled, *mut NDK_ADAPTER) {
    let machine = kbottle::shared::machine();
    let ip = if v6 {
        IpAddr::V6(kbottle::shared::fresh_address_v6())
    } else {
        IpAddr::V4(kbottle::shared::fresh_address())
    };
    let keywords = [
        ("*NetworkDirect", Keyword::Int(1)),
        ("*NetworkDirectRoCEFrameSize", Keyword::Int(PMTU)),
    ];
    let id = add_v(machine, &keywords);
    give_address(machine, id, ip);
    let bottled = Bottled { id, ip };
    let adapter = open_another(bottled, 1, 2).expect("OpenNDKAdapter 1.2");
    (bottled, adapter)
}

/// The capabilities of the software RNIC of a bottled adapter: the driver
/// builds it from the same configuration (with no address: its addresses
/// come later, from the stack), with 512 fast-register pages
/// (`FRMR_PAGES` of the driver's `device.rs`).
pub fn caps() -> hwq::device::DeviceCaps {
    let mut config = softrnic::device::DeviceConfig::new(Ipv4Addr::UNSPECIFIED, PMTU);
    config.max_fast_register_pages = 512;
    config.caps()
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
pub fn close_adapter(b: Bottled, adapter: *mut NDK_ADAPTER) -> NTSTATUS {
    kbottle::shared::machine().close_ndk(b.id, adapter);
    STATUS_SUCCESS
}

/// Halts V (its NDK adapters all closed): the driver unbinds from the NIC.
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

/// An MDL over `len` bytes at `va` as a bottled adapter's kernel
/// describes memory, whatever this thread's [`super::set_pfn_offset`]:
/// each page frame number is the page's physical address in the bottle's
/// model (`kbottle::mm::phys_of(page) >> 12`). Work requests address the
/// registered memory by virtual address (an `NDK_SGE`'s address is `va`
/// plus the offset, as on Windows).
pub fn mdl(va: u64, len: u32) -> super::Mdl {
    let mut mdl = super::Mdl::new(va, len);
    if len == 0 {
        return mdl;
    }
    // `set_pfn` adds this thread's offset to what it is given: give it
    // the physical page number less that.
    let thread_offset = super::logical_of(0) >> 12;
    let first = va & !0xfff;
    let pages = ((va & 0xfff) + u64::from(len)).div_ceil(4096);
    for i in 0..pages {
        let page = first + i * 4096;
        let pfn = kbottle::mm::phys_of(page as usize) >> 12;
        mdl.set_pfn(0, i as usize, pfn - thread_offset);
    }
    mdl
}
