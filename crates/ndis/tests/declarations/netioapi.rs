//! Builds IP Helper rows the way the bottle's NETIO will hand them to the
//! driver's address watcher, and reads them back.

use ndis::{
    AF_INET6, AF_UNSPEC, IpDadStatePreferred, MIB_UNICASTIPADDRESS_ROW, MIB_UNICASTIPADDRESS_TABLE,
    NET_LUID, PUNICAST_IPADDRESS_CHANGE_CALLBACK, SCOPE_ID, SOCKADDR_INET,
};
use ndkpi::PVOID;

unsafe extern "win64" fn changed(
    _context: PVOID,
    _row: *mut MIB_UNICASTIPADDRESS_ROW,
    _kind: ndis::MIB_NOTIFICATION_TYPE,
) {
}

#[test]
fn a_row_carries_an_ipv6_address_of_an_interface() {
    let v6 = ndkpi::SOCKADDR_IN6 {
        sin6_family: AF_INET6,
        sin6_addr: ndkpi::IN6_ADDR {
            u: [0xfd, 0, 0x52, 0x53, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
        },
        ..Default::default()
    };
    let row = MIB_UNICASTIPADDRESS_ROW {
        Address: SOCKADDR_INET::from(v6),
        InterfaceLuid: NET_LUID {
            Value: (6 << 48) | (1 << 24),
        },
        InterfaceIndex: 7,
        OnLinkPrefixLength: 64,
        DadState: IpDadStatePreferred,
        ScopeId: SCOPE_ID {
            Value: (14 << 28) | 3,
        },
        ..MIB_UNICASTIPADDRESS_ROW::default()
    };
    assert_eq!(row.InterfaceLuid.Value >> 48, 6);
    assert_eq!(row.DadState, 4);
    assert_eq!((row.ScopeId.level(), row.ScopeId.zone()), (14, 3));

    let table = MIB_UNICASTIPADDRESS_TABLE {
        NumEntries: 1,
        Table: [row],
    };
    assert_eq!(table.Table[0].InterfaceIndex, 7);
    assert_eq!(AF_UNSPEC, 0);
}

#[test]
fn the_callback_type_takes_the_c_signature() {
    let callback: PUNICAST_IPADDRESS_CHANGE_CALLBACK = Some(changed);
    assert!(callback.is_some());
}
