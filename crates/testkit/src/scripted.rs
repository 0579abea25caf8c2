//! `ScriptedDevice`: a **test device** that does exactly what a test tells it.
//!
//! It is not an RNIC. It implements the `hwq::Device` contract faithfully
//! enough to test the provider through the NDK dispatch tables: it records
//! every command and doorbell, keeps the rings the provider hands it, and
//! lets the test play the hardware: complete the next send or receive with a
//! chosen status ([`ScriptedDevice::complete_next_send`],
//! [`ScriptedDevice::complete_next_recv`]), overflow a CQ, raise CM events,
//! and so on. CQ arming follows the contract (one event per arm; at once if
//! unconsumed CQEs arrived since the last event; overflow always fires), and
//! a small in-device connection manager lets two connectors on the same
//! device connect to each other (listen / connect / accept / establish /
//! reject / disconnect produce the matching events).
//!
//! Like real hardware (and like the software RNIC), commands and doorbells
//! never call the driver back: events they cause are queued and delivered by
//! [`ScriptedDevice::deliver_events`], which every test method that plays the
//! hardware calls at its end, outside the device's own lock.

use std::collections::{BTreeMap, VecDeque};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError, RwLock};

use host::platform::HostPlatform;
use hwq::cqe::CQE_FLAG_SOLICITED;
use hwq::device::{
    AcceptParams, CmEvent, ConnectParams, ConnectionInfo, DeviceCaps, DeviceError, EventSink,
    QpSetup, ReceiveSource, Registration,
};

use hwq::{
    ConnId, Connections, Consumer, Cqe, CqeOpcode, CqeStatus, Cqn, Device, Doorbells, ListenId,
    MemoryKey, Pdn, Producer, Qpn, RecvWqe, SendWqe, Srqn, Verbs,
};
use provider::platform::Irql;

/// A command the provider issued, as recorded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// `create_pd` → pd.
    CreatePd(u32),
    /// `destroy_pd`.
    DestroyPd(u32),
    /// `alloc_key(pd, window)` → key.
    AllocKey {
        /// PD.
        pd: u32,
        /// For a window.
        window: bool,
        /// The key handed out.
        key: MemoryKey,
    },
    /// `free_key`.
    FreeKey(MemoryKey),
    /// `register` (the new key, VA, length, pages).
    Register {
        /// Key after registration.
        key: MemoryKey,
        /// Access bits.
        access: u8,
        /// Region VA.
        va: u64,
        /// Length.
        length: u64,
        /// First byte offset.
        fbo: u32,
        /// Page list.
        pages: Vec<u64>,
    },
    /// `deregister`.
    Deregister(MemoryKey),
    /// `init_fast_register`.
    InitFastRegister {
        /// Key.
        key: MemoryKey,
        /// Page capacity.
        max_pages: u32,
        /// Remote access allowed.
        remote_access: bool,
    },
    /// `create_cq` → cqn, depth.
    CreateCq {
        /// CQ number.
        cqn: u32,
        /// Ring depth.
        depth: u32,
    },
    /// `resize_cq`.
    ResizeCq {
        /// CQ number.
        cqn: u32,
        /// New depth.
        depth: u32,
    },
    /// `destroy_cq`.
    DestroyCq(u32),
    /// `arm_cq`.
    ArmCq {
        /// CQ number.
        cqn: u32,
        /// Solicited only.
        solicited_only: bool,
    },
    /// `moderate_cq`.
    ModerateCq {
        /// CQ number.
        cqn: u32,
        /// Count trigger.
        count: u32,
        /// Time trigger.
        usec: u32,
    },
    /// `create_srq` → srqn.
    CreateSrq {
        /// SRQ number.
        srqn: u32,
        /// Depth.
        depth: u32,
        /// Limit.
        limit: u32,
    },
    /// `set_srq_limit`.
    SetSrqLimit {
        /// SRQ number.
        srqn: u32,
        /// Limit.
        limit: u32,
    },
    /// `destroy_srq`.
    DestroySrq(u32),
    /// `create_qp` → qpn.
    CreateQp {
        /// QP number.
        qpn: u32,
        /// Send CQ.
        send_cqn: u32,
        /// Receive CQ.
        recv_cqn: u32,
        /// SRQ, if receives come from one.
        srqn: Option<u32>,
    },
    /// `flush_qp`.
    FlushQp(u32),
    /// `destroy_qp`.
    DestroyQp(u32),
    /// `cm_listen`.
    Listen {
        /// Listener id.
        listen_id: u32,
        /// Bound address.
        addr: SocketAddr,
    },
    /// `cm_pause_listener`.
    PauseListener {
        /// Listener id.
        listen_id: u32,
        /// Paused.
        paused: bool,
    },
    /// `cm_stop_listener`.
    StopListener(u32),
    /// `cm_connect`.
    Connect {
        /// Connection id.
        conn_id: u32,
        /// QP.
        qpn: u32,
        /// Local address used.
        local: SocketAddr,
        /// Destination.
        remote: SocketAddr,
    },
    /// `cm_accept`.
    Accept {
        /// Connection id.
        conn_id: u32,
        /// QP.
        qpn: u32,
    },
    /// `cm_reject`.
    Reject(u32),
    /// `cm_establish`.
    Establish(u32),
    /// `cm_disconnect`.
    Disconnect(u32),
    /// `cm_release`.
    Release(u32),
}

/// A CM event with owned private data (what the test device queues).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OwnedCmEvent {
    /// See [`CmEvent::ConnectRequest`].
    ConnectRequest {
        /// Listener.
        listen_id: u32,
        /// New connection.
        conn_id: u32,
        /// Addresses and limits.
        info: ConnectionInfo,
        /// Private data.
        private_data: Vec<u8>,
    },
    /// See [`CmEvent::Replied`].
    Replied {
        /// Connection.
        conn_id: u32,
        /// Addresses and limits.
        info: ConnectionInfo,
        /// Private data.
        private_data: Vec<u8>,
    },
    /// See [`CmEvent::Rejected`].
    Rejected {
        /// Connection.
        conn_id: u32,
        /// Rejected by a consumer.
        by_consumer: bool,
        /// Private data.
        private_data: Vec<u8>,
    },
    /// See [`CmEvent::Established`].
    Established {
        /// Connection.
        conn_id: u32,
    },
    /// See [`CmEvent::Disconnected`].
    Disconnected {
        /// Connection.
        conn_id: u32,
    },
    /// See [`CmEvent::DisconnectDone`].
    DisconnectDone {
        /// Connection.
        conn_id: u32,
    },
    /// See [`CmEvent::Failed`].
    Failed {
        /// Connection.
        conn_id: u32,
        /// Timed out.
        timed_out: bool,
    },
}

impl OwnedCmEvent {
    fn borrow(&self) -> CmEvent<'_> {
        match self {
            Self::ConnectRequest {
                listen_id,
                conn_id,
                info,
                private_data,
            } => CmEvent::ConnectRequest {
                listen_id: ListenId::from_raw(*listen_id),
                conn_id: ConnId::from_raw(*conn_id),
                info: *info,
                private_data,
            },
            Self::Replied {
                conn_id,
                info,
                private_data,
            } => CmEvent::Replied {
                conn_id: ConnId::from_raw(*conn_id),
                info: *info,
                private_data,
            },
            Self::Rejected {
                conn_id,
                by_consumer,
                private_data,
            } => CmEvent::Rejected {
                conn_id: ConnId::from_raw(*conn_id),
                by_consumer: *by_consumer,
                private_data,
            },
            Self::Established { conn_id } => CmEvent::Established {
                conn_id: ConnId::from_raw(*conn_id),
            },
            Self::Disconnected { conn_id } => CmEvent::Disconnected {
                conn_id: ConnId::from_raw(*conn_id),
            },
            Self::DisconnectDone { conn_id } => CmEvent::DisconnectDone {
                conn_id: ConnId::from_raw(*conn_id),
            },
            Self::Failed { conn_id, timed_out } => CmEvent::Failed {
                conn_id: ConnId::from_raw(*conn_id),
                timed_out: *timed_out,
            },
        }
    }
}

