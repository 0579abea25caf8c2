//! The stack: an [`Interface`] per bound V, keyed by the bottle's adapter
//! number, and one thread (a processor of its own) that processes what
//! V indicated, runs the timers, and hands what the interfaces produce to
//! what is [`Below`] the stack: frames to send, and the receive filter
//! (packet filter and multicast list) whenever an interface's groups
//! change, in the order they were produced.
//!
//! Received frames are only queued by [`Stack::receive`], so V's
//! indication returns at once and the stack never calls back into the
//! driver from inside one. Every state change happens under one lock;
//! address changes are handed to the observers under it, in order (so an
//! observer sees them in the order the table took them, and must not call
//! back into the stack). Frames and filters go down from the thread with
//! no lock held; [`Stack::unbind`] waits until the thread holds nothing
//! more for that V.

use std::collections::{BTreeMap, VecDeque};
use std::net::{IpAddr, Ipv6Addr};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use super::interface::{
    AddressChange, AddressRow, Counters, Interface, InterfaceInfo, Output, ReceiveFilter,
};
use crate::kernel::cpu;

/// Frames V indicated that the stack has not processed yet; more are
/// dropped (a receive ring that overflowed).
pub const RECEIVE_QUEUE: usize = 1024;
/// The identifier of the stack's echo requests (Windows' ping uses 1).
const ECHO_ID: u16 = 1;
/// How often [`Stack::ping`] sends another echo request while it waits.
const ECHO_INTERVAL: Duration = Duration::from_secs(1);
/// The longest the thread sleeps with nothing to do.
const IDLE_WAIT: Duration = Duration::from_secs(1);

/// What is below the stack: each V's send path and receive filter.
/// Called on the stack's thread (a processor at PASSIVE_LEVEL), with no
/// stack lock held.
pub trait Below: Send + Sync {
    /// Sends one Ethernet frame through `adapter`'s V (the frame is only
    /// borrowed: copy it).
    fn send_frame(&self, adapter: u32, frame: &[u8]);
    /// Sets what `adapter`'s V delivers (as TCP/IP's OID requests do).
    fn set_receive_filter(&self, adapter: u32, filter: &ReceiveFilter);
}

/// One thing for the thread to hand down.
#[derive(Debug)]
enum Down {
    Frame(u32, Vec<u8>),
    Filter(u32, ReceiveFilter),
}

impl Down {
    fn adapter(&self) -> u32 {
        match self {
            Self::Frame(a, _) | Self::Filter(a, _) => *a,
        }
    }
}

/// Told every address change of every interface, under the stack's lock.
pub type Observer = Box<dyn Fn(&AddressChange) + Send + Sync>;

#[derive(Debug)]
struct EchoWait {
    token: u64,
    adapter: u32,
    dst: IpAddr,
    /// Sequence numbers of the requests sent.
    seqs: Vec<u16>,
    answered: bool,
}

struct State {
    interfaces: BTreeMap<u32, Interface>,
    received: VecDeque<(u32, Vec<u8>)>,
    outbox: VecDeque<Down>,
    /// The receive filter last handed down, per adapter.
    filters: BTreeMap<u32, ReceiveFilter>,
    /// Adapters of what the thread is handing down now.
    busy: Vec<u32>,
    observers: Vec<(u64, Observer)>,
    next_observer: u64,
    next_seq: u16,
    next_token: u64,
    echo_waits: Vec<EchoWait>,
    dropped: u64,
    stop: bool,
}

struct Shared {
    below: Arc<dyn Below>,
    /// The stack's thread.
    thread: std::sync::OnceLock<thread::ThreadId>,
    state: Mutex<State>,
    /// Wakes the thread.
    wake: Condvar,
    /// Wakes [`Stack::ping`] and [`Stack::settle`].
    progress: Condvar,
}

fn lock(m: &Mutex<State>) -> MutexGuard<'_, State> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One TCP/IP stack over any number of Vs.
pub struct Stack {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Stack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let st = lock(&self.shared.state);
        f.debug_struct("Stack")
            .field("interfaces", &st.interfaces.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        lock(&self.shared.state).stop = true;
        self.shared.wake.notify_all();
    }
}

