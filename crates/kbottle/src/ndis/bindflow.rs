//! NDIS's side of binding an intermediate driver to a NIC, in the order
//! the MUX sample expects it (Windows-driver-samples
//! `network/ndis/mux/driver/60`), each step on a PASSIVE_LEVEL system
//! thread (the processor `ndis-pnp`):
//!
//! - [`add_nic`]: a NIC (P) joins a segment.
//! - [`bind`]: `ProtocolBindAdapterEx` with the NIC's
//!   `NDIS_BIND_PARAMETERS` (revision 4); the protocol opens the NIC
//!   (`NdisOpenAdapterEx`, only from there), reads `UpperBindings` from the
//!   binding's configuration and asks for its virtual miniport V
//!   (`NdisIMInitializeDeviceInstanceEx`); a pended bind completes through
//!   `NdisCompleteBindAdapterEx`. NDIS then restarts the new, paused
//!   binding (`NetEventRestart`) and starts V: `MiniportInitializeEx` with
//!   `IMDeviceInstanceContext`, then `MiniportRestart`, then the stack
//!   above binds to V.
//! - [`pause`] / [`restart`]: `NetEventPause` / `NetEventRestart` on the
//!   binding (`ProtocolNetPnPEvent`, pended ones completed through
//!   `NdisCompleteNetPnPEvent`). A pause may complete only when every
//!   send of the binding has completed (0x7C / 0x1F otherwise).
//! - [`unbind`]: pause, then `ProtocolUnbindAdapterEx`; the protocol
//!   deinitialises V (`NdisIMDeInitializeDeviceInstance`: the stack above
//!   unbinds, V is paused and halted) and closes the binding
//!   (`NdisCloseAdapterEx`); then the NIC leaves its segment.
//!
//! What the protocol leaves wrong without crashing Windows (a bind that
//! succeeds without an open binding, a binding or V still up after the
//! unbind) is recorded as a fault in the machine's report.

use std::ptr;
use std::time::Duration;

use ndis::{
    IF_TYPE_ETHERNET_CSMACD, MediaConnectStateConnected, MediaConnectStateDisconnected,
    MediaDuplexStateFull, NDIS_BIND_PARAMETERS, NDIS_BIND_PARAMETERS_REVISION_4, NDIS_HANDLE,
    NDIS_MAC_OPTION_NO_LOOPBACK, NDIS_MAC_OPTION_TRANSFERS_NOT_PEND, NDIS_OBJECT_HEADER,
    NDIS_OBJECT_TYPE_BIND_PARAMETERS, NDIS_OBJECT_TYPE_DEFAULT, NDIS_PROTOCOL_PAUSE_PARAMETERS,
    NDIS_PROTOCOL_PAUSE_PARAMETERS_REVISION_1, NDIS_PROTOCOL_RESTART_PARAMETERS,
    NDIS_PROTOCOL_RESTART_PARAMETERS_REVISION_1, NDIS_SIZEOF_BIND_PARAMETERS_REVISION_4,
    NDIS_SIZEOF_PROTOCOL_PAUSE_PARAMETERS_REVISION_1,
    NDIS_SIZEOF_PROTOCOL_RESTART_PARAMETERS_REVISION_1, NDIS_STATUS_FAILURE, NDIS_STATUS_PENDING,
    NDIS_STATUS_SUCCESS, NDIS_STRING, NET_IF_ACCESS_BROADCAST, NET_IF_CONNECTION_DEDICATED,
    NET_IF_DIRECTION_SENDRECEIVE, NET_LUID, NET_PNP_EVENT_CODE, NET_PNP_EVENT_NOTIFICATION,
    NdisMedium802_3, NdisPhysicalMedium802_3, NetEventPause, NetEventRestart, PASSIVE_LEVEL,
};
use ndkpi::NDIS_STATUS;

