//! A deterministic two-device (or more) network for CM tests: software
//! RNICs on the in-memory fabric, one simulated clock, an event recorder
//! per device, and a loop that moves due packets, polls, takes what each
//! device sent onto its link, and advances the clock to the next thing
//! due, bounded by steps.

use hwq::{Device, Verbs};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::{Arc, Mutex};

use hwq::device::{
    AcceptParams, CmEvent, ConnectParams, ConnectionInfo, DeviceEvents, EventSink, QpSetup,
    ReceiveSource,
};
use hwq::ring::ring;
use hwq::{ConnId, Cqe, Cqn, ListenId, Pdn, Producer, Qpn, RecvWqe, SendWqe, Srqn};
use links::{
    Clock, FaultInjector, FaultLink, Faults, LinkPass,
    fabric::{Fabric, FabricEndpoint},
};
use softrnic::arrival::Arrival;
use softrnic::device::{DeviceConfig, SoftRnic};
use softrnic::env::NoRoutes;

use super::{Dma, HostMem, NoWake, SimClock};

/// Host memory per device: the CM tests move no data.
const NODE_MEMORY: usize = 64 * 1024;

/// A CM event with its private data copied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ev {
    ConnectRequest {
        listen_id: ListenId,
        conn_id: ConnId,
        info: ConnectionInfo,
        data: Vec<u8>,
    },
    Replied {
        conn_id: ConnId,
        info: ConnectionInfo,
        data: Vec<u8>,
    },
    Rejected {
        conn_id: ConnId,
        by_consumer: bool,
        data: Vec<u8>,
    },
    Established {
        conn_id: ConnId,
    },
    Disconnected {
        conn_id: ConnId,
    },
    DisconnectDone {
        conn_id: ConnId,
    },
    Failed {
        conn_id: ConnId,
        timed_out: bool,
    },
}

impl Ev {
    pub fn conn_id(&self) -> ConnId {
        match self {
            Self::ConnectRequest { conn_id, .. }
            | Self::Replied { conn_id, .. }
            | Self::Rejected { conn_id, .. }
            | Self::Established { conn_id }
            | Self::Disconnected { conn_id }
            | Self::DisconnectDone { conn_id }
            | Self::Failed { conn_id, .. } => *conn_id,
        }
    }
}

/// Records every event.
#[derive(Debug, Default)]
pub struct Recorder {
    pub cm: Mutex<Vec<Ev>>,
    pub cq: Mutex<Vec<Cqn>>,
}

impl DeviceEvents for Recorder {
    fn cq_event(&self, cqn: Cqn, _overflow: bool) {
        self.cq.lock().unwrap().push(cqn);
    }

    fn srq_limit(&self, _srqn: Srqn) {}

    fn qp_error(&self, _qpn: Qpn) {}

    fn cm_event(&self, event: CmEvent<'_>) {
        let ev = match event {
            CmEvent::ConnectRequest {
                listen_id,
                conn_id,
                info,
                private_data,
            } => Ev::ConnectRequest {
                listen_id,
                conn_id,
                info,
                data: private_data.to_vec(),
            },
            CmEvent::Replied {
                conn_id,
                info,
                private_data,
            } => Ev::Replied {
                conn_id,
                info,
                data: private_data.to_vec(),
            },
            CmEvent::Rejected {
                conn_id,
                by_consumer,
                private_data,
            } => Ev::Rejected {
                conn_id,
                by_consumer,
                data: private_data.to_vec(),
            },
            CmEvent::Established { conn_id } => Ev::Established { conn_id },
            CmEvent::Disconnected { conn_id } => Ev::Disconnected { conn_id },
            CmEvent::DisconnectDone { conn_id } => Ev::DisconnectDone { conn_id },
            CmEvent::Failed { conn_id, timed_out } => Ev::Failed { conn_id, timed_out },
        };
        self.cm.lock().unwrap().push(ev);
    }
}

/// The driver-side ends of a QP's queues.
pub struct Qp {
    pub qpn: Qpn,
    pub pd: Pdn,
    pub cqn: Cqn,
    pub sq: Producer<SendWqe>,
    pub rq: Producer<RecvWqe>,
    pub cq: hwq::Consumer<Cqe>,
}

/// One device with its recorder.
pub struct Node {
    pub addr: IpAddr,
    pub rnic: Arc<SoftRnic>,
    /// The runtime's passes over the device's port: takes what it sends.
    pub pass: LinkPass<FaultLink<FabricEndpoint>>,
    pub events: Arc<Recorder>,
    pub memory: Arc<HostMem>,
}

