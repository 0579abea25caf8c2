//! The loopback queue: datagrams the RNIC sends to one of its own
//! addresses, kept in buffers allocated at creation until the runtime
//! hands them back to the RNIC. The queue's lock is never held while a
//! datagram is delivered, so delivery may send (and queue) again.

use alloc::collections::VecDeque;
use alloc::vec::Vec;

use hwq::lock::LockClass;

use crate::sync::Mutex;

/// A loopback link's queue lock.
static QUEUE_LOCK: LockClass = LockClass::new("softrnic loopback queue");

#[derive(Debug)]
struct Queue {
    /// Datagrams waiting, oldest first (each buffer exactly one datagram
    /// long, within its preallocated capacity).
    waiting: VecDeque<Vec<u8>>,
    /// Empty buffers.
    free: Vec<Vec<u8>>,
}

/// A bounded queue of datagrams.
#[derive(Debug)]
pub(super) struct Loopback {
    queue: Mutex<Queue>,
    /// The longest datagram a buffer takes.
    buffer_len: usize,
}

impl Loopback {
    /// A queue of `slots` datagrams of up to `buffer_len` bytes; `None` if
    /// memory ran out.
    pub fn new(slots: usize, buffer_len: usize) -> Option<Self> {
        let mut waiting = VecDeque::new();
        waiting.try_reserve_exact(slots).ok()?;
        let mut free = Vec::new();
        free.try_reserve_exact(slots).ok()?;
        for _ in 0..slots {
            let mut buf = Vec::new();
            buf.try_reserve_exact(buffer_len).ok()?;
            free.push(buf);
        }
        Some(Self {
            queue: Mutex::new(&QUEUE_LOCK, Queue { waiting, free }),
            buffer_len,
        })
    }

    /// Queues a copy of `datagram`; `false` if the queue is full or the
    /// datagram too long (dropped).
    pub fn push(&self, datagram: &[u8]) -> bool {
        if datagram.len() > self.buffer_len {
            return false;
        }
        let mut q = self.queue.lock();
        let Some(mut buf) = q.free.pop() else {
            return false;
        };
        buf.clear();
        // Within the capacity reserved at creation: no allocation.
        buf.extend_from_slice(datagram);
        // At most `slots` buffers exist, and room for all was reserved.
        q.waiting.push_back(buf);
        true
    }

    /// Hands the datagrams waiting now to `deliver`, oldest first, with
    /// the queue unlocked; those queued meanwhile wait for the next call.
    /// Returns how many were delivered.
    pub fn drain(&self, mut deliver: impl FnMut(&[u8])) -> usize {
        let mut budget = self.queue.lock().waiting.len();
        let mut delivered = 0;
        while budget > 0 {
            budget -= 1;
            let Some(buf) = self.queue.lock().waiting.pop_front() else {
                break;
            };
            deliver(&buf);
            delivered += 1;
            self.queue.lock().free.push(buf);
        }
        delivered
    }

    /// Datagrams waiting.
    pub fn len(&self) -> usize {
        self.queue.lock().waiting.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn datagrams_come_back_in_order_and_the_queue_is_bounded() {
        let q = Loopback::new(3, 8).unwrap();
        assert!(q.push(b"one"));
        assert!(!q.push(b"much too long"));
        assert!(q.push(b"two"));
        assert!(q.push(b"three"));
        assert!(!q.push(b"four"), "full");
        let mut got = Vec::new();
        assert_eq!(q.drain(|d| got.push(d.to_vec())), 3);
        assert_eq!(got, [&b"one"[..], b"two", b"three"]);
        // Delivery may queue again: that waits for the next drain.
        assert!(q.push(b"five"));
        assert_eq!(q.drain(|_| assert!(q.push(b"again"))), 1);
        assert_eq!(q.len(), 1);
        assert_eq!(q.drain(|d| assert_eq!(d, b"again")), 1);
        assert_eq!(q.drain(|_| unreachable!()), 0);
    }
}
