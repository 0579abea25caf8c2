//! One QEMU guest on the lab's bridge: boot, commands, rxe state.

use std::collections::BTreeMap;
use std::fs::File;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::agent::{Channel, Output};
use crate::error::{Error, Result};
use crate::host;
use crate::image::Image;
use crate::net;
use crate::netns::Netns;
use crate::qemu::Accel;

/// Where the guest's serial console goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Console {
    /// To `console.log` in the guest's run directory (tests).
    Log,
    /// To this process's terminal, interactive (`lab shell`; Ctrl-A X quits QEMU).
    Terminal,
}

/// How to boot a guest.
#[derive(Debug, Clone)]
pub struct GuestConfig {
    /// Memory in MiB.
    pub memory_mib: u32,
    /// Where the console goes.
    pub console: Console,
    /// How long boot may take (QEMU start to the agent ready).
    pub boot_timeout: Duration,
}

impl Default for GuestConfig {
    fn default() -> Self {
        Self {
            memory_mib: 1024,
            console: Console::Log,
            boot_timeout: Duration::from_secs(180),
        }
    }
}

/// The default timeout of [`Guest::run`].
pub const RUN_TIMEOUT: Duration = Duration::from_secs(60);

/// A booted guest: eth0 on the lab's bridge, `rxe0` ACTIVE on it, its agent
/// ready. Dropping it kills QEMU and removes its tap and files.
#[derive(Debug)]
pub struct Guest {
    index: usize,
    name: String,
    tap: String,
    dir: PathBuf,
    netns: Netns,
    channel: Arc<Channel>,
    qemu: Mutex<Child>,
    boot_time: Duration,
}

impl Guest {
    /// Boots guest `index` of the lab (addresses from [`net::guest_ipv4`]
    /// and friends) with its files under `run_dir`.
    pub fn boot(
        netns: &Netns,
        image: &Image,
        accel: Accel,
        run_dir: &Path,
        index: usize,
        config: &GuestConfig,
    ) -> Result<Self> {
        let qemu_path = host::find(host::QEMU)?;
        let name = format!("lab-guest{index}");
        let tap = format!("lab-tap{index}");
        let dir = run_dir.join(&name);
        let share = dir.join("share");
        for sub in ["cmd", "out"] {
            std::fs::create_dir_all(share.join(sub))
                .map_err(|e| Error::io(format!("cannot create {}", share.display()), e))?;
        }
        let socket_path = dir.join("ctl.sock");
        let listener = UnixListener::bind(&socket_path)
            .map_err(|e| Error::io(format!("cannot bind {}", socket_path.display()), e))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| Error::io("cannot make the port listener non-blocking", e))?;
        net::add_persistent_tap(netns, &tap)?;

