//! `OID_NDK_CONNECTIONS` and `OID_NDK_LOCAL_ENDPOINTS`: the provider's
//! live connection and listener tables ([`provider::snapshot`]) in the
//! variable-size layouts of `ntddndis.h` (`NDIS_NDK_CONNECTIONS`,
//! `NDIS_NDK_LOCAL_ENDPOINTS`: a 16-byte head, then `Count` entries).
//!
//! Entries go straight into NDIS's buffer while the provider walks its
//! table (one pass, nothing allocated), as many as fit; the count covers
//! them all. A buffer too short for every entry gets
//! `NDIS_STATUS_BUFFER_TOO_SHORT` with `BytesNeeded` set to
//! `NDIS_SIZEOF_NDK_*_REVISION_1(Count)` and `BytesWritten` 0 (the
//! `MiniportOidRequest` contract); the next query with that size may
//! still find the tables changed. The walk runs at `DISPATCH_LEVEL` under
//! the provider's table lock, so the buffer must be non-paged: NDIS
//! allocates OID information buffers from non-paged memory (a miniport
//! may complete an OID from its DPC) — an assumption no Windows run has
//! checked yet.
//!
//! rsndk's ND connections are RoCEv2 connections, not mapped onto TCP
//! (`NDConnectionsMappedtoTCPConnections` = FALSE), and all are kernel
//! (NDK) ones: `UserModeOwner` FALSE, `OwnerPid` 0.

use core::mem::offset_of;
use core::net::SocketAddr;

use ndis::{
    NDIS_NDK_CONNECTION_ENTRY, NDIS_NDK_CONNECTIONS, NDIS_NDK_CONNECTIONS_REVISION_1,
    NDIS_NDK_LOCAL_ENDPOINT_ENTRY, NDIS_NDK_LOCAL_ENDPOINTS, NDIS_NDK_LOCAL_ENDPOINTS_REVISION_1,
    NDIS_OBJECT_HEADER, NDIS_OBJECT_TYPE_DEFAULT, NDIS_STATUS_BUFFER_TOO_SHORT,
    ndk_variable_header_size,
};
use ndkpi::{NDIS_STATUS, NDIS_STATUS_SUCCESS, UCHAR};
use provider::snapshot::{Connection, EndpointKind, LocalEndpoint};

use super::adapter::Adapter;
use super::kit::oid::{PlainData, Query, bytes_of, sockaddr_inet_bytes};

/// Bytes of the longest entry (`NDIS_NDK_CONNECTION_ENTRY`).
const MAX_ENTRY: usize = size_of::<NDIS_NDK_CONNECTION_ENTRY>();

/// The head both answers share: header, `Flags`, `Count`, the mapped-to-TCP
/// `BOOLEAN`, padding up to the first entry.
struct Head {
    /// Offset of `Count`.
    count: usize,
    /// Offset of the mapped-to-TCP flag.
    mapped: usize,
    /// Offset of the first entry (`NDIS_SIZEOF_*_REVISION_1(0)`).
    entries: usize,
    /// Bytes per entry.
    entry: usize,
    /// `Header.Revision`.
    revision: UCHAR,
}

const CONNECTIONS: Head = Head {
    count: offset_of!(NDIS_NDK_CONNECTIONS, Count),
    mapped: offset_of!(NDIS_NDK_CONNECTIONS, NDConnectionsMappedtoTCPConnections),
    entries: offset_of!(NDIS_NDK_CONNECTIONS, Connections),
    entry: size_of::<NDIS_NDK_CONNECTION_ENTRY>(),
    revision: NDIS_NDK_CONNECTIONS_REVISION_1,
};

const LOCAL_ENDPOINTS: Head = Head {
    count: offset_of!(NDIS_NDK_LOCAL_ENDPOINTS, Count),
    mapped: offset_of!(
        NDIS_NDK_LOCAL_ENDPOINTS,
        NDLocalEndpointsMappedtoTCPLocalEndpoints
    ),
    entries: offset_of!(NDIS_NDK_LOCAL_ENDPOINTS, LocalEndpoints),
    entry: size_of::<NDIS_NDK_LOCAL_ENDPOINT_ENTRY>(),
    revision: NDIS_NDK_LOCAL_ENDPOINTS_REVISION_1,
};

// Both heads are 16 bytes and every entry fits the scratch entry.
const _: () = assert!(CONNECTIONS.entries == 16 && LOCAL_ENDPOINTS.entries == 16);
const _: () = assert!(CONNECTIONS.entry <= MAX_ENTRY && LOCAL_ENDPOINTS.entry <= MAX_ENTRY);