/// An event waiting for delivery to the driver.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// `cq_event`.
    Cq {
        /// CQ number.
        cqn: u32,
        /// Overflow.
        overflow: bool,
    },
    /// `srq_limit`.
    SrqLimit(u32),
    /// `qp_error`.
    QpError(u32),
    /// `cm_event`.
    Cm(OwnedCmEvent),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Arm {
    None,
    Solicited,
    Any,
}

#[derive(Debug)]
struct ScriptedCq {
    ring: Producer<Cqe>,
    arm: Arm,
    since_event: bool,
    solicited_since_event: bool,
    overflowed: bool,
    moderation: (u32, u32),
}

/// The state of a QP as the test device sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QpState {
    /// Created; receives may be posted.
    Init,
    /// Connected (accepted or established).
    Connected,
    /// Flushed or failed.
    Error,
}

#[derive(Debug)]
struct ScriptedQp {
    send_cqn: u32,
    recv_cqn: u32,
    sq: Consumer<SendWqe>,
    rq: ReceiveSource,
    context: u64,
    state: QpState,
    sq_doorbells: u32,
    rq_doorbells: u32,
}

#[derive(Debug)]
struct ScriptedSrq {
    ring: Consumer<RecvWqe>,
    limit: u32,
    doorbells: u32,
}

#[derive(Debug)]
struct Key {
    pd: u32,
    current: MemoryKey,
    registered: bool,
}

#[derive(Debug)]
struct Listener {
    addr: SocketAddr,
    paused: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ConnState {
    /// Outbound: request sent. Inbound: request delivered.
    Requested,
    /// Outbound: reply received. Inbound: accepted.
    Replied,
    Established,
    Disconnected,
}

#[derive(Debug)]
struct Conn {
    qpn: Option<u32>,
    peer: Option<u32>,
    local: SocketAddr,
    remote: SocketAddr,
    inbound_reads: u32,
    outbound_reads: u32,
    state: ConnState,
}

#[derive(Debug, Default)]
struct State {
    commands: Vec<Command>,
    events: VecDeque<Event>,
    next_id: u32,
    next_port: u16,
    pds: BTreeMap<u32, MemoryKey>,
    keys: BTreeMap<u32, Key>,
    cqs: BTreeMap<u32, ScriptedCq>,
    qps: BTreeMap<u32, ScriptedQp>,
    srqs: BTreeMap<u32, ScriptedSrq>,
    listeners: BTreeMap<u32, Listener>,
    conns: BTreeMap<u32, Conn>,
    fail_next: Option<DeviceError>,
}

/// The test device. Share it as `Arc<ScriptedDevice>`: hand one clone to the
/// provider (`Arc<D>` is a `Device`) and keep one to play the hardware.
#[derive(Debug)]
pub struct ScriptedDevice {
    caps: DeviceCaps,
    addrs: Vec<IpAddr>,
    state: Mutex<State>,
    sink: RwLock<Option<EventSink>>,
    /// Send-doorbell counts of QP numbers below [`FAST_DOORBELLS`], kept
    /// outside the state lock so a doorbell costs what a hardware doorbell
    /// write would (one atomic), which the `post_send` benchmark relies on.
    sq_doorbell_counts: Box<[AtomicU32]>,
}

/// QP numbers whose send doorbells are counted lock-free.
const FAST_DOORBELLS: u32 = 4096;

/// The test device's default limits.
pub const DEFAULT_CAPS: DeviceCaps = DeviceCaps {
    vendor_id: 0x00_1234,
    device_id: 0x5678,
    max_qp_depth: 1024,
    max_srq_depth: 1024,
    max_cq_depth: 4096,
    max_registration: 1 << 30,
    max_fast_register_pages: 256,
    max_transfer: 1 << 24,
    max_inbound_reads: 16,
    max_outbound_reads: 16,
    max_connect_data: 56,
    max_accept_data: 148,
    path_mtu: 1024,
    loopback: true,
};

/// The test device's IPv4 address.
pub const ADDR_V4: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 1);
/// The test device's IPv6 address.
pub const ADDR_V6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1);

fn lock(m: &Mutex<State>) -> MutexGuard<'_, State> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl State {
    fn id(&mut self) -> u32 {
        self.next_id += 1;
        self.next_id
    }

    fn fail(&mut self) -> Result<(), DeviceError> {
        self.fail_next.take().map_or(Ok(()), Err)
    }

    /// Writes a CQE with the contract's arming and overflow rules.
    fn write_cqe(&mut self, cqn: u32, cqe: Cqe, solicited: bool) -> bool {
        let Some(cq) = self.cqs.get_mut(&cqn) else {
            return false;
        };
        if cq.overflowed {
            return false;
        }
        if cq.ring.push(cqe).is_err() {
            cq.overflowed = true;
            cq.arm = Arm::None;
            self.events.push_back(Event::Cq {
                cqn,
                overflow: true,
            });
            return false;
        }
        cq.ring.publish();
        cq.since_event = true;
        cq.solicited_since_event |= solicited;
        self.check_arm(cqn);
        true
    }

    fn check_arm(&mut self, cqn: u32) {
        let Some(cq) = self.cqs.get_mut(&cqn) else {
            return;
        };
        // Only entries the driver has not consumed count.
        if cq.ring.outstanding() == 0 {
            cq.since_event = false;
            cq.solicited_since_event = false;
        }
        let fire = match cq.arm {
            Arm::None => false,
            Arm::Any => cq.since_event,
            Arm::Solicited => cq.solicited_since_event,
        };
        if fire {
            cq.arm = Arm::None;
            cq.since_event = false;
            cq.solicited_since_event = false;
            self.events.push_back(Event::Cq {
                cqn,
                overflow: false,
            });
        }
    }

    fn flush(&mut self, qpn: u32) {
        let Some(qp) = self.qps.get_mut(&qpn) else {
            return;
        };
        qp.state = QpState::Error;
        let base = Cqe {
            qp_context: qp.context,
            qpn,
            status: CqeStatus::Flushed as u8,
            ..Cqe::default()
        };
        let mut out = Vec::new();
        qp.sq.refresh();
        let start = qp.sq.released();
        let n = qp.sq.len();
        for i in 0..n {
            if let Some(w) = qp.sq.read(start.wrapping_add(i)) {
                out.push((
                    qp.send_cqn,
                    Cqe {
                        wr_id: w.wr_id,
                        opcode: w.completion_opcode() as u8,
                        ..base
                    },
                ));
            }
        }
        qp.sq.release(n);
        if let ReceiveSource::Queue(rq) = &mut qp.rq {
            rq.refresh();
            let start = rq.released();
            let n = rq.len();
            for i in 0..n {
                if let Some(w) = rq.read(start.wrapping_add(i)) {
                    out.push((
                        qp.recv_cqn,
                        Cqe {
                            wr_id: w.wr_id,
                            opcode: CqeOpcode::Receive as u8,
                            ..base
                        },
                    ));
                }
            }
            rq.release(n);
        }
        for (cqn, cqe) in out {
            self.write_cqe(cqn, cqe, true);
        }
    }

    fn ephemeral(&mut self, ip: IpAddr) -> SocketAddr {
        if self.next_port < 49152 {
            self.next_port = 49152;
        }
        let port = self.next_port;
        self.next_port = self.next_port.wrapping_add(1);
        SocketAddr::new(ip, port)
    }

    fn cm(&mut self, event: OwnedCmEvent) {
        self.events.push_back(Event::Cm(event));
    }
}