use super::checks::{
    NDIS_BUGCHECK_ILLEGAL_PAUSE_RESTART_COMPLETE, NDIS_BUGCHECK_WATCHDOG, ndis_bugcheck,
    returned_at_raised_irql,
};
use super::lower_oid::{MAX_MULTICAST, SUPPORTED_FILTERS};
use super::miniport::{self, ImStart};
use super::nbl::{self, Holder};
use super::nic::{self, LINK_SPEED};
use super::state::{self, BindingState, Handle, ImState, NicInfo, Pends};
use crate::ids::Keyword;
use crate::kernel::cpu;
use crate::world::segment::{self, SegmentId};

/// How long a pended bind, unbind or PnP event may take (NDIS's
/// watchdog).
const PNP_TIMEOUT: Duration = Duration::from_secs(30);
/// NDIS's pause reason for an unbind (`NDIS_PAUSE_UNBIND_PROTOCOL`,
/// `ndis.h`).
const NDIS_PAUSE_UNBIND_PROTOCOL: u32 = 0x0000_0008;
/// Interface indexes of the NICs start here (V's start at 0x100).
const FIRST_NIC_IF_INDEX: u32 = 0x10;
/// NetLuidIndex of the NICs start here (V's are their adapter ids).
const FIRST_NIC_LUID_INDEX: u64 = 0x8000;
/// Lookahead the NIC offers.
const LOOKAHEAD: u32 = 128;

/// How a NIC behaves, as the test asks.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NicOptions {
    /// `NdisOpenAdapterEx` pends (completes from another thread).
    pub open_pends: bool,
    /// `NdisCloseAdapterEx` pends.
    pub close_pends: bool,
    /// The link is down at bind time.
    pub link_down: bool,
}

/// Records a protocol fault for the report (and stderr).
pub fn fault(what: String) {
    eprintln!("kbottle NDIS: protocol fault: {what}");
    state::with(|n| n.faults.push(what));
}

/// Runs a protocol handler as NDIS does from a system thread: at
/// PASSIVE_LEVEL, and checks it returns there.
pub(crate) fn call_protocol<R>(handler: &str, addr: usize, f: impl FnOnce() -> R) -> R {
    let entered = cpu::current();
    let r = f();
    if cpu::current() != entered {
        returned_at_raised_irql(handler, addr, entered);
    }
    r
}

/// Runs `f` on a fresh PASSIVE_LEVEL system thread (the processor
/// `ndis-pnp`) and waits for it.
pub fn on_pnp_thread<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> R {
    let worker = std::thread::Builder::new()
        .name("ndis-pnp".to_owned())
        .spawn(move || {
            cpu::enter("ndis-pnp");
            debug_assert_eq!(cpu::current(), PASSIVE_LEVEL);
            f()
        })
        .expect("spawning an NDIS PnP thread");
    match worker.join() {
        Ok(r) => r,
        Err(payload) => std::panic::resume_unwind(payload),
    }
}

impl NicOptions {
    /// What NIC number `id` does unless told otherwise, so that ordinary
    /// runs take every path: opens pend on even NICs, closes on every
    /// third.
    pub fn varied(id: u32) -> Self {
        Self {
            open_pends: id % 2 == 0,
            close_pends: id % 3 == 0,
            link_down: false,
        }
    }
}

/// A new NIC on `segment` whose V gets `keywords`, behaving as `options`
/// say (`None`: [`NicOptions::varied`]); its number (`None`: no such
/// segment).
pub fn add_nic(
    segment: SegmentId,
    keywords: Vec<(String, Keyword)>,
    options: Option<&NicOptions>,
) -> Option<u32> {
    let mtu = segment::get(segment)?.mtu();
    let id = state::with(|n| {
        n.next_nic += 1;
        n.next_nic
    });
    let options = options.cloned().unwrap_or_else(|| NicOptions::varied(id));
    // A locally administered address ("RSN"), unique per NIC.
    let mac = [0x02, 0x52, 0x53, 0x4E, (id >> 8) as u8, id as u8];
    let info = NicInfo {
        id,
        handle: Handle::new(),
        mac,
        mtu,
        name: format!("\\DEVICE\\{{52534E44-0000-4000-8000-{id:012X}}}"),
        upper_binding: format!("\\DEVICE\\{{52534E44-0001-4000-8000-{id:012X}}}"),
        v_keywords: keywords,
        if_index: FIRST_NIC_IF_INDEX + id,
        luid: (u64::from(IF_TYPE_ETHERNET_CSMACD) << 48)
            | ((FIRST_NIC_LUID_INDEX + u64::from(id)) << 24),
        pends: Pends {
            open: options.open_pends,
            close: options.close_pends,
        },
        bind_context: None,
        bind_completed: None,
        unbind_context: None,
        unbind_completed: false,
        binding: None,
        link_up: !options.link_down,
        packet_filter: 0,
        multicast: Vec::new(),
        removed: false,
    };
    state::with(|n| n.nics.insert(id, info));
    if !nic::start(id, mac, segment) {
        state::with(|n| n.nics.remove(&id));
        return None;
    }
    Some(id)
}

