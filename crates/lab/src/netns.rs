//! A network namespace owned by the process, and running code in it.
//!
//! The namespace is created by a keeper thread that `unshare`s into it and
//! lives as long as the [`Netns`]: it is anonymous, held by that thread, by
//! a descriptor and by the processes started in it, so when the process
//! ends in any way (a panic, a signal, `exit` with a lab in a static) the
//! kernel removes it with its bridge and taps. Long-lived children (QEMU,
//! tcpdump) are forked by the keeper with `PR_SET_PDEATHSIG`, so they die
//! with it. [`Netns::publish`] gives it a name under `/run/netns` for
//! humans (`ip netns exec NAME ...`); a published name whose process died
//! is removed by [`sweep_stale`] when the next lab starts.

use std::fs::File;
use std::os::fd::{AsRawFd, OwnedFd};
use std::process::{Child, Command, Output};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use crate::error::{Error, Result};
use crate::host;

/// The prefix of every lab's name (`rsndk-lab-PID-N`).
pub const NAME_PREFIX: &str = "rsndk-lab-";

type Job = Box<dyn FnOnce() + Send>;

/// A network namespace the lab created; cheap to clone (shared).
#[derive(Debug, Clone)]
pub struct Netns {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    name: String,
    /// `/proc/thread-self/ns/net` of the keeper, for `setns`.
    fd: OwnedFd,
    keeper_tid: i32,
    jobs: Mutex<Option<mpsc::Sender<Job>>>,
    keeper: Mutex<Option<JoinHandle<()>>>,
    published: Mutex<bool>,
}

impl Netns {
    /// Creates a namespace (with `lo` up) named `name` for messages.
    pub fn create(name: &str) -> Result<Self> {
        host::require_root()?;
        let (job_sender, jobs) = mpsc::channel::<Job>();
        let (ready_sender, ready) = mpsc::channel::<Result<(OwnedFd, i32)>>();
        let keeper = std::thread::Builder::new()
            .name(format!("netns {name}"))
            .spawn(move || {
                let created = enter_new_namespace();
                let ok = created.is_ok();
                let _ = ready_sender.send(created);
                if ok {
                    while let Ok(job) = jobs.recv() {
                        job();
                    }
                }
            })
            .map_err(|e| Error::io("cannot start the namespace's keeper thread", e))?;
        let (fd, keeper_tid) = ready
            .recv()
            .map_err(|_| Error::Guest("the namespace's keeper thread died".into()))??;
        let netns = Self {
            inner: Arc::new(Inner {
                name: name.to_owned(),
                fd,
                keeper_tid,
                jobs: Mutex::new(Some(job_sender)),
                keeper: Mutex::new(Some(keeper)),
                published: Mutex::new(false),
            }),
        };
        netns.ip(&["link", "set", "lo", "up"])?;
        Ok(netns)
    }

    /// The name given at creation.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// A path naming the namespace while it lives (for `nsenter --net=`).
    pub fn path(&self) -> String {
        format!(
            "/proc/{}/task/{}/ns/net",
            std::process::id(),
            self.inner.keeper_tid
        )
    }

    /// Runs `f` on a thread inside the namespace and returns its result;
    /// threads and processes `f` starts are inside too. A panic in `f` is
    /// resumed here.
    pub fn run<R: Send, F: FnOnce() -> R + Send>(&self, f: F) -> Result<R> {
        let fd = self.inner.fd.as_raw_fd();
        std::thread::scope(|scope| {
            let thread = scope.spawn(move || -> Result<R> {
                // SAFETY: `fd` is an open namespace descriptor owned by
                // `self` for the whole scope; setns changes only this thread.
                let rc = unsafe { libc::setns(fd, libc::CLONE_NEWNET) };
                if rc != 0 {
                    return Err(Error::io(
                        "cannot enter the lab's network namespace",
                        std::io::Error::last_os_error(),
                    ));
                }
                Ok(f())
            });
            match thread.join() {
                Ok(result) => result,
                Err(panic) => std::panic::resume_unwind(panic),
            }
        })
    }

    /// Runs `command` to completion inside the namespace; its output, or
    /// [`Error::Command`] if it fails.
    pub fn output(&self, command: &mut Command) -> Result<Output> {
        self.run(|| host::output(command))?
    }

    /// Runs `ip ARGS` inside the namespace; its stdout.
    pub fn ip(&self, args: &[&str]) -> Result<String> {
        let mut command = host::command(host::IP)?;
        command.args(args);
        let output = self.output(&mut command)?;
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    }

