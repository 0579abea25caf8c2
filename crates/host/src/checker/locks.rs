//! Spin-lock bookkeeping: the locks each thread holds (a stack, so
//! releases must be last-in first-out) and one process-wide lock-order
//! graph over lock classes.
//!
//! The graph has an edge `A -> B` once some thread acquired a lock of class
//! `B` while holding one of class `A`. An acquisition that would add an edge
//! closing a cycle means two code paths take the same classes in opposite
//! orders: a deadlock waiting for the right interleaving, reported even if
//! that interleaving never happens in the run. The edge is then not added,
//! so the graph stays acyclic and later reports stay precise. The graph is
//! global because lock order is a property of the code, not of one device.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};

use rustc_hash::FxHashSet;
use std::sync::{LazyLock, Mutex, PoisonError};

use provider::platform::LockClass;

use super::Rule;

/// A lock one thread holds.
#[derive(Clone, Copy, Debug)]
pub struct HeldLock {
    /// Its class.
    pub class: &'static LockClass,
    /// Its address.
    pub lock: usize,
}

thread_local! {
    static HELD: RefCell<Vec<HeldLock>> = const { RefCell::new(Vec::new()) };
    /// Edges this thread already found in the graph (saves the global
    /// lock on the common path).
    static KNOWN_EDGES: RefCell<FxHashSet<(usize, usize)>> = RefCell::new(FxHashSet::default());
}

/// Runs `f` on the calling thread's held-lock stack; `None` once the
/// thread's locals are destroyed. That happens before code that still
/// takes locks: a process leaving through `exit` runs the main thread's
/// thread-local destructors before its `atexit` handlers, so a consumer
/// that closes its adapter from one takes the provider's locks after
/// them. The thread is then untracked (nothing recorded, nothing
/// reported) instead of panicking inside a lock.
fn with_held<R>(f: impl FnOnce(&RefCell<Vec<HeldLock>>) -> R) -> Option<R> {
    HELD.try_with(f).ok()
}

/// Whether this thread already found `edge` in the graph (false once its
/// locals are destroyed: the graph is asked instead).
fn edge_known(edge: (usize, usize)) -> bool {
    KNOWN_EDGES
        .try_with(|k| k.borrow().contains(&edge))
        .unwrap_or(false)
}

/// Remembers that `edge` is in the graph, if this thread's locals live.
fn remember_edge(edge: (usize, usize)) {
    let _ = KNOWN_EDGES.try_with(|k| k.borrow_mut().insert(edge));
}

fn id(class: &'static LockClass) -> usize {
    std::ptr::from_ref(class).addr()
}

/// Classes by id, and edges `from -> [to]`.
#[derive(Default)]
struct OrderGraph {
    classes: HashMap<usize, &'static LockClass>,
    edges: HashMap<usize, Vec<usize>>,
}

impl OrderGraph {
    /// A path `from ->* to` (both ends included), if any.
    fn path(&self, from: usize, to: usize) -> Option<Vec<usize>> {
        let mut stack = vec![vec![from]];
        let mut seen = HashSet::from([from]);
        while let Some(path) = stack.pop() {
            let last = *path.last()?;
            if last == to {
                return Some(path);
            }
            for &next in self.edges.get(&last).into_iter().flatten() {
                if seen.insert(next) {
                    let mut longer = path.clone();
                    longer.push(next);
                    stack.push(longer);
                }
            }
        }
        None
    }

    fn name(&self, id: usize) -> &'static str {
        self.classes.get(&id).map_or("?", |c| c.name)
    }

    /// Adds `held -> acquired`, or describes the cycle it would close.
    fn add(
        &mut self,
        held: &'static LockClass,
        acquired: &'static LockClass,
    ) -> Result<(), String> {
        let (h, a) = (id(held), id(acquired));
        self.classes.insert(h, held);
        self.classes.insert(a, acquired);
        if self.edges.get(&h).is_some_and(|v| v.contains(&a)) {
            return Ok(());
        }
        if let Some(back) = self.path(a, h) {
            let mut cycle = vec![held.name];
            cycle.extend(back.iter().map(|&c| self.name(c)));
            return Err(format!(
                "acquiring {} while holding {}, but {} was taken before {} elsewhere: cycle {}",
                acquired.name,
                held.name,
                acquired.name,
                held.name,
                cycle.join(" -> ")
            ));
        }
        self.edges.entry(h).or_default().push(a);
        Ok(())
    }
}

fn graph() -> std::sync::MutexGuard<'static, OrderGraph> {
    static GRAPH: LazyLock<Mutex<OrderGraph>> = LazyLock::new(Mutex::default);
    GRAPH.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Every edge of the lock-order graph seen so far in this process, by
/// class name (`(held, acquired)`), sorted.
pub fn lock_order_edges() -> Vec<(&'static str, &'static str)> {
    let g = graph();
    let mut edges: Vec<_> = g
        .edges
        .iter()
        .flat_map(|(&from, to)| to.iter().map(move |&t| (from, t)))
        .map(|(from, to)| (g.name(from), g.name(to)))
        .collect();
    edges.sort_unstable();
    edges
}