/// A UTF-16 `NDIS_STRING` over its own text.
struct OwnedString {
    _text: Vec<u16>,
    string: Box<NDIS_STRING>,
}

impl OwnedString {
    fn new(text: &str) -> Self {
        let mut units: Vec<u16> = text.encode_utf16().collect();
        let length = (units.len() * 2) as u16;
        units.push(0);
        let string = Box::new(NDIS_STRING {
            Length: length,
            MaximumLength: length + 2,
            Buffer: units.as_mut_ptr(),
        });
        // The Vec's heap buffer does not move when the Vec does.
        Self {
            _text: units,
            string,
        }
    }

    fn as_ptr(&mut self) -> *mut NDIS_STRING {
        &raw mut *self.string
    }
}

/// The bind parameters of NIC `nic` (revision 4, what NDIS 6.30 and
/// later give a 6.50 protocol), pointing into `strings`.
fn bind_parameters(nic: &NicInfo, strings: &mut [OwnedString; 3]) -> NDIS_BIND_PARAMETERS {
    // SAFETY: all-zero bytes are valid bind parameters: integers, byte
    // arrays and nullable pointers.
    let mut p: NDIS_BIND_PARAMETERS = unsafe { std::mem::zeroed() };
    p.Header = NDIS_OBJECT_HEADER::new(
        NDIS_OBJECT_TYPE_BIND_PARAMETERS,
        NDIS_BIND_PARAMETERS_REVISION_4,
        NDIS_SIZEOF_BIND_PARAMETERS_REVISION_4,
    );
    let [section, adapter, bound] = strings;
    p.ProtocolSection = section.as_ptr();
    p.AdapterName = adapter.as_ptr();
    p.BoundAdapterName = bound.as_ptr();
    p.MediaType = NdisMedium802_3;
    p.MtuSize = nic.mtu;
    let speed = if nic.link_up { LINK_SPEED } else { 0 };
    p.MaxXmitLinkSpeed = LINK_SPEED;
    p.MaxRcvLinkSpeed = LINK_SPEED;
    p.XmitLinkSpeed = speed;
    p.RcvLinkSpeed = speed;
    p.MediaConnectState = if nic.link_up {
        MediaConnectStateConnected
    } else {
        MediaConnectStateDisconnected
    };
    p.MediaDuplexState = MediaDuplexStateFull;
    p.LookaheadSize = LOOKAHEAD;
    p.SupportedPacketFilters = SUPPORTED_FILTERS;
    p.MaxMulticastListSize = MAX_MULTICAST as u32;
    p.MacAddressLength = 6;
    p.CurrentMacAddress[..6].copy_from_slice(&nic.mac);
    p.PhysicalMediumType = NdisPhysicalMedium802_3;
    p.BoundIfNetluid = NET_LUID { Value: nic.luid };
    p.BoundIfIndex = nic.if_index;
    p.LowestIfNetluid = NET_LUID { Value: nic.luid };
    p.LowestIfIndex = nic.if_index;
    p.AccessType = NET_IF_ACCESS_BROADCAST;
    p.DirectionType = NET_IF_DIRECTION_SENDRECEIVE;
    p.ConnectionType = NET_IF_CONNECTION_DEDICATED;
    p.IfType = IF_TYPE_ETHERNET_CSMACD;
    p.IfConnectorPresent = 1;
    p.MacOptions = NDIS_MAC_OPTION_NO_LOOPBACK | NDIS_MAC_OPTION_TRANSFERS_NOT_PEND;
    p
}

