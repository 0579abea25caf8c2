//! V's unicast addresses, as the IP stack has them: the RNIC answers and
//! sends at exactly the addresses TCP/IP holds on V's interface, IPv4 and
//! IPv6, as they come and go.
//!
//! [`AddressWatcher::start`] registers `NotifyUnicastIpAddressChange`
//! (`AF_UNSPEC`, with the initial notification) at V's initialisation.
//! Every notification, whatever row it names, re-reads the whole table
//! (`GetUnicastIpAddressTable`), keeps the rows of V's interface (its
//! `NET_LUID`) whose duplicate address detection is done (`Preferred`,
//! then `Deprecated`: still valid, just not chosen first), and gives that
//! set to the RNIC (`SoftRnic::set_addresses`) and to the L2 port (with the
//! on-link prefix lengths). Re-reading the table rather than applying one
//! row makes every callback converge on the stack's state, whatever
//! notifications were merged or missed.
//!
//! Failure: a table that cannot be read, or a set the RNIC refuses, is
//! logged and the previous set stays; the next notification reads again
//! (no retry timer: the stack notifies on every change, and the first
//! change after a failure brings everything up to date).
//!
//! Microsoft documents that the callbacks are serialised, not the IRQL
//! they run at, so a callback does nothing but queue the watcher's work
//! item (`NdisQueueIoWorkItem`, `<= DISPATCH_LEVEL`); its routine reads the
//! table at PASSIVE_LEVEL, as `GetUnicastIpAddressTable` requires.
//! Notifications that arrive while a read is queued or running cause one
//! more read after it. [`AddressWatcher::stop`] (`CancelMibChangeNotify2`,
//! which waits for a running callback, then the wait for the work item)
//! comes first in V's halt, before the RNIC and the port it feeds can go.

use core::net::{IpAddr, Ipv4Addr};
use core::pin::Pin;
use core::sync::atomic::{AtomicU64, Ordering};

use hwq::TryArc;
use ndis::{IpDadStateDeprecated, IpDadStatePreferred, MIB_UNICASTIPADDRESS_ROW, NL_DAD_STATE};
use ndkpi::{NTSTATUS, STATUS_INSUFFICIENT_RESOURCES};
use softrnic::addresses::MAX_ADDRESSES;
use softrnic::device::SoftRnic;

use super::irql;
use super::kit::deferred::{Deferred, DeferredRoutines};
use super::kit::ndis::{AdapterHandle, ip_of, with_unicast_addresses};
use super::l2::L2Port;
use super::log::{log_error, log_info};

/// Work-item task: a notification came; read the table (again).
const WORK_READ: u32 = 1;

/// Watches the IP stack's unicast addresses of one interface.
pub struct AddressWatcher {
    /// The notification registration, the work item that reads the table
    /// at PASSIVE_LEVEL for its callbacks, and what the reads feed.
    deferred: Pin<alloc::boxed::Box<Deferred<Watched>>>,
}

/// What an [`AddressWatcher`] watches for and feeds.
pub struct Watched {
    /// V's `NET_LUID` (`NDIS_MINIPORT_INIT_PARAMETERS.NetLuid`).
    net_luid: u64,
    rnic: TryArc<SoftRnic>,
    port: TryArc<L2Port>,
    /// [`AddressList::fingerprint`] of the set last applied (every
    /// interface's changes wake every watcher; only a change of this one's
    /// set is logged).
    applied: AtomicU64,
}

impl core::fmt::Debug for Watched {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Watched")
            .field("net_luid", &format_args!("{:#018x}", self.net_luid))
            .finish_non_exhaustive()
    }
}

impl DeferredRoutines for Watched {
    const REQUEUE: bool = false;
    const USES_DPC: bool = false;

    fn dpc(_this: &Deferred<Self>) {}

    /// The work item's routine (`PASSIVE_LEVEL`): reads until no
    /// notification is left unanswered.
    fn work(this: &Deferred<Self>, _tasks: u32) {
        this.target().refresh();
    }
}

impl core::fmt::Debug for AddressWatcher {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("AddressWatcher")
            .field("watched", self.deferred.target())
            .finish_non_exhaustive()
    }
}

/// The addresses of one reading, preferred ones first.
struct AddressList {
    addrs: [(IpAddr, u8); MAX_ADDRESSES],
    len: usize,
    /// Addresses of the interface left out for want of room.
    left_out: usize,
}

impl AddressList {
    const fn new() -> Self {
        Self {
            addrs: [(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0); MAX_ADDRESSES],
            len: 0,
            left_out: 0,
        }
    }

    fn push(&mut self, addr: IpAddr, prefix_len: u8) {
        match self.addrs.get_mut(self.len) {
            Some(slot) => {
                *slot = (addr, prefix_len);
                self.len += 1;
            }
            None => self.left_out += 1,
        }
    }

    fn as_slice(&self) -> &[(IpAddr, u8)] {
        self.addrs.get(..self.len).unwrap_or_default()
    }

