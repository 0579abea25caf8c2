//! Prints every layout and constant fact of the `ndis` declarations, one
//! per line (`NDIS_NDK_PROVIDER_CHARACTERISTICS size 24`,
//! `NDIS_NDK_PROVIDER_CHARACTERISTICS.OpenNDKAdapterHandler offset 8`,
//! `const OID_NDK_SET_STATE 4228121089`), for comparison with the C headers.

use std::io::{self, BufWriter, Write};
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut out = BufWriter::new(io::stdout().lock());
    for fact in ndis::facts() {
        // A closed pipe (`| head`) just ends the listing.
        if writeln!(out, "{fact}").is_err() {
            return ExitCode::SUCCESS;
        }
    }
    if out.flush().is_err() {
        return ExitCode::SUCCESS;
    }
    ExitCode::SUCCESS
}
