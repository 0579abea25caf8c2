//! Two-adapter scenarios on the real software RNIC, on each transport:
//! adapters opened with `RsNdkOpenAdapter`, driven only through the NDK
//! dispatch tables (1 MiB transfers, private data both ways, remote
//! invalidation between two nodes). Each scenario of `rnic_util` runs as
//! `two_nodes::mem::<test>` over the in-memory fabric and as
//! `two_nodes::udp::<test>` over RoCEv2/UDP on loopback. The provider's
//! whole consumer-level suite runs on the RNIC too:
//! `crates/provider/tests/suite/`.

use crate::rnic_util::*;

/// One test per scenario, each with its test number (which picks its
/// addresses), over the `cfg` of the module it expands in.
macro_rules! scenarios {
    ($($name:ident => $scenario:ident($test:literal);)*) => {$(
        #[test]
        fn $name() {
            $scenario(cfg, $test);
        }
    )*};
}

/// The scenarios, on every transport.
macro_rules! on_each_transport {
    ($($t:tt)*) => {
        /// Over the in-memory fabric.
        mod mem {
            use super::*;

            /// Fabric `e2e<test>`, node 127.0.4.(10 * test + node): unique
            /// per test, as the host keys devices by address.
            fn cfg(test: u8, node: u8) -> String {
                format!("mem:e2e{test}/127.0.4.{}", 10 * test + node)
            }

            scenarios! { $($t)* }
        }

        /// Over RoCEv2/UDP on loopback.
        mod udp {
            use super::*;

            /// Node 127.0.5.(10 * test + node), port 4791: unique per test
            /// (only this module uses 127.0.5.x).
            fn cfg(test: u8, node: u8) -> String {
                format!("udp:127.0.5.{}", 10 * test + node)
            }

            scenarios! { $($t)* }
        }
    };
}

on_each_transport! {
    connect_accept_complete_with_private_data => connect_accept_complete(1);
    send_receive_1b_4k_1m_multi_sge => send_receive_sizes(2);
    rdma_write_read_and_read_beyond_region => write_read_and_out_of_bounds(3);
    fast_register_remote_use_and_send_and_invalidate => fast_register_and_remote_invalidate(4);
    memory_window_bind_use_invalidate => memory_window(5);
    flush_cancels_posted_requests_and_fires_armed_cq => flush_cancels(6);
    disconnect_event_fires_once => disconnect_event_once(7);
    cq_arm_any_and_solicited => cq_arm(8);
}
