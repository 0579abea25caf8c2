//! Test signing on Linux: a test CA and a code-signing certificate it
//! issues, made with `openssl` for one build, and Authenticode signatures
//! made and checked with `osslsigncode` (Debian packages of both names).
//!
//! Windows in test mode (`bcdedit /set testsigning on`) loads a kernel
//! image whose embedded signature chains to a certificate in the machine's
//! Root store; the install script imports the CA there and the signing
//! certificate into TrustedPublisher, so that installing the package does
//! not ask. The private keys stay out of the package.

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::stamp::Stamp;

/// A tool that failed, or is missing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolError {
    /// The step (`openssl req (test CA)`, `osslsigncode verify rsndk.sys`).
    pub step: String,
    /// Why: the tool's exit status and output, or that it is missing.
    pub detail: String,
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.step, self.detail)
    }
}

impl std::error::Error for ToolError {}

/// Runs `command`; its output when it exits 0.
pub fn run(step: &str, command: &mut Command) -> Result<Output, ToolError> {
    let program = command.get_program().to_string_lossy().into_owned();
    let output = command.output().map_err(|e| ToolError {
        step: step.to_owned(),
        detail: if e.kind() == std::io::ErrorKind::NotFound {
            format!("`{program}` is not installed (Debian: apt-get install {program})")
        } else {
            format!("cannot run `{program}`: {e}")
        },
    })?;
    if !output.status.success() {
        return Err(ToolError {
            step: step.to_owned(),
            detail: format!(
                "{}\n{}{}",
                output.status,
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            ),
        });
    }
    Ok(output)
}

/// The certificates and keys of one build's test signing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TestSigning {
    /// The CA's certificate (PEM): the trust anchor.
    pub ca_pem: PathBuf,
    /// The signing certificate (PEM), issued by the CA, EKU code signing.
    pub signer_pem: PathBuf,
    /// The signing certificate's private key (PEM).
    pub signer_key: PathBuf,
}

/// The extensions of the signing certificate: an end entity whose only
/// use is code signing, as Authenticode checks it.
const SIGNER_EXTENSIONS: &str = "basicConstraints = critical, CA:FALSE\n\
keyUsage = critical, digitalSignature\n\
extendedKeyUsage = codeSigning\n\
subjectKeyIdentifier = hash\n\
authorityKeyIdentifier = keyid\n";

/// Makes a test CA and a signing certificate in `dir` (created; files of
/// an earlier build replaced), named after `stamp`, valid 90 days.
pub fn make_test_signing(dir: &Path, stamp: &Stamp) -> Result<TestSigning, ToolError> {
    std::fs::create_dir_all(dir).map_err(|e| ToolError {
        step: "certificate directory".into(),
        detail: format!("{}: {e}", dir.display()),
    })?;
    let when = format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        stamp.year, stamp.month, stamp.day, stamp.hour, stamp.minute, stamp.second
    );
    let ca_key = dir.join("ca.key");
    let ca_pem = dir.join("ca.pem");
    run(
        "openssl req (test CA)",
        Command::new("openssl")
            .args(["req", "-x509", "-newkey", "rsa:3072", "-sha256", "-nodes"])
            .arg("-keyout")
            .arg(&ca_key)
            .arg("-out")
            .arg(&ca_pem)
            .args(["-days", "90", "-subj"])
            .arg(format!("/O=rsndk project/CN=rsndk test CA {when}"))
            .args([
                "-addext",
                "basicConstraints=critical,CA:TRUE",
                "-addext",
                "keyUsage=critical,keyCertSign,cRLSign",
                "-addext",
                "subjectKeyIdentifier=hash",
            ]),
    )?;
    let signer_key = dir.join("signer.key");
    let signer_csr = dir.join("signer.csr");
    let signer_pem = dir.join("signer.pem");
    let extensions = dir.join("signer.ext");
    std::fs::write(&extensions, SIGNER_EXTENSIONS).map_err(|e| ToolError {
        step: "signer extensions".into(),
        detail: e.to_string(),
    })?;
    run(
        "openssl req (signing key)",
        Command::new("openssl")
            .args(["req", "-newkey", "rsa:3072", "-sha256", "-nodes"])
            .arg("-keyout")
            .arg(&signer_key)
            .arg("-out")
            .arg(&signer_csr)
            .arg("-subj")
            .arg(format!("/O=rsndk project/CN=rsndk test signing {when}")),
    )?;
    run(
        "openssl x509 (issue the signing certificate)",
        Command::new("openssl")
            .args(["x509", "-req", "-sha256", "-days", "90"])
            .arg("-in")
            .arg(&signer_csr)
            .arg("-CA")
            .arg(&ca_pem)
            .arg("-CAkey")
            .arg(&ca_key)
            .args(["-set_serial", &format!("0x{:x}", stamp_serial(stamp))])
            .arg("-extfile")
            .arg(&extensions)
            .arg("-out")
            .arg(&signer_pem),
    )?;
    Ok(TestSigning {
        ca_pem,
        signer_pem,
        signer_key,
    })
}

/// A serial number unique per build second (positive, 64 bits).
fn stamp_serial(stamp: &Stamp) -> u64 {
    let date = u64::from(stamp.year) * 10_000 + u64::from(stamp.month) * 100 + u64::from(stamp.day);
    let time = u64::from(stamp.hour) * 10_000_000
        + u64::from(stamp.minute) * 100_000
        + u64::from(stamp.second) * 1000;
    date * 1_000_000_000 + time + u64::from(stamp.millisecond)
}

/// Writes the DER form of the PEM certificate `pem` to `der` (what
/// Import-Certificate and certutil read as a `.cer`).
pub fn to_der(pem: &Path, der: &Path) -> Result<(), ToolError> {
    run(
        "openssl x509 (DER)",
        Command::new("openssl")
            .args(["x509", "-outform", "DER"])
            .arg("-in")
            .arg(pem)
            .arg("-out")
            .arg(der),
    )
    .map(drop)
}

/// Signs the PE image `file` in place: an Authenticode SHA-256 signature
/// by the signing certificate, with the CA's certificate in the
/// signature's certificate set. No timestamp (no network here): the
/// signature is good while the certificate is.
pub fn sign(signing: &TestSigning, file: &Path, description: &str) -> Result<(), ToolError> {
    let name = file
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let signed = file.with_extension("signed");
    let _ = std::fs::remove_file(&signed);
    run(
        &format!("osslsigncode sign {name}"),
        Command::new("osslsigncode")
            .args(["sign", "-h", "sha256", "-n", description])
            .arg("-certs")
            .arg(&signing.signer_pem)
            .arg("-ac")
            .arg(&signing.ca_pem)
            .arg("-key")
            .arg(&signing.signer_key)
            .arg("-in")
            .arg(file)
            .arg("-out")
            .arg(&signed),
    )?;
    std::fs::rename(&signed, file).map_err(|e| ToolError {
        step: format!("replace {name} with its signed copy"),
        detail: e.to_string(),
    })
}

/// `osslsigncode verify` of `file` with `ca_pem` as the only trusted CA;
/// its report when the signature verifies.
pub fn verify(ca_pem: &Path, file: &Path) -> Result<String, ToolError> {
    let name = file
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let output = run(
        &format!("osslsigncode verify {name}"),
        Command::new("osslsigncode")
            .arg("verify")
            .arg("-CAfile")
            .arg(ca_pem)
            .arg("-in")
            .arg(file),
    )?;
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}
