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

use alloc::boxed::Box;
use core::ffi::c_void;
use core::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use core::ptr::{self, NonNull};
use core::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, Ordering};

use hwq::TryArc;
use ndis::{
    AF_UNSPEC, CancelMibChangeNotify2, FreeMibTable, GetUnicastIpAddressTable,
    IpDadStateDeprecated, IpDadStatePreferred, MIB_NOTIFICATION_TYPE, MIB_UNICASTIPADDRESS_ROW,
    MIB_UNICASTIPADDRESS_TABLE, NDIS_HANDLE, NL_DAD_STATE, NdisAllocateIoWorkItem,
    NdisFreeIoWorkItem, NdisQueueIoWorkItem, NotifyUnicastIpAddressChange, SOCKADDR_INET,
};
use ndkpi::{AF_INET, AF_INET6, NTSTATUS, PVOID, STATUS_INSUFFICIENT_RESOURCES};
use softrnic::addresses::MAX_ADDRESSES;
use softrnic::device::SoftRnic;

use super::alloc::try_box;
use super::irql;
use super::l2::L2Port;
use super::log::{log_error, log_info};

/// `work_state` bit: the work item is queued or running.
const WORK_QUEUED: u32 = 1 << 31;
/// `work_state` bit: a notification came; read the table (again).
const WORK_READ: u32 = 1;

/// Watches the IP stack's unicast addresses of one interface.
pub struct AddressWatcher {
    /// V's `NET_LUID` (`NDIS_MINIPORT_INIT_PARAMETERS.NetLuid`).
    net_luid: u64,
    rnic: TryArc<SoftRnic>,
    port: TryArc<L2Port>,
    /// The notification handle while registered.
    handle: AtomicPtr<c_void>,
    /// [`AddressList::fingerprint`] of the set last applied (every
    /// interface's changes wake every watcher; only a change of this one's
    /// set is logged).
    applied: AtomicU64,
    /// Reads the table at PASSIVE_LEVEL for the callbacks.
    work_item: NDIS_HANDLE,
    /// [`WORK_QUEUED`] and [`WORK_READ`]; one word, so that the routine
    /// can finish and drop the flag in one atomic step.
    work_state: AtomicU32,
}

impl core::fmt::Debug for AddressWatcher {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("AddressWatcher")
            .field("net_luid", &format_args!("{:#018x}", self.net_luid))
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
        adapter: NDIS_HANDLE,
        net_luid: u64,
        rnic: &TryArc<SoftRnic>,
        port: &TryArc<L2Port>,
    ) -> Result<Box<Self>, NTSTATUS> {
        // SAFETY: PASSIVE_LEVEL; V's adapter handle, in its
        // initialisation.
        let work_item = unsafe { NdisAllocateIoWorkItem(adapter) };
        if work_item.is_null() {
            return Err(STATUS_INSUFFICIENT_RESOURCES);
        }
        let watcher = try_box(Self {
            net_luid,
            rnic: rnic.clone(),
            port: port.clone(),
            handle: AtomicPtr::new(ptr::null_mut()),
            applied: AtomicU64::new(0),
            work_item,
            work_state: AtomicU32::new(0),
        })
        .map_err(|unboxed| {
            // Its Drop frees the work item (allocated above, never
            // queued; `stop` has no registration to cancel): freeing it
            // here as well was a double free (0x50 under the
            // low-resources sweep).
            drop(unboxed);
            STATUS_INSUFFICIENT_RESOURCES
        })?;
        let context = ptr::from_ref::<Self>(&watcher).cast_mut().cast::<c_void>();
        let mut handle: *mut c_void = ptr::null_mut();
        // SAFETY: PASSIVE_LEVEL; the context is the boxed watcher, which
        // stays at this address until `stop` (also run by `Drop`) has
        // cancelled the registration and waited for a running callback;
        // the callback matches PUNICAST_IPADDRESS_CHANGE_CALLBACK.
        let status = unsafe {
            NotifyUnicastIpAddressChange(AF_UNSPEC, Some(changed), context, 1, &raw mut handle)
        };
        if status < 0 {
            log_error!(
                "rsndk: NotifyUnicastIpAddressChange failed: {:#010x}",
                status as u32
            );
            return Err(status);
        }
        watcher.handle.store(handle, Ordering::Release);
        Ok(watcher)
    }

    /// Stops watching (`PASSIVE_LEVEL`, never from the callback): when it
    /// returns no callback or table read runs or will run. Idempotent.
    pub fn stop(&self) {
        let handle = self.handle.swap(ptr::null_mut(), Ordering::AcqRel);
        if !handle.is_null() {
            // SAFETY: PASSIVE_LEVEL, outside the callback; the handle of
            // our registration, cancelled once (the swap took it). It
            // waits for a callback in progress.
            let status = unsafe { CancelMibChangeNotify2(handle) };
            if status < 0 {
                log_error!(
                    "rsndk: CancelMibChangeNotify2 failed: {:#010x}",
                    status as u32
                );
            }
        }
        // No callback queues the work item any more: wait out a queued
        // or running read.
        while self.work_state.load(Ordering::Acquire) & WORK_QUEUED != 0 {
            super::platform_wait();
        }
    }

    /// A notification came (the callback, at an IRQL Microsoft does not
    /// document, `<= DISPATCH_LEVEL`): the work item reads the table.
    fn request_read(&self) {
        let old = self
            .work_state
            .fetch_or(WORK_READ | WORK_QUEUED, Ordering::AcqRel);
        if old & WORK_QUEUED != 0 {
            // Queued or running: the routine sees the new bit before it
            // can drop the flag.
            return;
        }
        let context = ptr::from_ref(self).cast_mut().cast();
        // SAFETY: <= DISPATCH_LEVEL; the watcher's work item, not queued
        // now (the flag was clear); the watcher outlives it (`stop` waits
        // for the flag to clear).
        unsafe { NdisQueueIoWorkItem(self.work_item, read_work, context) };
    }

    /// The work item's routine (`PASSIVE_LEVEL`): reads until no
    /// notification is left unanswered.
    fn run_work(&self) {
        loop {
            let state = self.work_state.load(Ordering::Acquire);
            if state & WORK_READ == 0 {
                // Nothing left: drop the flag, and touch nothing after it
                // (`stop` may free the watcher as soon as it sees it
                // clear).
                if self
                    .work_state
                    .compare_exchange(state, 0, Ordering::AcqRel, Ordering::Acquire)
                    .is_ok()
                {
                    return;
                }
                continue;
            }
            if self
                .work_state
                .compare_exchange(state, WORK_QUEUED, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                self.refresh();
            }
        }
    }

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
        let mut table: *mut MIB_UNICASTIPADDRESS_TABLE = ptr::null_mut();
        // SAFETY: PASSIVE_LEVEL; on success the routine stores a table it
        // allocated, which is freed below with FreeMibTable.
        let status = unsafe { GetUnicastIpAddressTable(AF_UNSPEC, &raw mut table) };
        if status < 0 {
            log_error!(
                "rsndk: GetUnicastIpAddressTable failed: {:#010x}; keeping the previous addresses",
                status as u32
            );
            return None;
        }
        let table = NonNull::new(table)?;
        let mut list = AddressList::new();
        {
            // SAFETY: a table GetUnicastIpAddressTable returned: a count
            // followed by that many rows, valid until FreeMibTable.
            let header = unsafe { table.as_ref() };
            let first = table
                .as_ptr()
                .wrapping_byte_add(core::mem::offset_of!(MIB_UNICASTIPADDRESS_TABLE, Table))
                .cast::<MIB_UNICASTIPADDRESS_ROW>();
            // SAFETY: `NumEntries` rows follow the count (the table's
            // layout), inside the allocation, until FreeMibTable below.
            let rows = unsafe { core::slice::from_raw_parts(first, header.NumEntries as usize) };
            for wanted in [IpDadStatePreferred, IpDadStateDeprecated] {
                for row in rows {
                    if let Some((addr, prefix_len)) = self.usable(row, wanted) {
                        list.push(addr, prefix_len);
                    }
                }
            }
        }
        // SAFETY: the table GetUnicastIpAddressTable allocated, no longer
        // borrowed (the block above ended), freed once.
        unsafe { FreeMibTable(table.as_ptr().cast()) };
        Some(list)
    }

    /// The address of `row` if it is one of V's in DAD state `wanted`.
    fn usable(&self, row: &MIB_UNICASTIPADDRESS_ROW, wanted: NL_DAD_STATE) -> Option<(IpAddr, u8)> {
        if row.InterfaceLuid.Value != self.net_luid || row.DadState != wanted {
            return None;
        }
        Some((ip_of(&row.Address)?, row.OnLinkPrefixLength))
    }
}