impl ScriptedDevice {
    /// A test device with `caps`, owning [`ADDR_V4`] and [`ADDR_V6`].
    pub fn new(caps: DeviceCaps) -> Self {
        Self {
            caps,
            addrs: vec![IpAddr::V4(ADDR_V4), IpAddr::V6(ADDR_V6)],
            state: Mutex::new(State::default()),
            sink: RwLock::new(None),
            sq_doorbell_counts: (0..FAST_DOORBELLS).map(|_| AtomicU32::new(0)).collect(),
        }
    }

    /// A test device with [`DEFAULT_CAPS`].
    pub fn with_default_caps() -> Self {
        Self::new(DEFAULT_CAPS)
    }

    fn st(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// Delivers queued events to the attached driver, one at a time,
    /// without holding the device lock; returns how many were delivered.
    pub fn deliver_events(&self) -> usize {
        let mut n = 0;
        loop {
            let Some(event) = self.st().events.pop_front() else {
                return n;
            };
            let sink = self.sink.read().unwrap_or_else(PoisonError::into_inner);
            if let Some(sink) = sink.as_ref() {
                match &event {
                    Event::Cq { cqn, overflow } => sink.cq_event(Cqn::from_raw(*cqn), *overflow),
                    Event::SrqLimit(srqn) => sink.srq_limit(Srqn::from_raw(*srqn)),
                    Event::QpError(qpn) => sink.qp_error(Qpn::from_raw(*qpn)),
                    Event::Cm(cm) => sink.cm_event(cm.borrow()),
                }
            }
            n += 1;
        }
    }

    /// Events queued and not yet delivered.
    pub fn pending_events(&self) -> Vec<Event> {
        self.st().events.iter().cloned().collect()
    }

    /// Drops the queued events (as if the hardware lost them) and returns
    /// them; for tests that replace what the device would report.
    pub fn discard_events(&self) -> Vec<Event> {
        self.st().events.drain(..).collect()
    }

    /// Every command issued so far, oldest first.
    pub fn commands(&self) -> Vec<Command> {
        self.st().commands.clone()
    }

    /// Makes the next command that can fail return `error`.
    pub fn fail_next_command(&self, error: DeviceError) {
        self.st().fail_next = Some(error);
    }

    /// SQ doorbells rung for `qpn`.
    pub fn sq_doorbells(&self, qpn: u32) -> u32 {
        if let Some(count) = self.sq_doorbell_counts.get(qpn as usize) {
            return count.load(Ordering::Relaxed);
        }
        self.st().qps.get(&qpn).map_or(0, |q| q.sq_doorbells)
    }

    /// RQ doorbells rung for `qpn`.
    pub fn rq_doorbells(&self, qpn: u32) -> u32 {
        self.st().qps.get(&qpn).map_or(0, |q| q.rq_doorbells)
    }

    /// SRQ doorbells rung for `srqn`.
    pub fn srq_doorbells(&self, srqn: u32) -> u32 {
        self.st().srqs.get(&srqn).map_or(0, |s| s.doorbells)
    }

    /// Live QP numbers.
    pub fn qpns(&self) -> Vec<u32> {
        self.st().qps.keys().copied().collect()
    }

    /// Live CQ numbers.
    pub fn cqns(&self) -> Vec<u32> {
        self.st().cqs.keys().copied().collect()
    }

    /// Live SRQ numbers.
    pub fn srqns(&self) -> Vec<u32> {
        self.st().srqs.keys().copied().collect()
    }

    /// Objects still alive in the device (PDs, keys, CQs, QPs, SRQs,
    /// listeners, connections): zero after everything was closed.
    pub fn live_objects(&self) -> usize {
        let s = self.st();
        s.pds.len()
            + s.keys.len()
            + s.cqs.len()
            + s.qps.len()
            + s.srqs.len()
            + s.listeners.len()
            + s.conns.len()
    }

    /// Whether a driver is attached.
    pub fn attached(&self) -> bool {
        self.sink
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some()
    }

    /// A QP's state.
    pub fn qp_state(&self, qpn: u32) -> Option<QpState> {
        self.st().qps.get(&qpn).map(|q| q.state)
    }

    /// A QP's numbers: (send CQ, receive CQ, context).
    pub fn qp_info(&self, qpn: u32) -> Option<(u32, u32, u64)> {
        self.st()
            .qps
            .get(&qpn)
            .map(|q| (q.send_cqn, q.recv_cqn, q.context))
    }

    /// Whether `cqn` is armed, and for solicited only.
    pub fn cq_arm(&self, cqn: u32) -> Option<bool> {
        self.st().cqs.get(&cqn).and_then(|c| match c.arm {
            Arm::None => None,
            Arm::Solicited => Some(true),
            Arm::Any => Some(false),
        })
    }

    /// A CQ's moderation (count, usec).
    pub fn cq_moderation(&self, cqn: u32) -> Option<(u32, u32)> {
        self.st().cqs.get(&cqn).map(|c| c.moderation)
    }

    /// An SRQ's limit.
    pub fn srq_limit(&self, srqn: u32) -> Option<u32> {
        self.st().srqs.get(&srqn).map(|s| s.limit)
    }

    /// Send WQEs published and not yet completed, oldest first.
    pub fn sq_pending(&self, qpn: u32) -> Vec<SendWqe> {
        let mut s = self.st();
        let Some(qp) = s.qps.get_mut(&qpn) else {
            return Vec::new();
        };
        qp.sq.refresh();
        let start = qp.sq.released();
        (0..qp.sq.len())
            .filter_map(|i| qp.sq.read(start.wrapping_add(i)))
            .collect()
    }

    /// Receive WQEs published on a QP's own RQ, oldest first.
    pub fn rq_pending(&self, qpn: u32) -> Vec<RecvWqe> {
        let mut s = self.st();
        let Some(qp) = s.qps.get_mut(&qpn) else {
            return Vec::new();
        };
        let ReceiveSource::Queue(rq) = &mut qp.rq else {
            return Vec::new();
        };
        rq.refresh();
        let start = rq.released();
        (0..rq.len())
            .filter_map(|i| rq.read(start.wrapping_add(i)))
            .collect()
    }

    /// Receive WQEs published on an SRQ, oldest first.
    pub fn srq_pending(&self, srqn: u32) -> Vec<RecvWqe> {
        let mut s = self.st();
        let Some(srq) = s.srqs.get_mut(&srqn) else {
            return Vec::new();
        };
        srq.ring.refresh();
        let start = srq.ring.released();
        (0..srq.ring.len())
            .filter_map(|i| srq.ring.read(start.wrapping_add(i)))
            .collect()
    }

    /// Completes the oldest outstanding send WQE of `qpn` with `status`:
    /// releases its slot and writes a CQE if it was signaled or failed
    /// (`byte_len` = the bytes the request moves, as the contract asks of
    /// send-side completions). A slot that does not decode
    /// ([`SendWqe::decode`]) fails with `LocalQpOperation` whatever
    /// `status` says, as a device fails it. Returns the WQE, or `None` if
    /// nothing was outstanding.
    pub fn complete_next_send(&self, qpn: u32, status: CqeStatus) -> Option<SendWqe> {
        let done = {
            let mut s = self.st();
            let qp = s.qps.get_mut(&qpn)?;
            qp.sq.refresh();
            let wqe = qp.sq.read(qp.sq.released())?;
            qp.sq.release(1);
            let cqn = qp.send_cqn;
            let request = wqe.decode().ok();
            let status = match request {
                Some(_) => status,
                None => CqeStatus::LocalQpOperation,
            };
            let cqe = Cqe {
                wr_id: wqe.wr_id,
                qp_context: qp.context,
                byte_len: request.map_or(0, |r| r.op.byte_len()),
                qpn,
                opcode: wqe.completion_opcode() as u8,
                status: status as u8,
                ..Cqe::default()
            };
            let failed = status != CqeStatus::Success;
            if failed {
                qp.state = QpState::Error;
            }
            if failed || request.is_some_and(|r| r.signaled) {
                s.write_cqe(cqn, cqe, failed);
            }
            wqe
        };
        self.deliver_events();
        Some(done)
    }

    /// Completes the oldest receive of `qpn` (its RQ or its SRQ) with
    /// `status`, `byte_len` and `flags` (`CQE_FLAG_SOLICITED`).
    pub fn complete_next_recv(
        &self,
        qpn: u32,
        status: CqeStatus,
        byte_len: u32,
        flags: u8,
    ) -> Option<RecvWqe> {
        self.complete_recv(qpn, status, byte_len, flags, None)
    }

    /// Completes the oldest receive of `qpn` as a receive-and-invalidate of
    /// `key`.
    pub fn complete_next_recv_invalidate(
        &self,
        qpn: u32,
        byte_len: u32,
        key: u32,
    ) -> Option<RecvWqe> {
        self.complete_recv(qpn, CqeStatus::Success, byte_len, 0, Some(key))
    }

    fn complete_recv(
        &self,
        qpn: u32,
        status: CqeStatus,
        byte_len: u32,
        flags: u8,
        invalidate: Option<u32>,
    ) -> Option<RecvWqe> {
        let done = {
            let mut s = self.st();
            let s = &mut *s;
            let qp = s.qps.get_mut(&qpn)?;
            let (wqe, srqn) = match &mut qp.rq {
                ReceiveSource::Queue(rq) => {
                    rq.refresh();
                    let w = rq.read(rq.released())?;
                    rq.release(1);
                    (w, None)
                }
                ReceiveSource::Shared(srqn) => {
                    let srqn = srqn.raw();
                    let srq = s.srqs.get_mut(&srqn)?;
                    srq.ring.refresh();
                    let w = srq.ring.read(srq.ring.released())?;
                    srq.ring.release(1);
                    (w, Some(srqn))
                }
            };
            let failed = status != CqeStatus::Success;
            if failed {
                qp.state = QpState::Error;
            }
            let cqe = Cqe {
                wr_id: wqe.wr_id,
                qp_context: qp.context,
                byte_len,
                invalidated_key: invalidate.unwrap_or(0),
                qpn,
                opcode: if invalidate.is_some() {
                    CqeOpcode::ReceiveInvalidate as u8
                } else {
                    CqeOpcode::Receive as u8
                },
                status: status as u8,
                flags,
                reserved: 0,
            };
            let cqn = qp.recv_cqn;
            s.write_cqe(cqn, cqe, failed || flags & CQE_FLAG_SOLICITED != 0);
            if let Some(srqn) = srqn {
                Self::check_srq_limit(s, srqn);
            }
            wqe
        };
        self.deliver_events();
        Some(done)
    }

    fn check_srq_limit(s: &mut State, srqn: u32) {
        let Some(srq) = s.srqs.get_mut(&srqn) else {
            return;
        };
        srq.ring.refresh();
        if srq.limit != 0 && srq.ring.len() < srq.limit {
            // One event per setting, like hardware's SRQ limit event.
            srq.limit = 0;
            s.events.push_back(Event::SrqLimit(srqn));
        }
    }

    /// Writes an arbitrary CQE to `cqn` (solicited: counts for a solicited
    /// arm).
    pub fn push_cqe(&self, cqn: u32, cqe: Cqe, solicited: bool) -> bool {
        let written = self.st().write_cqe(cqn, cqe, solicited);
        self.deliver_events();
        written
    }

    /// Makes `cqn` overflow now: it accepts nothing more and raises the
    /// overflow event.
    pub fn overflow_cq(&self, cqn: u32) {
        {
            let mut s = self.st();
            if let Some(cq) = s.cqs.get_mut(&cqn) {
                cq.overflowed = true;
                cq.arm = Arm::None;
                s.events.push_back(Event::Cq {
                    cqn,
                    overflow: true,
                });
            }
        }
        self.deliver_events();
    }

    /// Moves `qpn` to the error state as a fatal transport error would:
    /// flushes it and raises `qp_error`.
    pub fn fail_qp(&self, qpn: u32) {
        {
            let mut s = self.st();
            s.flush(qpn);
            s.events.push_back(Event::QpError(qpn));
        }
        self.deliver_events();
    }

    /// Queues a CM event as if the network produced it, and delivers.
    pub fn fire_cm_event(&self, event: OwnedCmEvent) {
        self.st().cm(event);
        self.deliver_events();
    }

    /// Connection ids known to the device.
    pub fn conn_ids(&self) -> Vec<u32> {
        self.st().conns.keys().copied().collect()
    }

    /// The peer of a connection (the other side on this device).
    pub fn conn_peer(&self, conn_id: u32) -> Option<u32> {
        self.st().conns.get(&conn_id).and_then(|c| c.peer)
    }
}

/// The contract's IRQL rule (`hwq::device`), checked as Driver Verifier
/// would check a spin lock: every command (each `Verbs` and `Connections`
/// entry, `attach`, `detach`, `busy_poll`) runs at `DISPATCH_LEVEL`, raised
/// by its caller, on the checked host platform's per-thread IRQL. A caller
/// that reaches the device at `PASSIVE_LEVEL` fails the test here, as it
/// would deadlock against the device's DPC on Windows (bug check 0x133).
/// Doorbells and `caps` are exempt: the contract allows them unraised.
fn require_dispatch(entry: &'static str) {
    assert!(
        HostPlatform::irql() == Irql::Dispatch,
        "IRQL rule broken: hwq command `{entry}` called at PASSIVE_LEVEL; the \
         contract runs commands at DISPATCH_LEVEL, raised by the caller"
    );
}

impl Device for ScriptedDevice {
    fn caps(&self) -> DeviceCaps {
        self.caps
    }

