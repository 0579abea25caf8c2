//! ndkperf: bandwidth, latency and SMB Direct style workloads over rsndk
//! adapters. The workloads need the software RNIC, which has not landed yet;
//! until then the tool says so and fails rather than printing numbers.

use std::process::ExitCode;

fn main() -> ExitCode {
    eprintln!(
        "ndkperf: no workload is available yet: the software RNIC that carries the \
         traffic is still being built (see README, \"Status\")"
    );
    ExitCode::from(2)
}
