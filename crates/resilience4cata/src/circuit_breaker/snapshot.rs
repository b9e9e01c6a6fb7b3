//! The observable state of a circuit breaker instance, and the [`State`] it is in.

use std::sync::Arc;

use super::CircuitBreakerConfig;

/// The state of a circuit breaker.
///
/// ```
/// use resilience4cata::circuit_breaker::State;
///
/// assert!(State::Closed.permits_calls());
/// assert!(!State::ForcedOpen.permits_calls());
/// ```
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum State {
    /// Calls pass and are recorded; the breaker opens when a rate reaches its threshold.
    Closed,
    /// Calls are refused until `wait_in_open` has passed.
    Open,
    /// A few probe calls pass; their outcomes close or reopen the breaker.
    HalfOpen,
    /// Calls are refused until `reset()` (manual).
    ForcedOpen,
    /// Calls pass and nothing is recorded until `reset()` (manual).
    Disabled,
}

impl State {
    /// Whether calls pass in this state without being refused (half-open passes only its probes).
    pub fn permits_calls(self) -> bool {
        matches!(self, State::Closed | State::Disabled)
    }
}

/// One circuit breaker as `registry.snapshot().circuit_breakers()` or its handle reports it.
///
/// The call counts describe the current state's window (each state starts with an empty one): the
/// closed window, or the completed probes when half-open; open, forced-open and disabled breakers
/// record nothing and report zeros. `not_permitted_calls` counts every refusal since the breaker
/// was built or last `reset()`.
///
/// ```
/// use resilience4cata::circuit_breaker::{CircuitBreakerSnapshot, State};
///
/// fn describe(s: &CircuitBreakerSnapshot) -> String {
///     match (s.state, s.failure_rate) {
///         (State::Closed, Some(rate)) => format!("{}: closed, {rate:.0} % of {} calls failed", s.instance, s.buffered_calls),
///         (State::Closed, None) => format!("{}: closed, {} calls so far", s.instance, s.buffered_calls),
///         (state, _) => format!("{}: {state:?}, {} calls refused", s.instance, s.not_permitted_calls),
///     }
/// }
/// ```
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct CircuitBreakerSnapshot {
    /// The instance id.
    pub instance: Arc<str>,
    /// The resolved configuration.
    pub config: CircuitBreakerConfig,
    /// The current state.
    pub state: State,
    /// Calls recorded in the current window (half-open: completed probes).
    pub buffered_calls: u64,
    /// Of those, failures (a slow failure counts here and in `slow_calls`).
    pub failed_calls: u64,
    /// Of those, calls that took at least `slow_call_duration`.
    pub slow_calls: u64,
    /// Calls refused since the breaker was built or last reset.
    pub not_permitted_calls: u64,
    /// Failure rate in percent; `None` while the window holds fewer than `minimum_calls` calls (and
    /// in every state but closed).
    pub failure_rate: Option<f32>,
    /// Slow-call rate in percent; `None` exactly when `failure_rate` is.
    pub slow_call_rate: Option<f32>,
}
