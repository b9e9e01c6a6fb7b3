//! loom model of the rate limiter's GCRA word (run with `RUSTFLAGS="--cfg loom"`, see
//! `docs/reliability.md`).

use std::sync::Arc;
use std::time::Duration;

use loom::thread;

use super::RateLimiterConfig;
use super::state::{AtomicGcra, Decision};

#[test]
fn loom_gcra_hands_out_exactly_the_burst() {
    loom::model(|| {
        let config = RateLimiterConfig { permits: 2, period: Duration::from_secs(1), ..Default::default() };
        let gcra = Arc::new(AtomicGcra::new(&config));
        let callers: Vec<_> = (0..3)
            .map(|i| {
                let gcra = Arc::clone(&gcra);
                // One through the pass path, two through the full decision.
                thread::spawn(
                    move || if i == 0 { gcra.try_acquire(0, 0) } else { gcra.acquire(0, 0) == Decision::Permit },
                )
            })
            .collect();
        let permitted = callers.into_iter().map(|h| h.join().unwrap()).filter(|&p| p).count();
        assert_eq!(permitted, 2, "the burst is exactly `permits`");
        assert_eq!(gcra.available(0), 0);
    });
}