    /// Starts `command` inside the namespace as a child that is killed
    /// (SIGKILL) when the namespace's keeper ends: with this [`Netns`] or
    /// with the process.
    pub fn spawn_owned(&self, mut command: Command) -> Result<Child> {
        let (sender, receiver) = mpsc::channel();
        let job: Job = Box::new(move || {
            let die_with_keeper = || {
                // SAFETY: prctl(PR_SET_PDEATHSIG) takes plain integers and is
                // async-signal-safe.
                let rc = unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) };
                if rc == 0 {
                    Ok(())
                } else {
                    Err(std::io::Error::last_os_error())
                }
            };
            // SAFETY: the hook runs in the forked child before exec and only
            // makes one async-signal-safe system call.
            unsafe {
                std::os::unix::process::CommandExt::pre_exec(&mut command, die_with_keeper);
            }
            let line = host::describe(&command);
            let child = command
                .spawn()
                .map_err(|e| Error::io(format!("cannot start `{line}`"), e));
            let _ = sender.send(child);
        });
        let sent = self
            .inner
            .jobs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .as_ref()
            .is_some_and(|jobs| jobs.send(job).is_ok());
        if !sent {
            return Err(Error::Guest("the namespace's keeper thread is gone".into()));
        }
        receiver
            .recv()
            .map_err(|_| Error::Guest("the namespace's keeper thread died".into()))?
    }

    /// Names the namespace `/run/netns/NAME` (so `ip netns exec NAME` works)
    /// until it is dropped.
    pub fn publish(&self) -> Result<()> {
        let tid = self.inner.keeper_tid.to_string();
        host::run(host::command(host::IP)?.args(["netns", "attach", self.name(), &tid]))?;
        *self
            .inner
            .published
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = true;
        Ok(())
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        let published = *self
            .published
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if published {
            if let Ok(mut ip) = host::command(host::IP) {
                let _ = host::run(ip.args(["netns", "del", &self.name]));
            }
        }
        // Ends the keeper's loop: its children get SIGKILL, and the namespace
        // goes with the last reference.
        self.jobs
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(keeper) = self
            .keeper
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
        {
            let _ = keeper.join();
        }
    }
}

/// Moves the calling thread into a new network namespace; a descriptor of
/// it and the thread's id.
fn enter_new_namespace() -> Result<(OwnedFd, i32)> {
    // SAFETY: unshare(CLONE_NEWNET) affects only the calling thread.
    let rc = unsafe { libc::unshare(libc::CLONE_NEWNET) };
    if rc != 0 {
        return Err(Error::Missing(format!(
            "cannot create a network namespace ({}): run as root with CAP_SYS_ADMIN",
            std::io::Error::last_os_error()
        )));
    }
    let file = File::open("/proc/thread-self/ns/net")
        .map_err(|e| Error::io("cannot open /proc/thread-self/ns/net", e))?;
    // SAFETY: gettid has no preconditions.
    let tid = unsafe { libc::gettid() };
    Ok((OwnedFd::from(file), tid))
}

/// Whether process `pid` exists.
fn alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// The pid in a lab name `rsndk-lab-PID-N`.
pub fn pid_of_name(name: &str) -> Option<u32> {
    name.strip_prefix(NAME_PREFIX)?
        .split('-')
        .next()?
        .parse()
        .ok()
}

/// Removes what dead labs left: published namespaces `/run/netns/rsndk-lab-*`
/// (killing processes still in them) and run directories in the temporary
/// directory, whose creating process is gone.
pub fn sweep_stale() {
    if let Ok(entries) = std::fs::read_dir("/run/netns") {
        for entry in entries.filter_map(std::result::Result::ok) {
            let name = entry.file_name().to_string_lossy().into_owned();
            if pid_of_name(&name).is_some_and(|pid| !alive(pid)) {
                remove_stale_namespace(&name);
            }
        }
    }
    if let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) {
        for entry in entries.filter_map(std::result::Result::ok) {
            let name = entry.file_name().to_string_lossy().into_owned();
            if pid_of_name(&name).is_some_and(|pid| !alive(pid)) {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }
}

fn remove_stale_namespace(name: &str) {
    let Ok(mut ip) = host::command(host::IP) else {
        return;
    };
    if let Ok(pids) = host::run(ip.args(["netns", "pids", name])) {
        for pid in pids
            .lines()
            .filter_map(|line| line.trim().parse::<i32>().ok())
        {
            // SAFETY: kill takes plain integers; the pid is in the dead
            // lab's namespace (its QEMU or tcpdump).
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
    if let Ok(mut ip) = host::command(host::IP) {
        let _ = host::run(ip.args(["netns", "del", name]));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lab_names_carry_their_pid() {
        assert_eq!(pid_of_name("rsndk-lab-4242-3"), Some(4242));
        assert_eq!(pid_of_name("rsndk-lab-x-3"), None);
        assert_eq!(pid_of_name("other-4242-3"), None);
    }
}