/// Waits (NDIS's watchdog time) until `done` holds; 0x7C / 0x25 if not.
fn wait_for(what: &str, object: usize, mut done: impl FnMut(&mut state::Ndis) -> bool) {
    if !state::wait_until(PNP_TIMEOUT, |n| done(n)) {
        ndis_bugcheck(
            NDIS_BUGCHECK_WATCHDOG,
            0,
            object,
            format!("{what} pended and did not complete within {PNP_TIMEOUT:?}"),
        );
    }
}

/// Binds the protocol to NIC `nic` and starts the virtual miniport the
/// protocol asks for: V's adapter id, or the failing status. Runs on a
/// PnP thread.
pub fn bind(nic: u32) -> Result<u32, NDIS_STATUS> {
    on_pnp_thread(move || bind_here(nic))
}

fn bind_here(nic: u32) -> Result<u32, NDIS_STATUS> {
    let Some((handler, context, info_strings, mut params)) = state::with(|n| {
        let p = n.protocol.as_ref()?;
        let (handler, context, name) = (
            p.characteristics.BindAdapterHandlerEx?,
            p.context,
            p.name.clone(),
        );
        let x = n.live_nic(nic)?;
        x.bind_context = Some(Handle::new());
        x.bind_completed = None;
        let mut strings = [
            OwnedString::new(&format!(
                "\\REGISTRY\\MACHINE\\SYSTEM\\CurrentControlSet\\Services\\{name}\\Parameters\\Adapters\\{}",
                x.name.trim_start_matches("\\DEVICE\\")
            )),
            OwnedString::new(&x.name),
            OwnedString::new(&x.name),
        ];
        let params = bind_parameters(x, &mut strings);
        Some((handler, context, strings, params))
    }) else {
        return Err(NDIS_STATUS_FAILURE);
    };
    let bind_context = state::with(|n| {
        n.nics
            .get(&nic)
            .and_then(|x| x.bind_context.as_ref().map(Handle::addr))
    })
    .unwrap_or(0);
    let mut status = call_protocol("ProtocolBindAdapterEx", handler as usize, || {
        // SAFETY: the protocol's ProtocolBindAdapterEx, PASSIVE_LEVEL,
        // with its driver context, a live bind context and bind
        // parameters (and their strings) that live for the bind.
        unsafe {
            handler(
                context as NDIS_HANDLE,
                bind_context as NDIS_HANDLE,
                &raw mut params,
            )
        }
    });
    if status == NDIS_STATUS_PENDING {
        wait_for("ProtocolBindAdapterEx", bind_context, |n| {
            n.nics.get(&nic).is_some_and(|x| x.bind_completed.is_some())
        });
        status = state::with(|n| n.nics.get(&nic).and_then(|x| x.bind_completed))
            .unwrap_or(NDIS_STATUS_FAILURE);
    }
    drop(info_strings);
    let binding = state::with(|n| {
        let x = n.nics.get_mut(&nic)?;
        if let Some(h) = x.bind_context.take() {
            n.retired.push(h);
        }
        let b = n.nics.get(&nic)?.binding?;
        Some((b, n.bindings.get(&b).map(|b| b.state)))
    });
    if status != NDIS_STATUS_SUCCESS {
        if let Some((b, _)) = binding {
            fault(format!(
                "ProtocolBindAdapterEx failed with {status:#010x} and left binding {b:#x} open"
            ));
        }
        cancel_requests(nic);
        return Err(status);
    }
    let Some((binding, binding_state)) = binding else {
        fault("ProtocolBindAdapterEx succeeded without opening the adapter".to_owned());
        cancel_requests(nic);
        return Err(NDIS_STATUS_FAILURE);
    };
    if binding_state == Some(BindingState::Opening) {
        fault("ProtocolBindAdapterEx completed before its pended open completed".to_owned());
        wait_for("NdisOpenAdapterEx", binding, |n| {
            n.bindings
                .get(&binding)
                .is_some_and(|b| b.state != BindingState::Opening)
        });
    }
    let restarted = restart_here(nic);
    if restarted != NDIS_STATUS_SUCCESS {
        cancel_requests(nic);
        return Err(restarted);
    }
    start_devices(nic)
}