    fn attach(&self, sink: EventSink) -> Result<(), DeviceError> {
        require_dispatch("attach");
        let mut slot = self.sink.write().unwrap_or_else(PoisonError::into_inner);
        if slot.is_some() {
            return Err(DeviceError::InvalidState);
        }
        *slot = Some(sink);
        Ok(())
    }

    fn detach(&self) {
        require_dispatch("detach");
        // The write lock waits for any delivery in progress.
        *self.sink.write().unwrap_or_else(PoisonError::into_inner) = None;
    }
}

impl Doorbells for ScriptedDevice {
    fn sq_doorbell(&self, qpn: Qpn) {
        let qpn = qpn.raw();
        // QP numbers are never reused on a device, so a count kept by number
        // belongs to one QP.
        if let Some(count) = self.sq_doorbell_counts.get(qpn as usize) {
            // A plain store, like the producer-index register write it
            // models: one queue's doorbell is never rung from two
            // processors at once (the provider rings under the SQ lock).
            count.store(count.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
            return;
        }
        if let Some(qp) = self.st().qps.get_mut(&qpn) {
            qp.sq_doorbells += 1;
        }
    }

    fn rq_doorbell(&self, qpn: Qpn) {
        let qpn = qpn.raw();
        if let Some(qp) = self.st().qps.get_mut(&qpn) {
            qp.rq_doorbells += 1;
        }
    }

    fn srq_doorbell(&self, srqn: Srqn) {
        let srqn = srqn.raw();
        if let Some(srq) = self.st().srqs.get_mut(&srqn) {
            srq.doorbells += 1;
        }
    }
}

impl Verbs for ScriptedDevice {
    fn create_pd(&self) -> Result<(Pdn, MemoryKey), DeviceError> {
        require_dispatch("create_pd");
        let mut s = self.st();
        s.fail()?;
        let pd = s.id();
        let index = s.id();
        let key = MemoryKey::new(index, 0x80);
        s.pds.insert(pd, key);
        s.commands.push(Command::CreatePd(pd));
        Ok((Pdn::from_raw(pd), key))
    }

