//! SMB in a guest: ksmbd serving a tmpfs share (TCP and SMB Direct on
//! `rxe0`, port 445), and Linux's cifs client mounting one, with the
//! SMB Direct modules the image ships ([`crate::smb_modules`]).

use std::fmt::Write as _;
use std::net::IpAddr;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::guest::{Guest, shell_quote};
use crate::image::{CIFS_MODULE_LIST, KSMBD_MODULE_LIST};

/// Where ksmbd's shares live in the guest: a tmpfs of their own.
pub const SHARES_DIR: &str = "/srv/ksmbd";

/// How long ksmbd may take to listen after `ksmbd.mountd` starts.
const LISTEN_TIMEOUT_SECONDS: u32 = 30;

/// A ksmbd share and its one user.
#[derive(Debug, Clone)]
pub struct KsmbdConfig {
    /// The share's name (letters, digits, `-`, `_`); its directory is
    /// `SHARES_DIR/NAME` on a guest tmpfs.
    pub share: String,
    /// The user `ksmbd.adduser` creates (letters, digits, `-`, `_`).
    pub user: String,
    /// The user's password.
    pub password: String,
}

impl KsmbdConfig {
    /// The share's directory in the guest.
    pub fn share_path(&self) -> String {
        format!("{SHARES_DIR}/{}", self.share)
    }
}

/// A cifs mount of a share.
#[derive(Debug, Clone)]
pub struct CifsMount {
    /// The server's address.
    pub server: IpAddr,
    /// The share's name.
    pub share: String,
    /// Where to mount it in the guest (created if missing).
    pub mountpoint: String,
    /// The user.
    pub user: String,
    /// The password (passed in `PASSWD`, so commas in it are safe).
    pub password: String,
    /// mount.cifs options besides the user, e.g. `rdma,vers=3.1.1`.
    pub options: String,
}

fn check_name(what: &str, name: &str) -> Result<()> {
    let valid = !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_');
    if valid {
        Ok(())
    } else {
        Err(Error::Guest(format!(
            "{what} {name:?} is not 1-64 letters, digits, '-' or '_'"
        )))
    }
}

/// Shell that insmods the modules of the image's list `list` unless
/// already loaded.
fn load_modules_script(list: &str) -> String {
    let mut script = String::from(
        "release=$(uname -r)\n\
         load() {\n\
         \x20   name=${1##*/}; name=${name%.ko}; name=$(echo \"$name\" | tr - _)\n\
         \x20   [ -d \"/sys/module/$name\" ] && return 0\n\
         \x20   insmod \"/lib/modules/$release/$1\" || { echo \"insmod $1 failed\" >&2; exit 1; }\n\
         }\n",
    );
    let _ = writeln!(
        script,
        "while read -r module; do load \"$module\"; done </{list}"
    );
    script
}

/// ksmbd's configuration for one share: writable, no guest access, the
/// SMB 3 dialects, signing as the client asks.
fn ksmbd_conf(config: &KsmbdConfig) -> String {
    format!(
        "[global]\n\
         \tnetbios name = RSNDK-LAB\n\
         \tserver string = rsndk interop lab\n\
         \tserver max protocol = SMB3_11\n\
         \tserver signing = auto\n\
         \tmap to guest = never\n\
         \tsmbd max io size = 8MB\n\
         [{share}]\n\
         \tpath = {path}\n\
         \tread only = no\n\
         \tbrowseable = yes\n\
         \tguest ok = no\n\
         \tvalid users = {user}\n",
        share = config.share,
        path = config.share_path(),
        user = config.user,
    )
}

