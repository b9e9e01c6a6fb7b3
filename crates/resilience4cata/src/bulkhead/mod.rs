//! Bulkhead: at most `max_concurrent_calls` calls inside at once.
//!
//! Use it so one slow or overloaded dependency cannot take every thread, connection or task of the
//! caller: calls past the limit wait up to `max_wait` for a slot and are then refused with
//! [`Rejection::BulkheadFull`](crate::Rejection::BulkheadFull), instead of piling up.
//!
//! The slot is a guard ([`BulkheadPermit`](crate::__private::BulkheadPermit) in the generated code)
//! given back however the call ends: a value, an error, a panic, or the future dropped. The bulkhead
//! is the innermost policy, so it holds a slot only while the method runs: never during a retry's
//! backoff, and a timeout that cuts an attempt off frees its slot.
//!
//! Pass path: one flag test and one compare-and-set on one atomic word to take a slot, one
//! fetch-sub to give it back; no lock, no clock read, no allocation. The async form takes the slot
//! when `acquire_async` is called (the generated code awaits it at once), so its future is ready
//! on the first poll and only a wait runs in a future. Waiting (only with `max_wait > 0`): callers queue in arrival order
//! behind a mutex that only the wait path touches, and a freed slot is handed straight to the oldest
//! waiter, so newcomers cannot overtake the queue. Sync methods park their thread; async methods wait
//! in a future, without boxing, and leave the queue when dropped. `Registry::shutdown` ends every
//! wait with a refusal.
//!
//! # A queueing bulkhead and a timeout
//!
//! In the default order the timeout sits outside the bulkhead, so an attempt's wait for a slot
//! runs on the attempt's deadline. That wait is local queueing, not the dependency's slowness
//! (SPEC §6): when the timeout fires while the attempt still waits for its slot, the attempt ends
//! as [`Rejection::BulkheadFull`](crate::Rejection::BulkheadFull), a local refusal that a circuit
//! breaker does not record and an adaptive limit does not sample, not as `CallTimeout`. An attempt
//! that got its slot and then ran out of time stays a `CallTimeout` (recorded: that time was the
//! dependency's). So **`max_wait` is capped by the time left to the timeout**: with a 300 ms
//! timeout, `max_wait = "5s"` waits at most 300 ms. The same holds in every order that keeps the
//! timeout outside the bulkhead, in the pipeline and its tower layer too (a hedge between the two
//! runs its attempts side by side, so there the timeout stays a `CallTimeout`).
//!
//! What is published for such an attempt is what a refusal publishes: this bulkhead's
//! [`BulkheadEvent::Rejected`] (and its rejection counter under feature `metrics`); the timeout
//! publishes no `TimedOut` and does not count it in its snapshot's `timed_out`. A slot handed over
//! at the very deadline is not taken: the attempt is refused and the slot goes to the next waiter.
//! Cost: none on the pass path (a free slot); only a wait marks the attempt as waiting, and the
//! timeout reads the mark only when it fires.
//!
//! The queue still eats into the attempt's time: a call that gets its slot late has only what is
//! left of its timeout, and one that then runs out of it is a `CallTimeout` like any other. Under
//! a sustained queue such calls do reach the breaker (a burst of 1,000 calls on 16 slots of a
//! 20 ms host, with a 300 ms timeout, opened a breaker of window 4 that way in
//! `examples/http_client.rs` run in the default order).
//!
//! **When the queue should not share the deadline**, put the bulkhead outside the timeout:
//! `#[policy_order(Retry, CircuitBreaker, Bulkhead, Timeout)]` (a pipeline:
//! `.order([Policy::Retry, Policy::CircuitBreaker, Policy::Bulkhead, Policy::Timeout])`). Then a
//! call waits up to its full `max_wait` for a slot and the timeout bounds only the time the
//! dependency takes. Choose it when callers may queue longer than one attempt's timeout — a
//! bulkhead smaller than the concurrency it faces, with `max_wait` larger than the timeout, as a
//! client of one host under load. Keep the default when a queued call is as useless to the caller
//! past the timeout as a slow answer.
//!
//! ```
//! use std::time::Duration;
//! use resilience4cata::testing::{self, ManualClock};
//! use resilience4cata::{Rejection, ResilienceError, resilient};
//!
//! #[resilient]
//! pub trait Host {
//!     #[timeout(duration = "300ms")]
//!     #[bulkhead(max_concurrent_calls = 1, max_wait = "5s")]
//!     async fn get(&self) -> std::io::Result<u32>;
//! }
//!
//! struct Backend(ManualClock);
//! impl Host for Backend {
//!     async fn get(&self) -> std::io::Result<u32> {
//!         self.0.sleep(Duration::from_secs(1)).await; // holds the one slot past the timeout
//!         Ok(1)
//!     }
//! }
//!
//! let clock = ManualClock::new();
//! let host = ResilientHost::new(Backend(clock.clone()), &testing::registry(&clock).build()?)?;
//! let runtime = tokio::runtime::Builder::new_current_thread().build()?;
//! let (first, queued) = runtime.block_on(async { tokio::join!(host.get(), host.get()) });
//! // The first call had its slot: it timed out. The second never got one: refused, at 300 ms.
//! assert!(matches!(first.unwrap_err().rejection(), Some(Rejection::CallTimeout { .. })));
//! assert!(matches!(queued.unwrap_err().rejection(), Some(Rejection::BulkheadFull { .. })));
//! assert_eq!(clock.elapsed(), Duration::from_millis(300));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Waits and the clock: the deadline of a wait is on the registry's clock. Async waits on a
//! `testing::ManualClock` take part in its deadline order (a waiter whose
//! `max_wait` ends before the holder's own wait is refused at its deadline; one that ends later gets
//! the slot when the holder finishes, and leaves the clock there). A sync waiter waits for another
//! thread to finish, so on the manual clock it does not move the clock itself: it gets a slot when
//! one is freed, and is refused once the clock has been moved past its deadline by someone else.
//!
//! ```
//! use resilience4cata::testing::{self, ManualClock};
//! use resilience4cata::{Rejection, ResilienceError, resilient};
//!
//! /// Runs `next` inside the bulkhead: a call that calls again.
//! pub type Next<'a> = &'a dyn Fn() -> std::io::Result<u32>;
//!
//! #[resilient]
//! pub trait Renderer {
//!     #[bulkhead(max_concurrent_calls = 1)]
//!     fn render(&self, next: Next<'_>) -> std::io::Result<u32>;
//! }
//!
//! struct Backend;
//! impl Renderer for Backend {
//!     fn render(&self, next: Next<'_>) -> std::io::Result<u32> {
//!         next()
//!     }
//! }
//!
//! let registry = testing::registry(&ManualClock::new()).build()?;
//! let renderer = ResilientRenderer::new(Backend, &registry)?;
//! let nested = renderer.render(&|| renderer.render(&|| Ok(1))); // a second call while one is inside
//! assert!(matches!(nested.unwrap_err().rejection(), Some(Rejection::BulkheadFull { .. })));
//! assert_eq!(renderer.render(&|| Ok(2))?, 2); // the slot came back
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Registry side: [`RegistryBuilder::bulkhead_defaults`](crate::RegistryBuilder::bulkhead_defaults),
//! named configurations ([`bulkhead`](crate::RegistryBuilder::bulkhead)) and per-instance overrides
//! ([`bulkhead_instance`](crate::RegistryBuilder::bulkhead_instance)); a live instance through
//! [`Registry::bulkhead`](crate::Registry::bulkhead) and `registry.snapshot().bulkheads()`. Methods
//! with the same `name` share one bulkhead.
//!
//! # Defaults
//! | key | default | meaning |
//! |---|---|---|
//! | `max_concurrent_calls` | 25 | calls inside at once (≥ 1) |
//! | `max_wait` | `"0"` | how long a call may wait for a slot; `"0"` refuses at once |
//! | `enabled` | `true` | `false`: every call passes untouched |
//!
//! # Telemetry
//! | event | when |
//! |---|---|
//! | [`BulkheadEvent::Permitted`] | a call got a slot |
//! | [`BulkheadEvent::Rejected`] | a call was refused with `BulkheadFull` (also when a timeout outside fired while it waited) |
//! | [`BulkheadEvent::Finished`] | a call gave its slot back, however it ended |
//!
//! All three are per-call events, built only when a listener, a subscription or an interested
//! `tracing` subscriber wants them (feature `metrics` updates its handles without building them):
//! an unobserved bulkhead pays a branch for each. A disabled bulkhead publishes
//! nothing. The snapshot reports slots in flight, available and waiters.

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

pub use config::{BulkheadConfig, BulkheadConfigBuilder};
pub use events::BulkheadEvent;
pub use handle::BulkheadHandle;
pub use snapshot::BulkheadSnapshot;
