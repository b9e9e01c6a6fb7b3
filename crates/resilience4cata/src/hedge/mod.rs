//! Hedge: when an attempt is slow to answer, start another beside it and take the first answer.
//!
//! Use it against tail latency. Most calls to a replicated service answer fast, and a few are slow
//! because of the one replica, connection or garbage collection they hit; retrying does not help
//! (the slow attempt has not failed) and a timeout turns the wait into an error. A hedge keeps the
//! slow attempt running and, after `delay` without an answer, starts another one beside it; the
//! first `Ok` wins and the others are dropped, which cancels them at their current `.await`. The
//! price is extra load on the dependency, bounded by `max_hedged_attempts` (at most 8) and by the
//! delay: set it near the latency percentile you want to cut (say the p95), so only the slowest
//! calls are hedged. Only idempotent operations should be hedged: two attempts may both reach the
//! dependency.
//!
//! Rules (SPEC §7.7), outer to inner in the policy order a hedge takes retry's place:
//! - The first attempt starts when the call is first polled. While no attempt has succeeded and
//!   fewer than `1 + max_hedged_attempts` have started, the next one starts `delay` after the
//!   previous start, or at once when an attempt fails; every start restarts the delay.
//! - Each attempt passes the inner policies on its own: its own breaker permit (and record), rate
//!   limiter permit, timeout and bulkhead slot.
//! - The first `Ok` is returned, and every other attempt is dropped with the call's future. When
//!   every attempt failed, the call returns the failure of the attempt that finished last.
//! - A `Rejection::CallNotPermitted` (an open breaker, this method's or a nested wrapper's) starts
//!   no further attempt; those already running go on. Other refusals (`BulkheadFull`,
//!   `RateLimitExceeded`, `CallTimeout`) are failed attempts like any other.
//! - Ties: an attempt that finishes exactly when the delay runs out wins, and no attempt is added.
//! - `Registry::shutdown` stops adding attempts; running ones go on to their end.
//! - Async only (`#[hedge]` on a sync method is `R4C-SIG-021`), and never beside a retry on one
//!   method (`R4C-ATR-040`; `R4C-REG-001` in a pipeline).
//!
//! Cost: the attempts run inside the caller's future (no spawned task, so they may borrow the
//! caller's locals, and no `'static` bound). The first attempt is polled in place before anything
//! else exists, so a call it answers at once costs one poll; only when it is `Pending` is the delay's
//! timer created, and a call answered within `delay` allocates nothing (tested with a counting
//! allocator). Extra attempts are boxed as they start, one box each. Owned non-`Copy` arguments of
//! a hedged method are cloned per attempt (`&T` costs nothing); in a pipeline, the closure given to
//! `execute_async` is called as each attempt starts; the tower layer boxes the hedged call and
//! gives each attempt its own ready clone of the service and of the request.
//!
//! ```
//! use std::time::Duration;
//! use resilience4cata::hedge::HedgeEvent;
//! use resilience4cata::testing::{self, ManualClock};
//! use resilience4cata::resilient;
//!
//! #[resilient]
//! pub trait Search {
//!     #[hedge(delay = "100ms")]
//!     async fn find(&self, query: &str) -> std::io::Result<&'static str>;
//! }
//!
//! /// The first attempt hits a slow replica (500 ms); the second a fast one (50 ms).
//! struct Replicas {
//!     clock: ManualClock,
//!     calls: std::sync::atomic::AtomicU32,
//! }
//! impl Search for Replicas {
//!     async fn find(&self, _query: &str) -> std::io::Result<&'static str> {
//!         let slow = self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0;
//!         self.clock.sleep(Duration::from_millis(if slow { 500 } else { 50 })).await;
//!         Ok(if slow { "slow replica" } else { "fast replica" })
//!     }
//! }
//!
//! let clock = ManualClock::new();
//! let registry = testing::registry(&clock).listen(|e: &HedgeEvent| println!("{e:?}")).build()?;
//! let search = ResilientSearch::new(Replicas { clock: clock.clone(), calls: 0.into() }, &registry)?;
//! let runtime = tokio::runtime::Builder::new_current_thread().build()?;
//! assert_eq!(runtime.block_on(search.find("rust"))?, "fast replica");
//! assert_eq!(clock.elapsed(), Duration::from_millis(150)); // hedged at 100 ms, answered 50 ms later
//! assert_eq!(registry.snapshot().hedges()[0].hedge_wins, 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Registry side: `RegistryBuilder::hedge_defaults`, named configurations (`hedge(name, …)`,
//! chosen with `config = "name"`) and per-instance overrides (`hedge_instance(id, …)`); the
//! `[….hedge]` table of configuration files; every instance in `registry.snapshot().hedges()`.
//! There is no handle: a hedge has nothing to control. In a pipeline: `.hedge()`,
//! `.hedge_config(name)`, `.hedge_with(|h| …)`, then `execute_async` only.
//!
//! # Defaults
//! | key | default | meaning |
//! |---|---|---|
//! | `delay` | `"100ms"` | how long an attempt may go unanswered before the next one starts (`"0"`: all at once) |
//! | `max_hedged_attempts` | `1` | attempts beyond the first, 1 to 8 |
//! | `enabled` | `true` | `false`: one plain attempt, no events |
//! | `name` | the derived id | shares the instance (and its counters) between users of the name |
//! | `config` | none | a named configuration of the registry |
//!
//! # Telemetry
//! | event | when |
//! |---|---|
//! | [`HedgeEvent::Hedged`] | attempt 2, 3, … started (`attempt` is its number) |
//! | [`HedgeEvent::Finished`] | a call that hedged ended with a result: `attempts` started, `winner` the attempt whose `Ok` was returned, `None` when all failed (not published when the caller drops the call) |
//!
//! Calls answered by their first attempt alone publish nothing. The snapshot counts
//! `hedged_calls` (calls that started an extra attempt) and `hedge_wins` (calls won by one). With
//! feature `metrics`: counters `resilience4cata_hedge_extra_attempts_total` and
//! `resilience4cata_hedge_hedged_calls_total` (label `outcome`: `won_by_extra`, `won_by_first`,
//! `all_failed`), labelled by `instance` (every metric: `docs/metrics.md`); with feature `tracing`,
//! every event is a `tracing` event.
mod config;
mod events;
#[cfg(feature = "metrics")]
pub(crate) mod metrics;
pub(crate) mod policy;
mod race;
mod snapshot;
mod state;

pub use config::{HedgeConfig, HedgeConfigBuilder, MAX_HEDGED_ATTEMPTS};
pub use events::HedgeEvent;
pub use snapshot::HedgeSnapshot;
#[cfg(test)]
mod tests;