impl Guest {
    /// Starts ksmbd serving `config.share` from a tmpfs to `config.user`:
    /// loads the SMB Direct ksmbd module (and what it needs), writes
    /// `/etc/ksmbd/ksmbd.conf`, adds the user with `ksmbd.adduser`, runs
    /// `ksmbd.mountd`, and waits until ksmbd listens on TCP port 445 and
    /// has an RDMA CM listener (SMB Direct, port 445 over RoCE). Calling it
    /// again replaces the configuration (ksmbd restarts).
    pub fn start_ksmbd(&self, config: &KsmbdConfig) -> Result<()> {
        check_name("share", &config.share)?;
        check_name("user", &config.user)?;
        let mut script = String::from("set -e\n");
        script.push_str(&load_modules_script(KSMBD_MODULE_LIST));
        let _ = write!(
            script,
            "echo 'step: ksmbd.control --shutdown' >&2\n\
             ksmbd.control --shutdown >/dev/null 2>&1 || true\n\
             echo 'step: stop ksmbd.mountd' >&2\n\
             pids=$(pidof ksmbd.mountd || true); [ -z \"$pids\" ] || {{ kill $pids; sleep 1; }}\n\
             mkdir -p {shares}\n\
             grep -qs ' {shares} ' /proc/mounts || mount -t tmpfs -o size=512m,mode=0755 ksmbd {shares}\n\
             mkdir -p {path}\n\
             chmod 0777 {path}\n\
             grep -q '^{user}:' /etc/passwd || echo '{user}:x:1000:1000:lab:/tmp:/bin/false' >>/etc/passwd\n\
             grep -q '^{user}:' /etc/group || echo '{user}:x:1000:' >>/etc/group\n\
             mkdir -p /etc/ksmbd\n\
             cat >/etc/ksmbd/ksmbd.conf <<'LAB_EOF'\n{conf}LAB_EOF\n\
             rm -f /etc/ksmbd/ksmbdpwd.db\n\
             echo 'step: ksmbd.adduser' >&2\n\
             ksmbd.adduser -a {user} -p {password}\n\
             echo 'step: ksmbd.mountd' >&2\n\
             ksmbd.mountd\n\
             echo 'step: wait for TCP 445' >&2\n\
             tries=0\n\
             until cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | grep -q ':01BD [0-9A-F:]* 0A '; do\n\
             \x20   tries=$((tries + 1))\n\
             \x20   [ $tries -lt {polls} ] || {{ echo 'ksmbd does not listen on TCP port 445' >&2; exit 1; }}\n\
             \x20   sleep 0.2\n\
             done\n\
             echo 'step: wait for the RDMA listener' >&2\n\
             tries=0\n\
             until rdma resource show cm_id 2>/dev/null | grep -q 'state LISTEN.*:445'; do\n\
             \x20   tries=$((tries + 1))\n\
             \x20   [ $tries -lt {polls} ] || {{ echo \"ksmbd has no RDMA listener on port 445 (SMB Direct): $(rdma resource show cm_id 2>&1)\" >&2; exit 1; }}\n\
             \x20   sleep 0.2\n\
             done\n",
            shares = SHARES_DIR,
            path = config.share_path(),
            user = config.user,
            conf = ksmbd_conf(config),
            password = shell_quote(&config.password),
            polls = LISTEN_TIMEOUT_SECONDS * 5,
        );
        self.run_checked(
            &script,
            Duration::from_secs(u64::from(LISTEN_TIMEOUT_SECONDS) + 150),
            "start ksmbd",
        )
        .map(drop)
        .map_err(|e| self.with_ksmbd_state(&e))
    }

    /// `error` with what the guest's kernel and ksmbd's processes were
    /// doing (a hung shutdown leaves a task in D state).
    fn with_ksmbd_state(&self, error: &Error) -> Error {
        let state = self
            .run_timeout(
                "for p in /proc/[0-9]*; do\n\
                 \x20 s=$(sed -n 's/^State:[[:space:]]*//p' $p/status 2>/dev/null)\n\
                 \x20 case \"$s\" in D*) echo \"$(cat $p/comm) ${p#/proc/} $s:\"; cat $p/stack 2>/dev/null;; esac\n\
                 done\n\
                 pidof ksmbd.mountd ksmbd.control || true\n\
                 dmesg | tail -n 25",
                Duration::from_secs(20),
            )
            .map_or_else(
                |e| format!("(the state could not be read: {e})"),
                |o| o.stdout_text(),
            );
        Error::Guest(format!(
            "{error}\nguest state (D-state tasks, ksmbd's processes, kernel log):\n{state}"
        ))
    }

