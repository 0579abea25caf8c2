//! Uses the kernel and Winsock Kernel declarations the way the driver
//! shell does, without a kernel: the IRP stack-location arithmetic of
//! `IoAllocateIrp(1, ..)` + `IoSetCompletionRoutine`, and a datagram send
//! and receive through WSK-shaped dispatch tables whose "provider" is a
//! fake recording what it was given.
#![allow(non_snake_case)]

use core::mem::MaybeUninit;
use core::ptr;
use std::sync::Mutex;

use ndis::{
    DEVICE_OBJECT, IO_STACK_LOCATION, IRP, SL_INVOKE_ON_CANCEL, SL_INVOKE_ON_ERROR,
    SL_INVOKE_ON_SUCCESS, STATUS_MORE_PROCESSING_REQUIRED, WSK_BUF, WSK_CLIENT_DATAGRAM_DISPATCH,
    WSK_DATAGRAM_INDICATION, WSK_PROVIDER_BASIC_DISPATCH, WSK_PROVIDER_DATAGRAM_DISPATCH,
    WSK_SOCKET,
};
use ndkpi::{AF_INET, IN_ADDR, MDL, NTSTATUS, PVOID, SOCKADDR, SOCKADDR_IN, STATUS_SUCCESS};

/// What `IoAllocateIrp(1, FALSE)` returns: the IRP followed by its one
/// stack location, with the current location one past the end.
#[repr(C)]
struct OneLocationIrp {
    irp: IRP,
    stack: [IO_STACK_LOCATION; 1],
}

unsafe extern "win64" fn completion(
    _device: *mut DEVICE_OBJECT,
    _irp: *mut IRP,
    _context: PVOID,
) -> NTSTATUS {
    STATUS_MORE_PROCESSING_REQUIRED
}

#[test]
fn next_stack_location_of_a_one_location_irp_is_its_only_location() {
    // SAFETY: IRP and IO_STACK_LOCATION are plain integers and pointers,
    // for which all-zero is a valid value.
    let mut block: Box<OneLocationIrp> = Box::new(unsafe { MaybeUninit::zeroed().assume_init() });
    let only = ptr::from_mut(&mut block.stack[0]);
    block.irp.StackCount = 1;
    block.irp.CurrentLocation = 2;
    block.irp.Tail_CurrentStackLocation = only.wrapping_add(1);
    let next = block.irp.next_stack_location();
    assert_eq!(next, only);

    // What the driver's set_completion does with it.
    // SAFETY: `next` is the block's own stack location.
    let location = unsafe { &mut *next };
    location.CompletionRoutine = Some(completion);
    location.Control = SL_INVOKE_ON_SUCCESS | SL_INVOKE_ON_ERROR | SL_INVOKE_ON_CANCEL;
    assert_eq!(block.stack[0].Control, 0xE0);
    assert!(block.stack[0].CompletionRoutine.is_some());
}

/// What the fake provider saw in `WskSendTo`.
static SENT: Mutex<Vec<(SOCKADDR_IN, usize, u32)>> = Mutex::new(Vec::new());

unsafe extern "win64" fn fake_send_to(
    _socket: *mut WSK_SOCKET,
    buffer: *mut WSK_BUF,
    _flags: u32,
    remote: *mut SOCKADDR,
    _control_len: u32,
    _control: PVOID,
    _irp: *mut IRP,
) -> NTSTATUS {
    // SAFETY: the test passes a valid buffer, as the driver does.
    let buf = unsafe { *buffer };
    // SAFETY: and a valid IPv4 address.
    let to = unsafe { remote.cast::<SOCKADDR_IN>().read_unaligned() };
    SENT.lock().unwrap().push((to, buf.Length, buf.Offset));
    STATUS_SUCCESS
}

static RECEIVED: Mutex<Vec<(u16, usize)>> = Mutex::new(Vec::new());