    fn destroy_pd(&self, pd: Pdn) {
        require_dispatch("destroy_pd");
        let pd = pd.raw();
        let mut s = self.st();
        s.pds.remove(&pd);
        s.commands.push(Command::DestroyPd(pd));
    }

    fn alloc_key(&self, pd: Pdn, window: bool) -> Result<MemoryKey, DeviceError> {
        require_dispatch("alloc_key");
        let pd = pd.raw();
        let mut s = self.st();
        s.fail()?;
        if !s.pds.contains_key(&pd) {
            return Err(DeviceError::NoSuchObject);
        }
        let index = s.id();
        let key = MemoryKey::new(index, 0);
        s.keys.insert(
            index,
            Key {
                pd,
                current: key,
                registered: false,
            },
        );
        s.commands.push(Command::AllocKey { pd, window, key });
        Ok(key)
    }

    fn free_key(&self, key: MemoryKey) {
        require_dispatch("free_key");
        let mut s = self.st();
        s.keys.remove(&key.index());
        s.commands.push(Command::FreeKey(key));
    }

    fn register(
        &self,
        key: MemoryKey,
        registration: &Registration<'_>,
    ) -> Result<MemoryKey, DeviceError> {
        require_dispatch("register");
        let mut s = self.st();
        s.fail()?;
        let entry = s
            .keys
            .get_mut(&key.index())
            .ok_or(DeviceError::NoSuchObject)?;
        if entry.pd != registration.pd.raw() {
            return Err(DeviceError::InvalidParameter);
        }
        entry.current = entry.current.next_variant();
        entry.registered = true;
        let new_key = entry.current;
        s.commands.push(Command::Register {
            key: new_key,
            access: registration.access.bits(),
            va: registration.va,
            length: registration.length,
            fbo: registration.first_byte_offset,
            pages: registration.pages.to_vec(),
        });
        Ok(new_key)
    }

    fn deregister(&self, key: MemoryKey) -> Result<(), DeviceError> {
        require_dispatch("deregister");
        let mut s = self.st();
        s.fail()?;
        let entry = s
            .keys
            .get_mut(&key.index())
            .ok_or(DeviceError::NoSuchObject)?;
        if !entry.registered {
            return Err(DeviceError::InvalidState);
        }
        entry.registered = false;
        s.commands.push(Command::Deregister(key));
        Ok(())
    }

    fn init_fast_register(
        &self,
        key: MemoryKey,
        max_pages: u32,
        remote_access: bool,
    ) -> Result<(), DeviceError> {
        require_dispatch("init_fast_register");
        let mut s = self.st();
        s.fail()?;
        if !s.keys.contains_key(&key.index()) {
            return Err(DeviceError::NoSuchObject);
        }
        if max_pages == 0 || max_pages > self.caps.max_fast_register_pages {
            return Err(DeviceError::InvalidParameter);
        }
        s.commands.push(Command::InitFastRegister {
            key,
            max_pages,
            remote_access,
        });
        Ok(())
    }

    fn create_cq(&self, ring: Producer<Cqe>) -> Result<Cqn, DeviceError> {
        require_dispatch("create_cq");
        let mut s = self.st();
        s.fail()?;
        let cqn = s.id();
        let depth = ring.depth();
        s.cqs.insert(
            cqn,
            ScriptedCq {
                ring,
                arm: Arm::None,
                since_event: false,
                solicited_since_event: false,
                overflowed: false,
                moderation: (0, 0),
            },
        );
        s.commands.push(Command::CreateCq { cqn, depth });
        Ok(Cqn::from_raw(cqn))
    }

    fn resize_cq(&self, cqn: Cqn, ring: Producer<Cqe>) -> Result<(), DeviceError> {
        require_dispatch("resize_cq");
        let cqn = cqn.raw();
        let mut s = self.st();
        s.fail()?;
        let depth = ring.depth();
        let cq = s.cqs.get_mut(&cqn).ok_or(DeviceError::NoSuchObject)?;
        cq.ring = ring;
        s.commands.push(Command::ResizeCq { cqn, depth });
        Ok(())
    }

    fn destroy_cq(&self, cqn: Cqn) {
        require_dispatch("destroy_cq");
        let cqn = cqn.raw();
        let mut s = self.st();
        s.cqs.remove(&cqn);
        s.events
            .retain(|e| !matches!(e, Event::Cq { cqn: c, .. } if *c == cqn));
        s.commands.push(Command::DestroyCq(cqn));
    }

    fn arm_cq(&self, cqn: Cqn, solicited_only: bool) {
        require_dispatch("arm_cq");
        let cqn = cqn.raw();
        let mut s = self.st();
        s.commands.push(Command::ArmCq {
            cqn,
            solicited_only,
        });
        let Some(cq) = s.cqs.get_mut(&cqn) else {
            return;
        };
        if cq.overflowed {
            return;
        }
        let want = if solicited_only {
            Arm::Solicited
        } else {
            Arm::Any
        };
        cq.arm = cq.arm.max(want);
        s.check_arm(cqn);
    }

    fn moderate_cq(&self, cqn: Cqn, count: u32, usec: u32) -> Result<(), DeviceError> {
        require_dispatch("moderate_cq");
        let cqn = cqn.raw();
        let mut s = self.st();
        s.fail()?;
        let cq = s.cqs.get_mut(&cqn).ok_or(DeviceError::NoSuchObject)?;
        cq.moderation = (count, usec);
        s.commands.push(Command::ModerateCq { cqn, count, usec });
        Ok(())
    }

    fn create_srq(
        &self,
        pd: Pdn,
        ring: Consumer<RecvWqe>,
        limit: u32,
    ) -> Result<Srqn, DeviceError> {
        require_dispatch("create_srq");
        let pd = pd.raw();
        let mut s = self.st();
        s.fail()?;
        if !s.pds.contains_key(&pd) {
            return Err(DeviceError::NoSuchObject);
        }
        let srqn = s.id();
        let depth = ring.depth();
        s.srqs.insert(
            srqn,
            ScriptedSrq {
                ring,
                limit,
                doorbells: 0,
            },
        );
        s.commands.push(Command::CreateSrq { srqn, depth, limit });
        Ok(Srqn::from_raw(srqn))
    }

    fn set_srq_limit(&self, srqn: Srqn, limit: u32) -> Result<(), DeviceError> {
        require_dispatch("set_srq_limit");
        let srqn = srqn.raw();
        let mut s = self.st();
        s.fail()?;
        let srq = s.srqs.get_mut(&srqn).ok_or(DeviceError::NoSuchObject)?;
        srq.limit = limit;
        s.commands.push(Command::SetSrqLimit { srqn, limit });
        Self::check_srq_limit(&mut s, srqn);
        Ok(())
    }