/// Queues what a step produced (a changed receive filter, then the
/// frames, to the outbox; changes to the observers; echo replies to the
/// waiters).
fn apply(shared: &Shared, st: &mut State, adapter: u32, out: Output) {
    if let Some(filter) = st.interfaces.get(&adapter).map(Interface::receive_filter) {
        if st.filters.get(&adapter) != Some(&filter) {
            st.filters.insert(adapter, filter.clone());
            st.outbox.push_back(Down::Filter(adapter, filter));
        }
    }
    for frame in out.frames {
        st.outbox.push_back(Down::Frame(adapter, frame));
    }
    for change in &out.changes {
        for (_, observer) in &st.observers {
            observer(change);
        }
    }
    for reply in &out.echo_replies {
        for w in &mut st.echo_waits {
            if w.adapter == adapter
                && w.dst == reply.from
                && reply.id == ECHO_ID
                && w.seqs.contains(&reply.seq)
            {
                w.answered = true;
            }
        }
    }
    if !out.echo_replies.is_empty() {
        shared.progress.notify_all();
    }
    shared.wake.notify_all();
}

fn run(shared: &Shared, name: &str) {
    cpu::enter(name);
    let _ = shared.thread.set(thread::current().id());
    let mut st = lock(&shared.state);
    loop {
        if st.stop {
            return;
        }
        let now = Instant::now();
        while let Some((adapter, frame)) = st.received.pop_front() {
            let out = match st.interfaces.get_mut(&adapter) {
                Some(i) => i.input(&frame, now),
                None => continue,
            };
            apply(shared, &mut st, adapter, out);
        }
        let adapters: Vec<u32> = st.interfaces.keys().copied().collect();
        for adapter in adapters {
            if let Some(out) = st.interfaces.get_mut(&adapter).map(|i| i.poll(now)) {
                apply(shared, &mut st, adapter, out);
            }
        }
        if !st.outbox.is_empty() {
            let batch: Vec<Down> = st.outbox.drain(..).collect();
            for down in &batch {
                let adapter = down.adapter();
                if matches!(down, Down::Frame(..)) {
                    if let Some(i) = st.interfaces.get_mut(&adapter) {
                        i.count_sent(1);
                    }
                }
                if !st.busy.contains(&adapter) {
                    st.busy.push(adapter);
                }
            }
            drop(st);
            for down in &batch {
                match down {
                    Down::Frame(adapter, frame) => shared.below.send_frame(*adapter, frame),
                    Down::Filter(adapter, filter) => {
                        shared.below.set_receive_filter(*adapter, filter);
                    }
                }
            }
            st = lock(&shared.state);
            st.busy.clear();
            shared.progress.notify_all();
            continue;
        }
        shared.progress.notify_all();
        if !st.received.is_empty() {
            continue;
        }
        let next = st
            .interfaces
            .values()
            .filter_map(Interface::next_deadline)
            .min();
        let wait = next.map_or(IDLE_WAIT, |t| t.saturating_duration_since(Instant::now()));
        if wait.is_zero() {
            continue;
        }
        st = shared
            .wake
            .wait_timeout(st, wait.min(IDLE_WAIT))
            .unwrap_or_else(PoisonError::into_inner)
            .0;
    }
}

