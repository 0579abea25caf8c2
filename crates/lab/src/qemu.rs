//! QEMU: which accelerator really works here, and the guest's command line.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::host;

/// The accelerator guests run on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accel {
    /// Hardware virtualisation (`-accel kvm -cpu host`).
    Kvm,
    /// QEMU's translator (`-accel tcg,thread=multi -cpu max`).
    Tcg,
}

impl Accel {
    /// QEMU's arguments for it.
    pub fn args(self) -> &'static [&'static str] {
        match self {
            Self::Kvm => &["-accel", "kvm", "-cpu", "host"],
            Self::Tcg => &["-accel", "tcg,thread=multi", "-cpu", "max"],
        }
    }
}

/// How long a probe may take: a working accelerator runs it in well under
/// a second; KVM without VMX/SVM can hang.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// The exit status QEMU reports when the probe writes 0x31 to its
/// isa-debug-exit port: (0x31 << 1) | 1.
const PROBE_EXIT: i32 = 99;

/// The accelerator to use: `RSNDK_LAB_ACCEL=kvm|tcg` if set, else KVM if a
/// probe guest runs under it, else TCG if one runs under that. Probed once
/// per process.
pub fn accel(scratch: &Path) -> Result<Accel> {
    static PROBED: OnceLock<Accel> = OnceLock::new();
    if let Some(accel) = PROBED.get() {
        return Ok(*accel);
    }
    let accel = match std::env::var("RSNDK_LAB_ACCEL").as_deref() {
        Ok("kvm") => Accel::Kvm,
        Ok("tcg") => Accel::Tcg,
        _ => {
            if probe(Accel::Kvm, scratch).is_ok() {
                Accel::Kvm
            } else {
                probe(Accel::Tcg, scratch).map_err(|why| {
                    Error::Missing(format!(
                        "qemu-system-x86_64 cannot run even a probe guest under TCG ({why}): apt-get install qemu-system-x86"
                    ))
                })?;
                Accel::Tcg
            }
        }
    };
    Ok(*PROBED.get_or_init(|| accel))
}

/// A 32-bit multiboot kernel (the a.out kludge: flags bit 16, loaded at
/// 1 MiB) whose code writes 0x31 to port 0xf4 and halts.
fn probe_kernel() -> Vec<u8> {
    const MAGIC: u32 = 0x1bad_b002;
    const FLAGS: u32 = 1 << 16;
    const LOAD: u32 = 0x0010_0000;
    const CODE_OFFSET: u32 = 32;
    let header = [
        MAGIC,
        FLAGS,
        0u32.wrapping_sub(MAGIC.wrapping_add(FLAGS)),
        LOAD,               // header_addr
        LOAD,               // load_addr
        0,                  // load_end_addr: the whole file
        0,                  // bss_end_addr: none
        LOAD + CODE_OFFSET, // entry_addr
    ];
    let mut image: Vec<u8> = header.iter().flat_map(|word| word.to_le_bytes()).collect();
    // mov al, 0x31; out 0xf4, al; cli; hlt; jmp to the hlt
    image.extend_from_slice(&[0xb0, 0x31, 0xe6, 0xf4, 0xfa, 0xf4, 0xeb, 0xfd]);
    image
}

/// Runs the probe kernel under `accel`; Ok if it reached its exit port.
fn probe(accel: Accel, scratch: &Path) -> std::result::Result<(), String> {
    let qemu = host::find(host::QEMU).map_err(|e| e.to_string())?;
    std::fs::create_dir_all(scratch).map_err(|e| e.to_string())?;
    let kernel = scratch.join("accel-probe.bin");
    std::fs::write(&kernel, probe_kernel()).map_err(|e| e.to_string())?;
    let mut child = Command::new(qemu)
        .args(accel.args())
        .args(["-M", "pc", "-m", "32", "-nodefaults", "-display", "none"])
        .args(["-monitor", "none", "-serial", "none", "-no-reboot"])
        .args([
            "-device",
            "isa-debug-exit,iobase=0xf4,iosize=0x04",
            "-kernel",
        ])
        .arg(&kernel)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    let started = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                let mut stderr = String::new();
                if let Some(mut pipe) = child.stderr.take() {
                    let _ = std::io::Read::read_to_string(&mut pipe, &mut stderr);
                }
                return if status.code() == Some(PROBE_EXIT) {
                    Ok(())
                } else {
                    Err(format!("{status}: {}", stderr.trim()))
                };
            }
            Ok(None) if started.elapsed() < PROBE_TIMEOUT => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Ok(None) | Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("no exit within {PROBE_TIMEOUT:?}"));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probe_header_checksums_to_zero() {
        let image = probe_kernel();
        let word = |at: usize| u32::from_le_bytes(image[at..at + 4].try_into().unwrap());
        assert_eq!(word(0).wrapping_add(word(4)).wrapping_add(word(8)), 0);
        assert_eq!(word(28), 0x0010_0020);
        assert_eq!(image.len(), 40);
    }
}
