//! Prints every layout and constant fact of the `ndkpi` mirror, one per
//! line (`NDK_QP size 48`, `NDK_QP_DISPATCH.NdkRead offset 64`,
//! `const NDK_OP_FLAG_DEFER 512`), for comparison with the C headers.

use std::io::{self, BufWriter, Write};
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut out = BufWriter::new(io::stdout().lock());
    for fact in ndkpi::facts() {
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
