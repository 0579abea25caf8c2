//! Loopback addresses for this crate's socket tests, distinct per test
//! process.
//!
//! Two test processes of this crate may run at once (two engineers on one
//! machine, or CI beside a developer). With fixed addresses the second
//! failed to bind, or its raw sockets took the first one's datagrams. Here
//! every address lies in 127.128.0.0/9, which no other test of the
//! repository uses, and carries the process id (modulo 32,768, Linux's
//! default `pid_max`) in its middle octets; the last octet tells a test's
//! addresses apart. A `UdpPort` owns its address:4791 exclusively, so two
//! processes whose ids are congruent modulo 32,768 would see a bind fail
//! with `AddrInUse`, never each other's datagrams.

use std::net::Ipv4Addr;

/// The address `host` (its last octet) of this process's loopback range.
pub(crate) fn loopback(host: u8) -> Ipv4Addr {
    let [_, _, high, low] = (std::process::id() & 0x7fff).to_be_bytes();
    Ipv4Addr::new(127, 0x80 | high, low, host)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_addresses_are_its_own_and_outside_the_other_tests_range() {
        let a = loopback(1);
        assert!(a.is_loopback());
        assert_ne!(a.octets()[1], 0, "other tests use 127.0.x.x");
        assert_eq!(a.octets()[..3], loopback(2).octets()[..3]);
        assert_eq!(loopback(2).octets()[3], 2);
        let id = std::process::id() & 0x7fff;
        assert_eq!(
            u32::from(a.octets()[1] & 0x7f) << 8 | u32::from(a.octets()[2]),
            id
        );
    }
}
