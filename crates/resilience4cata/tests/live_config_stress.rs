//! Updates racing calls on several threads (SPEC §16): no instance is ever seen half-applied, an
//! update never hands out a free burst, and nothing deadlocks.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::thread;

use resilience4cata::testing::{self, ManualClock};
use resilience4cata::{Pipeline, Registry, RegistryError, Rejection, ResilienceError};

#[derive(Clone, Debug, PartialEq, ResilienceError)]
pub enum CallError {
    Down,
    #[rejection]
    Rejected(Rejection),
}

/// Two whole configurations the updater alternates between.
const X: &str = "[instances.quotes.rate_limiter]\npermits = 10\nperiod = \"1s\"\nmax_wait = \"0\"\n\
                 [instances.cb.circuit_breaker]\nwindow_size = 10\nminimum_calls = 10\nfailure_rate_threshold = 90\n\
                 [instances.fetch.retry]\nmax_attempts = 2\ndelay = \"0\"\n";
const Y: &str = "[instances.quotes.rate_limiter]\npermits = 20\nperiod = \"2s\"\nmax_wait = \"0\"\n\
                 [instances.cb.circuit_breaker]\nwindow_size = 20\nminimum_calls = 20\nfailure_rate_threshold = 95\n\
                 [instances.fetch.retry]\nmax_attempts = 4\ndelay = \"0\"\n";

/// Whether a snapshot shows one of the two configurations whole, per instance.
fn whole(registry: &Registry) -> bool {
    let s = registry.snapshot();
    let limiter = &s.rate_limiters()[0].config;
    let breaker = &s.circuit_breakers()[0].config;
    let retry = &s.retries()[0].config;
    let x = (limiter.permits, limiter.period.as_secs()) == (10, 1);
    let y = (limiter.permits, limiter.period.as_secs()) == (20, 2);
    let bx = (breaker.window_size, breaker.minimum_calls, breaker.failure_rate_threshold) == (10, 10, 90.0);
    let by = (breaker.window_size, breaker.minimum_calls, breaker.failure_rate_threshold) == (20, 20, 95.0);
    (x || y) && (bx || by) && (retry.max_attempts == 2 || retry.max_attempts == 4)
}

#[test]
fn updates_racing_calls_never_expose_a_half_applied_instance() -> Result<(), RegistryError> {
    let clock = ManualClock::new(); // never moved: the limiter never refills
    let registry = testing::registry(&clock).config_toml(X).build()?;
    let quotes = Arc::new(Pipeline::builder(&registry, "quotes").rate_limiter().build::<u32, CallError>()?);
    let cb = Arc::new(Pipeline::builder(&registry, "cb").circuit_breaker().build::<u32, CallError>()?);
    let fetch = Arc::new(Pipeline::builder(&registry, "fetch").retry().build::<u32, CallError>()?);
    let (stop, permitted) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicU32::new(0)));

    let callers: Vec<_> = (0..3)
        .map(|t| {
            let (quotes, cb, fetch) = (Arc::clone(&quotes), Arc::clone(&cb), Arc::clone(&fetch));
            let (stop, permitted, registry) = (Arc::clone(&stop), Arc::clone(&permitted), registry.clone());
            thread::spawn(move || {
                let mut i = 0u32;
                while !stop.load(Ordering::Relaxed) {
                    if quotes.execute(|| Ok(1)).is_ok() {
                        permitted.fetch_add(1, Ordering::Relaxed);
                    }
                    let _ = cb.execute(|| if (i + t) % 7 == 0 { Err(CallError::Down) } else { Ok(1) });
                    let mut attempts = 0;
                    let _ = fetch.execute(|| {
                        attempts += 1;
                        Err(CallError::Down)
                    });
                    assert!((1..=4).contains(&attempts), "{attempts} attempts");
                    assert!(whole(&registry), "a snapshot mixed two updates");
                    i += 1;
                }
                i
            })
        })
        .collect();
    for n in 0..300 {
        registry.update_toml(if n % 2 == 0 { Y } else { X })?;
        assert!(whole(&registry));
    }
    stop.store(true, Ordering::Relaxed);
    let calls: u32 = callers.into_iter().map(|h| h.join().unwrap()).sum();
    assert!(calls > 0);
    // The clock never moved: the used share of the burst survives every rescale, so over the
    // whole run at most the larger burst was handed out, however the updates fell.
    let permitted = permitted.load(Ordering::Relaxed);
    assert!((10..=20).contains(&permitted), "{permitted} permits with the clock standing still");
    Ok(())
}
