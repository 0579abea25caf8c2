//! Two-adapter scenarios on the real software RNIC over the in-memory
//! fabric: adapters opened with `RsNdkOpenAdapter("mem:...")`, driven only
//! through the NDK dispatch tables (1 MiB transfers, private data both
//! ways, remote invalidation between two nodes). The provider's whole
//! consumer-level suite runs on the RNIC too: `tests/provider_*.rs`.

mod provider_util;
mod rnic_util;

use rnic_util::*;

/// Fabric `e2e<test>`, node 127.0.4.(10 * test + node): unique per test,
/// as the host keys devices by address.
fn cfg(test: u8, node: u8) -> String {
    format!("mem:e2e{test}/127.0.4.{}", 10 * test + node)
}

#[test]
fn connect_accept_complete_with_private_data() {
    connect_accept_complete(cfg, 1);
}

#[test]
fn send_receive_1b_4k_1m_multi_sge() {
    send_receive_sizes(cfg, 2);
}

#[test]
fn rdma_write_read_and_read_beyond_region() {
    write_read_and_out_of_bounds(cfg, 3);
}

#[test]
fn fast_register_remote_use_and_send_and_invalidate() {
    fast_register_and_remote_invalidate(cfg, 4);
}

#[test]
fn memory_window_bind_use_invalidate() {
    memory_window(cfg, 5);
}

#[test]
fn flush_cancels_posted_requests_and_fires_armed_cq() {
    flush_cancels(cfg, 6);
}

#[test]
fn disconnect_event_fires_once() {
    disconnect_event_once(cfg, 7);
}

#[test]
fn cq_arm_any_and_solicited() {
    cq_arm(cfg, 8);
}