/// Starts the virtual miniports requested on NIC `nic`: the first one's
/// id, or the failing status.
fn start_devices(nic: u32) -> Result<u32, NDIS_STATUS> {
    let mut first: Option<Result<u32, NDIS_STATUS>> = None;
    loop {
        let next = state::with(|n| {
            let (keywords, d) = {
                let keywords = n.nics.get(&nic)?.v_keywords.clone();
                let d = n
                    .im_devices
                    .iter_mut()
                    .find(|d| d.nic == nic && d.state == ImState::Requested)?;
                d.state = ImState::Initializing;
                (keywords, d.clone())
            };
            Some((keywords, d))
        });
        let Some((keywords, device)) = next else {
            break;
        };
        let started = miniport::initialize_adapter(
            keywords,
            Some(ImStart {
                context: device.context,
                nic,
            }),
            |id| {
                state::with(|n| {
                    if let Some(d) = n
                        .im_devices
                        .iter_mut()
                        .find(|d| d.name == device.name && d.state == ImState::Initializing)
                    {
                        d.state = ImState::Up(id);
                    }
                });
            },
        );
        state::with(|n| {
            if let Some(d) = n.im_devices.iter_mut().find(|d| {
                d.name == device.name && matches!(d.state, ImState::Initializing | ImState::Up(_))
            }) {
                d.state = match started {
                    Ok(id) => ImState::Up(id),
                    Err(s) => ImState::Failed(s),
                };
            }
        });
        state::changed();
        first.get_or_insert(started);
    }
    first.unwrap_or(Err(NDIS_STATUS_FAILURE))
}

/// Cancels virtual miniports still only requested on NIC `nic`.
fn cancel_requests(nic: u32) {
    state::with(|n| {
        for d in &mut n.im_devices {
            if d.nic == nic && d.state == ImState::Requested {
                d.state = ImState::Cancelled;
            }
        }
    });
}

/// Delivers one PnP event to the binding of NIC `nic` through
/// `ProtocolNetPnPEvent` (waiting for `NdisCompleteNetPnPEvent` if it
/// pends); its status.
fn pnp_event(
    binding: usize,
    code: NET_PNP_EVENT_CODE,
    buffer: *mut u8,
    length: u32,
) -> NDIS_STATUS {
    let Some((handler, context)) = state::with(|n| {
        let handler = n.protocol.as_ref()?.characteristics.NetPnPEventHandler?;
        Some((handler, n.bindings.get(&binding)?.context))
    }) else {
        return NDIS_STATUS_FAILURE;
    };
    let mut event = Box::new(NET_PNP_EVENT_NOTIFICATION::new(code));
    event.NetPnPEvent.Buffer = buffer.cast();
    event.NetPnPEvent.BufferLength = length;
    let addr = ptr::from_mut(&mut *event) as usize;
    state::with(|n| {
        if let Some(b) = n.bindings.get_mut(&binding) {
            b.pnp_pending = Some((addr, None));
        }
    });
    let status = call_protocol("ProtocolNetPnPEvent", handler as usize, || {
        // SAFETY: the protocol's ProtocolNetPnPEvent on its binding
        // context, PASSIVE_LEVEL, with a notification (and buffer) that
        // live until the event completes.
        unsafe {
            handler(
                context as NDIS_HANDLE,
                addr as *mut NET_PNP_EVENT_NOTIFICATION,
            )
        }
    });
    let early = state::with(|n| {
        n.bindings
            .get(&binding)
            .and_then(|b| b.pnp_pending)
            .is_some_and(|(_, s)| s.is_some())
    });
    let status = if status == NDIS_STATUS_PENDING {
        wait_for("ProtocolNetPnPEvent", binding, |n| {
            n.bindings
                .get(&binding)
                .and_then(|b| b.pnp_pending)
                .is_some_and(|(_, s)| s.is_some())
        });
        state::with(|n| {
            n.bindings
                .get(&binding)
                .and_then(|b| b.pnp_pending)
                .and_then(|(_, s)| s)
        })
        .unwrap_or(NDIS_STATUS_FAILURE)
    } else if early {
        ndis_bugcheck(
            super::checks::NDIS_BUGCHECK_INVALID_NET_PNP_EVENT,
            binding,
            addr,
            format!("ProtocolNetPnPEvent({code}) returned {status:#x} after completing itself"),
        )
    } else {
        status
    };
    state::with(|n| {
        if let Some(b) = n.bindings.get_mut(&binding) {
            b.pnp_pending = None;
        }
    });
    drop(event);
    status
}