impl Node {
    /// Takes what the device sends onto its port at `now`; how many
    /// packets moved.
    pub fn pump(&self, now: u64) -> usize {
        self.pass.pump(&self.rnic, now)
    }

    /// Hands `arrival` to the device at `now`, then takes what it sent in
    /// answer, as a runtime does.
    pub fn receive(&self, now: u64, arrival: Arrival<'_>) {
        self.rnic.receive(now, arrival);
        self.pump(now);
    }

    /// Every CM event so far.
    pub fn cm_events(&self) -> Vec<Ev> {
        self.events.cm.lock().unwrap().clone()
    }

    /// CM events of connection `conn_id`.
    pub fn events_of(&self, conn_id: ConnId) -> Vec<Ev> {
        self.cm_events()
            .into_iter()
            .filter(|e| e.conn_id() == conn_id)
            .collect()
    }

    /// The ConnectRequests so far.
    pub fn requests(&self) -> Vec<Ev> {
        self.cm_events()
            .into_iter()
            .filter(|e| matches!(e, Ev::ConnectRequest { .. }))
            .collect()
    }

    /// A QP with its own CQ (for sends and receives) and queues.
    pub fn qp(&self) -> Qp {
        let (pd, _) = self.rnic.create_pd().unwrap();
        let (cq_p, cq_c) = ring::<Cqe>(256).unwrap();
        let cqn = self.rnic.create_cq(cq_p).unwrap();
        let (sq_p, sq_c) = ring::<SendWqe>(64).unwrap();
        let (rq_p, rq_c) = ring::<RecvWqe>(64).unwrap();
        let qpn = self
            .rnic
            .create_qp(QpSetup {
                pd,
                send_cqn: cqn,
                recv_cqn: cqn,
                sq: sq_c,
                rq: ReceiveSource::Queue(rq_c),
                context: 7,
            })
            .unwrap();
        Qp {
            qpn,
            pd,
            cqn,
            sq: sq_p,
            rq: rq_p,
            cq: cq_c,
        }
    }

    /// The node's address and `port`.
    pub fn at(&self, port: u16) -> SocketAddr {
        SocketAddr::new(self.addr, port)
    }

    /// Connect parameters from this node (port 0) to `remote`.
    pub fn params<'a>(
        &self,
        remote: SocketAddr,
        ird: u32,
        ord: u32,
        data: &'a [u8],
    ) -> ConnectParams<'a> {
        ConnectParams {
            local: self.at(0),
            remote,
            inbound_reads: ird,
            outbound_reads: ord,
            private_data: data,
        }
    }
}

/// Accept parameters binding `qpn`, as [`Node::params`] are for a connect.
pub fn accept_params(qpn: Qpn, ird: u32, ord: u32, data: &[u8]) -> AcceptParams<'_> {
    AcceptParams {
        qpn,
        inbound_reads: ird,
        outbound_reads: ord,
        private_data: data,
    }
}

/// The network.
pub struct Net {
    pub fabric: Arc<Fabric>,
    /// The generator every device's port draws its faults from.
    pub faults: Arc<FaultInjector>,
    pub clock: Arc<SimClock>,
    pub nodes: Vec<Node>,
}

/// 10.0.0.1, 10.0.0.2, …
pub fn addr(i: usize) -> Ipv4Addr {
    Ipv4Addr::new(10, 0, 0, 1 + i as u8)
}

/// fd00::1, fd00::2, … (IPv6 nets, [`Net::new_v6`]).
pub fn addr6(i: usize) -> Ipv6Addr {
    Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 1 + i as u16)
}

impl Net {
    /// `n` devices with path MTU 1024 on a fabric with `faults`.
    pub fn new(n: usize, faults: Faults) -> Self {
        Self::with_pmtus(&vec![1024; n], faults)
    }

    /// `n` IPv6 devices with path MTU 1024 on a fabric with `faults`.
    pub fn new_v6(n: usize, faults: Faults) -> Self {
        let addrs: Vec<IpAddr> = (0..n).map(|i| addr6(i).into()).collect();
        Self::at(&addrs, &vec![1024; n], faults)
    }

