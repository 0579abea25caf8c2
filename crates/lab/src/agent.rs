//! The host side of the guest's command channel (see `guest_files` for the
//! guest side): command scripts and outputs through the 9p share, command
//! ids through the virtio-serial port.

use std::io::Write;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};

/// What a finished guest command left.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    /// Its shell's exit status (128 + N when signal N ended it).
    pub status: i32,
    /// Its standard output.
    pub stdout: Vec<u8>,
    /// Its standard error.
    pub stderr: Vec<u8>,
}

impl Output {
    /// Whether the status is 0.
    pub fn success(&self) -> bool {
        self.status == 0
    }

    /// Standard output as text (lossy).
    pub fn stdout_text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    /// Standard error as text (lossy).
    pub fn stderr_text(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }
}

/// The channel to one guest's agent.
#[derive(Debug)]
pub struct Channel {
    share: PathBuf,
    port: Mutex<UnixStream>,
    next_id: AtomicU64,
}

impl Channel {
    /// A channel over the share directory `share` and the connected port.
    pub fn new(share: &Path, port: UnixStream) -> Self {
        Self {
            share: share.to_path_buf(),
            port: Mutex::new(port),
            next_id: AtomicU64::new(1),
        }
    }

    fn out(&self, id: u64, suffix: &str) -> PathBuf {
        self.share.join("out").join(format!("{id}.{suffix}"))
    }

    /// Starts `script` (sh) in the guest; its id.
    pub fn submit(&self, script: &str) -> Result<u64> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let cmd_dir = self.share.join("cmd");
        let temporary = cmd_dir.join(format!("{id}.tmp"));
        let text = format!("cd /\n{script}\n");
        std::fs::write(&temporary, text)
            .and_then(|()| std::fs::rename(&temporary, cmd_dir.join(format!("{id}.sh"))))
            .map_err(|e| Error::io("cannot write a guest command", e))?;
        let mut port = self
            .port
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        port.write_all(format!("{id}\n").as_bytes()).map_err(|e| {
            Error::Guest(format!(
                "the guest's command port is closed ({e}): did QEMU exit?"
            ))
        })?;
        Ok(id)
    }

    /// The guest pid (and process group) of command `id`, once started.
    pub fn pid(&self, id: u64, timeout: Duration) -> Result<u32> {
        let path = self.out(id, "pid");
        wait_for(timeout, || {
            std::fs::read_to_string(&path)
                .ok()
                .and_then(|text| text.trim().parse().ok())
        })
        .ok_or_else(|| Error::Timeout {
            what: format!("the guest agent to start command {id}"),
            after: timeout,
        })
    }

    /// Command `id`'s exit status if it has finished.
    pub fn status(&self, id: u64) -> Option<i32> {
        std::fs::read_to_string(self.out(id, "rc"))
            .ok()
            .and_then(|text| text.trim().parse().ok())
    }

    /// Waits up to `timeout` for command `id` to finish; its output, or
    /// None if it is still running.
    pub fn wait(&self, id: u64, timeout: Duration) -> Option<Output> {
        let status = wait_for(timeout, || self.status(id))?;
        Some(self.collect(id, status))
    }

    /// What command `id` has written so far (for timeout messages).
    pub fn partial(&self, id: u64) -> String {
        let read = |suffix| std::fs::read(self.out(id, suffix)).unwrap_or_default();
        format!(
            "stdout so far: {:?}; stderr so far: {:?}",
            String::from_utf8_lossy(&read("out")),
            String::from_utf8_lossy(&read("err"))
        )
    }

    /// Reads and removes command `id`'s files.
    fn collect(&self, id: u64, status: i32) -> Output {
        let read = |suffix| std::fs::read(self.out(id, suffix)).unwrap_or_default();
        let output = Output {
            status,
            stdout: read("out"),
            stderr: read("err"),
        };
        for suffix in ["out", "err", "pid", "rc"] {
            let _ = std::fs::remove_file(self.out(id, suffix));
        }
        let _ = std::fs::remove_file(self.share.join("cmd").join(format!("{id}.sh")));
        output
    }
}

/// Polls `probe` (every 1 ms at first, backing off to 20 ms) until it
/// yields or `timeout` passes.
pub fn wait_for<T>(timeout: Duration, mut probe: impl FnMut() -> Option<T>) -> Option<T> {
    let started = Instant::now();
    let mut pause = Duration::from_millis(1);
    loop {
        if let Some(value) = probe() {
            return Some(value);
        }
        if started.elapsed() >= timeout {
            return None;
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(20));
    }
}