fn set_binding_state(binding: usize, s: BindingState) {
    state::with(|n| {
        if let Some(b) = n.bindings.get_mut(&binding) {
            b.state = s;
        }
    });
    state::changed();
}

/// The open binding of NIC `nic` and its state.
fn binding_of(nic: u32) -> Option<(usize, BindingState)> {
    state::with(|n| {
        let b = n.nics.get(&nic)?.binding?;
        Some((b, n.bindings.get(&b)?.state))
    })
}

/// `NetEventRestart` on the paused binding of NIC `nic`.
fn restart_here(nic: u32) -> NDIS_STATUS {
    let Some((binding, BindingState::Paused)) = binding_of(nic) else {
        return NDIS_STATUS_FAILURE;
    };
    let (if_index, luid) =
        state::with(|n| n.nics.get(&nic).map_or((0, 0), |x| (x.if_index, x.luid)));
    let mut params = NDIS_PROTOCOL_RESTART_PARAMETERS {
        Header: NDIS_OBJECT_HEADER::new(
            NDIS_OBJECT_TYPE_DEFAULT,
            NDIS_PROTOCOL_RESTART_PARAMETERS_REVISION_1,
            NDIS_SIZEOF_PROTOCOL_RESTART_PARAMETERS_REVISION_1,
        ),
        FilterModuleNameBuffer: ptr::null_mut(),
        FilterModuleNameBufferLength: 0,
        RestartAttributes: ptr::null_mut(),
        BoundIfIndex: if_index,
        BoundIfNetluid: NET_LUID { Value: luid },
        Flags: 0,
    };
    set_binding_state(binding, BindingState::Restarting);
    let status = pnp_event(
        binding,
        NetEventRestart,
        (&raw mut params).cast(),
        size_of::<NDIS_PROTOCOL_RESTART_PARAMETERS>() as u32,
    );
    set_binding_state(
        binding,
        if status == NDIS_STATUS_SUCCESS {
            BindingState::Running
        } else {
            BindingState::Paused
        },
    );
    status
}

/// `NetEventPause` on the running binding of NIC `nic`, with `reason`;
/// every send of the binding must be complete when it completes.
fn pause_here(nic: u32, reason: u32) -> NDIS_STATUS {
    let Some((binding, BindingState::Running)) = binding_of(nic) else {
        return NDIS_STATUS_FAILURE;
    };
    let mut params = NDIS_PROTOCOL_PAUSE_PARAMETERS {
        Header: NDIS_OBJECT_HEADER::new(
            NDIS_OBJECT_TYPE_DEFAULT,
            NDIS_PROTOCOL_PAUSE_PARAMETERS_REVISION_1,
            NDIS_SIZEOF_PROTOCOL_PAUSE_PARAMETERS_REVISION_1,
        ),
        Flags: 0,
        PauseReason: reason,
    };
    set_binding_state(binding, BindingState::Pausing);
    let status = pnp_event(
        binding,
        NetEventPause,
        (&raw mut params).cast(),
        size_of::<NDIS_PROTOCOL_PAUSE_PARAMETERS>() as u32,
    );
    let outstanding = nbl::held_by(Holder::SentOnBinding(binding));
    if !outstanding.is_empty() {
        ndis_bugcheck(
            NDIS_BUGCHECK_ILLEGAL_PAUSE_RESTART_COMPLETE,
            binding,
            outstanding.len(),
            format!(
                "NetEventPause completed ({status:#x}) with {} sends of the binding not completed",
                outstanding.len()
            ),
        );
    }
    // A protocol cannot fail a pause: the binding is paused.
    set_binding_state(binding, BindingState::Paused);
    status
}