        let mac = net::guest_mac(index);
        let append = format!(
            "console=ttyS0 quiet panic=-1 no_timer_check lab_name={name} lab_mac={mac} lab_ip4={}/{} lab_ip6={}/{}",
            net::guest_ipv4(index),
            net::IPV4_PREFIX,
            net::guest_ipv6(index),
            net::IPV6_PREFIX
        );
        let mut command = std::process::Command::new(qemu_path);
        command
            .args(["-name", &name, "-M", "pc"])
            .args(accel.args())
            .args(["-smp", "1", "-m", &config.memory_mib.to_string()])
            .args(["-nodefaults", "-no-reboot", "-nographic"])
            .arg("-kernel")
            .arg(&image.kernel)
            .arg("-initrd")
            .arg(&image.initrd)
            .args(["-append", &append])
            .args([
                "-netdev",
                &format!("tap,id=net0,ifname={tap},script=no,downscript=no"),
                "-device",
                // No option ROM: the kernel is loaded directly, iPXE only costs time.
                &format!("virtio-net-pci,netdev=net0,mac={mac},romfile="),
                "-fsdev",
                &format!(
                    "local,id=share,path={},security_model=none",
                    share.display()
                ),
                "-device",
                "virtio-9p-pci,fsdev=share,mount_tag=lab",
                "-chardev",
                &format!("socket,id=ctl,path={}", socket_path.display()),
                "-device",
                "virtio-serial-pci",
                "-device",
                "virtserialport,chardev=ctl,name=rsndk.lab",
            ]);
        let qemu_log = dir.join("qemu.log");
        let stderr = File::create(&qemu_log)
            .map_err(|e| Error::io(format!("cannot create {}", qemu_log.display()), e))?;
        match config.console {
            Console::Log => {
                command
                    .args(["-monitor", "none", "-serial"])
                    .arg(format!("file:{}", dir.join("console.log").display()))
                    .stdin(Stdio::null())
                    .stdout(Stdio::null());
            }
            Console::Terminal => {
                command.args(["-serial", "mon:stdio"]);
            }
        }
        command.stderr(stderr);
        let started = Instant::now();
        let child = netns.spawn_owned(command)?;
        let mut guest = Self {
            index,
            name,
            tap,
            dir,
            netns: netns.clone(),
            channel: Arc::new(Channel::new(&share, placeholder_stream()?)),
            qemu: Mutex::new(child),
            boot_time: Duration::ZERO,
        };
        let port = guest.wait_for_port(&listener, started, config.boot_timeout)?;
        guest.channel = Arc::new(Channel::new(&share, port));
        guest.wait_for_agent(&share, started, config.boot_timeout)?;
        guest.boot_time = started.elapsed();
        Ok(guest)
    }

    fn wait_for_port(
        &self,
        listener: &UnixListener,
        started: Instant,
        timeout: Duration,
    ) -> Result<std::os::unix::net::UnixStream> {
        loop {
            match listener.accept() {
                Ok((stream, _)) => {
                    stream
                        .set_nonblocking(false)
                        .map_err(|e| Error::io("cannot configure the command port", e))?;
                    return Ok(stream);
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(Error::io("cannot accept QEMU's command port", e)),
            }
            self.check_booting(started, timeout, "QEMU to connect the command port")?;
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn wait_for_agent(&self, share: &Path, started: Instant, timeout: Duration) -> Result<()> {
        loop {
            if share.join("ready").exists() {
                return Ok(());
            }
            if let Ok(reason) = std::fs::read_to_string(share.join("boot-failed")) {
                return Err(Error::Guest(format!(
                    "{} failed to boot: {}\n{}",
                    self.name,
                    reason.trim(),
                    self.diagnostics()
                )));
            }
            self.check_booting(started, timeout, "the guest's agent")?;
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn check_booting(&self, started: Instant, timeout: Duration, what: &str) -> Result<()> {
        let exited = self
            .qemu
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .try_wait()
            .ok()
            .flatten();
        if let Some(status) = exited {
            return Err(Error::Guest(format!(
                "QEMU of {} exited ({status}) while waiting for {what}\n{}",
                self.name,
                self.diagnostics()
            )));
        }
        if started.elapsed() > timeout {
            return Err(Error::Guest(format!(
                "{} not ready after {:.0} s waiting for {what}\n{}",
                self.name,
                timeout.as_secs_f64(),
                self.diagnostics()
            )));
        }
        Ok(())
    }

    /// QEMU's stderr and the console's last lines, for failure messages.
    fn diagnostics(&self) -> String {
        let qemu = std::fs::read_to_string(self.dir.join("qemu.log")).unwrap_or_default();
        let console = self.console_log();
        let lines: Vec<&str> = console.lines().collect();
        let tail = lines[lines.len().saturating_sub(30)..].join("\n");
        format!(
            "qemu stderr: {}\nconsole (last lines):\n{tail}",
            qemu.trim()
        )
    }

    /// Its index in the lab (0 for the first).
    pub fn index(&self) -> usize {
        self.index
    }

    /// Its name (also its hostname), `lab-guestN`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its tap on the bridge (capture here to see all its frames).
    pub fn tap(&self) -> &str {
        &self.tap
    }

    /// Its eth0 IPv4 address.
    pub fn ipv4(&self) -> Ipv4Addr {
        net::guest_ipv4(self.index)
    }

    /// Its eth0 IPv6 address.
    pub fn ipv6(&self) -> Ipv6Addr {
        net::guest_ipv6(self.index)
    }

    /// Its eth0 MAC address.
    pub fn mac(&self) -> String {
        net::guest_mac(self.index)
    }

    /// From QEMU's start to the agent ready (rxe0 ACTIVE).
    pub fn boot_time(&self) -> Duration {
        self.boot_time
    }

    /// The serial console so far (empty with [`Console::Terminal`]).
    pub fn console_log(&self) -> String {
        std::fs::read(self.dir.join("console.log"))
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
            .unwrap_or_default()
    }

    /// Runs `script` (sh) in the guest with a [`RUN_TIMEOUT`]; any exit
    /// status is returned, not an error.
    pub fn run(&self, script: &str) -> Result<Output> {
        self.run_timeout(script, RUN_TIMEOUT)
    }

    /// Runs `script` in the guest; after `timeout` its process group is
    /// killed and [`Error::Timeout`] says what it had printed.
    pub fn run_timeout(&self, script: &str, timeout: Duration) -> Result<Output> {
        let background = self.spawn(script)?;
        background.wait(timeout)
    }

    /// Runs `script` and returns its stdout, or [`Error::Guest`] with its
    /// output if it exits non-zero.
    pub fn run_ok(&self, script: &str) -> Result<String> {
        let output = self.run(script)?;
        if output.success() {
            Ok(output.stdout_text())
        } else {
            Err(Error::Guest(format!(
                "`{script}` exited with {} in {}: {}{}",
                output.status,
                self.name,
                output.stderr_text(),
                output.stdout_text()
            )))
        }
    }

    /// Starts `script` in the guest in its own session (e.g. `rping -s`).
    pub fn spawn(&self, script: &str) -> Result<Background> {
        self.check_alive()?;
        let id = self.channel.submit(script)?;
        let pid = self.channel.pid(id, Duration::from_secs(30))?;
        Ok(Background {
            channel: Arc::clone(&self.channel),
            id,
            pid,
            script: script.to_owned(),
            done: false,
        })
    }

    fn check_alive(&self) -> Result<()> {
        let exited = self
            .qemu
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .try_wait()
            .ok()
            .flatten();
        match exited {
            Some(status) => Err(Error::Guest(format!(
                "QEMU of {} has exited ({status})\n{}",
                self.name,
                self.diagnostics()
            ))),
            None => Ok(()),
        }
    }

    /// The contents of the guest file `path`.
    pub fn read_file(&self, path: &str) -> Result<Vec<u8>> {
        let output = self.run(&format!("cat {}", shell_quote(path)))?;
        if output.success() {
            Ok(output.stdout)
        } else {
            Err(Error::Guest(format!(
                "cannot read {path} in {}: {}",
                self.name,
                output.stderr_text().trim()
            )))
        }
    }

    /// rxe0's port counters (`/sys/class/infiniband/rxe0/ports/1/hw_counters/*`).
    pub fn rxe_counters(&self) -> Result<BTreeMap<String, u64>> {
        let text =
            self.run_ok("cd /sys/class/infiniband/rxe0/ports/1/hw_counters && grep -H . *")?;
        let counters: BTreeMap<String, u64> = text
            .lines()
            .filter_map(|line| {
                let (name, value) = line.split_once(':')?;
                Some((name.to_owned(), value.trim().parse().ok()?))
            })
            .collect();
        if counters.is_empty() {
            return Err(Error::Guest(format!(
                "rxe0 has no readable counters: {text}"
            )));
        }
        Ok(counters)
    }

    /// `rdma res show qp`: the guest's QPs with their states and PSNs.
    pub fn qp_table(&self) -> Result<String> {
        self.run_ok("rdma res show qp")
    }

    /// `tc netem SPEC` on the guest's eth0 egress (frames towards the
    /// bridge); e.g. `"loss 2% reorder 5% delay 1ms"`.
    pub fn netem(&self, spec: &str) -> Result<()> {
        self.run_ok(&format!("tc qdisc replace dev eth0 root netem {spec}"))
            .map(drop)
    }

    /// `tc netem SPEC` on what the guest's eth0 receives: its ingress is
    /// redirected through ifb0, whose egress gets the netem qdisc.
    pub fn netem_ingress(&self, spec: &str) -> Result<()> {
        self.run_ok(&format!(
            "set -e\n\
             ip link show ifb0 >/dev/null 2>&1 || ip link add ifb0 type ifb\n\
             ip link set ifb0 up\n\
             if ! tc qdisc show dev eth0 ingress | grep -q ingress; then\n\
             tc qdisc add dev eth0 handle ffff: ingress\n\
             tc filter add dev eth0 parent ffff: matchall action mirred egress redirect dev ifb0\n\
             fi\n\
             tc qdisc replace dev ifb0 root netem {spec}"
        ))
        .map(drop)
    }

    /// Removes the netem qdiscs of [`Guest::netem`] and [`Guest::netem_ingress`].
    pub fn netem_clear(&self) -> Result<()> {
        self.run_ok(
            "tc qdisc del dev eth0 root 2>/dev/null; tc qdisc del dev eth0 ingress 2>/dev/null; \
             tc qdisc del dev ifb0 root 2>/dev/null; true",
        )
        .map(drop)
    }

    /// Waits for QEMU to exit (after `poweroff -f` in the guest, or Ctrl-A X
    /// on a [`Console::Terminal`]).
    pub fn wait_exit(&self) -> Result<std::process::ExitStatus> {
        loop {
            let exited = self
                .qemu
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .try_wait()
                .map_err(|e| Error::io("cannot wait for QEMU", e))?;
            if let Some(status) = exited {
                return Ok(status);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// QEMU's process id on the host.
    pub fn qemu_pid(&self) -> u32 {
        self.qemu
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .id()
    }
}

impl Drop for Guest {
    fn drop(&mut self) {
        let qemu = self
            .qemu
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let _ = qemu.kill();
        let _ = qemu.wait();
        let _ = self.netns.ip(&["link", "del", &self.tap]);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A command running in the guest. Dropped unwaited, it is killed.
#[derive(Debug)]
pub struct Background {
    channel: Arc<Channel>,
    id: u64,
    pid: u32,
    script: String,
    done: bool,
}

impl Background {
    /// Its pid (and process group) in the guest.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Whether it has finished.
    pub fn is_finished(&self) -> bool {
        self.channel.status(self.id).is_some()
    }

    /// Waits up to `timeout` for it to finish; on timeout it is killed and
    /// [`Error::Timeout`] says what it had printed.
    pub fn wait(mut self, timeout: Duration) -> Result<Output> {
        if let Some(output) = self.channel.wait(self.id, timeout) {
            self.done = true;
            return Ok(output);
        }
        let partial = self.channel.partial(self.id);
        let _ = self.stop();
        Err(Error::Timeout {
            what: format!("guest command `{}` ({partial})", self.script),
            after: timeout,
        })
    }

    /// Sends SIGTERM to its process group (SIGKILL after 5 s); its output.
    pub fn kill(mut self) -> Result<Output> {
        self.stop()
    }

    fn stop(&mut self) -> Result<Output> {
        self.done = true;
        for signal in ["TERM", "KILL"] {
            let kill = self
                .channel
                .submit(&format!("kill -{signal} -{} 2>/dev/null; true", self.pid))?;
            let _ = self.channel.wait(kill, Duration::from_secs(10));
            if let Some(output) = self.channel.wait(self.id, Duration::from_secs(5)) {
                return Ok(output);
            }
        }
        Err(Error::Guest(format!(
            "guest command `{}` (pid {}) survives SIGKILL",
            self.script, self.pid
        )))
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        if !self.done {
            let _ = self.stop();
        }
    }
}

/// `text` quoted for sh.
pub fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// A connected but unused stream, to hold the channel's place until QEMU
/// connects the real port.
fn placeholder_stream() -> Result<std::os::unix::net::UnixStream> {
    std::os::unix::net::UnixStream::pair()
        .map(|(one, _)| one)
        .map_err(|e| Error::io("cannot create a socket pair", e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_survive_the_shell() {
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
    }
}