impl Stack {
    /// A stack whose thread is the processor `name` and which hands its
    /// frames and filters to `below`.
    pub fn new(name: &str, below: Arc<dyn Below>) -> Self {
        let shared = Arc::new(Shared {
            below,
            thread: std::sync::OnceLock::new(),
            state: Mutex::new(State {
                interfaces: BTreeMap::new(),
                received: VecDeque::new(),
                outbox: VecDeque::new(),
                filters: BTreeMap::new(),
                busy: Vec::new(),
                observers: Vec::new(),
                next_observer: 1,
                next_seq: 1,
                next_token: 1,
                echo_waits: Vec::new(),
                dropped: 0,
                stop: false,
            }),
            wake: Condvar::new(),
            progress: Condvar::new(),
        });
        let thread_shared = Arc::clone(&shared);
        let name = name.to_owned();
        thread::Builder::new()
            .name(name.clone())
            .spawn(move || run(&thread_shared, &name))
            .expect("spawning the TCP/IP stack thread");
        Self { shared }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.shared.state)
    }

    /// Runs a step on `adapter`'s interface and queues what it produced;
    /// `None` if `adapter` has no interface.
    fn step<R>(&self, adapter: u32, f: impl FnOnce(&mut Interface) -> (Output, R)) -> Option<R> {
        let mut st = self.state();
        let (out, r) = f(st.interfaces.get_mut(&adapter)?);
        apply(&self.shared, &mut st, adapter, out);
        Some(r)
    }

    /// Adds `observer`; its number for [`Stack::unsubscribe`].
    pub fn subscribe(&self, observer: Observer) -> u64 {
        let mut st = self.state();
        let id = st.next_observer;
        st.next_observer += 1;
        st.observers.push((id, observer));
        id
    }

    /// Removes observer `id`.
    pub fn unsubscribe(&self, id: u64) {
        self.state().observers.retain(|(n, _)| *n != id);
    }

    /// V bound: a new interface with its link-local address; an error if
    /// the adapter already has one.
    pub fn bind(&self, info: InterfaceInfo, link_up: bool) -> Result<(), String> {
        let mut st = self.state();
        if st.interfaces.contains_key(&info.adapter) {
            return Err(format!("adapter {} is already bound", info.adapter));
        }
        let (interface, out) = Interface::new(
            info,
            link_up,
            Instant::now(),
            crate::kernel::ke::system_time(),
        );
        st.interfaces.insert(info.adapter, interface);
        apply(&self.shared, &mut st, info.adapter, out);
        Ok(())
    }

    /// V unbound: its addresses are deleted and its interface goes away,
    /// with what it had queued either way; returns once the thread hands
    /// nothing more to that V (so V may be paused and halted).
    pub fn unbind(&self, adapter: u32) {
        let mut st = self.state();
        let Some(mut interface) = st.interfaces.remove(&adapter) else {
            return;
        };
        let out = interface.teardown();
        for change in &out.changes {
            for (_, observer) in &st.observers {
                observer(change);
            }
        }
        st.received.retain(|(a, _)| *a != adapter);
        st.outbox.retain(|d| d.adapter() != adapter);
        st.filters.remove(&adapter);
        self.shared.progress.notify_all();
        if self.shared.thread.get() == Some(&thread::current().id()) {
            return;
        }
        while st.busy.contains(&adapter) {
            st = self
                .shared
                .progress
                .wait(st)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// A frame V indicated (copied): queued for the thread; dropped when
    /// the adapter has no interface or the queue is full.
    pub fn receive(&self, adapter: u32, frame: &[u8]) {
        let mut st = self.state();
        if !st.interfaces.contains_key(&adapter) {
            return;
        }
        if st.received.len() >= RECEIVE_QUEUE {
            st.dropped += 1;
            return;
        }
        st.received.push_back((adapter, frame.to_vec()));
        drop(st);
        self.shared.wake.notify_all();
    }

    /// V's link went up or down.
    pub fn set_link(&self, adapter: u32, up: bool) {
        self.step(adapter, |i| (i.set_link(up, Instant::now()), ()));
    }

    /// Adds a manual address to `adapter`'s interface.
    pub fn add_address(&self, adapter: u32, ip: IpAddr, prefix_len: u8) -> Result<(), String> {
        let created = crate::kernel::ke::system_time();
        self.step(adapter, |i| {
            match i.add_address(ip, prefix_len, Instant::now(), created) {
                Ok(out) => (out, Ok(())),
                Err(e) => (Output::default(), Err(e)),
            }
        })
        .unwrap_or_else(|| Err(format!("adapter {adapter} is not bound")))
    }

    /// Removes an address of `adapter`'s interface.
    pub fn remove_address(&self, adapter: u32, ip: IpAddr) -> Result<(), String> {
        self.step(adapter, |i| match i.remove_address(ip) {
            Ok(out) => (out, Ok(())),
            Err(e) => (Output::default(), Err(e)),
        })
        .unwrap_or_else(|| Err(format!("adapter {adapter} is not bound")))
    }

    /// `adapter`'s addresses and their prefix lengths (every DAD state).
    pub fn addresses(&self, adapter: u32) -> Vec<(IpAddr, u8)> {
        self.rows_of(adapter)
            .iter()
            .map(|r| (r.address.ip, r.address.prefix_len))
            .collect()
    }

    /// `adapter`'s address rows.
    pub fn rows_of(&self, adapter: u32) -> Vec<AddressRow> {
        self.state()
            .interfaces
            .get(&adapter)
            .map(Interface::rows)
            .unwrap_or_default()
    }

    /// Every interface's address rows, by adapter number.
    pub fn rows(&self) -> Vec<AddressRow> {
        self.state()
            .interfaces
            .values()
            .flat_map(Interface::rows)
            .collect()
    }

    /// `adapter`'s resolved neighbours.
    pub fn neighbours(&self, adapter: u32) -> Vec<(IpAddr, [u8; 6])> {
        self.state()
            .interfaces
            .get(&adapter)
            .map(Interface::neighbours)
            .unwrap_or_default()
    }

    /// `adapter`'s counters (zero when not bound).
    pub fn counters(&self, adapter: u32) -> Counters {
        self.state()
            .interfaces
            .get(&adapter)
            .map(Interface::counters)
            .unwrap_or_default()
    }

    /// `adapter`'s EUI-64 link-local address.
    pub fn link_local_v6(&self, adapter: u32) -> Option<Ipv6Addr> {
        self.state()
            .interfaces
            .get(&adapter)
            .and_then(Interface::link_local_v6)
    }

    /// `adapter`'s V, if bound.
    pub fn info(&self, adapter: u32) -> Option<InterfaceInfo> {
        self.state().interfaces.get(&adapter).map(Interface::info)
    }

    /// Frames dropped because the receive queue was full.
    pub fn dropped(&self) -> u64 {
        self.state().dropped
    }

    /// Pings `dst` from `adapter`: an echo request now and another every
    /// second; whether a reply came within `timeout`. False at once when
    /// the interface cannot send to `dst` (not bound, link down, no route,
    /// no source address).
    pub fn ping(&self, adapter: u32, dst: IpAddr, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut st = self.state();
        let token = st.next_token;
        st.next_token += 1;
        st.echo_waits.push(EchoWait {
            token,
            adapter,
            dst,
            seqs: Vec::new(),
            answered: false,
        });
        let mut next_send = Instant::now();
        let answered = loop {
            let now = Instant::now();
            if now >= next_send {
                let seq = st.next_seq;
                st.next_seq = st.next_seq.wrapping_add(1);
                let sent = st
                    .interfaces
                    .get_mut(&adapter)
                    .and_then(|i| i.echo(dst, ECHO_ID, seq, now).ok());
                let Some(out) = sent else {
                    break false;
                };
                if let Some(w) = st.echo_waits.iter_mut().find(|w| w.token == token) {
                    w.seqs.push(seq);
                }
                apply(&self.shared, &mut st, adapter, out);
                next_send = now + ECHO_INTERVAL;
            }
            if st.echo_waits.iter().any(|w| w.token == token && w.answered) {
                break true;
            }
            if now >= deadline {
                break false;
            }
            let until = next_send.min(deadline);
            st = self
                .shared
                .progress
                .wait_timeout(st, until.saturating_duration_since(now))
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        };
        st.echo_waits.retain(|w| w.token != token);
        answered
    }

    /// Waits until the stack has nothing queued and hands nothing down;
    /// whether that happened within `timeout`.
    pub fn settle(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut st = self.state();
        loop {
            if st.received.is_empty() && st.outbox.is_empty() && st.busy.is_empty() {
                return true;
            }
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            st = self
                .shared
                .progress
                .wait_timeout(st, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }
}
