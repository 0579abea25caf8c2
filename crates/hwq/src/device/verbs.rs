//! Verbs objects: protection domains, memory keys, completion queues,
//! shared receive queues and queue pairs, created, changed and destroyed by
//! command.
//!
//! IRQL: every command is called at `DISPATCH_LEVEL` (the caller raises;
//! see [the module's IRQL rule](super#irql)). A device may take its spin
//! locks here; it must not block, wait or touch pageable memory. Commands
//! that allocate say so (non-paged memory, which `DISPATCH_LEVEL` allows).

use crate::cqe::Cqe;
use crate::id::{Cqn, Pdn, Qpn, Srqn};
use crate::key::MemoryKey;
use crate::ring::{Consumer, Producer};
use crate::wqe::{Access, RecvWqe, SendWqe};

use super::DeviceError;

/// Where a QP takes its receive buffers from.
#[derive(Debug)]
pub enum ReceiveSource {
    /// Its own receive queue.
    Queue(Consumer<RecvWqe>),
    /// A shared receive queue.
    Shared(Srqn),
}

/// Everything the device needs to create a queue pair.
#[derive(Debug)]
pub struct QpSetup {
    /// Protection domain.
    pub pd: Pdn,
    /// Completion queue for send-queue work.
    pub send_cqn: Cqn,
    /// Completion queue for receives.
    pub recv_cqn: Cqn,
    /// The send queue's consuming end.
    pub sq: Consumer<SendWqe>,
    /// Receive buffers.
    pub rq: ReceiveSource,
    /// Echoed in every CQE of this QP (`NDK_RESULT.QPContext`).
    pub context: u64,
}

/// A registration of host memory for a memory key.
#[derive(Clone, Copy, Debug)]
pub struct Registration<'a> {
    /// Protection domain.
    pub pd: Pdn,
    /// Access rights (local read is implied).
    pub access: Access,
    /// The first virtual address of the region (the MDL's address, used as
    /// an index: the device never dereferences it).
    pub va: u64,
    /// Bytes.
    pub length: u64,
    /// Offset of `va` in the first page.
    pub first_byte_offset: u32,
    /// Logical address of each page, page-aligned, in order.
    pub pages: &'a [u64],
}

/// The verbs objects' commands. IRQL: `DISPATCH_LEVEL` for every entry.
pub trait Verbs: Send + Sync {
    /// Creates a protection domain; returns its number and its privileged
    /// key (local access to logical addresses, never remote access).
    fn create_pd(&self) -> Result<(Pdn, MemoryKey), DeviceError>;

    /// Destroys a protection domain.
    fn destroy_pd(&self, pd: Pdn);

    /// Reserves a key-table entry for a memory region or window of `pd`.
    fn alloc_key(&self, pd: Pdn, window: bool) -> Result<MemoryKey, DeviceError>;

    /// Releases a key-table entry (any registration is dropped).
    fn free_key(&self, key: MemoryKey);

    /// Registers memory for an entry; the device copies the page list.
    /// Returns the key (a new variant of the entry's key). May allocate.
    fn register(
        &self,
        key: MemoryKey,
        registration: &Registration<'_>,
    ) -> Result<MemoryKey, DeviceError>;

    /// Drops an entry's registration; its keys stop working.
    fn deregister(&self, key: MemoryKey) -> Result<(), DeviceError>;

    /// Prepares an entry for fast registration of up to `max_pages` pages.
    /// May allocate.
    fn init_fast_register(
        &self,
        key: MemoryKey,
        max_pages: u32,
        remote_access: bool,
    ) -> Result<(), DeviceError>;

    // ---- completion queues, shared receive queues, queue pairs ----

    /// Creates a completion queue writing into `ring`.
    fn create_cq(&self, ring: Producer<Cqe>) -> Result<Cqn, DeviceError>;

    /// Replaces a completion queue's ring (resize). Entries not yet consumed
    /// from the old ring stay there for the driver to drain first.
    fn resize_cq(&self, cqn: Cqn, ring: Producer<Cqe>) -> Result<(), DeviceError>;

    /// Destroys a completion queue; no CQE or event for it follows.
    fn destroy_cq(&self, cqn: Cqn);

    /// Arms a completion queue for one event, as a hardware CQ doorbell
    /// does: the event fires when the next CQE is written
    /// (`solicited_only`: the next solicited or error CQE), or at once if
    /// such a CQE was written since the last event and is still unconsumed.
    /// Arming again before the event strengthens the arm to "any CQE" if
    /// either arm was. Overflow always fires an event, armed or not.
    fn arm_cq(&self, cqn: Cqn, solicited_only: bool);

    /// Interrupt moderation: hold a CQ's event until `count` CQEs
    /// accumulated or `usec` microseconds passed since the first one
    /// (0 for either disables that trigger).
    fn moderate_cq(&self, cqn: Cqn, count: u32, usec: u32) -> Result<(), DeviceError>;

    /// Creates a shared receive queue of `pd` that raises
    /// [`DeviceEvents::srq_limit`](super::DeviceEvents::srq_limit) when fewer than `limit` receives remain
    /// posted (0: never).
    fn create_srq(&self, pd: Pdn, ring: Consumer<RecvWqe>, limit: u32)
    -> Result<Srqn, DeviceError>;

    /// Changes a shared receive queue's limit (0: disarm).
    fn set_srq_limit(&self, srqn: Srqn, limit: u32) -> Result<(), DeviceError>;

    /// Destroys a shared receive queue.
    fn destroy_srq(&self, srqn: Srqn);

    /// Creates a queue pair in the initial state (receives may be posted).
    fn create_qp(&self, setup: QpSetup) -> Result<Qpn, DeviceError>;

    /// Moves a QP to the error state: outstanding and future work completes
    /// as flushed.
    fn flush_qp(&self, qpn: Qpn);

    /// Destroys a QP. When it returns the device no longer reads its rings
    /// or writes CQEs for it.
    fn destroy_qp(&self, qpn: Qpn);
}