    fn destroy_srq(&self, srqn: Srqn) {
        require_dispatch("destroy_srq");
        let srqn = srqn.raw();
        let mut s = self.st();
        s.srqs.remove(&srqn);
        s.events.retain(|e| *e != Event::SrqLimit(srqn));
        s.commands.push(Command::DestroySrq(srqn));
    }

    fn create_qp(&self, setup: QpSetup) -> Result<Qpn, DeviceError> {
        require_dispatch("create_qp");
        let (pd, send_cqn, recv_cqn) = (setup.pd.raw(), setup.send_cqn.raw(), setup.recv_cqn.raw());
        let mut s = self.st();
        s.fail()?;
        if !s.pds.contains_key(&pd)
            || !s.cqs.contains_key(&send_cqn)
            || !s.cqs.contains_key(&recv_cqn)
        {
            return Err(DeviceError::NoSuchObject);
        }
        let srqn = match &setup.rq {
            ReceiveSource::Shared(srqn) => {
                if !s.srqs.contains_key(&srqn.raw()) {
                    return Err(DeviceError::NoSuchObject);
                }
                Some(srqn.raw())
            }
            ReceiveSource::Queue(_) => None,
        };
        let qpn = s.id() + 1;
        s.next_id = qpn;
        s.commands.push(Command::CreateQp {
            qpn,
            send_cqn,
            recv_cqn,
            srqn,
        });
        s.qps.insert(
            qpn,
            ScriptedQp {
                send_cqn,
                recv_cqn,
                sq: setup.sq,
                rq: setup.rq,
                context: setup.context,
                state: QpState::Init,
                sq_doorbells: 0,
                rq_doorbells: 0,
            },
        );
        Ok(Qpn::from_raw(qpn))
    }

    fn flush_qp(&self, qpn: Qpn) {
        require_dispatch("flush_qp");
        let qpn = qpn.raw();
        let mut s = self.st();
        s.commands.push(Command::FlushQp(qpn));
        s.flush(qpn);
    }

    fn destroy_qp(&self, qpn: Qpn) {
        require_dispatch("destroy_qp");
        let qpn = qpn.raw();
        let mut s = self.st();
        s.qps.remove(&qpn);
        s.events.retain(|e| *e != Event::QpError(qpn));
        s.commands.push(Command::DestroyQp(qpn));
    }
}

impl Connections for ScriptedDevice {
    fn cm_listen(&self, addr: SocketAddr) -> Result<(ListenId, SocketAddr), DeviceError> {
        require_dispatch("cm_listen");
        let mut s = self.st();
        s.fail()?;
        if !addr.ip().is_unspecified() && !self.addrs.contains(&addr.ip()) {
            return Err(DeviceError::InvalidAddress);
        }
        let bound = if addr.port() == 0 {
            s.ephemeral(addr.ip())
        } else {
            addr
        };
        if s.listeners.values().any(|l| l.addr == bound) {
            return Err(DeviceError::AddressInUse);
        }
        let listen_id = s.id();
        s.listeners.insert(
            listen_id,
            Listener {
                addr: bound,
                paused: false,
            },
        );
        s.commands.push(Command::Listen {
            listen_id,
            addr: bound,
        });
        Ok((ListenId::from_raw(listen_id), bound))
    }

    fn cm_pause_listener(&self, listen_id: ListenId, paused: bool) {
        require_dispatch("cm_pause_listener");
        let listen_id = listen_id.raw();
        let mut s = self.st();
        if let Some(l) = s.listeners.get_mut(&listen_id) {
            l.paused = paused;
        }
        s.commands
            .push(Command::PauseListener { listen_id, paused });
    }

    fn cm_stop_listener(&self, listen_id: ListenId) {
        require_dispatch("cm_stop_listener");
        let listen_id = listen_id.raw();
        let mut s = self.st();
        s.listeners.remove(&listen_id);
        s.commands.push(Command::StopListener(listen_id));
    }

    fn cm_connect(
        &self,
        qpn: Qpn,
        params: &ConnectParams<'_>,
    ) -> Result<(ConnId, SocketAddr), DeviceError> {
        require_dispatch("cm_connect");
        let qpn = qpn.raw();
        let mut s = self.st();
        s.fail()?;
        if !s.qps.contains_key(&qpn) {
            return Err(DeviceError::NoSuchObject);
        }
        let ip = params.local.ip();
        if !ip.is_unspecified() && !self.addrs.contains(&ip) {
            return Err(DeviceError::InvalidAddress);
        }
        let local_ip = if ip.is_unspecified() {
            match params.remote {
                SocketAddr::V4(_) => IpAddr::V4(ADDR_V4),
                SocketAddr::V6(_) => IpAddr::V6(ADDR_V6),
            }
        } else {
            ip
        };
        let local = if params.local.port() == 0 {
            s.ephemeral(local_ip)
        } else {
            SocketAddr::new(local_ip, params.local.port())
        };
        if s.conns
            .values()
            .any(|c| c.local == local && c.remote == params.remote)
        {
            return Err(DeviceError::AddressInUse);
        }
        let conn_id = s.id();
        s.commands.push(Command::Connect {
            conn_id,
            qpn,
            local,
            remote: params.remote,
        });
        let listener = s
            .listeners
            .iter()
            .find(|(_, l)| {
                !l.paused
                    && l.addr.port() == params.remote.port()
                    && (l.addr.ip() == params.remote.ip() || l.addr.ip().is_unspecified())
            })
            .map(|(id, _)| *id);
        let mut active = Conn {
            qpn: Some(qpn),
            peer: None,
            local,
            remote: params.remote,
            inbound_reads: params.inbound_reads,
            outbound_reads: params.outbound_reads,
            state: ConnState::Requested,
        };
        if let Some(listen_id) = listener {
            let passive_id = s.id();
            active.peer = Some(passive_id);
            s.conns.insert(
                passive_id,
                Conn {
                    qpn: None,
                    peer: Some(conn_id),
                    local: params.remote,
                    remote: local,
                    inbound_reads: 0,
                    outbound_reads: 0,
                    state: ConnState::Requested,
                },
            );
            s.cm(OwnedCmEvent::ConnectRequest {
                listen_id,
                conn_id: passive_id,
                info: ConnectionInfo {
                    local: params.remote,
                    remote: local,
                    inbound_reads: params.inbound_reads,
                    outbound_reads: params.outbound_reads,
                },
                private_data: params.private_data.to_vec(),
            });
        } else {
            s.cm(OwnedCmEvent::Rejected {
                conn_id,
                by_consumer: false,
                private_data: Vec::new(),
            });
        }
        s.conns.insert(conn_id, active);
        Ok((ConnId::from_raw(conn_id), local))
    }

    fn cm_accept(&self, conn_id: ConnId, params: &AcceptParams<'_>) -> Result<(), DeviceError> {
        require_dispatch("cm_accept");
        let conn_id = conn_id.raw();
        let qpn = params.qpn.raw();
        let (inbound_reads, outbound_reads) = (params.inbound_reads, params.outbound_reads);
        let private_data = params.private_data;
        let mut s = self.st();
        s.fail()?;
        if !s.qps.contains_key(&qpn) {
            return Err(DeviceError::NoSuchObject);
        }
        let conn = s.conns.get_mut(&conn_id).ok_or(DeviceError::NoSuchObject)?;
        if conn.state != ConnState::Requested || conn.qpn.is_some() {
            return Err(DeviceError::InvalidState);
        }
        conn.qpn = Some(qpn);
        conn.state = ConnState::Replied;
        conn.inbound_reads = inbound_reads;
        conn.outbound_reads = outbound_reads;
        let peer = conn.peer;
        s.commands.push(Command::Accept { conn_id, qpn });
        let Some(peer) = peer else {
            return Ok(());
        };
        let Some(active) = s.conns.get_mut(&peer) else {
            return Ok(());
        };
        active.state = ConnState::Replied;
        let info = ConnectionInfo {
            local: active.local,
            remote: active.remote,
            inbound_reads: active.inbound_reads.min(outbound_reads),
            outbound_reads: active.outbound_reads.min(inbound_reads),
        };
        s.cm(OwnedCmEvent::Replied {
            conn_id: peer,
            info,
            private_data: private_data.to_vec(),
        });
        Ok(())
    }

