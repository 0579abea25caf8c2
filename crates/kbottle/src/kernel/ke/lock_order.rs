//! Driver Verifier's deadlock detection for spin locks: one machine-wide
//! graph with an edge `A -> B` once a processor acquired lock `B` while
//! holding lock `A`. An acquire whose edge would close a cycle means two
//! code paths take the same locks in opposite orders, a deadlock waiting
//! for the right interleaving; it is reported (0xC4/0x1001) even if that
//! interleaving never happens in the run, as Verifier does.
//!
//! Nodes are lock addresses, as Verifier's are lock instances (the kernel
//! knows nothing of a driver's lock classes). A lock whose memory is freed
//! (pool, an MDL's memory, an unloaded image) leaves the graph, so a new
//! lock at a reused address starts with no history; Verifier forgets a
//! resource when the pool holding it is freed for the same reason.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::ops::Range;
use std::sync::Mutex;

use crate::sync::lock;

/// Edges by source and by target, both keyed by lock address so a freed
/// range leaves in one range query.
#[derive(Default)]
struct OrderGraph {
    after: BTreeMap<usize, BTreeSet<usize>>,
    before: BTreeMap<usize, BTreeSet<usize>>,
}

static GRAPH: Mutex<OrderGraph> = Mutex::new(OrderGraph {
    after: BTreeMap::new(),
    before: BTreeMap::new(),
});

impl OrderGraph {
    /// A path `from ->* to`, both ends included, if any.
    fn path(&self, from: usize, to: usize) -> Option<Vec<usize>> {
        let mut stack = vec![vec![from]];
        let mut seen = HashSet::from([from]);
        while let Some(path) = stack.pop() {
            let last = *path.last()?;
            if last == to {
                return Some(path);
            }
            for &next in self.after.get(&last).into_iter().flatten() {
                if seen.insert(next) {
                    let mut longer = path.clone();
                    longer.push(next);
                    stack.push(longer);
                }
            }
        }
        None
    }

    fn has_edge(&self, from: usize, to: usize) -> bool {
        self.after.get(&from).is_some_and(|s| s.contains(&to))
    }

    fn insert(&mut self, from: usize, to: usize) {
        self.after.entry(from).or_default().insert(to);
        self.before.entry(to).or_default().insert(from);
    }

    /// Removes every node in `range` with its edges.
    fn forget(&mut self, range: Range<usize>) {
        let gone: Vec<usize> = self
            .after
            .range(range.clone())
            .chain(self.before.range(range.clone()))
            .map(|(&n, _)| n)
            .collect();
        for n in gone {
            for to in self.after.remove(&n).into_iter().flatten() {
                if let Some(s) = self.before.get_mut(&to) {
                    s.remove(&n);
                }
            }
            for from in self.before.remove(&n).into_iter().flatten() {
                if let Some(s) = self.after.get_mut(&from) {
                    s.remove(&n);
                }
            }
        }
    }
}

/// A lock-order cycle an acquire would close.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OrderViolation {
    /// The held lock that was taken after `acquired` elsewhere.
    pub held: usize,
    /// The cycle by lock address: `held`, `acquired`, ..., `held`.
    pub cycle: Vec<usize>,
}

/// The calling processor, holding `held` (oldest first), acquires
/// `acquired`: records `held -> acquired` for each, or returns the first
/// cycle one of them would close (that edge is then not added, so the
/// graph stays acyclic and later reports stay precise).
pub(super) fn check_acquire(acquired: usize, held: &[usize]) -> Result<(), OrderViolation> {
    if held.is_empty() {
        return Ok(());
    }
    let mut graph = lock(&GRAPH);
    for &h in held {
        if graph.has_edge(h, acquired) {
            continue;
        }
        if let Some(back) = graph.path(acquired, h) {
            let mut cycle = vec![h];
            cycle.extend(back);
            return Err(OrderViolation { held: h, cycle });
        }
        graph.insert(h, acquired);
    }
    Ok(())
}

/// Locks in `range` leave the graph (their memory is freed).
pub(super) fn forget(range: Range<usize>) {
    let mut graph = lock(&GRAPH);
    if !graph.after.is_empty() {
        graph.forget(range);
    }
}

/// Every lock-order edge recorded so far, `(held, acquired)` by address,
/// sorted: what the driver's runs taught the graph.
pub fn lock_order_edges() -> Vec<(usize, usize)> {
    let graph = lock(&GRAPH);
    graph
        .after
        .iter()
        .flat_map(|(&from, to)| to.iter().map(move |&t| (from, t)))
        .collect()
}
