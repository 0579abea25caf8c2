//! Prints every layout and constant fact of the `ndkpi` mirror, one per
//! line (`NDK_QP size 48`, `NDK_QP_DISPATCH.NdkRead offset 64`,
//! `const NDK_OP_FLAG_DEFER 512`), for comparison with the C headers.
//! With `--c`: the generated block of `include/ndkpi.h` instead (status
//! definitions and one `_Static_assert` per fact).

use std::io::{self, BufWriter, Write};
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut out = BufWriter::new(io::stdout().lock());
    let c = std::env::args().nth(1).as_deref() == Some("--c");
    // A closed pipe (`| head`) just ends the listing.
    let written = if c {
        writeln!(out, "{}", ndkpi::c_header::C_BLOCK_BEGIN)
            .and_then(|()| ndkpi::c_header::c_block().try_for_each(|line| writeln!(out, "{line}")))
            .and_then(|()| writeln!(out, "{}", ndkpi::c_header::C_BLOCK_END))
    } else {
        ndkpi::facts().try_for_each(|fact| writeln!(out, "{fact}"))
    };
    if written.is_err() {
        return ExitCode::SUCCESS;
    }
    if out.flush().is_err() {
        return ExitCode::SUCCESS;
    }
    ExitCode::SUCCESS
}