    fn cm_reject(&self, conn_id: ConnId, private_data: &[u8]) -> Result<(), DeviceError> {
        require_dispatch("cm_reject");
        let conn_id = conn_id.raw();
        let mut s = self.st();
        s.fail()?;
        let conn = s.conns.get_mut(&conn_id).ok_or(DeviceError::NoSuchObject)?;
        let inbound = conn.qpn.is_none();
        // Inbound: before accept. Outbound: after the reply arrived.
        let allowed =
            conn.state == ConnState::Requested || (conn.state == ConnState::Replied && !inbound);
        if !allowed {
            return Err(DeviceError::InvalidState);
        }
        conn.state = ConnState::Disconnected;
        let peer = conn.peer;
        s.commands.push(Command::Reject(conn_id));
        if let Some(peer) = peer {
            if inbound {
                s.cm(OwnedCmEvent::Rejected {
                    conn_id: peer,
                    by_consumer: true,
                    private_data: private_data.to_vec(),
                });
            } else {
                // The initiator gave up after the reply: the acceptor's
                // accept fails as aborted.
                s.cm(OwnedCmEvent::Failed {
                    conn_id: peer,
                    timed_out: false,
                });
            }
        }
        Ok(())
    }

    fn cm_establish(&self, conn_id: ConnId) -> Result<(), DeviceError> {
        require_dispatch("cm_establish");
        let conn_id = conn_id.raw();
        let mut s = self.st();
        s.fail()?;
        let conn = s.conns.get_mut(&conn_id).ok_or(DeviceError::NoSuchObject)?;
        if conn.state != ConnState::Replied {
            return Err(DeviceError::InvalidState);
        }
        conn.state = ConnState::Established;
        let (qpn, peer) = (conn.qpn, conn.peer);
        s.commands.push(Command::Establish(conn_id));
        if let Some(qp) = qpn.and_then(|q| s.qps.get_mut(&q)) {
            qp.state = QpState::Connected;
        }
        if let Some(peer) = peer {
            let peer_qpn = s.conns.get_mut(&peer).and_then(|c| {
                c.state = ConnState::Established;
                c.qpn
            });
            if let Some(qp) = peer_qpn.and_then(|q| s.qps.get_mut(&q)) {
                qp.state = QpState::Connected;
            }
            s.cm(OwnedCmEvent::Established { conn_id: peer });
        }
        Ok(())
    }

    fn cm_disconnect(&self, conn_id: ConnId) -> Result<(), DeviceError> {
        require_dispatch("cm_disconnect");
        let conn_id = conn_id.raw();
        let mut s = self.st();
        s.fail()?;
        let conn = s.conns.get_mut(&conn_id).ok_or(DeviceError::NoSuchObject)?;
        if conn.state == ConnState::Disconnected {
            return Err(DeviceError::InvalidState);
        }
        conn.state = ConnState::Disconnected;
        let peer = conn.peer;
        s.commands.push(Command::Disconnect(conn_id));
        if let Some(peer) = peer {
            let live = s.conns.get_mut(&peer).is_some_and(|c| {
                let was = c.state;
                c.state = ConnState::Disconnected;
                was != ConnState::Disconnected
            });
            if live {
                s.cm(OwnedCmEvent::Disconnected { conn_id: peer });
            }
        }
        s.cm(OwnedCmEvent::DisconnectDone { conn_id });
        Ok(())
    }

