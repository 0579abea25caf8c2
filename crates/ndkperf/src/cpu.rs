//! CPU time of threads of this process (Linux), so a run can say what
//! each side cost: its consumer threads (the workload's own, busy polling
//! included) and its adapter's engine threads. A thread's time on a CPU
//! in nanoseconds comes from its CPU-time clock (`clock_gettime` of the
//! thread's clock id, which brings a running thread's count up to date),
//! else from `/proc/self/task/TID/schedstat` (up to a scheduler tick
//! behind for a running thread), else `stat`'s user and system ticks.
//! Threads are listed from `/proc/self/task`.

use std::collections::BTreeSet;
use std::time::Instant;

/// Clock ticks per second of `/proc/*/stat` (`USER_HZ`, 100 on Linux).
const USER_HZ: u64 = 100;

/// The calling thread's id (`/proc/thread-self`), if `/proc` is there.
pub fn current_tid() -> Option<u32> {
    let link = std::fs::read_link("/proc/thread-self").ok()?;
    link.file_name()?.to_str()?.parse().ok()
}

/// The ids of this process's threads now. One read of `/proc/self/task`
/// can skip a live thread while others start or exit (procfs walks the
/// thread list by position: CI saw the test thread itself missing), so the
/// directory is read until two reads agree (at most 8 reads) and every id
/// any read saw is returned; a thread that exited meanwhile may be among
/// them.
pub fn threads() -> BTreeSet<u32> {
    let read = || -> BTreeSet<u32> {
        std::fs::read_dir("/proc/self/task")
            .map(|dir| {
                dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut last = read();
    let mut seen = last.clone();
    for _ in 1..8 {
        let now = read();
        seen.extend(now.iter().copied());
        if now == last {
            break;
        }
        last = now;
    }
    seen
}

/// Nanoseconds thread `tid` of this process has run on a CPU; `None`
/// once it has exited (or without `/proc`).
pub fn thread_cpu_ns(tid: u32) -> Option<u64> {
    if let Some(ns) = clock_ns(tid) {
        return Some(ns);
    }
    if let Ok(text) = std::fs::read_to_string(format!("/proc/self/task/{tid}/schedstat")) {
        if let Some(ns) = text.split_whitespace().next().and_then(|v| v.parse().ok()) {
            return Some(ns);
        }
    }
    let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).ok()?;
    ticks_of_stat(&stat).map(|t| t * (1_000_000_000 / USER_HZ))
}

/// The CPU-time clock of thread `tid` of this process: Linux's
/// `MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED)`, `(~tid << 3) | 6`
/// (include/linux/posix-timers.h), which `clock_gettime` accepts for any
/// thread of the caller's process.
fn clock_ns(tid: u32) -> Option<u64> {
    let tid = i32::try_from(tid).ok()?;
    let clock: libc::clockid_t = (!tid << 3) | 6;
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid out-pointer; a clock id of no thread of this
    // process makes the call fail (EINVAL), nothing else.
    let rc = unsafe { libc::clock_gettime(clock, &raw mut ts) };
    if rc != 0 {
        return None;
    }
    let secs = u64::try_from(ts.tv_sec).ok()?;
    let nanos = u64::try_from(ts.tv_nsec).ok()?;
    Some(secs * 1_000_000_000 + nanos)
}

/// utime + stime (fields 14 and 15) of a `stat` line; the command name
/// (field 2, in parentheses) may hold spaces, so fields count from its
/// closing parenthesis.
fn ticks_of_stat(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace().skip(11);
    let user: u64 = fields.next()?.parse().ok()?;
    let system: u64 = fields.next()?.parse().ok()?;
    Some(user + system)
}

/// The summed CPU time of `tids` (threads that have exited count 0).
pub fn cpu_ns_of(tids: &[u32]) -> u64 {
    tids.iter().filter_map(|&t| thread_cpu_ns(t)).sum()
}

/// A start mark of a set of threads: their CPU time and the wall clock.
#[derive(Debug, Clone)]
pub struct Mark {
    tids: Vec<u32>,
    cpu_ns: u64,
    at: Instant,
}

impl Mark {
    /// Marks `tids` now.
    pub fn now(tids: &[u32]) -> Self {
        Self {
            tids: tids.to_vec(),
            cpu_ns: cpu_ns_of(tids),
            at: Instant::now(),
        }
    }

    /// The calling thread alone.
    pub fn this_thread() -> Self {
        Self::now(&current_tid().into_iter().collect::<Vec<_>>())
    }

    /// (CPU nanoseconds, wall nanoseconds) since the mark.
    pub fn elapsed(&self) -> (u64, u64) {
        let cpu = cpu_ns_of(&self.tids).saturating_sub(self.cpu_ns);
        let wall = u64::try_from(self.at.elapsed().as_nanos()).unwrap_or(u64::MAX);
        (cpu, wall)
    }
}

/// CPU time of one side over a run: its consumer threads and its
/// adapters' engine threads, and the wall time they are measured over.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SideCpu {
    /// Consumer threads (the workload's own, busy polling included).
    pub consumer_ns: u64,
    /// Engine threads of the side's adapters (0 for TCP: the kernel's
    /// work is in the consumers' system time).
    pub engine_ns: u64,
    /// The wall time measured over.
    pub wall_ns: u64,
}

impl SideCpu {
    /// The CPU time since `consumer` (the side's consumer threads) and
    /// `engine` (its engine threads, if any) were marked, over the wall
    /// time since `consumer` was.
    pub fn since(consumer: &Mark, engine: Option<&Mark>) -> Self {
        let (consumer_ns, wall_ns) = consumer.elapsed();
        Self {
            consumer_ns,
            engine_ns: engine.map_or(0, |e| e.elapsed().0),
            wall_ns,
        }
    }

    /// Consumer and engine time together.
    pub fn total_ns(&self) -> u64 {
        self.consumer_ns + self.engine_ns
    }

    /// Percent of one core over the wall time (more than 100 with
    /// several busy threads).
    pub fn percent(ns: u64, wall_ns: u64) -> f64 {
        if wall_ns == 0 {
            0.0
        } else {
            ns as f64 / wall_ns as f64 * 100.0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The thread clock and schedstat agree (within the scheduler tick
    /// schedstat may lag), and a thread of no process reads nothing.
    #[test]
    fn the_thread_clock_reads_this_threads_time() {
        let tid = current_tid().unwrap();
        let text = std::fs::read_to_string(format!("/proc/self/task/{tid}/schedstat")).unwrap();
        let sched: u64 = text.split_whitespace().next().unwrap().parse().unwrap();
        // Read after schedstat: the thread's time only grows, and
        // schedstat may be up to date or lag, never lead.
        let clock = clock_ns(tid).expect("the thread's CPU clock");
        assert!(
            clock >= sched && clock - sched < 50_000_000,
            "{clock} {sched}"
        );
        // A short burst is seen at once by the clock.
        let before = clock_ns(tid).unwrap();
        let until = Instant::now() + std::time::Duration::from_millis(2);
        while Instant::now() < until {}
        assert!(clock_ns(tid).unwrap() - before >= 1_000_000);
        assert_eq!(clock_ns(u32::MAX), None);
    }

    #[test]
    fn stat_fields_count_from_the_command_name() {
        let line = "4242 (a (b) c) S 1 2 3 4 5 6 7 8 9 10 250 17 0 0 20 0 1 0";
        assert_eq!(ticks_of_stat(line), Some(267));
        assert_eq!(ticks_of_stat("garbage"), None);
    }

    /// A thread that spins shows CPU time growing, never more than the
    /// wall time that passed; one that sleeps shows almost none. The spin
    /// goes on until 100 ms of CPU show (or 20 s pass, a failure): on a
    /// loaded machine a spinning thread gets less than its wall time.
    #[test]
    fn a_spinning_thread_costs_cpu_and_a_sleeping_one_does_not() {
        let tid = current_tid().expect("/proc/thread-self");
        assert!(threads().contains(&tid));
        let mark = Mark::this_thread();
        let deadline = Instant::now() + std::time::Duration::from_secs(20);
        let mut x = 0u64;
        loop {
            let chunk = Instant::now() + std::time::Duration::from_millis(5);
            while Instant::now() < chunk {
                x = std::hint::black_box(x.wrapping_add(1));
            }
            let (cpu, wall) = mark.elapsed();
            assert!(cpu <= wall + 20_000_000, "{cpu} ns of CPU in {wall} ns");
            if cpu >= 100_000_000 {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "a thread spinning for {wall} ns shows {cpu} ns of CPU"
            );
        }
        let mark = Mark::this_thread();
        std::thread::sleep(std::time::Duration::from_millis(100));
        let (cpu, wall) = mark.elapsed();
        assert!(cpu < 30_000_000 && wall >= 100_000_000, "{cpu} of {wall}");
    }
}
