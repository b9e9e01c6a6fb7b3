//! Circuit breaker: stop calling a dependency that keeps failing, and let it recover.
//!
//! Why: when a dependency is down or overloaded, every call to it waits for a failure, holds
//! threads, connections and memory, and adds load to the thing that is already struggling. A
//! breaker watches the outcomes of recent calls; once too many fail (or are too slow) it *opens*
//! and refuses calls at once with `Rejection::CallNotPermitted`, without calling the method, for
//! `wait_in_open`. Then it lets a few probe calls through and closes again if they succeed. Put it
//! inside a retry: every attempt passes the breaker (and is recorded), and an open breaker stops
//! the retries at once, since its refusal is never retried.
//!
//! ```
//! use resilience4cata::circuit_breaker::State;
//! use resilience4cata::testing::{self, ManualClock};
//! use resilience4cata::{Rejection, ResilienceError, resilient};
//!
//! #[derive(Debug, PartialEq, ResilienceError)]
//! pub enum PriceError {
//!     Unavailable,
//!     #[rejection]
//!     Rejected(Rejection),
//! }
//!
//! #[resilient]
//! pub trait Prices {
//!     #[circuit_breaker(window_size = 4, minimum_calls = 4, wait_in_open = "30s")]
//!     fn price(&self, sku: &str) -> Result<u32, PriceError>;
//! }
//!
//! struct Down;
//! impl Prices for Down {
//!     fn price(&self, _sku: &str) -> Result<u32, PriceError> {
//!         Err(PriceError::Unavailable)
//!     }
//! }
//!
//! let clock = ManualClock::new();
//! let registry = testing::registry(&clock).build()?;
//! let prices = ResilientPrices::new(Down, &registry)?;
//! for _ in 0..4 {
//!     assert_eq!(prices.price("sku-1"), Err(PriceError::Unavailable)); // 4 of 4 failed: opens
//! }
//! // Open: refused at once, without calling `Down`.
//! assert!(matches!(prices.price("sku-1"), Err(PriceError::Rejected(Rejection::CallNotPermitted { .. }))));
//!
//! let breaker = registry.circuit_breaker(concat!(module_path!(), "::Prices::price")).unwrap();
//! assert_eq!((breaker.state(), breaker.snapshot().not_permitted_calls), (State::Open, 1));
//! clock.advance(std::time::Duration::from_secs(30)); // the next call is a half-open probe
//! # Ok::<(), resilience4cata::RegistryError>(())
//! ```
//!
//! # Defaults
//! | key | default | meaning |
//! |---|---|---|
//! | `window_type` | `Count` | `Count`: the last `window_size` calls; `Time`: the last `window_size` seconds, one bucket per second, each outcome dated when it is recorded |
//! | `window_size` | 100 | calls or seconds |
//! | `minimum_calls` | 100 | calls the window must hold before a rate is judged (capped at `window_size` for a count window) |
//! | `failure_rate_threshold` | 50 | percent of failures that opens the breaker |
//! | `slow_call_duration` | unset | a call taking at least this long is slow; unset turns slow-call tracking off, and then a success reads no clock |
//! | `slow_call_rate_threshold` | 100 | percent of slow calls that opens the breaker |
//! | `wait_in_open` | `"60s"` | how long the breaker stays open |
//! | `permitted_calls_in_half_open` | 10 | probes let through when half-open |
//! | `record_on` / `ignore_on` | every `Err` / none | Rust patterns over `E`; `ignore_on` wins |
//!
//! # States
//! - **Closed**: calls pass and their outcomes fill the window. Once it holds at least
//!   `minimum_calls` calls and the failure rate or the slow-call rate reaches its threshold, the
//!   breaker opens.
//! - **Open**: calls are refused without running. The first call at or after
//!   `opened_at + wait_in_open` moves it to half-open (there is no background thread).
//! - **HalfOpen**: `permitted_calls_in_half_open` probes pass, the rest are refused. Once every probe
//!   has completed, the breaker reopens if their failure or slow-call rate reaches a threshold, and
//!   closes otherwise.
//! - **ForcedOpen** (`force_open()`): refuses everything until `reset()`.
//! - **Disabled** (`disable()`): lets everything through and records nothing until `reset()`.
//! - `reset()`: Closed, empty window, counters zero.
//!
//! Each state starts with an empty window. A call's permit is tied to the state it was admitted
//! in: an outcome that arrives after the state changed is not recorded into the new one.
//!
//! # What is recorded
//! An `Err` carrying an inner policy's local refusal (`RateLimitExceeded`, `BulkheadFull`,
//! `LimitExceeded`) says nothing about the dependency and is not recorded, whether it came from this
//! method's own inner policies or from a nested wrapper (both are decisions made in this process). A
//! `CallTimeout` and a nested breaker's `CallNotPermitted` are failures. Then `ignore_on` (not
//! recorded), then `record_on` (a failure; default: every `Err`); any other `Err`, and every `Ok`,
//! is a success. A slow call that also failed counts in both rates. An ignored half-open probe, and
//! a permit dropped without an outcome (a panic, a dropped future), give the probe slot back.
//!
//! # Telemetry
//! | event | when |
//! |---|---|
//! | [`CircuitBreakerEvent::StateTransition`] | every change of state, automatic or manual |
//! | [`CircuitBreakerEvent::Reset`] | `reset()` was called |
//! | [`CircuitBreakerEvent::Success`] / [`CircuitBreakerEvent::Failure`] | an outcome was recorded (`slow` says whether it was slow) |
//! | [`CircuitBreakerEvent::Ignored`] | an outcome was not recorded |
//! | [`CircuitBreakerEvent::CallNotPermitted`] | a call was refused |
//!
//! Events are built only when someone listens. [`CircuitBreakerSnapshot`] reports the state, the
//! current window's counts and rates, and the refusals since the last reset.
//!
//! # Cost
//! A closed breaker admits a call with one atomic load and one test. On a count window it records a
//! fast success with one more load and compare of the state word and a plain load and store on a
//! counter stripe of its own thread: no read-modify-write, no shared cache line written, and no test
//! of the configuration (the state word carries what the configuration decides). A failure or slow
//! call then places those successes into the ring (a few read-modify-writes, off the success path).
//! Listeners registered on the builder, slow-call tracking, a time window, and failures waiting for
//! `minimum_calls` send outcomes through the out-of-line path (one call more). A time window adds
//! one to its current second's bucket (one read-modify-write). No lock, no allocation, and no clock
//! read unless slow-call tracking or a time window is configured (then one coarse reading: an atomic
//! load). Rates are computed only when a failure or slow call is recorded, once per second on a time
//! window, or while failures wait for `minimum_calls`.
//!
//! Measured by `crates/bench` (`crates/bench/callgrind.sh breaker_closed`, `cargo bench -p bench
//! --bench breaker`): the instructions, time and allocations of a closed-breaker success through a
//! `#[resilient]` method with the default `#[circuit_breaker]`, beside recloser, failsafe, seatbelt
//! and tower-resilience, are the `breaker_closed/*` rows of the "Results" table in
//! `docs/benchmarks.md` (the machine is described there), summed up in its "Against the targets"
//! row "breaker closed". What an application sees (a trait method over an `#[inline(never)]` call,
//! its result used, async calls awaited in a loop) are the `user_breaker_closed/*` rows of the
//! "User-shaped rows" table there, drawn in its chart. A time window adds one read-modify-write and slow-call tracking two coarse
//! clock readings per call (not in the benchmark table).

mod config;
mod events;
pub(crate) mod guard;
mod half_open;
mod handle;
#[cfg(all(test, loom))]
mod loom;
#[cfg(feature = "metrics")]
pub(crate) mod metrics;
pub(crate) mod policy;
pub(crate) mod shared;
mod snapshot;
mod state;
mod window;

pub use config::{
    CircuitBreakerConfig, CircuitBreakerConfigBuilder, MAX_COUNT_WINDOW, MAX_HALF_OPEN_CALLS, MAX_TIME_WINDOW,
    WindowType,
};
pub use events::CircuitBreakerEvent;
pub use handle::CircuitBreakerHandle;
pub use snapshot::{CircuitBreakerSnapshot, State};

#[cfg(test)]
mod tests;
