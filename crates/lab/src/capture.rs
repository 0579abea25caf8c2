//! tcpdump in the namespace, stopped cleanly (its buffers flushed).

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::host;
use crate::netns::Netns;

/// How long tcpdump may take to start listening.
const START_TIMEOUT: Duration = Duration::from_secs(20);

/// A running capture of one interface into a pcap file; stopped (SIGINT,
/// so tcpdump flushes) by [`Capture::stop`] or on drop.
#[derive(Debug)]
pub struct Capture {
    child: Option<Child>,
    path: PathBuf,
    stderr: Option<std::thread::JoinHandle<String>>,
}

/// What a stopped capture reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaptureStats {
    /// The pcap file.
    pub path: PathBuf,
    /// tcpdump's "N packets captured".
    pub packets: u64,
}

impl Capture {
    /// Starts `tcpdump -i DEV -w PATH` in `netns` and waits until it listens.
    pub fn start(netns: &Netns, dev: &str, path: &Path) -> Result<Self> {
        let mut command = host::command(host::TCPDUMP)?;
        command
            // Immediate mode: every frame is handed over as it arrives. Without
            // it, frames wait in a TPACKET_V3 block that this machine's
            // kernel may not retire until more traffic comes, and a stop
            // (SIGINT) loses them.
            .args([
                "-i",
                dev,
                "-n",
                "-U",
                "--immediate-mode",
                "-s",
                "0",
                "-Z",
                "root",
                "-w",
            ])
            .arg(path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let line = host::describe(&command);
        let mut child = netns.spawn_owned(command)?;
        let stderr = child
            .stderr
            .take()
            .ok_or_else(|| Error::Guest("tcpdump has no stderr pipe".into()))?;
        let (listening, heard) = mpsc::channel();
        let reader = std::thread::spawn(move || {
            let mut reader = BufReader::new(stderr);
            let mut text = String::new();
            let mut line = String::new();
            while reader.read_line(&mut line).unwrap_or(0) > 0 {
                if line.contains("listening on") {
                    let _ = listening.send(());
                }
                text.push_str(&line);
                line.clear();
            }
            let _ = reader.read_to_string(&mut text);
            text
        });
        let mut capture = Self {
            child: Some(child),
            path: path.to_path_buf(),
            stderr: Some(reader),
        };
        if heard.recv_timeout(START_TIMEOUT).is_err() {
            let said = capture.finish();
            return Err(Error::Command {
                command: line,
                status: None,
                output: format!("tcpdump did not start listening: {said}"),
            });
        }
        Ok(capture)
    }

    /// The pcap file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Stops tcpdump (SIGINT) and waits for it to flush and exit.
    pub fn stop(mut self) -> Result<CaptureStats> {
        let said = self.finish();
        let packets = said
            .lines()
            .find_map(|line| line.strip_suffix(" packets captured"))
            .and_then(|count| count.trim().parse().ok())
            .ok_or_else(|| Error::Command {
                command: "tcpdump".into(),
                status: None,
                output: format!("no packet count in tcpdump's report: {said}"),
            })?;
        Ok(CaptureStats {
            path: self.path.clone(),
            packets,
        })
    }

    /// Interrupts and reaps tcpdump; what it printed on stderr.
    fn finish(&mut self) -> String {
        if let Some(mut child) = self.child.take() {
            let pid = child.id() as i32;
            // SAFETY: kill takes plain integers; `pid` is our unreaped child.
            unsafe { libc::kill(pid, libc::SIGINT) };
            let exited =
                crate::agent::wait_for(Duration::from_secs(10), || child.try_wait().ok().flatten());
            if exited.is_none() {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
        self.stderr
            .take()
            .map(|reader| reader.join().unwrap_or_default())
            .unwrap_or_default()
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        self.finish();
    }
}
