//! Software RNIC: a RoCEv2 Reliable Connection engine behind the hwq contract.
//!
//! [`wire`] is the packet layer: byte-exact RoCEv2 datagrams (IPv4 or IPv6,
//! UDP, BTH, extended transport headers, pad, ICRC) and the InfiniBand CM
//! messages that ride as MADs on QP1. A device holds a set of IPv4 and IPv6
//! addresses ([`addresses`], starting from [`device::DeviceConfig::addr`]);
//! each connection speaks the family of its own pair. [`l2`] carries its
//! datagrams as Ethernet frames on a NIC shared with the host's IP stack.
//!
//! ## Layers
//!
//! Each layer uses only those below it (no module imports one that
//! imports it):
//!
//! 1. [`wire`]: packets and MADs, no state.
//! 2. The device's objects: [`memory`] (keys, translation, scatter/gather),
//!    [`cq`], [`srq`], [`addresses`], [`table`], [`bitset`]; the
//!    surroundings' traits in [`env`](mod@env) (wake, routes).
//! 3. The transport: [`train`] (packets whose payload stays at the
//!    sender), [`arrival`] (what the device's one receive door takes),
//!    [`transmit`] (its one way out: the runtime's transmit turn takes
//!    each packet into a buffer of its own, framed as its [`transmit::Carriage`]
//!    says), [`outbox`] (what the state machines send, recorded under the
//!    QP's lock and taken after it), [`qp`] (the RC state
//!    machines: requester,
//!    responder with its named checks, completer, timers, flush), which see
//!    their device only as a `qp::Context` and the time it carries.
//! 4. [`cm`]: connection management on QP1, which reaches its device only
//!    through the `cm::Host` trait.
//! 5. [`device`]: [`device::SoftRnic`], the tables and bitsets and the
//!    commands and doorbells of the hwq contract; [`engine`] (arrivals,
//!    polls, timers, backpressure) and [`pass`] (the device's part of a
//!    pass and its turn) drive it.
//! 6. At the device's edge: [`l2`] is the Ethernet port (framing,
//!    neighbours, classification) through which a kernel runtime hands
//!    the device its received frames and takes what it sends
//!    ([`l2::EthernetPort::pump`]).
//!
//! What a runtime that carries packets in software puts around the device
//! (links, their pump and passes, capture and fault wrappers, the
//! in-memory fabric) is not in this crate: the `links` crate holds it,
//! for the host and the tests. The kernel image uses none of it.
//!
//! ## Time
//!
//! The device keeps no clock (sans-IO, as smoltcp's
//! `Interface::poll(timestamp)` and quinn-proto's `handle(now, ..)`): its
//! runtime reads its own and passes the time (µs, monotonic) into every
//! run entry point — [`pass::PassTurn::work`],
//! [`device::SoftRnic::poll`], [`device::SoftRnic::receive`] and
//! [`device::SoftRnic::send_failed`] — and the device keeps the latest it
//! was given. The hwq
//! commands have no time of their own: a connection-management timer a
//! command starts runs from the next pass, which stamps it; anything else a
//! command needs a time for takes the latest pass's. No clock is read
//! inside this crate.
//!
//! ## One SEND, end to end
//!
//! 1. The consumer writes a SEND WQE into the QP's send ring and rings
//!    [`hwq::Doorbells::sq_doorbell`] (on [`device::SoftRnic`]): a bit in the device's `sq_ready`
//!    set, and a [`env::Wake::wake`]. Nothing runs inline.
//! 2. The runtime's thread (or a busy-polling consumer, [`pass`]) runs
//!    [`device::SoftRnic::poll`] at the time it read: [`engine`] drains
//!    `sq_ready` and, holding the QP's outbox and then its table slot,
//!    hands the QP and a `qp::Context` (carrying that time and the
//!    outbox) to the QP's send side.
//! 3. The requester (`qp/requester.rs`) starts the WQE: checks its gather
//!    list's keys, allocates its PSNs, then segments it into PMTU packets
//!    within the window, recording each in the outbox as a
//!    `train::Segments` description (its payload still in host memory), or, when the runtime takes trains (between devices of
//!    one address space), one description of the rest of the message. The
//!    retransmit timer is armed in the connection's timer table.
//! 4. The engine lets the QP's slot and outbox go ([`engine`]'s "Where
//!    packets are recorded"). After its pass the runtime takes its
//!    transmit turn ([`transmit_turn`]) and takes each packet into a
//!    buffer of its own, framed as its [`transmit::Carriage`] says: the
//!    payload is gathered from host memory through [`memory`] (keys
//!    checked again) straight into that buffer — a UDP socket's batch slot
//!    (`crates/host`), the kernel shell's [`l2`] port's frame behind the
//!    Ethernet header's room, or an in-memory fabric's queue entry — or,
//!    when it takes trains, the run is handed out as one
//!    [`train::Train`]. A runtime whose wire is a software link does this
//!    with the `links` crate's pump, inside whatever wrappers it put
//!    around the link (the host's capture shows it to a packet capture, a
//!    test's fault link loses or delays it). No packet leaves while a
//!    QP's slot is held.
//! 5. At the peer the runtime hands what arrived to the device's
//!    one receive door, [`device::SoftRnic::receive`], as an
//!    [`arrival::Arrival`]: a datagram, one whose IP and UDP headers were
//!    checked on the way in (the Ethernet port's classification,
//!    [`l2::Verdict::Rnic`]), a socket's UDP payload, or a train.
//!    [`engine`] parses it once, from where the receiver left off (the
//!    ICRC checked), finds the destination QP, and passes the request to the
//!    responder (`qp/responder.rs`) with that device's own context.
//! 6. The responder's checks (`qp/checks.rs`: PSN, opcode sequence,
//!    length) pass; it takes a receive from the QP's receive ring (or its
//!    SRQ), scatters the payload into it ([`memory`]'s scatter/gather,
//!    keys checked), and at the message's last packet writes the receive
//!    CQE into the receive CQ ([`cq`]), raising a CQ event if it was
//!    armed; the device's poll delivers the event with no lock held. The
//!    packet asked for an acknowledgement, so the responder sends an ACK
//!    (or holds it a moment for the consumer's answer).
//! 7. Back at the sender the ACK reaches the completer
//!    (`qp/completer.rs`), which moves the oldest unacknowledged PSN past
//!    the SEND, disarms the retransmit timer, and writes the SEND's CQE
//!    into the send CQ in SQ order.
//!
//! ## One received frame, through the kernel shell's Ethernet port
//!
//! The request of step 5 and its ACK, as they cross the crate boundary
//! between the driver (`src/driver/l2.rs`) and this crate: once in per
//! received frame, once out per frame sent.
//!
//! 1. NDIS indicates a received list; the driver takes its frame (in
//!    place or bounced) and makes one call:
//!    [`l2::EthernetPort::receive_frame`], with the device and the time.
//! 2. The port classifies it (`l2/classify.rs`): a frame carrying UDP to
//!    port 4791 has its IP and UDP headers checked, once, by
//!    [`wire::CheckedDatagram::parse`]. One to an own address whose
//!    headers check is the RNIC's (its sender's neighbour entry is
//!    confirmed); anything else goes back up (`false`), ARP and Neighbor
//!    Discovery learnt from on the way.
//! 3. The port counts it ([`l2::PortStats`]' `steered` and
//!    `steered_bytes`, its UDP payload: the RDMA octets of
//!    `OID_NDK_STATISTICS`) before the device has it, and hands the
//!    checked datagram to the device's one receive door,
//!    [`device::SoftRnic::receive`], as [`arrival::Arrival::Checked`].
//! 4. [`engine`] goes on from its BTH
//!    ([`wire::parse_checked`]: the ICRC already fed the headers), and
//!    hands it to its QP with the QP's outbox locked, as in step 5 above:
//!    the responder places it and records the ACK.
//! 5. At the end of the receive indication the driver has the port take
//!    the device's packets, [`l2::EthernetPort::pump`]
//!    (`L2Port::transmit_after_receive`; the engine's DPC does the same
//!    after every pass): the pump holds the device's transmit turn and the
//!    ACK is built from the outbox straight into the port's frame, behind
//!    the Ethernet header's room. The port frames it there for the peer's
//!    MAC address and gives it, with its RDMA length, to the driver's
//!    [`l2::FrameSink`], which copies it into an NBL's frame and adds it
//!    to the batch it sends down in one call to NDIS when the pump
//!    flushes.

#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;

pub mod addresses;
pub mod arrival;
pub mod bitset;
pub mod cm;
pub mod cq;
pub mod device;
pub mod engine;
mod engine_state;
pub mod env;
pub mod l2;
pub mod memory;
pub mod outbox;
pub mod pass;
pub mod qp;
mod signals;
pub mod srq;
mod stats;
pub mod sync;
pub mod table;
pub mod train;
pub mod transmit;
pub mod transmit_turn;
pub mod wire;