/// Pauses the binding of NIC `nic` (`NetEventPause`); its status.
pub fn pause(nic: u32) -> NDIS_STATUS {
    on_pnp_thread(move || pause_here(nic, ndis::NDIS_PAUSE_NDIS_INTERNAL))
}

/// Restarts the paused binding of NIC `nic` (`NetEventRestart`); its
/// status.
pub fn restart(nic: u32) -> NDIS_STATUS {
    on_pnp_thread(move || restart_here(nic))
}

/// Unbinds the protocol from NIC `nic` (pause, `ProtocolUnbindAdapterEx`)
/// and removes the NIC from its segment.
pub fn unbind(nic: u32) {
    if cpu::current() == PASSIVE_LEVEL && cpu::current_name() == "ndis-pnp" {
        unbind_here(nic);
    } else {
        on_pnp_thread(move || unbind_here(nic));
    }
}

fn unbind_here(nic: u32) {
    if let Some((_, BindingState::Running)) = binding_of(nic) {
        pause_here(nic, NDIS_PAUSE_UNBIND_PROTOCOL);
    }
    if let Some((binding, _)) = binding_of(nic) {
        unbind_binding(nic, binding);
    }
    // What the protocol left up: NDIS tears it down.
    let left: Vec<u32> = state::with(|n| {
        n.im_devices
            .iter()
            .filter(|d| d.nic == nic)
            .filter_map(|d| match d.state {
                ImState::Up(id) => Some(id),
                _ => None,
            })
            .collect()
    });
    for id in left {
        let running = miniport::adapter(id).is_some();
        if running {
            fault(format!(
                "ProtocolUnbindAdapterEx returned with virtual miniport {id} not deinitialised"
            ));
            miniport::halt(id);
        }
    }
    cancel_requests(nic);
    state::with(|n| {
        for d in &mut n.im_devices {
            if d.nic == nic && matches!(d.state, ImState::Up(_)) {
                d.state = ImState::Gone;
            }
        }
    });
    nic::stop(nic);
    state::with(|n| {
        if let Some(x) = n.nics.get_mut(&nic) {
            x.removed = true;
        }
    });
    state::changed();
}

fn unbind_binding(nic: u32, binding: usize) {
    let Some((handler, context, unbind_context)) = state::with(|n| {
        let handler = n
            .protocol
            .as_ref()?
            .characteristics
            .UnbindAdapterHandlerEx?;
        let context = n.bindings.get(&binding)?.context;
        let x = n.nics.get_mut(&nic)?;
        let h = Handle::new();
        let addr = h.addr();
        x.unbind_context = Some(h);
        x.unbind_completed = false;
        Some((handler, context, addr))
    }) else {
        return;
    };
    let status = call_protocol("ProtocolUnbindAdapterEx", handler as usize, || {
        // SAFETY: the protocol's ProtocolUnbindAdapterEx, PASSIVE_LEVEL,
        // with a live unbind context and the paused binding's context.
        unsafe { handler(unbind_context as NDIS_HANDLE, context as NDIS_HANDLE) }
    });
    if status == NDIS_STATUS_PENDING {
        wait_for("ProtocolUnbindAdapterEx", unbind_context, |n| {
            n.nics.get(&nic).is_some_and(|x| x.unbind_completed)
        });
    }
    state::with(|n| {
        if let Some(h) = n.nics.get_mut(&nic).and_then(|x| x.unbind_context.take()) {
            n.retired.push(h);
        }
    });
    let open = state::with(|n| n.bindings.get(&binding).map(|b| b.state));
    if open != Some(BindingState::Closed) {
        fault(format!(
            "ProtocolUnbindAdapterEx completed ({status:#010x}) with its binding {open:?}, not closed"
        ));
    }
}