    /// FNV-1a over the addresses and prefix lengths, in order (never 0:
    /// 0 stands for "nothing applied yet").
    fn fingerprint(&self) -> u64 {
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        let mut eat = |byte: u8| {
            hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        };
        for (addr, prefix_len) in self.as_slice() {
            match addr {
                IpAddr::V4(v4) => v4.octets().into_iter().for_each(&mut eat),
                IpAddr::V6(v6) => v6.octets().into_iter().for_each(&mut eat),
            }
            eat(*prefix_len);
        }
        hash.max(1)
    }
}

impl AddressWatcher {
    /// Starts watching the addresses of the interface `net_luid` for `rnic`
    /// and `port` (`PASSIVE_LEVEL`, V's initialisation, after the RNIC
    /// exists; `adapter` is V's NDIS handle, which owns the work item).
    /// The initial notification delivers the addresses the interface
    /// already has (possibly before this returns).
    pub fn start(
        adapter: AdapterHandle,
        net_luid: u64,
        rnic: &TryArc<SoftRnic>,
        port: &TryArc<L2Port>,
    ) -> Result<Self, NTSTATUS> {
        let watched = Watched {
            net_luid,
            rnic: rnic.clone(),
            port: port.clone(),
            applied: AtomicU64::new(0),
        };
        let deferred = Deferred::create(adapter, watched).ok_or(STATUS_INSUFFICIENT_RESOURCES)?;
        if let Err(status) = deferred.notify_address_changes(WORK_READ) {
            log_error!(
                "rsndk: NotifyUnicastIpAddressChange failed: {:#010x}",
                status as u32
            );
            return Err(status);
        }
        Ok(Self { deferred })
    }

    /// Stops watching (`PASSIVE_LEVEL`, never from the callback): when it
    /// returns no callback or table read runs or will run (the
    /// registration is cancelled, which waits for a callback in progress,
    /// then a queued or running read is waited out). Idempotent.
    pub fn stop(&self) {
        if let Err(status) = self.deferred.close() {
            log_error!(
                "rsndk: CancelMibChangeNotify2 failed: {:#010x}",
                status as u32
            );
        }
    }
}

impl Watched {
    /// Reads the interface's addresses and hands them on (the work item,
    /// `PASSIVE_LEVEL`).
    fn refresh(&self) {
        let Some(list) = self.read() else { return };
        if list.left_out != 0 {
            log_error!(
                "rsndk: interface has more than {MAX_ADDRESSES} addresses; {} left out",
                list.left_out
            );
        }
        let mut ips = [IpAddr::V4(Ipv4Addr::UNSPECIFIED); MAX_ADDRESSES];
        for (ip, (addr, _)) in ips.iter_mut().zip(list.as_slice()) {
            *ip = *addr;
        }
        let ips = ips.get(..list.len).unwrap_or_default();
        // The RNIC's and the port's address locks are spin locks their
        // receive path takes at DISPATCH_LEVEL: hold them only there.
        let old = irql::raise_to_dispatch();
        let applied = self.rnic.set_addresses(ips);
        if applied.is_ok() {
            self.port.set_addresses(list.as_slice());
        }
        irql::lower(old);
        match applied {
            Ok(()) => {
                let fingerprint = list.fingerprint();
                if self.applied.swap(fingerprint, Ordering::Relaxed) == fingerprint {
                    return;
                }
                log_info!("rsndk: {} address(es) on the interface", list.len);
                for (addr, prefix_len) in list.as_slice() {
                    log_info!("rsndk:   {addr}/{prefix_len}");
                }
            }
            Err(error) => log_error!(
                "rsndk: the RNIC refused the interface's addresses ({error:?}); keeping the previous set"
            ),
        }
    }

    /// The interface's usable addresses now, preferred first; `None` (the
    /// failure logged) if the table cannot be read.
    fn read(&self) -> Option<AddressList> {
        let mut list = AddressList::new();
        let read = with_unicast_addresses(|rows| {
            for wanted in [IpDadStatePreferred, IpDadStateDeprecated] {
                for row in rows {
                    if let Some((addr, prefix_len)) = self.usable(row, wanted) {
                        list.push(addr, prefix_len);
                    }
                }
            }
        });
        match read {
            Ok(true) => Some(list),
            Ok(false) => None,
            Err(status) => {
                log_error!(
                    "rsndk: GetUnicastIpAddressTable failed: {:#010x}; keeping the previous addresses",
                    status as u32
                );
                None
            }
        }
    }

    /// The address of `row` if it is one of V's in DAD state `wanted`.
    fn usable(&self, row: &MIB_UNICASTIPADDRESS_ROW, wanted: NL_DAD_STATE) -> Option<(IpAddr, u8)> {
        if row.InterfaceLuid.Value != self.net_luid || row.DadState != wanted {
            return None;
        }
        Some((ip_of(&row.Address)?, row.OnLinkPrefixLength))
    }
}
