//! A read-only view of a device's live connections and local endpoints:
//! what Windows asks an NDK miniport for with `OID_NDK_CONNECTIONS`,
//! `OID_NDK_LOCAL_ENDPOINTS` and the `ActiveConnection` counter of
//! `OID_NDK_STATISTICS`.
//!
//! Each table is read in one pass under the provider's own locks (the
//! device's routing table, then each object's state lock, the order every
//! other path takes them in), so a view is consistent per table: the count
//! returned is the number of entries visited in that pass. Visitors run at
//! `DISPATCH_LEVEL` with the table lock held: they must not block, call an
//! NDK consumer or take a provider lock. Nothing here allocates; a caller
//! that can hold only so many entries (an OID's buffer) keeps the first
//! ones and still learns how many there are.

use core::net::SocketAddr;

use crate::device::DeviceContext;

/// One established connection, as `NDIS_NDK_CONNECTION_ENTRY` gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Connection {
    /// The local IP address and ND port.
    pub local: SocketAddr,
    /// The peer's IP address and ND port.
    pub remote: SocketAddr,
}

/// What holds a local endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EndpointKind {
    /// A listener (`NdkListen`).
    Listener,
    /// A shared endpoint (`NdkCreateSharedEndpoint`), which connectors
    /// connect from.
    SharedEndpoint,
}

/// One local endpoint, as `NDIS_NDK_LOCAL_ENDPOINT_ENTRY` gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LocalEndpoint {
    /// The local IP address and ND port.
    pub local: SocketAddr,
    /// What holds it.
    pub kind: EndpointKind,
}

impl DeviceContext {
    /// Calls `visit` with each connection of this device that is
    /// established now (connectors of every `NDK_ADAPTER` opened on the
    /// device; a connection not yet completed, or one either side has
    /// begun to end, is not listed), in the order of the device's
    /// connection numbers; returns how many were visited.
    pub fn visit_connections(&self, mut visit: impl FnMut(Connection)) -> usize {
        let mut count = 0;
        self.conns.for_each(|_, connector| {
            if let Some((local, remote)) = connector.connected_addresses() {
                visit(Connection { local, remote });
                count += 1;
            }
        });
        count
    }

    /// Calls `visit` with each local endpoint of this device: the
    /// listeners that listen now, then the addresses shared endpoints
    /// hold; returns how many were visited.
    pub fn visit_local_endpoints(&self, mut visit: impl FnMut(LocalEndpoint)) -> usize {
        let mut count = 0;
        self.listeners.for_each(|_, listener| {
            if let Some(local) = listener.listening_address() {
                visit(LocalEndpoint {
                    local,
                    kind: EndpointKind::Listener,
                });
                count += 1;
            }
        });
        self.ports.for_each(|local| {
            visit(LocalEndpoint {
                local,
                kind: EndpointKind::SharedEndpoint,
            });
            count += 1;
        });
        count
    }

    /// The established connections, the first `out.len()` of them written
    /// to `out`; returns how many there are (which may exceed `out.len()`).
    pub fn connections_into(&self, out: &mut [Connection]) -> usize {
        let mut slots = out.iter_mut();
        self.visit_connections(|c| {
            if let Some(slot) = slots.next() {
                *slot = c;
            }
        })
    }

    /// The local endpoints, the first `out.len()` of them written to `out`;
    /// returns how many there are.
    pub fn local_endpoints_into(&self, out: &mut [LocalEndpoint]) -> usize {
        let mut slots = out.iter_mut();
        self.visit_local_endpoints(|e| {
            if let Some(slot) = slots.next() {
                *slot = e;
            }
        })
    }

    /// How many connections are established now.
    pub fn active_connections(&self) -> usize {
        self.visit_connections(|_| ())
    }
}
