//! A progress bar that appears only on a terminal and only once a run has
//! lasted more than a second (short runs and pipes stay clean).

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How long a run must last before its bar is shown.
const SHOW_AFTER: Duration = Duration::from_secs(1);

/// Progress of one run, in operations.
#[derive(Debug)]
pub struct Progress {
    bar: Option<ProgressBar>,
    start: Instant,
    last: Instant,
    shown: bool,
    pending: u64,
}

impl Progress {
    /// Progress towards `total` operations, labelled `label`; `quiet`
    /// (e.g. JSON output) never shows a bar.
    pub fn new(total: u64, label: &str, quiet: bool) -> Self {
        let bar = (!quiet && std::io::stderr().is_terminal()).then(|| {
            let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::hidden());
            if let Ok(style) = ProgressStyle::with_template(
                "{prefix} [{elapsed_precise}] {wide_bar} {pos}/{len} ({per_sec}, eta {eta})",
            ) {
                bar.set_style(style);
            }
            bar.set_prefix(label.to_owned());
            bar
        });
        Self {
            bar,
            start: Instant::now(),
            last: Instant::now(),
            shown: false,
            pending: 0,
        }
    }

    /// Counts `n` finished operations.
    pub fn inc(&mut self, n: u64) {
        let Some(bar) = &self.bar else { return };
        self.pending += n;
        // Touch the bar every 64 operations or 100 ms: it takes a lock.
        if self.pending < 64 && self.last.elapsed() < Duration::from_millis(100) {
            return;
        }
        bar.inc(self.pending);
        self.pending = 0;
        self.last = Instant::now();
        if !self.shown && self.start.elapsed() >= SHOW_AFTER {
            self.shown = true;
            bar.set_draw_target(ProgressDrawTarget::stderr());
        }
    }

    /// Removes the bar.
    pub fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}
