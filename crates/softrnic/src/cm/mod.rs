//! Connection management over MADs on QP1 (being built: until it lands,
//! CM packets are counted and dropped, so connections cannot be made).

use crate::device::SoftRnic;
use crate::wire::Packet;

/// Handles a packet addressed to QP1.
pub(crate) fn receive(device: &SoftRnic, packet: &Packet<'_>) {
    let _ = (device, packet);
}