    fn cm_release(&self, conn_id: ConnId) {
        require_dispatch("cm_release");
        let conn_id = conn_id.raw();
        let mut s = self.st();
        s.commands.push(Command::Release(conn_id));
        let Some(conn) = s.conns.remove(&conn_id) else {
            return;
        };
        s.events.retain(|e| match e {
            Event::Cm(cm) => cm_conn_id(cm) != conn_id,
            _ => true,
        });
        let Some(peer) = conn.peer else {
            return;
        };
        if let Some(p) = s.conns.get_mut(&peer) {
            p.peer = None;
        }
        match conn.state {
            // An inbound request nobody accepted is rejected.
            ConnState::Requested if conn.qpn.is_none() => s.cm(OwnedCmEvent::Rejected {
                conn_id: peer,
                by_consumer: true,
                private_data: Vec::new(),
            }),
            // An initiator that vanished before or after the reply aborts
            // the attempt.
            ConnState::Requested | ConnState::Replied => s.cm(OwnedCmEvent::Failed {
                conn_id: peer,
                timed_out: false,
            }),
            ConnState::Established => s.cm(OwnedCmEvent::Disconnected { conn_id: peer }),
            ConnState::Disconnected => {}
        }
    }
}

fn cm_conn_id(event: &OwnedCmEvent) -> u32 {
    match event {
        OwnedCmEvent::ConnectRequest { conn_id, .. }
        | OwnedCmEvent::Replied { conn_id, .. }
        | OwnedCmEvent::Rejected { conn_id, .. }
        | OwnedCmEvent::Established { conn_id }
        | OwnedCmEvent::Disconnected { conn_id }
        | OwnedCmEvent::DisconnectDone { conn_id }
        | OwnedCmEvent::Failed { conn_id, .. } => *conn_id,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hwq::ring::ring;
    use std::sync::Arc;

    /// Runs a test's commands at `DISPATCH_LEVEL`, as the contract says
    /// (`require_dispatch`).
    fn at_dispatch(f: impl FnOnce()) {
        HostPlatform::global().at_dispatch(f);
    }

    /// Records what the device delivers.
    #[derive(Default)]
    struct Sink {
        seen: Mutex<Vec<String>>,
    }

    impl hwq::DeviceEvents for Sink {
        fn cq_event(&self, cqn: Cqn, overflow: bool) {
            self.seen
                .lock()
                .unwrap()
                .push(format!("cq {cqn} {overflow}"));
        }
        fn srq_limit(&self, srqn: Srqn) {
            self.seen.lock().unwrap().push(format!("srq {srqn}"));
        }
        fn qp_error(&self, qpn: Qpn) {
            self.seen.lock().unwrap().push(format!("qp {qpn}"));
        }
        fn cm_event(&self, event: CmEvent<'_>) {
            let text = match event {
                CmEvent::ConnectRequest { conn_id, .. } => format!("request {conn_id}"),
                CmEvent::Replied { conn_id, .. } => format!("replied {conn_id}"),
                CmEvent::Rejected { conn_id, .. } => format!("rejected {conn_id}"),
                CmEvent::Established { conn_id } => format!("established {conn_id}"),
                CmEvent::Disconnected { conn_id } => format!("disconnected {conn_id}"),
                CmEvent::DisconnectDone { conn_id } => format!("done {conn_id}"),
                CmEvent::Failed { conn_id, .. } => format!("failed {conn_id}"),
            };
            self.seen.lock().unwrap().push(text);
        }
    }

    impl Sink {
        fn take(&self) -> Vec<String> {
            std::mem::take(&mut *self.seen.lock().unwrap())
        }
    }

    fn attached() -> (Arc<ScriptedDevice>, Arc<Sink>) {
        let dev = Arc::new(ScriptedDevice::with_default_caps());
        let sink = Arc::new(Sink::default());
        // SAFETY: the sink outlives the device's use of it: the test
        // detaches before dropping it.
        let events = unsafe { EventSink::new(&*sink) };
        dev.attach(events).unwrap();
        (dev, sink)
    }

    #[test]
    #[should_panic(expected = "IRQL rule broken: hwq command `create_pd` called at PASSIVE_LEVEL")]
    fn a_command_below_dispatch_level_fails() {
        let dev = ScriptedDevice::with_default_caps();
        assert_eq!(HostPlatform::irql(), Irql::Passive);
        let _ = dev.create_pd();
    }

    #[test]
    fn doorbells_and_caps_are_allowed_unraised() {
        let dev = ScriptedDevice::with_default_caps();
        assert_eq!(HostPlatform::irql(), Irql::Passive);
        assert_eq!(dev.caps(), DEFAULT_CAPS);
        dev.sq_doorbell(Qpn::from_raw(7));
        dev.rq_doorbell(Qpn::from_raw(7));
        dev.srq_doorbell(Srqn::from_raw(7));
    }

    #[test]
    fn one_event_per_arm_and_none_from_commands() {
        at_dispatch(|| {
            let (dev, sink) = attached();
            let (producer, mut consumer) = ring::<Cqe>(4).unwrap();
            let cqn = dev.create_cq(producer).unwrap();
            dev.push_cqe(cqn.raw(), Cqe::default(), false);
            assert!(sink.take().is_empty(), "unarmed");
            dev.arm_cq(cqn, false);
            assert!(
                sink.take().is_empty(),
                "a command never calls back by itself"
            );
            assert_eq!(
                dev.deliver_events(),
                1,
                "at once: an unconsumed CQE arrived"
            );
            assert_eq!(sink.take(), vec![format!("cq {cqn} false")]);
            dev.push_cqe(cqn.raw(), Cqe::default(), false);
            assert!(sink.take().is_empty(), "one event per arm");
            consumer.refresh();
            consumer.release(consumer.len());
            dev.arm_cq(cqn, true);
            dev.push_cqe(cqn.raw(), Cqe::default(), false);
            assert!(sink.take().is_empty(), "solicited arm ignores plain CQEs");
            dev.push_cqe(cqn.raw(), Cqe::default(), true);
            assert_eq!(sink.take().len(), 1);
            // Two CQEs are outstanding in a ring of four: the fifth overflows.
            for _ in 0..2 {
                assert!(dev.push_cqe(cqn.raw(), Cqe::default(), false));
            }
            assert!(!dev.push_cqe(cqn.raw(), Cqe::default(), false));
            assert_eq!(
                sink.take(),
                vec![format!("cq {cqn} true")],
                "overflow always fires"
            );
            dev.detach();
            assert!(!dev.attached());
        });
    }

    #[test]
    fn flush_completes_everything_and_records_commands() {
        at_dispatch(|| {
            let (dev, sink) = attached();
            let (cq_p, mut cq_c) = ring::<Cqe>(16).unwrap();
            let cqn = dev.create_cq(cq_p).unwrap();
            let (pd, _) = dev.create_pd().unwrap();
            let (mut sq_p, sq_c) = ring::<SendWqe>(4).unwrap();
            let (mut rq_p, rq_c) = ring::<RecvWqe>(4).unwrap();
            let qpn = dev
                .create_qp(QpSetup {
                    pd,
                    send_cqn: cqn,
                    recv_cqn: cqn,
                    sq: sq_c,
                    rq: ReceiveSource::Queue(rq_c),
                    context: 5,
                })
                .unwrap();
            sq_p.push(SendWqe {
                wr_id: 1,
                ..SendWqe::default()
            })
            .unwrap();
            sq_p.publish();
            rq_p.push(RecvWqe {
                wr_id: 2,
                ..RecvWqe::default()
            })
            .unwrap();
            rq_p.publish();
            dev.sq_doorbell(qpn);
            assert_eq!(dev.sq_doorbells(qpn.raw()), 1);
            dev.flush_qp(qpn);
            assert_eq!(dev.qp_state(qpn.raw()), Some(QpState::Error));
            cq_c.refresh();
            let ids: Vec<(u64, u8)> = (0..cq_c.len())
                .filter_map(|i| cq_c.read(cq_c.released().wrapping_add(i)))
                .map(|c| (c.wr_id, c.status))
                .collect();
            assert_eq!(
                ids,
                vec![(1, CqeStatus::Flushed as u8), (2, CqeStatus::Flushed as u8)]
            );
            assert!(dev.commands().contains(&Command::FlushQp(qpn.raw())));
            dev.destroy_qp(qpn);
            dev.destroy_cq(cqn);
            dev.destroy_pd(pd);
            assert_eq!(dev.live_objects(), 0);
            assert!(sink.take().is_empty());
            dev.detach();
        });
    }

    #[test]
    fn in_device_cm_connects_two_qps() {
        at_dispatch(|| {
            let (dev, sink) = attached();
            let (pd, _) = dev.create_pd().unwrap();
            let (cq_p, _cq_c) = ring::<Cqe>(4).unwrap();
            let cqn = dev.create_cq(cq_p).unwrap();
            let mut qpns = Vec::new();
            for _ in 0..2 {
                let (_, sq) = ring::<SendWqe>(2).unwrap();
                let (_, rq) = ring::<RecvWqe>(2).unwrap();
                let setup = QpSetup {
                    pd,
                    send_cqn: cqn,
                    recv_cqn: cqn,
                    sq,
                    rq: ReceiveSource::Queue(rq),
                    context: 0,
                };
                qpns.push(dev.create_qp(setup).unwrap());
            }
            let at = SocketAddr::new(IpAddr::V4(ADDR_V4), 5000);
            let (listen_id, bound) = dev.cm_listen(at).unwrap();
            assert_eq!(bound, at);
            assert_eq!(dev.cm_listen(at), Err(DeviceError::AddressInUse));
            let params = ConnectParams {
                local: SocketAddr::new(IpAddr::V4(ADDR_V4), 0),
                remote: at,
                inbound_reads: 4,
                outbound_reads: 2,
                private_data: b"x",
            };
            let (active, local) = dev.cm_connect(qpns[0], &params).unwrap();
            assert!(local.port() >= 49152);
            dev.deliver_events();
            let passive = dev.conn_peer(active.raw()).unwrap();
            assert_eq!(sink.take(), vec![format!("request {passive}")]);
            let accept = AcceptParams {
                qpn: qpns[1],
                inbound_reads: 3,
                outbound_reads: 3,
                private_data: b"y",
            };
            dev.cm_accept(ConnId::from_raw(passive), &accept).unwrap();
            dev.deliver_events();
            assert_eq!(sink.take(), vec![format!("replied {active}")]);
            dev.cm_establish(active).unwrap();
            dev.deliver_events();
            assert_eq!(sink.take(), vec![format!("established {passive}")]);
            assert_eq!(dev.qp_state(qpns[0].raw()), Some(QpState::Connected));
            assert_eq!(dev.qp_state(qpns[1].raw()), Some(QpState::Connected));
            dev.cm_disconnect(active).unwrap();
            dev.deliver_events();
            assert_eq!(
                sink.take(),
                vec![format!("disconnected {passive}"), format!("done {active}")]
            );
            dev.cm_pause_listener(listen_id, true);
            let (refused, _) = dev.cm_connect(qpns[0], &params).unwrap();
            dev.deliver_events();
            assert_eq!(sink.take(), vec![format!("rejected {refused}")]);
            for id in [active, ConnId::from_raw(passive), refused] {
                dev.cm_release(id);
            }
            dev.cm_stop_listener(listen_id);
            dev.detach();
        });
    }
}
