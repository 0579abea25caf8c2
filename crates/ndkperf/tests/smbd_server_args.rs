//! `ndkperf smbd --server`'s argument checks: every mistake ends in one
//! `ndkperf: ...` line and exit code 2 before (or instead of) any
//! traffic; the only peer tried is a silent loopback address.

mod common;

use std::path::PathBuf;

use common::ndkperf;

/// Runs ndkperf, expects exit code 2 and one stderr line starting with
/// `ndkperf: ` that contains `needle`.
fn fails_with(args: &[&str], needle: &str) {
    let out = ndkperf(args).assert().code(2).get_output().clone();
    let err = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "one line expected for {args:?}, got: {err}");
    assert!(lines[0].starts_with("ndkperf: "), "{err}");
    assert!(
        lines[0].contains(needle),
        "{args:?}: {err:?} lacks {needle:?}"
    );
}

/// A password file in the temp directory, removed when dropped.
struct PasswordFile(PathBuf);

impl PasswordFile {
    fn new(name: &str, contents: &str) -> Self {
        let path =
            std::env::temp_dir().join(format!("ndkperf-smbd-args-{name}-{}", std::process::id()));
        std::fs::write(&path, contents).expect("a temp file");
        Self(path)
    }

    fn path(&self) -> &str {
        self.0.to_str().expect("a UTF-8 temp path")
    }
}

impl Drop for PasswordFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// `smbd --server 127.0.0.1 --share share --user user --password-file
/// F` plus `extra`.
fn server_args<'a>(password: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    server_args_on("share", password, extra)
}

/// [`server_args`] with another share.
fn server_args_on<'a>(share: &'a str, password: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec![
        "smbd",
        "--server",
        "127.0.0.1",
        "--local",
        "127.0.0.2",
        "--share",
        share,
        "--user",
        "user",
        "--password-file",
        password,
    ];
    a.extend_from_slice(extra);
    a
}

#[test]
fn server_needs_share_user_and_password_file() {
    fails_with(&["smbd", "--server", "127.0.0.1"], "--share");
    fails_with(
        &[
            "smbd",
            "--server",
            "127.0.0.1",
            "--share",
            "s",
            "--user",
            "u",
        ],
        "--password-file",
    );
    fails_with(&["smbd", "--share", "s"], "--server");
    fails_with(&["smbd", "--password-file", "/nonexistent"], "--server");
}

#[test]
fn password_file_must_exist_and_hold_a_password() {
    fails_with(
        &server_args("/nonexistent/ndkperf-password", &[]),
        "--password-file /nonexistent/ndkperf-password: cannot read it",
    );
    let empty = PasswordFile::new("empty", "\n");
    fails_with(&server_args(empty.path(), &[]), "its first line is empty");
}

#[test]
fn server_refuses_what_it_cannot_do() {
    let pw = PasswordFile::new("pw", "secret\n");
    fails_with(&server_args(pw.path(), &["--mix", "read"]), "--mix");
    fails_with(
        &server_args(pw.path(), &["--transport", "mem"]),
        "--transport mem",
    );
    fails_with(
        &server_args(pw.path(), &["--size", "32M"]),
        "--size 32M is larger than the 16M this client moves per I/O",
    );
    fails_with(&server_args_on("a\\b", pw.path(), &[]), "not a share name");
    fails_with(
        &server_args(pw.path(), &["--file", "/etc/passwd"]),
        "not a path inside the share",
    );
    fails_with(
        &[
            "smbd",
            "--server",
            "127.0.0.1",
            "--local",
            "192.0.2.1",
            "--share",
            "s",
            "--user",
            "u",
            "--password-file",
            pw.path(),
        ],
        "not an address of this machine",
    );
}

#[test]
fn server_that_never_answers_is_a_clear_error() {
    let pw = PasswordFile::new("silent", "secret\n");
    // Nobody has an adapter at 127.0.0.1: the connection times out.
    fails_with(
        &server_args(pw.path(), &["--timeout", "500ms", "--count", "1"]),
        "SMB Direct to \\\\127.0.0.1\\share as user (port 445)",
    );
}

/// `smbd --server SERVER --local LOCAL` with a share, user and password.
fn family_args<'a>(server: &'a str, local: Option<&'a str>, password: &'a str) -> Vec<&'a str> {
    let mut a = vec!["smbd", "--server", server];
    if let Some(l) = local {
        a.extend_from_slice(&["--local", l]);
    }
    a.extend_from_slice(&[
        "--share",
        "share",
        "--user",
        "user",
        "--password-file",
        password,
        "--timeout",
        "500ms",
        "--count",
        "1",
    ]);
    a
}

#[test]
fn server_and_local_must_be_of_one_family() {
    let pw = PasswordFile::new("families", "secret\n");
    fails_with(
        &family_args("127.0.0.1", Some("::1"), pw.path()),
        "--server 127.0.0.1 and --local ::1 are of different address families",
    );
    fails_with(
        &family_args("fd77::2", Some("127.0.0.2"), pw.path()),
        "--server fd77::2 and --local 127.0.0.2 are of different address families",
    );
    fails_with(
        &family_args("::1", None, pw.path()),
        "--server ::1 needs --local",
    );
    fails_with(
        &family_args("fd77::2", Some("fd77::1"), pw.path()),
        "--local fd77::1 is not an address of this machine",
    );
}

#[test]
fn an_ipv6_server_that_never_answers_is_a_clear_error() {
    let pw = PasswordFile::new("silent6", "secret\n");
    // [::1] is ours: the adapter there holds port 4791 and no SMB Direct
    // listener, so the connection fails with one line naming the server.
    fails_with(
        &family_args("::1", Some("::1"), pw.path()),
        "SMB Direct to \\\\::1\\share as user (port 445)",
    );
}
