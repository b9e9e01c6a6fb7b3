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

#[test]
fn loom_a_burst_dated_late_passes_whole_and_never_more() {
    // The pass path dates the burst's first permit `lag` after the reading and stores that origin
    // after its compare-and-set; a call it then refuses is decided again on the exact clock,
    // judged at the origin if it sees it. Two racing callers take one or two permits (the second
    // may miss an origin not yet stored); whatever the interleaving, the calls after them complete
    // the burst of `permits` and not one call more.
    loom::model(|| {
        let config = RateLimiterConfig { permits: 2, period: Duration::from_secs(1), ..Default::default() };
        let gcra = Arc::new(AtomicGcra::new(&config));
        let lag = 2_000_000;
        let call = move |gcra: &AtomicGcra| gcra.try_acquire(0, lag) || gcra.acquire(0, 0) == Decision::Permit;
        let callers: Vec<_> = (0..2)
            .map(|_| {
                let gcra = Arc::clone(&gcra);
                thread::spawn(move || call(&gcra))
            })
            .collect();
        let racing = callers.into_iter().map(|h| h.join().unwrap()).filter(|&p| p).count();
        assert!(racing >= 1, "the first permit of a full bucket is never refused");
        let after = (0..2).filter(|_| call(&gcra)).count();
        assert_eq!(racing + after, 2, "the burst is exactly `permits`");
    });
}

#[test]
fn loom_an_update_racing_a_permit_is_never_half_applied() {
    // A live update (SPEC §16) changes the constants while a call takes a permit. Sequentially:
    // the permit under A (1 per second: interval 1 s, no slack) then the rescale of the spent
    // burst (TAT stays 1 s), or the rescale of the full bucket (TAT 0 -> 1, a value other than
    // before) then the permit under B (2 per second: interval 0.5 s) from 1 ns. A decision that
    // mixed A's slack with B's interval (or the reverse) would leave another TAT; a call that met
    // the update under way decides again on the exact path (as the pass path's refusal does).
    loom::model(|| {
        let a = RateLimiterConfig { permits: 1, period: Duration::from_secs(1), ..Default::default() };
        let b = RateLimiterConfig { permits: 2, period: Duration::from_secs(1), ..Default::default() };
        let gcra = Arc::new(AtomicGcra::new(&a));
        let caller = {
            let gcra = Arc::clone(&gcra);
            thread::spawn(move || gcra.try_acquire_dated(0, 0) || gcra.acquire(0, 0) == Decision::Permit)
        };
        gcra.reconfigure(&b, 0);
        assert!(caller.join().unwrap(), "the full bucket's permit, under either version");
        let tat = gcra.tat();
        assert!(tat == 1_000_000_000 || tat == 500_000_001, "one version per decision, TAT {tat}");
    });
}
