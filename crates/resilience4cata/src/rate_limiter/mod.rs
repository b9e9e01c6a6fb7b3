//! Rate limiter: at most `permits` calls per `period`, with bursts up to `permits`.
//!
//! Use it to stay within a dependency's quota, or to protect it from a burst of your own traffic.
//! It refuses (or delays) calls *before* they are made, so unlike a circuit breaker it does not need
//! failures to happen first.
//!
//! How it decides: GCRA, the generic cell rate algorithm, a token bucket written as one number (the
//! theoretical arrival time) in one atomic word, updated by a compare-and-set loop: no lock, no
//! allocation, no background thread refilling anything. The sustained rate is `permits / period`
//! (one permit every `period / permits`, rounded up to a whole nanosecond so it is never exceeded);
//! an idle limiter saves up to `permits` permits, which a burst may use at once. Over any interval of
//! length `L`, at most `permits + L × permits / period` calls pass: in one `period`, up to
//! `2 × permits − 1` when a full burst is followed by the period's refill, as with any token bucket.
//!
//! Over the limit, a call waits for the next free permit when that is at most `max_wait` away
//! (reserving it, so waiters are served in turn) and is refused otherwise with
//! [`Rejection::RateLimitExceeded`](crate::Rejection::RateLimitExceeded), whose `retry_after` says
//! when the next permit frees up. Sync methods wait on the caller's thread, async methods in a
//! future; both on the registry's clock. The async form runs the pass path when `acquire_async` is
//! called (the generated code awaits it at once), so its future is ready on the first poll and
//! only the exact-clock decision and the wait run in a future. A wait cut short (the future dropped, or
//! `Registry::shutdown`) keeps its reserved permit used: the limiter errs towards fewer calls.
//!
//! Clock reads: the pass path reads the registry's *coarse* clock (one atomic load), which trails
//! real time by at most a known lag (the ticker's period, with as much again for a late wake-up:
//! 2 ms; zero under a `testing::ManualClock`, so tests are exact). It judges the call at the
//! reading, the earliest the call can be, and dates the permit at the reading plus the lag, the
//! latest: a stale reading can only make a decision stricter, never admit more than GCRA allows over
//! any real interval. Before it makes a call wait or refuses it, the limiter reads the exact clock and
//! decides again, dating that permit exactly. The two errs would add up on a burst: its first permit
//! dated late, its last judged early, a limiter of 5 per second would pass 4 calls in a row. So the
//! limiter remembers where the pass path started a burst on a full bucket, and the exact re-decision
//! judges a call of that burst at the burst's start when that is later than the exact time: a full
//! (idle or fresh) limiter passes its whole burst of `permits` calls in a row, on any clock, and
//! not one more (the argument is in `state.rs`, and in `docs/reliability.md`). What the lag still
//! costs: after a burst, the next permits come up to the lag later than they could; a burst that
//! starts within the lag of the moment the limiter became full again may find its last permit up
//! to the lag late; and when the burst is shallower than the lag (`(permits − 1) × period /
//! permits` under 2 ms, e.g. `permits = 1`), an idle limiter's pass path cannot admit at all and
//! every such call reads the exact clock (which then decides exactly).
//!
//! ```
//! use std::time::Duration;
//! use resilience4cata::testing::{self, ManualClock};
//! use resilience4cata::{Rejection, ResilienceError, resilient};
//!
//! #[resilient]
//! pub trait Prices {
//!     #[rate_limiter(permits = 2, period = "1s")]
//!     fn quote(&self, sku: &str) -> std::io::Result<u32>;
//! }
//!
//! struct Backend;
//! impl Prices for Backend {
//!     fn quote(&self, _sku: &str) -> std::io::Result<u32> {
//!         Ok(42)
//!     }
//! }
//!
//! let clock = ManualClock::new();
//! let registry = testing::registry(&clock).build()?;
//! let prices = ResilientPrices::new(Backend, &registry)?;
//! prices.quote("a")?;
//! prices.quote("b")?; // the burst of 2 is used up
//! let refused = prices.quote("c").unwrap_err();
//! let Some(Rejection::RateLimitExceeded { retry_after, .. }) = refused.rejection() else { panic!() };
//! assert_eq!(*retry_after, Duration::from_millis(500)); // one permit every 500 ms
//! clock.advance(*retry_after);
//! prices.quote("d")?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Registry side: [`RegistryBuilder::rate_limiter_defaults`](crate::RegistryBuilder::rate_limiter_defaults),
//! named configurations ([`rate_limiter`](crate::RegistryBuilder::rate_limiter)) and per-instance
//! overrides ([`rate_limiter_instance`](crate::RegistryBuilder::rate_limiter_instance)); a live
//! instance through [`Registry::rate_limiter`](crate::Registry::rate_limiter) and
//! `registry.snapshot().rate_limiters()`. Methods with the same `name` share one limiter.
//!
//! # Defaults
//! | key | default | meaning |
//! |---|---|---|
//! | `permits` | 50 | calls per `period`, and the largest burst (≥ 1) |
//! | `period` | `"1s"` | the time the permits refill over (> 0) |
//! | `max_wait` | `"0"` | how long a call may wait for a permit; `"0"` refuses at once |
//! | `enabled` | `true` | `false`: every call passes untouched |
//!
//! # Telemetry
//! | event | when |
//! |---|---|
//! | [`RateLimiterEvent::Permitted`] | a call got a permit (`waited` is zero on the pass path) |
//! | [`RateLimiterEvent::Rejected`] | a call was refused; `retry_after` says when the next permit frees up |
//!
//! Both are per-call events: they are built only when a listener, a subscription or an interested
//! `tracing` subscriber wants them (feature `metrics` updates its handles without building them),
//! so an unobserved limiter pays a single branch for them. A disabled limiter
//! publishes nothing. The snapshot reports the permits available right now.
//!
//! # In the policy order
//! The rate limiter sits inside the retry and the circuit breaker and outside the timeout and the
//! bulkhead: every retry attempt takes its own permit; calls the breaker refuses take none; a rate
//! limiter refusal is a local decision that a breaker does not record. A retry retries
//! `RateLimitExceeded` by default, after its backoff; add it to `abort_on` to fail fast.

mod config;
mod events;
pub(crate) mod guard;
mod handle;
#[cfg(all(test, loom))]
mod loom;
#[cfg(feature = "metrics")]
pub(crate) mod metrics;
pub(crate) mod policy;
pub(crate) mod shared;
mod snapshot;
pub(crate) mod state;

pub use config::{RateLimiterConfig, RateLimiterConfigBuilder};
pub use events::RateLimiterEvent;
pub use handle::RateLimiterHandle;
pub use snapshot::RateLimiterSnapshot;
