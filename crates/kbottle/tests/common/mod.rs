//! What the kernel tests share: running code on a processor of its own
//! until it bugchecks or returns.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use kbottle::cpu;
use kbottle::verifier::{self, Bugcheck, Policy};

/// Numbers the processors the tests start, so each has a name of its own.
static NEXT: AtomicUsize = AtomicUsize::new(0);

/// Runs `body` on a new processor thread named after `label` under
/// `Policy::Park`: the bugcheck it hits (the thread stays parked there),
/// or `None` once `body` returned. Panics if neither comes within 10 s.
pub fn on_new_processor(label: &str, body: impl FnOnce() + Send + 'static) -> Option<Bugcheck> {
    verifier::set_policy(Policy::Park);
    let name = format!("{label}#{}", NEXT.fetch_add(1, Ordering::SeqCst));
    let processor = name.clone();
    let thread = std::thread::spawn(move || {
        cpu::enter(&processor);
        body();
    });
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(b) = verifier::bugchecks()
            .into_iter()
            .find(|b| b.processor == name)
        {
            return Some(b);
        }
        if thread.is_finished() {
            return None;
        }
        assert!(
            Instant::now() < end,
            "{name}: neither returned nor bugchecked within 10 s"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}