/// Provider locks the calling thread holds.
pub fn locks_held() -> usize {
    with_held(|h| h.borrow().len()).unwrap_or(0)
}

/// Lock bookkeeping operations; each returns the violations it found.
#[derive(Debug)]
pub struct LockTracker;

impl LockTracker {
    /// Names of the locks the calling thread holds, oldest first.
    pub fn held_names() -> Vec<&'static str> {
        with_held(|h| h.borrow().iter().map(|l| l.class.name).collect()).unwrap_or_default()
    }

    /// The calling thread acquired `lock` of `class` holding no other
    /// lock, with room to record it: recorded, `true` (nothing to check).
    /// `false`: nothing recorded; [`LockTracker::acquired`] does the
    /// checks. Kept small so a post's one lock costs no more than a push.
    #[inline]
    pub fn acquired_first(class: &'static LockClass, lock: usize) -> bool {
        with_held(|h| {
            let Ok(mut h) = h.try_borrow_mut() else {
                return false;
            };
            let room = h.is_empty() && h.capacity() > 0;
            if room {
                h.push(HeldLock { class, lock });
            }
            room
        })
        .unwrap_or(false)
    }

    /// The calling thread released `lock`, the last one it acquired:
    /// recorded, `true`. `false`: nothing recorded; [`LockTracker::released`]
    /// does the checks.
    #[inline]
    pub fn released_last(lock: usize) -> bool {
        with_held(|h| {
            let Ok(mut h) = h.try_borrow_mut() else {
                return false;
            };
            let last = h.last().is_some_and(|l| l.lock == lock);
            if last {
                h.pop();
            }
            last
        })
        .unwrap_or(false)
    }

    /// The calling thread acquired `lock` of `class`.
    pub fn acquired(class: &'static LockClass, lock: usize) -> Vec<(Rule, String)> {
        // The common case (no other lock held) stays cheap: posting paths
        // take one lock per call.
        // The held stack is borrowed, not copied, while it is checked: a
        // nested acquire on the engine's path then allocates nothing (the
        // graph is another lock; nothing here takes this thread's stack).
        let found = with_held(|h| {
            let mut held = h.borrow_mut();
            if held.is_empty() {
                held.push(HeldLock { class, lock });
                return Vec::new();
            }
            let found = Self::check_nested(&held, class, lock);
            held.push(HeldLock { class, lock });
            found
        });
        // `None`: the thread is untracked (see `with_held`).
        found.unwrap_or_default()
    }

    /// What acquiring `lock` of `class` while holding `held` breaks; the
    /// order edges it adds recorded in the graph.
    fn check_nested(
        held: &[HeldLock],
        class: &'static LockClass,
        lock: usize,
    ) -> Vec<(Rule, String)> {
        let mut found = Vec::new();
        for (i, h) in held.iter().enumerate() {
            // One edge per class held, however many of its locks are held.
            let class_seen = held[..i].iter().any(|p| id(p.class) == id(h.class));
            if h.lock == lock {
                found.push((
                    Rule::RecursiveLock,
                    format!(
                        "spin lock {} acquired again by the thread that holds it",
                        class.name
                    ),
                ));
            } else if id(h.class) == id(class) {
                if !class.nestable {
                    found.push((
                        Rule::SameClassNesting,
                        format!(
                            "two locks of class {} held at once (the class is not declared nestable)",
                            class.name
                        ),
                    ));
                }
            } else if !class_seen {
                let edge = (id(h.class), id(class));
                if edge_known(edge) {
                    continue;
                }
                match graph().add(h.class, class) {
                    Ok(()) => remember_edge(edge),
                    Err(cycle) => found.push((Rule::LockOrderInversion, cycle)),
                }
            }
        }
        found
    }

    /// The calling thread is releasing `lock` of `class`.
    pub fn released(class: &'static LockClass, lock: usize) -> Vec<(Rule, String)> {
        with_held(|h| {
            let mut held = h.borrow_mut();
            if held.last().is_some_and(|l| l.lock == lock) {
                held.pop();
                return Vec::new();
            }
            let Some(at) = held.iter().rposition(|l| l.lock == lock) else {
                return vec![(
                    Rule::LockNotHeld,
                    format!(
                        "spin lock {} released by a thread that does not hold it",
                        class.name
                    ),
                )];
            };
            let later: Vec<&str> = held[at + 1..].iter().map(|l| l.class.name).collect();
            held.remove(at);
            if later.is_empty() {
                Vec::new()
            } else {
                vec![(
                    Rule::LockReleaseOrder,
                    format!(
                        "spin lock {} released while {} (acquired after it) still held",
                        class.name,
                        later.join(", ")
                    ),
                )]
            }
        })
        .unwrap_or_default()
    }
}