impl Drop for AddressWatcher {
    fn drop(&mut self) {
        self.stop();
        // SAFETY: allocated in `start`, neither queued nor running (`stop`
        // waited), freed once.
        unsafe { NdisFreeIoWorkItem(self.work_item) };
    }
}

/// The IP address of a `SOCKADDR_INET`, if IPv4 or IPv6.
fn ip_of(address: &SOCKADDR_INET) -> Option<IpAddr> {
    // SAFETY: the family tag is the first two bytes of every member, all
    // initialised in a row the IP helper filled; any bit pattern is a
    // valid u16.
    let family = unsafe { address.si_family };
    match family {
        AF_INET => {
            // SAFETY: AF_INET: the IPv4 member is the one written, and a
            // SOCKADDR_IN of plain integers is valid for any bytes.
            let v4 = unsafe { address.Ipv4 };
            Some(IpAddr::V4(Ipv4Addr::from(v4.sin_addr.S_un)))
        }
        AF_INET6 => {
            // SAFETY: AF_INET6: the IPv6 member is the one written, and a
            // SOCKADDR_IN6 of plain integers is valid for any bytes.
            let v6 = unsafe { address.Ipv6 };
            Some(IpAddr::V6(Ipv6Addr::from(v6.sin6_addr.u)))
        }
        _ => None,
    }
}

/// `PUNICAST_IPADDRESS_CHANGE_CALLBACK` (serialised; at an IRQL
/// Microsoft does not document, so only `<= DISPATCH_LEVEL` work here):
/// whatever changed, the work item re-reads.
unsafe extern "win64" fn changed(
    context: PVOID,
    _row: *mut MIB_UNICASTIPADDRESS_ROW,
    _kind: MIB_NOTIFICATION_TYPE,
) {
    // SAFETY: the context registered in `start` is the boxed watcher,
    // alive until `stop` cancelled the registration, which waits for this
    // callback to return.
    let watcher = unsafe { &*context.cast::<AddressWatcher>() };
    watcher.request_read();
}

/// The work item's routine (`PASSIVE_LEVEL`).
unsafe extern "win64" fn read_work(context: PVOID, _item: NDIS_HANDLE) {
    // SAFETY: the watcher queued itself, and `stop` waits for this routine
    // before the watcher can go.
    let watcher = unsafe { &*context.cast::<AddressWatcher>() };
    watcher.run_work();
}
