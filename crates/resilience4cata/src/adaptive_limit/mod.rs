//! Adaptive limit: a concurrency limit that follows the dependency's measured latency and drops.
//!
//! A fixed bulkhead needs someone to know the right number of concurrent calls; that number moves
//! with the dependency's capacity (a deploy, a noisy neighbour, a failover). An adaptive limit
//! finds it from outcomes, as TCP finds a congestion window: every finished call is a sample
//! (its latency, the calls in flight when it started, whether it was *dropped*), and an algorithm
//! from Netflix's concurrency-limits turns samples into a new limit. Calls over the limit wait up
//! to `max_wait`, then fail with [`Rejection::LimitExceeded`](crate::Rejection::LimitExceeded)
//! without running, so load is shed early instead of queueing inside a struggling dependency.
//!
//! A *drop* is an `Err` matching `drop_on` (default: every `Err`) and not `ignore_on`, an inner
//! `CallTimeout`, or (Aimd) a call slower than `latency_timeout`. `ignore_on` outcomes and local
//! refusals from further in (a bulkhead's `BulkheadFull`) are not samples: the slot is given back
//! and the limit stays. A panic or a dropped future gives the slot back the same way.
//!
//! The algorithms ([`Aimd`], [`Gradient2`], [`Vegas`]) are public, pure and clock-free
//! ([`LimitAlgorithm`]), so they can be simulated; `docs/adaptive-limit.md` shows all three
//! against a simulated dependency whose capacity drops from 40 to 15.
//!
//! Pass path: one compare-and-set takes a slot, one read-modify-write gives it back, and with Aimd
//! that same write stores the new limit: no lock, no allocation. Gradient2 and Vegas see calls in
//! *sample windows* (Netflix's `WindowedLimit`): a call records its sample on its own thread's
//! stripe with plain loads and stores, and once per window (`min_window_time` to
//! `max_window_time`) the first call to finish after its end folds the stripes into one sample
//! (mean latency, most calls in flight, any drop) under a `try_lock`, so they too take no lock on
//! the pass path. Aimd dates calls on the coarse clock (one atomic load, within about a
//! millisecond of the system clock: ample against a 5 s `latency_timeout`); Gradient2 and Vegas
//! read the exact clock twice per call, since their signal is the latency itself, and the coarse
//! one once windows' fastest calls take 100 ms or more (`docs/adaptive-limit.md` states the cost).
//! The async form takes its slot when `acquire_async` is called (the generated code awaits it at
//! once), so its future is ready on the first poll and only a refusal or a wait runs in a future.
//!
//! ```
//! use resilience4cata::testing::{self, ManualClock};
//! use resilience4cata::{Rejection, ResilienceError, resilient};
//!
//! #[resilient]
//! pub trait Backend {
//!     #[adaptive_limit(initial_limit = 20)]
//!     fn get(&self, fail: bool) -> std::io::Result<u32>;
//! }
//!
//! struct Flaky;
//! impl Backend for Flaky {
//!     fn get(&self, fail: bool) -> std::io::Result<u32> {
//!         if fail { Err(std::io::ErrorKind::TimedOut.into()) } else { Ok(1) }
//!     }
//! }
//!
//! let registry = testing::registry(&ManualClock::new()).build()?;
//! let backend = ResilientBackend::new(Flaky, &registry)?;
//! for _ in 0..3 {
//!     let _ = backend.get(true); // three drops: 20 → 18 → 16 → 14
//! }
//! let id = concat!(module_path!(), "::Backend::get");
//! assert_eq!(registry.adaptive_limit(id).unwrap().snapshot().limit, 14);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Registry side:
//! [`RegistryBuilder::adaptive_limit_defaults`](crate::RegistryBuilder::adaptive_limit_defaults),
//! named configurations ([`adaptive_limit`](crate::RegistryBuilder::adaptive_limit)) and
//! per-instance overrides ([`adaptive_limit_instance`](crate::RegistryBuilder::adaptive_limit_instance));
//! a live instance through [`Registry::adaptive_limit`](crate::Registry::adaptive_limit) and
//! `registry.snapshot().adaptive_limits()`. Methods with the same `name` share one limit.
//!
//! # Defaults
//! | key | default | meaning |
//! |---|---|---|
//! | `algorithm` | `Aimd` | `Aimd`, `Gradient2` or `Vegas` |
//! | `initial_limit` | 20 | the limit before any sample |
//! | `min_limit` | 1 | the lowest limit (≥ 1) |
//! | `max_limit` | 200 | the highest limit |
//! | `max_wait` | `"0"` | how long a call may wait for a slot; `"0"` refuses at once |
//! | `backoff_ratio` | 0.9 | Aimd: limit × ratio on a drop, `0 < r < 1` |
//! | `latency_timeout` | `"5s"` | Aimd: a slower call (strictly) is a drop |
//! | `smoothing` | 0.2 (Gradient2), 1.0 (Vegas) | weight of each new target, `0 < s ≤ 1` |
//! | `long_window` | 600 | Gradient2: samples in the long-term latency average |
//! | `rtt_tolerance` | 1.5 | Gradient2: latency growth tolerated before the limit falls (≥ 1) |
//! | `queue_size` | 4 | Gradient2: headroom added to the limit per sample |
//! | `alpha` | `3·log10(limit)` | Vegas: below this estimated queue, grow |
//! | `beta` | `6·log10(limit)` | Vegas: above this estimated queue, shrink |
//! | `min_window_time` | `"100ms"` | Gradient2, Vegas: the shortest sample window |
//! | `max_window_time` | `"1s"` | Gradient2, Vegas: the longest (a window lasts 2 × its fastest call, within these) |
//! | `window_size` | 10 | Gradient2, Vegas: a window with fewer samples is discarded |
//! | `min_rtt_threshold` | `"100us"` | Gradient2, Vegas: faster calls are not samples |
//! | `drop_on`, `drop_on_if` | every `Err` | errors that are drops (code only) |
//! | `ignore_on`, `ignore_on_if` | none | errors that are not samples (code only) |
//! | `enabled` | `true` | `false`: every call passes untouched |
//!
//! # Telemetry
//! | event | when |
//! |---|---|
//! | [`AdaptiveLimitEvent::LimitChanged`] | a sample moved the limit (`from`, `to`) |
//! | [`AdaptiveLimitEvent::Rejected`] | a call was refused with `LimitExceeded` |
//!
//! With feature `metrics`: gauges `resilience4cata_adaptive_limit_limit` and
//! `resilience4cata_adaptive_limit_in_flight`, counter
//! `resilience4cata_adaptive_limit_rejected_total`, each labelled `instance` (every metric:
//! `docs/metrics.md`).

mod algorithm;
mod config;
mod events;
pub(crate) mod guard;
mod handle;
#[cfg(all(test, loom))]
mod loom;
#[cfg(feature = "metrics")]
pub(crate) mod metrics;
pub(crate) mod policy;
mod snapshot;
mod state;
mod window;

pub use algorithm::{Aimd, Gradient2, LimitAlgorithm, Vegas};
pub use config::{AdaptiveLimitConfig, AdaptiveLimitConfigBuilder, Algorithm};
pub use events::AdaptiveLimitEvent;
pub use handle::AdaptiveLimitHandle;
pub use snapshot::AdaptiveLimitSnapshot;