/// Copies the bytes of plain-data `value` into `out` at `offset`.
fn put<T: PlainData>(out: &mut [u8], offset: usize, value: &T) {
    let bytes = bytes_of(value);
    out[offset..offset + bytes.len()].copy_from_slice(bytes);
}

/// Copies the Windows form of `addr` into `out` at `offset`.
fn put_addr(out: &mut [u8], offset: usize, addr: SocketAddr) {
    let bytes = sockaddr_inet_bytes(addr);
    out[offset..offset + bytes.len()].copy_from_slice(&bytes);
}

/// One `NDIS_NDK_CONNECTION_ENTRY`, padding zero.
fn connection_entry(c: Connection) -> [u8; MAX_ENTRY] {
    let mut e = [0u8; MAX_ENTRY];
    put_addr(
        &mut e,
        offset_of!(NDIS_NDK_CONNECTION_ENTRY, Local),
        c.local,
    );
    put_addr(
        &mut e,
        offset_of!(NDIS_NDK_CONNECTION_ENTRY, Remote),
        c.remote,
    );
    // UserModeOwner FALSE, OwnerPid 0: already zero.
    e
}

/// One `NDIS_NDK_LOCAL_ENDPOINT_ENTRY`, padding zero.
fn endpoint_entry(l: LocalEndpoint) -> [u8; MAX_ENTRY] {
    let mut e = [0u8; MAX_ENTRY];
    put_addr(
        &mut e,
        offset_of!(NDIS_NDK_LOCAL_ENDPOINT_ENTRY, Local),
        l.local,
    );
    let listener = u8::from(l.kind == EndpointKind::Listener);
    put(
        &mut e,
        offset_of!(NDIS_NDK_LOCAL_ENDPOINT_ENTRY, Listener),
        &listener,
    );
    e
}

/// An answer being written into a query's buffer.
struct Answer<'a, 'q> {
    query: &'a mut Query<'q>,
    head: &'a Head,
    /// Entries seen so far (written or not).
    seen: usize,
}

impl Answer<'_, '_> {
    /// The buffer's bytes, if NDIS gave one (non-paged: module docs).
    fn buffer(&mut self) -> Option<&mut [u8]> {
        self.query.buffer()
    }

    /// Writes entry number `seen` if it fits, and counts it either way.
    fn push(&mut self, entry: &[u8; MAX_ENTRY]) {
        let (at, len) = (
            self.head.entries + self.seen * self.head.entry,
            self.head.entry,
        );
        if let Some(buffer) = self.buffer() {
            if let Some(slot) = buffer.get_mut(at..at + len) {
                slot.copy_from_slice(&entry[..len]);
            }
        }
        self.seen += 1;
    }

    /// Writes the head for `count` entries, or reports the size needed.
    fn finish(mut self, count: usize) -> NDIS_STATUS {
        let head = self.head;
        let needed = head.entries + count * head.entry;
        let Some(buffer) = self.buffer().filter(|b| b.len() >= needed) else {
            self.query.set_counts(0, needed as u32);
            return NDIS_STATUS_BUFFER_TOO_SHORT;
        };
        buffer[..head.entries].fill(0);
        let header = NDIS_OBJECT_HEADER::new(
            NDIS_OBJECT_TYPE_DEFAULT,
            head.revision,
            ndk_variable_header_size(needed),
        );
        put(buffer, 0, &header);
        // Flags (reserved) 0, mapped-to-TCP FALSE: zero from the fill.
        put(buffer, head.count, &(count as u32));
        put(buffer, head.mapped, &0u8);
        self.query.set_counts(needed as u32, 0);
        NDIS_STATUS_SUCCESS
    }
}

/// Answers `OID_NDK_CONNECTIONS`: every connection established now on the
/// adapter's device, from any `NDK_ADAPTER` opened on it.
pub fn connections(adapter: &Adapter, query: &mut Query<'_>) -> NDIS_STATUS {
    let mut answer = Answer {
        query,
        head: &CONNECTIONS,
        seen: 0,
    };
    let count = adapter.device.as_ref().map_or(0, |device| {
        device
            .ctx
            .visit_connections(|c| answer.push(&connection_entry(c)))
    });
    answer.finish(count)
}

/// Answers `OID_NDK_LOCAL_ENDPOINTS`: the listeners listening now
/// (`Listener` TRUE) and the shared endpoints' addresses (FALSE).
pub fn local_endpoints(adapter: &Adapter, query: &mut Query<'_>) -> NDIS_STATUS {
    let mut answer = Answer {
        query,
        head: &LOCAL_ENDPOINTS,
        seen: 0,
    };
    let count = adapter.device.as_ref().map_or(0, |device| {
        device
            .ctx
            .visit_local_endpoints(|e| answer.push(&endpoint_entry(e)))
    });
    answer.finish(count)
}
