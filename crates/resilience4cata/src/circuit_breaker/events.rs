//! What a circuit breaker publishes: every state transition, and per-call events that are only built
//! when someone listens.

use std::sync::Arc;

use super::State;

/// An event of a circuit breaker instance.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use resilience4cata::Registry;
/// use resilience4cata::circuit_breaker::CircuitBreakerEvent;
///
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let sink = Arc::clone(&seen);
/// let registry = Registry::builder()
///     .listen(move |e: &CircuitBreakerEvent| {
///         if let CircuitBreakerEvent::StateTransition { from, to, .. } = e {
///             sink.lock().unwrap().push((*from, *to));
///         }
///     })
///     .build()?;
/// # Ok::<(), resilience4cata::RegistryError>(())
/// ```
#[cfg_attr(feature = "serde", derive(serde::Serialize), serde(tag = "kind"))]
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum CircuitBreakerEvent {
    /// The breaker moved from one state to another (automatically or through its handle).
    StateTransition {
        /// The breaker's instance id.
        instance: Arc<str>,
        /// The key of a keyed instance (SPEC §15): its `Debug` text, made once when the key's state
        /// was (at most 256 bytes, then `…`); `None` for an unkeyed instance.
        key: Option<Arc<str>>,
        /// The state it left.
        from: State,
        /// The state it entered.
        to: State,
    },
    /// `reset()` emptied the window and zeroed the counters (published after the transition, if any).
    Reset {
        /// The breaker's instance id.
        instance: Arc<str>,
        /// The key of a keyed instance (SPEC §15): its `Debug` text, made once when the key's state
        /// was (at most 256 bytes, then `…`); `None` for an unkeyed instance.
        key: Option<Arc<str>>,
    },
    /// A call was recorded as a success.
    Success {
        /// The breaker's instance id.
        instance: Arc<str>,
        /// The key of a keyed instance (SPEC §15): its `Debug` text, made once when the key's state
        /// was (at most 256 bytes, then `…`); `None` for an unkeyed instance.
        key: Option<Arc<str>>,
        /// Whether it took at least `slow_call_duration`.
        slow: bool,
    },
    /// A call was recorded as a failure.
    Failure {
        /// The breaker's instance id.
        instance: Arc<str>,
        /// The key of a keyed instance (SPEC §15): its `Debug` text, made once when the key's state
        /// was (at most 256 bytes, then `…`); `None` for an unkeyed instance.
        key: Option<Arc<str>>,
        /// Whether it took at least `slow_call_duration` (it then counts as both).
        slow: bool,
    },
    /// A call ended with an outcome the breaker does not record (`ignore_on`, or a local rejection
    /// of an inner policy).
    Ignored {
        /// The breaker's instance id.
        instance: Arc<str>,
        /// The key of a keyed instance (SPEC §15): its `Debug` text, made once when the key's state
        /// was (at most 256 bytes, then `…`); `None` for an unkeyed instance.
        key: Option<Arc<str>>,
    },
    /// A call was refused: the breaker is open, forced open, or every half-open probe is taken.
    CallNotPermitted {
        /// The breaker's instance id.
        instance: Arc<str>,
        /// The key of a keyed instance (SPEC §15): its `Debug` text, made once when the key's state
        /// was (at most 256 bytes, then `…`); `None` for an unkeyed instance.
        key: Option<Arc<str>>,
    },
}

impl CircuitBreakerEvent {
    /// The instance id of the breaker that published the event.
    ///
    /// ```
    /// use resilience4cata::circuit_breaker::CircuitBreakerEvent;
    ///
    /// let e = CircuitBreakerEvent::Reset { instance: "prices".into(), key: None };
    /// assert_eq!(e.instance(), "prices");
    /// ```
    pub fn instance(&self) -> &str {
        match self {
            CircuitBreakerEvent::StateTransition { instance, .. }
            | CircuitBreakerEvent::Reset { instance, .. }
            | CircuitBreakerEvent::Success { instance, .. }
            | CircuitBreakerEvent::Failure { instance, .. }
            | CircuitBreakerEvent::Ignored { instance, .. }
            | CircuitBreakerEvent::CallNotPermitted { instance, .. } => instance,
        }
    }
}
