//! Shared receive queues: a pool of receive buffers several QPs draw from,
//! with a low-water limit event.

use hwq::{Consumer, RecvWqe};

/// A shared receive queue's device-side state.
#[derive(Debug)]
pub struct SharedReceiveQueue {
    /// Protection domain (receive buffers are checked against it).
    pub pd: u32,
    /// The ring the driver posts receives into.
    pub ring: Consumer<RecvWqe>,
    /// Raise the limit event when fewer than this many receives remain
    /// posted (0: disarmed). One-shot: cleared when it fires.
    pub limit: u32,
}

impl SharedReceiveQueue {
    /// Takes the oldest posted receive, if any. Receives from an SRQ are
    /// consumed (released) at once: the responder keeps the WQE it took.
    /// Returns the WQE and whether the limit event fires.
    pub fn take(&mut self) -> Option<(RecvWqe, bool)> {
        self.ring.refresh();
        let wqe = self.ring.read(self.ring.released())?;
        self.ring.release(1);
        let fire = self.limit != 0 && self.ring.len() < self.limit;
        if fire {
            self.limit = 0;
        }
        Some((wqe, fire))
    }

    /// Arms (or disarms with 0) the limit; returns whether it fires at once
    /// because the queue is already below it.
    pub fn set_limit(&mut self, limit: u32) -> bool {
        self.ring.refresh();
        if limit != 0 && self.ring.len() < limit {
            self.limit = 0;
            return true;
        }
        self.limit = limit;
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hwq::ring::ring;

    #[test]
    fn limit_fires_once_when_crossed() {
        let (mut p, c) = ring::<RecvWqe>(8).unwrap();
        for id in 0..3 {
            p.push(RecvWqe {
                wr_id: id,
                ..RecvWqe::default()
            })
            .unwrap();
        }
        p.publish();
        let mut srq = SharedReceiveQueue {
            pd: 1,
            ring: c,
            limit: 0,
        };
        assert!(!srq.set_limit(2));
        assert_eq!(srq.take().map(|(w, f)| (w.wr_id, f)), Some((0, false)));
        assert_eq!(srq.take().map(|(w, f)| (w.wr_id, f)), Some((1, true)));
        assert_eq!(
            srq.take().map(|(w, f)| (w.wr_id, f)),
            Some((2, false)),
            "one-shot"
        );
        assert!(srq.take().is_none());
        assert!(srq.set_limit(1), "already below: fires at once");
    }
}