unsafe extern "win64" fn receive_from(
    _context: PVOID,
    _flags: u32,
    mut indication: *mut WSK_DATAGRAM_INDICATION,
) -> NTSTATUS {
    while !indication.is_null() {
        // SAFETY: the test's list, valid for the call.
        let ind = unsafe { *indication };
        // SAFETY: an AF_INET remote address, as WSK gives for IPv4 sockets.
        let from = unsafe { ind.RemoteAddress.cast::<SOCKADDR_IN>().read_unaligned() };
        RECEIVED
            .lock()
            .unwrap()
            .push((u16::from_be(from.sin_port), ind.Buffer.Length));
        indication = ind.Next;
    }
    STATUS_SUCCESS
}

#[test]
fn datagram_tables_carry_a_send_and_a_receive() {
    let provider = WSK_PROVIDER_DATAGRAM_DISPATCH {
        Basic: WSK_PROVIDER_BASIC_DISPATCH {
            WskControlSocket: None,
            WskCloseSocket: None,
        },
        WskBind: None,
        WskSendTo: Some(fake_send_to),
        WskReceiveFrom: None,
        WskRelease: None,
        WskGetLocalAddress: None,
        WskSendMessages: ptr::null_mut(),
    };
    let mut socket = WSK_SOCKET {
        Dispatch: ptr::from_ref(&provider).cast(),
    };
    // The driver's path: the socket's dispatch is the datagram table.
    // SAFETY: the socket points at the table above.
    let table = unsafe { &*socket.Dispatch.cast::<WSK_PROVIDER_DATAGRAM_DISPATCH>() };
    let mut remote = SOCKADDR_IN {
        sin_family: AF_INET,
        sin_port: 4791u16.to_be(),
        sin_addr: IN_ADDR::new([192, 0, 2, 7]),
        sin_zero: [0; 8],
    };
    let mut buf = WSK_BUF {
        Mdl: ptr::null_mut::<MDL>(),
        Offset: 0,
        Length: 1_066,
    };
    let send_to = table.WskSendTo.unwrap();
    // SAFETY: valid pointers; the fake provider only reads them.
    let status = unsafe {
        send_to(
            &raw mut socket,
            &raw mut buf,
            0,
            (&raw mut remote).cast(),
            0,
            ptr::null_mut(),
            ptr::null_mut(),
        )
    };
    assert_eq!(status, STATUS_SUCCESS);
    let sent = SENT.lock().unwrap().clone();
    assert_eq!(sent.len(), 1);
    assert_eq!(u16::from_be(sent[0].0.sin_port), 4791);
    assert_eq!(sent[0].0.sin_addr, IN_ADDR::new([192, 0, 2, 7]));
    assert_eq!((sent[0].1, sent[0].2), (1_066, 0));

    // Two indications chained, as WskReceiveFromEvent gets them.
    let client = WSK_CLIENT_DATAGRAM_DISPATCH {
        WskReceiveFromEvent: Some(receive_from),
    };
    let mut second = WSK_DATAGRAM_INDICATION {
        Next: ptr::null_mut(),
        Buffer: WSK_BUF {
            Mdl: ptr::null_mut(),
            Offset: 0,
            Length: 60,
        },
        ControlInfo: ptr::null_mut(),
        ControlInfoLength: 0,
        RemoteAddress: (&raw mut remote).cast(),
    };
    let mut first = WSK_DATAGRAM_INDICATION {
        Next: &raw mut second,
        Buffer: WSK_BUF {
            Mdl: ptr::null_mut(),
            Offset: 0,
            Length: 4_136,
        },
        ..second
    };
    let event = client.WskReceiveFromEvent.unwrap();
    // SAFETY: a valid two-element list.
    let status = unsafe { event(ptr::null_mut(), 0, &raw mut first) };
    assert_eq!(status, STATUS_SUCCESS);
    assert_eq!(*RECEIVED.lock().unwrap(), vec![(4791, 4_136), (4791, 60)]);
}
