//! The lab: a namespace with a bridge, and guests booted on it.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use crate::capture::Capture;
use crate::error::{Error, Result};
use crate::guest::{Guest, GuestConfig};
use crate::host;
use crate::image::{self, Image, ImageSpec};
use crate::net;
use crate::netns::{self, Netns};
use crate::qemu::{self, Accel};

/// How to start a lab.
#[derive(Debug, Clone)]
pub struct LabConfig {
    /// The guest image.
    pub image: ImageSpec,
    /// How many guests to boot (in parallel); 0 for a namespace and bridge only.
    pub guests: usize,
    /// How each guest boots.
    pub guest: GuestConfig,
}

impl Default for LabConfig {
    fn default() -> Self {
        Self {
            image: ImageSpec::default(),
            guests: 1,
            guest: GuestConfig::default(),
        }
    }
}

/// A running lab: namespace `rsndk-lab-PID-N` with bridge [`net::BRIDGE`]
/// (host side 10.77.0.1/24 and fd77::1/64) and its guests. Dropping it
/// kills the guests and removes the namespace; if the process dies
/// instead, the kernel removes the namespace and QEMU gets SIGKILL.
#[derive(Debug)]
pub struct Lab {
    // Dropped in order: guests before the namespace they live in.
    guests: Vec<Guest>,
    netns: Netns,
    image: Image,
    accel: Accel,
    run_dir: PathBuf,
}

impl Lab {
    /// Checks the host, prepares the image, removes what dead labs left,
    /// creates the namespace and bridge, boots the guests.
    pub fn start(config: &LabConfig) -> Result<Self> {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        host::require_root()?;
        for tool in [host::IP, host::QEMU] {
            host::find(tool)?;
        }
        netns::sweep_stale();
        let image = image::prepare(&config.image)?;
        let name = format!(
            "{}{}-{}",
            netns::NAME_PREFIX,
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let run_dir = std::env::temp_dir().join(&name);
        std::fs::create_dir_all(&run_dir)
            .map_err(|e| Error::io(format!("cannot create {}", run_dir.display()), e))?;
        let accel = qemu::accel(&run_dir)?;
        let netns = Netns::create(&name)?;
        let mut lab = Self {
            guests: Vec::new(),
            netns,
            image,
            accel,
            run_dir,
        };
        net::build_bridge(&lab.netns)?;
        lab.guests = lab.boot_guests(config.guests, &config.guest)?;
        Ok(lab)
    }

    fn boot_guests(&self, count: usize, config: &GuestConfig) -> Result<Vec<Guest>> {
        std::thread::scope(|scope| {
            let booting: Vec<_> = (0..count)
                .map(|index| {
                    scope.spawn(move || {
                        Guest::boot(
                            &self.netns,
                            &self.image,
                            self.accel,
                            &self.run_dir,
                            index,
                            config,
                        )
                    })
                })
                .collect();
            booting
                .into_iter()
                .map(|thread| {
                    thread
                        .join()
                        .unwrap_or_else(|_| Err(Error::Guest("a boot thread panicked".into())))
                })
                .collect()
        })
    }

    /// The first guest (10.77.0.2, fd77::2). Panics if the lab has none.
    pub fn guest(&self) -> &Guest {
        &self.guests[0]
    }

    /// All guests, by index.
    pub fn guests(&self) -> &[Guest] {
        &self.guests
    }

    /// The namespace: run closures, commands and sockets inside it.
    pub fn netns(&self) -> &Netns {
        &self.netns
    }

    /// The namespace's (and run directory's) name, `rsndk-lab-PID-N`.
    pub fn name(&self) -> &str {
        self.netns.name()
    }

    /// The image the guests run.
    pub fn image(&self) -> &Image {
        &self.image
    }

    /// The accelerator the guests run on.
    pub fn accel(&self) -> Accel {
        self.accel
    }

    /// The lab's scratch directory (removed on drop), e.g. for captures.
    pub fn run_dir(&self) -> &Path {
        &self.run_dir
    }

    /// The bridge's name.
    pub fn bridge(&self) -> &str {
        net::BRIDGE
    }

    /// A new tap `name` on the bridge (IFF_TAP | IFF_NO_PI): read and write
    /// whole Ethernet frames on the descriptor; the tap goes when it closes.
    pub fn create_tap(&self, name: &str) -> Result<OwnedFd> {
        net::create_tap(&self.netns, name)
    }

    /// `tc qdisc replace dev DEV root netem SPEC` in the namespace. This
    /// machine's kernel has no netem ([`Error::Missing`] says so): use
    /// [`Guest::netem`] / [`Guest::netem_ingress`] there.
    pub fn netem(&self, dev: &str, spec: &str) -> Result<()> {
        net::netem(&self.netns, dev, spec)
    }

    /// One ICMP echo from the namespace to `addr`; the round-trip time.
    pub fn ping(
        &self,
        addr: std::net::IpAddr,
        timeout: std::time::Duration,
    ) -> Result<std::time::Duration> {
        self.netns.run(|| crate::ping::ping(addr, timeout))?
    }

    /// Starts tcpdump on `dev` (the bridge, a guest's tap, your tap) into
    /// `path`; it stops, flushed, on [`Capture::stop`] or drop.
    pub fn capture(&self, dev: &str, path: &Path) -> Result<Capture> {
        Capture::start(&self.netns, dev, path)
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        self.guests.clear();
        let _ = std::fs::remove_dir_all(&self.run_dir);
    }
}
