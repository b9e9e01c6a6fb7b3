//! The event of a shared instance's link to its fleet store (`crate::shared`).

use std::sync::Arc;

/// Which policy of a shared instance an event is about: an instance id may name a rate limiter, a
/// circuit breaker and a bulkhead at once, each shared (and degraded) on its own.
///
/// ```
/// use resilience4cata::shared::SharedPolicy;
///
/// assert_eq!(SharedPolicy::RateLimiter.as_str(), "rate_limiter");
/// assert_eq!(SharedPolicy::CircuitBreaker.to_string(), "circuit_breaker");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize), serde(rename_all = "snake_case"))]
#[non_exhaustive]
pub enum SharedPolicy {
    /// A shared rate limiter (its lease pool).
    RateLimiter,
    /// A shared circuit breaker (its link to the fleet's Opens and probes).
    CircuitBreaker,
    /// A shared bulkhead (its fleet slots).
    Bulkhead,
}

impl SharedPolicy {
    /// The policy's attribute name, as in keys and events: `"rate_limiter"`, `"circuit_breaker"`,
    /// `"bulkhead"`.
    pub fn as_str(self) -> &'static str {
        match self {
            SharedPolicy::RateLimiter => "rate_limiter",
            SharedPolicy::CircuitBreaker => "circuit_breaker",
            SharedPolicy::Bulkhead => "bulkhead",
        }
    }
}

impl std::fmt::Display for SharedPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An event of the shared state of one policy of one instance: it left the fleet for its local
/// state, or came back. Listen with `listen(|e: &SharedStateEvent| …)`; subscribers get it as
/// [`AnyEvent::SharedState`](crate::events::AnyEvent::SharedState). Serialized (feature `serde`)
/// with the policy as `shared_policy` (`policy` is the event stream's own tag, `"shared_state"`).
///
/// ```
/// use std::sync::Arc;
/// use resilience4cata::shared::{SharedPolicy, SharedStateEvent};
///
/// let e = SharedStateEvent::Degraded { instance: Arc::from("prices"), policy: SharedPolicy::RateLimiter };
/// assert_eq!((e.instance(), e.policy()), ("prices", SharedPolicy::RateLimiter));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize), serde(tag = "kind"))]
#[non_exhaustive]
pub enum SharedStateEvent {
    /// The store could not be reached in time: the policy decides on its local state alone.
    Degraded {
        /// The instance id.
        instance: Arc<str>,
        /// Which shared policy of the instance degraded.
        #[cfg_attr(feature = "serde", serde(rename = "shared_policy"))]
        policy: SharedPolicy,
    },
    /// The store answered again: the policy is shared again.
    Recovered {
        /// The instance id.
        instance: Arc<str>,
        /// Which shared policy of the instance recovered.
        #[cfg_attr(feature = "serde", serde(rename = "shared_policy"))]
        policy: SharedPolicy,
    },
}

impl SharedStateEvent {
    /// The instance id.
    pub fn instance(&self) -> &str {
        match self {
            SharedStateEvent::Degraded { instance, .. } | SharedStateEvent::Recovered { instance, .. } => instance,
        }
    }

    /// Which shared policy of the instance the event is about.
    pub fn policy(&self) -> SharedPolicy {
        match self {
            SharedStateEvent::Degraded { policy, .. } | SharedStateEvent::Recovered { policy, .. } => *policy,
        }
    }

    /// Whether this is [`Degraded`](Self::Degraded).
    pub fn is_degraded(&self) -> bool {
        matches!(self, SharedStateEvent::Degraded { .. })
    }
}
