//! The observable state of a circuit breaker instance, and the [`State`] it is in.

use std::sync::Arc;

use super::CircuitBreakerConfig;
use crate::readings::{Reading, Series};

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
    /// Keys a keyed instance (SPEC §15) holds now (0 when unkeyed).
    pub keys: u32,
    /// Keys a keyed instance forgot at rest to make room for new ones.
    pub evicted: u64,
    /// New keys a keyed instance refused with `Rejection::KeysExhausted`.
    pub keys_exhausted: u64,
}

const STATE: Series = Series::gauge("circuit_breaker_state", "1 for the breaker's current state, 0 for the others");
const FAILURE_RATE: Series =
    Series::gauge("circuit_breaker_failure_rate", "failure rate in percent, NaN until minimum_calls are recorded");
const SLOW_CALL_RATE: Series =
    Series::gauge("circuit_breaker_slow_call_rate", "slow-call rate in percent, NaN until minimum_calls are recorded");
const NOT_PERMITTED: Series =
    Series::gauge("circuit_breaker_not_permitted_calls", "calls refused since the breaker was built or reset");

/// Each state and the label its series of `circuit_breaker_state` gets (also the `metrics`
/// feature's gauges, `metrics.rs`).
pub(super) const STATES: [(State, &str); 5] = [
    (State::Closed, "closed"),
    (State::Open, "open"),
    (State::HalfOpen, "half_open"),
    (State::ForcedOpen, "forced_open"),
    (State::Disabled, "disabled"),
];

/// One `circuit_breaker_state` series per state (1 for the current one), the two rates (`NaN`
/// while there are none) and the calls refused.
impl crate::readings::Readings for CircuitBreakerSnapshot {
    const SERIES: &'static [Series] = &[STATE, FAILURE_RATE, SLOW_CALL_RATE, NOT_PERMITTED];

    fn instance(&self) -> &str {
        &self.instance
    }

    fn read(&self, out: &mut dyn FnMut(Reading)) {
        for (state, label) in STATES {
            let on = if self.state == state { 1.0 } else { 0.0 };
            out(Reading::labelled(&STATE, ("state", label), on));
        }
        let rate = |r: Option<f32>| r.map_or(f64::NAN, f64::from);
        out(Reading::new(&FAILURE_RATE, rate(self.failure_rate)));
        out(Reading::new(&SLOW_CALL_RATE, rate(self.slow_call_rate)));
        out(Reading::new(&NOT_PERMITTED, self.not_permitted_calls as f64));
    }
}