    /// One device per path MTU.
    pub fn with_pmtus(pmtus: &[u32], faults: Faults) -> Self {
        let addrs: Vec<IpAddr> = (0..pmtus.len()).map(|i| addr(i).into()).collect();
        Self::at(&addrs, pmtus, faults)
    }

    /// One device per address, with the path MTU of the same index.
    pub fn at(addrs: &[IpAddr], pmtus: &[u32], faults: Faults) -> Self {
        let fabric = Fabric::new();
        let faults = FaultInjector::new(faults);
        let clock = Arc::new(SimClock::default());
        let clock_dyn: Arc<dyn Clock> = clock.clone();
        clock.set(1_000_000);
        let nodes = pmtus
            .iter()
            .zip(addrs)
            .map(|(&pmtu, &addr)| {
                let memory = HostMem::new(NODE_MEMORY);
                let mut config = DeviceConfig::new(addr, pmtu);
                config.max_qps = 64;
                let rnic = Arc::new(
                    SoftRnic::new(
                        config,
                        Box::new(Dma(memory.clone())),
                        Box::new(NoRoutes),
                        clock.now(),
                        Box::new(NoWake),
                    )
                    .unwrap(),
                );
                let pass = LinkPass::new(FaultLink::new(
                    FabricEndpoint::new(fabric.clone(), clock_dyn.clone()),
                    faults.clone(),
                    clock_dyn.clone(),
                ))
                .unwrap();
                let events = Arc::new(Recorder::default());
                // The device may outlive the node (its Arc is shared): leak
                // one reference so the recorder lives as long as the process.
                std::mem::forget(events.clone());
                // SAFETY: the recorder is never dropped (see above), and an
                // `Arc`'s contents do not move.
                let sink = unsafe { EventSink::new(&*events) };
                rnic.attach(sink).unwrap();
                Node {
                    addr,
                    rnic,
                    pass,
                    events,
                    memory,
                }
            })
            .collect();
        Self {
            fabric,
            faults,
            clock,
            nodes,
        }
    }

    pub fn now(&self) -> u64 {
        self.clock.now()
    }

    /// Moves the clock forward by `us`.
    pub fn advance(&self, us: u64) {
        self.clock.set(self.now() + us);
    }

    /// Takes what every device sends onto its port now (what a runtime
    /// woken by its device does); how many packets moved.
    pub fn pump(&self) -> usize {
        self.nodes.iter().map(|n| n.pump(self.now())).sum()
    }

    /// One round: deliver every due packet, poll every device, taking
    /// what each sends after each. Returns whether anything happened.
    pub fn round(&self) -> bool {
        let mut any = false;
        while let Some((dst, bytes)) = self.fabric.take_due(self.now()) {
            any = true;
            if let Some(node) = self.nodes.iter().find(|n| n.addr == dst) {
                node.receive(self.now(), Arrival::Datagram(&bytes));
            }
        }
        for node in &self.nodes {
            any |= node.rnic.poll(self.now());
            any |= node.pump(self.now()) > 0;
        }
        any
    }

    /// Runs until `done` holds, moving the clock to the next due packet or
    /// timer when idle; panics after `steps` rounds, or if the network is
    /// idle (nothing in flight, no timer: only the test could act) and the
    /// condition not met.
    pub fn run_until(&self, steps: usize, mut done: impl FnMut(&Self) -> bool) {
        let mut net = self;
        let met = super::run_until(
            &mut net,
            steps as u64,
            |n| n.round() || n.skip_ahead(),
            |n| done(n),
        );
        assert!(met, "network idle and condition not met");
    }

    /// Runs until nothing is in flight and no timer is armed before
    /// `horizon_us` from now (bounded by `steps`).
    pub fn settle(&self, steps: usize, horizon_us: u64) {
        let end = self.now() + horizon_us;
        for _ in 0..steps {
            if self.round() {
                continue;
            }
            match self.next_event() {
                Some(t) if t <= end => self.clock.set(t.max(self.now())),
                _ => return,
            }
        }
        panic!("network did not settle after {steps} steps");
    }

    fn next_event(&self) -> Option<u64> {
        let timers = self.nodes.iter().filter_map(|n| n.rnic.next_timer_us());
        self.fabric.next_due().into_iter().chain(timers).min()
    }

    /// Moves the clock to the next due packet or timer; false if none.
    fn skip_ahead(&self) -> bool {
        match self.next_event() {
            Some(t) => {
                self.clock.set(t.max(self.now()));
                true
            }
            None => false,
        }
    }
}
