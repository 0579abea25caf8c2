//! Builds a C program against `include/rsndk_host.h` and `librsndk.so` and
//! runs it: the entry points must be exported with C linkage and behave as
//! the header documents.

use std::path::PathBuf;
use std::process::Command;

/// `target/<profile>`, where cargo leaves `librsndk.so` beside `deps/`.
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    exe.parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>")
        .to_path_buf()
}

/// Builds `librsndk.so`, compiles `tests/c/<name>.c` against `include/`
/// and it with `extra` compiler flags, runs the program and checks that it
/// reported no failure.
fn compile_and_run(name: &str, extra: &[&str]) {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let lib_dir = profile_dir();
    // `cargo test` builds the library only as an rlib for the tests; build
    // the cdylib a C program links against (a no-op when it is current).
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let profile_args: &[&str] = if cfg!(debug_assertions) {
        &[]
    } else {
        &["--release"]
    };
    let built = Command::new(cargo)
        .args(["build", "--quiet", "-p", "rsndk", "--lib"])
        .args(profile_args)
        .current_dir(&root)
        .status()
        .expect("run cargo build");
    assert!(built.success(), "building librsndk.so failed");
    assert!(
        lib_dir.join("librsndk.so").exists(),
        "librsndk.so not found in {}",
        lib_dir.display()
    );
    let out_dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let exe = out_dir.join(name);
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_owned());
    let status = Command::new(&cc)
        .arg("-Wall")
        .arg("-Werror")
        .args(extra)
        .arg("-I")
        .arg(root.join("include"))
        .arg(root.join(format!("tests/c/{name}.c")))
        .arg("-L")
        .arg(&lib_dir)
        .arg("-lrsndk")
        .arg("-o")
        .arg(&exe)
        .status()
        .expect("run the C compiler");
    assert!(status.success(), "compiling the C consumer {name} failed");
    let output = Command::new(&exe)
        .env("LD_LIBRARY_PATH", &lib_dir)
        .output()
        .expect("run the C consumer");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "C consumer {name} reported failures:\n{stdout}"
    );
    assert!(stdout.contains("0 failures"), "{stdout}");
}

#[test]
fn c_consumer_links_and_gets_documented_statuses() {
    compile_and_run("open_adapter", &[]);
}

/// `tests/c/atexit_close.c`: a consumer closes its adapters (two of an
/// in-memory fabric, one over UDP) from an `atexit` handler, after glibc
/// destroyed the main thread's thread-locals: each close succeeds, none
/// aborts.
#[test]
fn a_c_consumer_closes_its_adapters_at_exit() {
    compile_and_run("atexit_close", &["-std=c11", "-Wextra", "-pedantic"]);
}

/// `tests/c/ndk_consumer.c`, strict C11 over `include/ndkpi.h` (whose
/// generated assertions check every layout fact as it compiles): two
/// instances of one device combined, connection data after the connect,
/// one fast-register token through three rounds, the 2.1 entries.
#[test]
fn an_ndk_consumer_in_c_runs_over_ndkpi_h() {
    compile_and_run(
        "ndk_consumer",
        &[
            "-std=c11",
            "-Wextra",
            "-pedantic",
            "-D_POSIX_C_SOURCE=200809L",
        ],
    );
}

/// `tests/c/ipv6_consumer.c`, strict C11: two IPv6 adapters
/// (`mem:lab/[fd00::1]`, `mem:lab/[fd00::2]`) listen and connect with
/// `SOCKADDR_IN6`, get `AF_INET6` addresses back, and move a SEND and an
/// RDMA READ, data verified.
#[test]
fn an_ndk_consumer_in_c_connects_over_ipv6() {
    compile_and_run(
        "ipv6_consumer",
        &[
            "-std=c11",
            "-Wextra",
            "-pedantic",
            "-D_POSIX_C_SOURCE=200809L",
        ],
    );
}

/// The generated block of `include/ndkpi.h` is what `ndkpi` generates
/// now: the header's assertions check the current layout facts.
#[test]
fn ndkpi_h_asserts_the_current_layout_facts() {
    use ndkpi::c_header::{C_BLOCK_BEGIN, C_BLOCK_END, c_block};
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let header = std::fs::read_to_string(root.join("include/ndkpi.h")).expect("the header");
    let lines: Vec<&str> = header.lines().collect();
    let begin = lines
        .iter()
        .position(|l| *l == C_BLOCK_BEGIN)
        .expect("block start");
    let end = lines
        .iter()
        .position(|l| *l == C_BLOCK_END)
        .expect("block end");
    let want: Vec<String> = c_block().map(|l| l.to_string()).collect();
    assert!(
        lines[begin + 1..end] == want[..],
        "include/ndkpi.h is stale: regenerate its block with \
         `cargo run -q -p ndkpi --example layout -- --c`"
    );
}

/// The value of `#define NAME VALUEu` in `include/rsndk_host.h`.
fn header_define(name: &str) -> u32 {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("include/rsndk_host.h")).expect("the header");
    let line = text
        .lines()
        .find(|l| l.split_whitespace().nth(1) == Some(name) && l.starts_with("#define"))
        .unwrap_or_else(|| panic!("no #define {name}"));
    let value = line.split_whitespace().nth(2).expect("a value");
    value
        .trim_end_matches('u')
        .parse()
        .expect("a decimal value")
}

#[test]
fn header_codes_are_the_providers() {
    use hwq::CqeStatus;
    use provider::connector::DisconnectReason;
    for (name, reason) in [
        (
            "RSNDK_DISCONNECT_REASON_PEER",
            DisconnectReason::PeerDisconnected,
        ),
        (
            "RSNDK_DISCONNECT_REASON_TRANSPORT_ERROR",
            DisconnectReason::TransportError,
        ),
    ] {
        assert_eq!(header_define(name), reason as u32, "{name}");
    }
    for (name, status) in [
        ("RSNDK_ERROR_FLUSHED", CqeStatus::Flushed),
        ("RSNDK_ERROR_LOCAL_LENGTH", CqeStatus::LocalLength),
        ("RSNDK_ERROR_LOCAL_PROTECTION", CqeStatus::LocalProtection),
        (
            "RSNDK_ERROR_LOCAL_QP_OPERATION",
            CqeStatus::LocalQpOperation,
        ),
        ("RSNDK_ERROR_REMOTE_ACCESS", CqeStatus::RemoteAccess),
        (
            "RSNDK_ERROR_REMOTE_INVALID_REQUEST",
            CqeStatus::RemoteInvalidRequest,
        ),
        (
            "RSNDK_ERROR_REMOTE_OPERATIONAL",
            CqeStatus::RemoteOperational,
        ),
        ("RSNDK_ERROR_RETRY_EXCEEDED", CqeStatus::RetryExceeded),
        (
            "RSNDK_ERROR_RNR_RETRY_EXCEEDED",
            CqeStatus::RnrRetryExceeded,
        ),
        ("RSNDK_ERROR_MEMORY_MANAGEMENT", CqeStatus::MemoryManagement),
    ] {
        assert_eq!(
            header_define(name),
            provider::status::provider_error_code(status),
            "{name}"
        );
    }
}
