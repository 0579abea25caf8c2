//! The lab's segment: a bridge in the namespace with the host side's
//! addresses, taps on it, and host-side netem.

use std::fs::OpenOptions;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::os::fd::{AsRawFd, OwnedFd};

use crate::error::{Error, Result};
use crate::host;
use crate::netns::Netns;

/// The bridge every tap is attached to.
pub const BRIDGE: &str = "br0";
/// The segment's MTU.
pub const MTU: u32 = 1500;
/// The host side's IPv4 address on the bridge (10.77.0.0/24).
pub const HOST_IPV4: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 1);
/// The host side's IPv6 address on the bridge (fd77::/64).
pub const HOST_IPV6: Ipv6Addr = Ipv6Addr::new(0xfd77, 0, 0, 0, 0, 0, 0, 1);
/// The IPv4 prefix length.
pub const IPV4_PREFIX: u8 = 24;
/// The IPv6 prefix length.
pub const IPV6_PREFIX: u8 = 64;

/// The last IPv4 octet (and IPv6 last group, written the same) of guest
/// `index`: 2 for the first, then 10, 11, ... (3-9 are left for rsndk's
/// endpoints).
pub fn guest_host_part(index: usize) -> u8 {
    if index == 0 {
        2
    } else {
        u8::try_from(9 + index).unwrap_or(u8::MAX)
    }
}

/// Guest `index`'s IPv4 address.
pub fn guest_ipv4(index: usize) -> Ipv4Addr {
    Ipv4Addr::new(10, 77, 0, guest_host_part(index))
}

/// Guest `index`'s IPv6 address (`fd77::2`, `fd77::10`, ...: the last
/// group reads like the IPv4 octet).
pub fn guest_ipv6(index: usize) -> Ipv6Addr {
    let decimal = guest_host_part(index).to_string();
    let group = u16::from_str_radix(&decimal, 16).unwrap_or(0xff);
    Ipv6Addr::new(0xfd77, 0, 0, 0, 0, 0, 0, group)
}

/// Guest `index`'s MAC address, `52:54:00:77:00:XX` with XX its host part.
pub fn guest_mac(index: usize) -> String {
    format!("52:54:00:77:00:{:02x}", guest_host_part(index))
}

/// Builds the bridge with the host side's addresses (DAD off, so they are
/// usable at once).
pub fn build_bridge(netns: &Netns) -> Result<()> {
    netns.run(|| {
        for conf in ["all", "default"] {
            let path = format!("/proc/sys/net/ipv6/conf/{conf}/accept_dad");
            std::fs::write(&path, "0").map_err(|e| Error::io(format!("cannot write {path}"), e))?;
        }
        // Lets root open ICMP datagram sockets (a ping without raw sockets).
        let path = "/proc/sys/net/ipv4/ping_group_range";
        std::fs::write(path, "0 2147483647")
            .map_err(|e| Error::io(format!("cannot write {path}"), e))
    })??;
    let mtu = MTU.to_string();
    netns.ip(&[
        "link",
        "add",
        BRIDGE,
        "type",
        "bridge",
        "mcast_snooping",
        "0",
    ])?;
    netns.ip(&["link", "set", BRIDGE, "mtu", &mtu, "up"])?;
    netns.ip(&[
        "addr",
        "add",
        &format!("{HOST_IPV4}/{IPV4_PREFIX}"),
        "dev",
        BRIDGE,
    ])?;
    netns.ip(&[
        "-6",
        "addr",
        "add",
        &format!("{HOST_IPV6}/{IPV6_PREFIX}"),
        "dev",
        BRIDGE,
        "nodad",
    ])?;
    Ok(())
}

/// Adds a persistent tap `name` (for QEMU to open by name) to the bridge.
pub fn add_persistent_tap(netns: &Netns, name: &str) -> Result<()> {
    netns.ip(&["tuntap", "add", "dev", name, "mode", "tap"])?;
    attach(netns, name)
}

fn attach(netns: &Netns, name: &str) -> Result<()> {
    let mtu = MTU.to_string();
    netns.ip(&["link", "set", name, "master", BRIDGE, "mtu", &mtu, "up"])?;
    Ok(())
}

/// Opens a new tap `name` (IFF_TAP | IFF_NO_PI) inside the namespace and
/// attaches it to the bridge; it exists while the descriptor is open.
pub fn create_tap(netns: &Netns, name: &str) -> Result<OwnedFd> {
    if name.is_empty() || name.len() >= libc::IFNAMSIZ {
        return Err(Error::Guest(format!(
            "tap name {name:?} must have 1 to {} bytes",
            libc::IFNAMSIZ - 1
        )));
    }
    let fd = netns.run(|| open_tap(name))??;
    attach(netns, name)?;
    Ok(fd)
}

fn open_tap(name: &str) -> Result<OwnedFd> {
    let tun = OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/net/tun")
        .map_err(|e| {
            Error::Missing(format!(
                "cannot open /dev/net/tun ({e}): the host kernel needs CONFIG_TUN (modprobe tun)"
            ))
        })?;
    // SAFETY: ifreq is plain old data; all zeroes is a valid value.
    let mut request: libc::ifreq = unsafe { std::mem::zeroed() };
    for (slot, byte) in request.ifr_name.iter_mut().zip(name.bytes()) {
        *slot = byte as libc::c_char;
    }
    request.ifr_ifru.ifru_flags = (libc::IFF_TAP | libc::IFF_NO_PI) as libc::c_short;
    // SAFETY: TUNSETIFF reads and writes one ifreq, which `request` is, on
    // the open tun descriptor.
    let rc = unsafe { libc::ioctl(tun.as_raw_fd(), libc::TUNSETIFF, &raw mut request) };
    if rc != 0 {
        return Err(Error::io(
            format!("TUNSETIFF {name}"),
            std::io::Error::last_os_error(),
        ));
    }
    Ok(OwnedFd::from(tun))
}

/// `tc qdisc replace dev DEV root netem SPEC` inside the namespace.
pub fn netem(netns: &Netns, dev: &str, spec: &str) -> Result<()> {
    let mut tc = host::command(host::TC)?;
    tc.args(["qdisc", "replace", "dev", dev, "root", "netem"])
        .args(spec.split_whitespace());
    match netns.output(&mut tc) {
        Ok(_) => Ok(()),
        Err(Error::Command { output, .. }) if output.contains("qdisc kind is unknown") => {
            Err(Error::Missing(
                "the host kernel has no netem qdisc (CONFIG_NET_SCH_NETEM; try `modprobe sch_netem`): use Guest::netem / Guest::netem_ingress, which apply it inside the guest, instead".into(),
            ))
        }
        Err(other) => Err(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guests_skip_the_endpoints_range() {
        assert_eq!(guest_ipv4(0), Ipv4Addr::new(10, 77, 0, 2));
        assert_eq!(guest_ipv4(1), Ipv4Addr::new(10, 77, 0, 10));
        assert_eq!(guest_ipv6(0).to_string(), "fd77::2");
        assert_eq!(guest_ipv6(1).to_string(), "fd77::10");
        assert_eq!(guest_mac(1), "52:54:00:77:00:0a");
    }
}
