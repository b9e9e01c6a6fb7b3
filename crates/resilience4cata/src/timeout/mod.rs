//! Timeout: cut an attempt off when it takes longer than `duration`.
//!
//! Use it so a slow dependency costs a bounded amount of time per attempt: without a timeout, a call
//! that hangs holds its caller, its bulkhead slot and its connection for as long as the dependency
//! likes. Async methods only: the attempt's future is dropped at the deadline, which cancels it at
//! its current `.await`; a blocking call cannot be cancelled that way, so `#[timeout]` on a sync
//! method is a compile error.
//!
//! The timeout applies to each attempt, not to the whole call: it sits inside the retry, so every
//! retry attempt gets a fresh `duration` (bound the whole call with the retry's `max_duration`). A
//! timed-out attempt fails with [`Rejection::CallTimeout`](crate::Rejection::CallTimeout), which a
//! retry retries by default and which a circuit breaker records as a failure. A timeout has no
//! `name`: its instance id is always the derived one.
//!
//! A bulkhead inside the timeout (the default order): time spent waiting for a slot is local
//! queueing, not the dependency's slowness (SPEC §6). When the deadline comes while the attempt
//! still waits for its slot, the attempt ends as the bulkhead's
//! [`Rejection::BulkheadFull`](crate::Rejection::BulkheadFull), which a breaker does not record;
//! this timeout then publishes no `TimedOut` and does not count it (the bulkhead publishes its
//! `Rejected`). An attempt that got its slot and then ran out of time is a `CallTimeout` as
//! always. The bulkhead's `max_wait` is thereby capped by the time left to the deadline; to let a
//! call queue longer than one attempt's timeout, put the bulkhead outside it
//! (`#[policy_order(Retry, CircuitBreaker, Bulkhead, Timeout)]`, see the bulkhead's module docs).
//!
//! Cost: the deadline is fixed from the registry's coarse clock (one atomic load) and the attempt
//! is polled before any timer exists; only an attempt that is not ready on its first poll gets a
//! timer. An attempt that is ready at once reads no clock and registers nothing; a timer that never
//! fires is dropped with the attempt's result and, on a `testing::ManualClock`,
//! leaves the clock where it was. On the manual clock the timer takes part in the deadline order of
//! pending waits: an attempt that sleeps longer than its timeout is cut off at the timeout.
//! `Registry::shutdown` interrupts the waits between attempts, not a running attempt's deadline.
//!
//! ```
//! use std::time::Duration;
//! use resilience4cata::testing::{self, ManualClock};
//! use resilience4cata::{Rejection, ResilienceError, resilient};
//!
//! #[resilient]
//! pub trait Search {
//!     #[timeout(duration = "250ms")]
//!     async fn find(&self, query: &str) -> std::io::Result<Vec<u64>>;
//! }
//!
//! struct Hangs;
//! impl Search for Hangs {
//!     async fn find(&self, _query: &str) -> std::io::Result<Vec<u64>> {
//!         std::future::pending().await // never answers
//!     }
//! }
//!
//! let clock = ManualClock::new();
//! let search = ResilientSearch::new(Hangs, &testing::registry(&clock).build()?)?;
//! let runtime = tokio::runtime::Builder::new_current_thread().build()?;
//! let err = runtime.block_on(search.find("rust")).unwrap_err();
//! assert_eq!(err.kind(), std::io::ErrorKind::TimedOut);
//! assert!(matches!(err.rejection(), Some(Rejection::CallTimeout { .. })));
//! assert_eq!(clock.elapsed(), Duration::from_millis(250)); // the manual clock moved to the deadline
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Registry side: [`RegistryBuilder::timeout_defaults`](crate::RegistryBuilder::timeout_defaults),
//! named configurations ([`timeout`](crate::RegistryBuilder::timeout)) and per-instance overrides
//! ([`timeout_instance`](crate::RegistryBuilder::timeout_instance)); every instance in
//! `registry.snapshot().timeouts()`. There is no handle: a timeout has nothing to control.
//!
//! # Defaults
//! | key | default | meaning |
//! |---|---|---|
//! | `duration` | `"1s"` | how long one attempt may take (> 0) |
//! | `enabled` | `true` | `false`: attempts run without a deadline |
//!
//! # Telemetry
//! | event | when |
//! |---|---|
//! | [`TimeoutEvent::TimedOut`] | an attempt was still running at its deadline and was dropped |
//!
//! Attempts that finish in time publish nothing, nor do attempts still waiting for a bulkhead slot
//! at the deadline (the bulkhead's refusal, above). The snapshot counts the attempts cut off.

mod config;
mod events;
pub(crate) mod guard;
#[cfg(feature = "metrics")]
pub(crate) mod metrics;
pub(crate) mod policy;
mod race;
mod snapshot;
mod state;

pub use config::{TimeoutConfig, TimeoutConfigBuilder};
pub use events::TimeoutEvent;
pub use snapshot::TimeoutSnapshot;