    /// Stops ksmbd (`ksmbd.control --shutdown`) and `ksmbd.mountd`; the
    /// share's files stay.
    pub fn stop_ksmbd(&self) -> Result<()> {
        self.run_checked(
            // The shutdown makes mountd exit on its own: one found by
            // pidof may be gone before the kill, which is no failure.
            "ksmbd.control --shutdown >/dev/null 2>&1 || true\n\
             for pid in $(pidof ksmbd.mountd || true); do\n\
             kill $pid 2>/dev/null || [ ! -d /proc/$pid ]\n\
             done\n",
            Duration::from_secs(30),
            "stop ksmbd",
        )
        .map(drop)
    }

    /// Mounts a share with Linux's cifs client (the SMB Direct module the
    /// image ships, loaded first).
    pub fn mount_cifs(&self, mount: &CifsMount) -> Result<()> {
        check_name("share", &mount.share)?;
        // A comma in the user would add mount options.
        check_name("user", &mount.user)?;
        let mut script = String::from("set -e\n");
        script.push_str(&load_modules_script(CIFS_MODULE_LIST));
        let server = match mount.server {
            IpAddr::V4(address) => address.to_string(),
            IpAddr::V6(address) => format!("[{address}]"),
        };
        let mut options = format!("username={}", mount.user);
        if !mount.options.is_empty() {
            options = format!("{},{options}", mount.options);
        }
        let _ = write!(
            script,
            "mkdir -p {mountpoint}\n\
             PASSWD={password} mount.cifs //{server}/{share} {mountpoint} -o {options} || \
             {{ status=$?; echo 'kernel log:' >&2; dmesg | tail -n 20 >&2; exit $status; }}\n",
            mountpoint = shell_quote(&mount.mountpoint),
            password = shell_quote(&mount.password),
            share = mount.share,
            options = shell_quote(&options),
        );
        self.run_checked(&script, Duration::from_secs(120), "mount cifs")
            .map(drop)
    }

    /// Unmounts `mountpoint`.
    pub fn unmount(&self, mountpoint: &str) -> Result<()> {
        self.run_checked(
            &format!("umount {}", shell_quote(mountpoint)),
            Duration::from_secs(60),
            "unmount",
        )
        .map(drop)
    }

    /// The SHA-256 of the guest file `path`, in lower-case hex.
    pub fn sha256(&self, path: &str) -> Result<String> {
        let text = self.run_checked(
            &format!("sha256sum {}", shell_quote(path)),
            Duration::from_secs(300),
            "sha256sum",
        )?;
        let digest = text.split_whitespace().next().unwrap_or_default();
        if digest.len() == 64 && digest.bytes().all(|byte| byte.is_ascii_hexdigit()) {
            Ok(digest.to_ascii_lowercase())
        } else {
            Err(Error::Guest(format!(
                "sha256sum {path} in {} printed {text:?}",
                self.name()
            )))
        }
    }

    /// Runs `script`; its stdout, or an error with its output that says
    /// `what` failed.
    fn run_checked(&self, script: &str, timeout: Duration, what: &str) -> Result<String> {
        let output = self.run_timeout(script, timeout)?;
        if output.success() {
            Ok(output.stdout_text())
        } else {
            Err(Error::Guest(format!(
                "{what} in {} failed ({}): {}{}",
                self.name(),
                output.status,
                output.stderr_text().trim(),
                output.stdout_text().trim()
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_could_break_the_config_are_refused() {
        assert!(check_name("share", "share_1-a").is_ok());
        for bad in ["", "a b", "a]", "a\nb", "../x", "x=y"] {
            assert!(check_name("share", bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_config_names_the_share_and_user() {
        let config = KsmbdConfig {
            share: "share".into(),
            user: "labuser".into(),
            password: "pw".into(),
        };
        let conf = ksmbd_conf(&config);
        assert!(
            conf.contains("[share]\n\tpath = /srv/ksmbd/share\n"),
            "{conf}"
        );
        assert!(conf.contains("valid users = labuser"), "{conf}");
    }
}
