//! Host prerequisites (tools, root) and running host commands with errors
//! that say what is missing and how to get it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::error::{Error, Result};

/// A host program the lab runs, with the Debian package that provides it.
#[derive(Debug, Clone, Copy)]
pub struct Tool {
    /// The program's name, looked up in `PATH` and the sbin directories.
    pub program: &'static str,
    /// The Debian package to `apt-get install` when it is missing.
    pub package: &'static str,
}

/// `qemu-system-x86_64`, which boots the guest.
pub const QEMU: Tool = Tool {
    program: "qemu-system-x86_64",
    package: "qemu-system-x86",
};
/// `ip` and `tc`, which build the namespace's network.
pub const IP: Tool = Tool {
    program: "ip",
    package: "iproute2",
};
/// `tc`, for netem on the host side.
pub const TC: Tool = Tool {
    program: "tc",
    package: "iproute2",
};
/// `tcpdump`, which captures in the namespace.
pub const TCPDUMP: Tool = Tool {
    program: "tcpdump",
    package: "tcpdump",
};
/// `tshark`, which decodes captures.
pub const TSHARK: Tool = Tool {
    program: "tshark",
    package: "tshark",
};
/// `apt-get`, which downloads the guest's packages.
pub const APT_GET: Tool = Tool {
    program: "apt-get",
    package: "apt",
};
/// `apt-cache`, which resolves the guest's packages and versions.
pub const APT_CACHE: Tool = Tool {
    program: "apt-cache",
    package: "apt",
};
/// `dpkg-deb`, which unpacks the downloaded packages (never installs them).
pub const DPKG_DEB: Tool = Tool {
    program: "dpkg-deb",
    package: "dpkg",
};

/// `make`, which runs Kbuild for the SMB modules built out of tree.
pub const MAKE: Tool = Tool {
    program: "make",
    package: "make",
};
/// `gcc-12`, the compiler Debian 12's kernel and its headers name.
pub const GCC: Tool = Tool {
    program: "gcc-12",
    package: "gcc-12",
};
/// `tar` (with `xz`), which unpacks parts of the kernel source tarball.
pub const TAR: Tool = Tool {
    program: "tar",
    package: "tar",
};
/// `xz`, which `tar -J` runs.
pub const XZ: Tool = Tool {
    program: "xz",
    package: "xz-utils",
};
/// `strip`, which drops the built modules' debug information.
pub const STRIP: Tool = Tool {
    program: "strip",
    package: "binutils",
};

/// Where `tool` is, or [`Error::Missing`] naming its package.
pub fn find(tool: Tool) -> Result<PathBuf> {
    let path_var = std::env::var_os("PATH").unwrap_or_default();
    let extra = ["/usr/sbin", "/sbin", "/usr/bin", "/bin"].map(PathBuf::from);
    std::env::split_paths(&path_var)
        .chain(extra)
        .map(|dir| dir.join(tool.program))
        .find(|candidate| is_executable(candidate))
        .ok_or_else(|| {
            Error::Missing(format!(
                "`{}` is not installed: apt-get install {}",
                tool.program, tool.package
            ))
        })
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

/// [`Error::Missing`] unless the process runs as root (network namespaces,
/// bridges and taps need CAP_SYS_ADMIN and CAP_NET_ADMIN).
pub fn require_root() -> Result<()> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let euid = unsafe { libc::geteuid() };
    if euid == 0 {
        Ok(())
    } else {
        Err(Error::Missing(format!(
            "root privileges (the lab creates a network namespace, a bridge and taps; euid is {euid}): run as root"
        )))
    }
}

/// A command for `tool`, found first.
pub fn command(tool: Tool) -> Result<Command> {
    Ok(Command::new(find(tool)?))
}

/// The command line of `command`, for messages.
pub fn describe(command: &Command) -> String {
    std::iter::once(command.get_program())
        .chain(command.get_args())
        .map(|part| part.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Runs `command` to completion; its stdout, or [`Error::Command`] with its
/// stderr when it fails.
pub fn run(command: &mut Command) -> Result<String> {
    let output = output(command)?;
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Runs `command` to completion; its whole output, or [`Error::Command`]
/// when it exits non-zero.
pub fn output(command: &mut Command) -> Result<Output> {
    let line = describe(command);
    let output = command
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|source| Error::io(format!("cannot run `{line}`"), source))?;
    if output.status.success() {
        Ok(output)
    } else {
        Err(Error::Command {
            command: line,
            status: output.status.code(),
            output: format!(
                "{}{}",
                String::from_utf8_lossy(&output.stderr),
                String::from_utf8_lossy(&output.stdout)
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_tool_names_its_package() {
        let tool = Tool {
            program: "rsndk-lab-no-such-program",
            package: "no-such-package",
        };
        let error = find(tool).unwrap_err().to_string();
        assert!(
            error.contains("`rsndk-lab-no-such-program` is not installed")
                && error.contains("apt-get install no-such-package"),
            "{error}"
        );
    }

    #[test]
    fn a_failing_command_reports_its_line_status_and_stderr() {
        let error = run(Command::new("sh").args(["-c", "echo oops >&2; exit 3"])).unwrap_err();
        let text = error.to_string();
        assert!(
            text.contains("sh -c") && text.contains("status 3") && text.contains("oops"),
            "{text}"
        );
    }
}
