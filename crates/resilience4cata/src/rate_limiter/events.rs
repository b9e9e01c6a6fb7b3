//! What a rate limiter publishes: one event per call, built only when someone listens.

use std::sync::Arc;
use std::time::Duration;

/// An event of a rate limiter instance. Per-call events are only built when a listener for
/// `RateLimiterEvent` is registered (or the `tracing` feature is on), so an unobserved limiter pays
/// one branch for them.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use resilience4cata::Registry;
/// use resilience4cata::rate_limiter::RateLimiterEvent;
///
/// let refused = Arc::new(Mutex::new(Vec::new()));
/// let sink = Arc::clone(&refused);
/// let registry = Registry::builder()
///     .listen(move |e: &RateLimiterEvent| {
///         if let RateLimiterEvent::Rejected { instance, .. } = e {
///             sink.lock().unwrap().push(instance.clone());
///         }
///     })
///     .build()?;
/// # Ok::<(), resilience4cata::RegistryError>(())
/// ```
#[cfg_attr(feature = "serde", derive(serde::Serialize), serde(tag = "kind"))]
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RateLimiterEvent {
    /// The call got a permit, after waiting `waited` (zero on the pass path).
    Permitted {
        /// The rate limiter's instance id.
        instance: Arc<str>,
        /// The key of a keyed instance (SPEC §15): its `Debug` text, made once when the key's state
        /// was (at most 256 bytes, then `…`); `None` for an unkeyed instance.
        key: Option<Arc<str>>,
        /// How long the call waited for its permit.
        #[cfg_attr(feature = "serde", serde(serialize_with = "crate::serde_millis::duration"))]
        waited: Duration,
    },
    /// The call was refused with `Rejection::RateLimitExceeded`.
    Rejected {
        /// The rate limiter's instance id.
        instance: Arc<str>,
        /// The key of a keyed instance (SPEC §15): its `Debug` text, made once when the key's state
        /// was (at most 256 bytes, then `…`); `None` for an unkeyed instance.
        key: Option<Arc<str>>,
        /// How long until the next permit would have been free.
        #[cfg_attr(feature = "serde", serde(serialize_with = "crate::serde_millis::duration"))]
        retry_after: Duration,
    },
}

impl RateLimiterEvent {
    /// The instance id of the rate limiter that published the event.
    ///
    /// ```
    /// use std::time::Duration;
    /// use resilience4cata::rate_limiter::RateLimiterEvent;
    ///
    /// let e = RateLimiterEvent::Permitted { instance: "prices".into(), key: None, waited: Duration::ZERO };
    /// assert_eq!(e.instance(), "prices");
    /// ```
    pub fn instance(&self) -> &str {
        match self {
            RateLimiterEvent::Permitted { instance, .. } | RateLimiterEvent::Rejected { instance, .. } => instance,
        }
    }
}
