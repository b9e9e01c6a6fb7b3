//! What an adaptive limit publishes: limit changes and refusals, built only when someone listens.

use std::sync::Arc;

/// An event of an adaptive limit instance.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use resilience4cata::Registry;
/// use resilience4cata::adaptive_limit::AdaptiveLimitEvent;
///
/// let limits = Arc::new(Mutex::new(Vec::new()));
/// let sink = Arc::clone(&limits);
/// let registry = Registry::builder()
///     .listen(move |e: &AdaptiveLimitEvent| {
///         if let AdaptiveLimitEvent::LimitChanged { to, .. } = e {
///             sink.lock().unwrap().push(*to);
///         }
///     })
///     .build()?;
/// # Ok::<(), resilience4cata::RegistryError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize), serde(tag = "kind"))]
#[non_exhaustive]
pub enum AdaptiveLimitEvent {
    /// A finished call moved the limit (published only when the clamped limit differs).
    LimitChanged {
        /// The adaptive limit's instance id.
        instance: Arc<str>,
        /// The key of a keyed instance (SPEC §15): its `Debug` text, made once when the key's state
        /// was (at most 256 bytes, then `…`); `None` for an unkeyed instance.
        key: Option<Arc<str>>,
        /// The limit before the sample.
        from: u32,
        /// The limit after it.
        to: u32,
    },
    /// A call was refused with `Rejection::LimitExceeded`.
    Rejected {
        /// The adaptive limit's instance id.
        instance: Arc<str>,
        /// The key of a keyed instance (SPEC §15): its `Debug` text, made once when the key's state
        /// was (at most 256 bytes, then `…`); `None` for an unkeyed instance.
        key: Option<Arc<str>>,
    },
}

impl AdaptiveLimitEvent {
    /// The instance id of the adaptive limit that published the event.
    ///
    /// ```
    /// use resilience4cata::adaptive_limit::AdaptiveLimitEvent;
    ///
    /// assert_eq!(AdaptiveLimitEvent::Rejected { instance: "db".into(), key: None }.instance(), "db");
    /// ```
    pub fn instance(&self) -> &str {
        match self {
            AdaptiveLimitEvent::LimitChanged { instance, .. } | AdaptiveLimitEvent::Rejected { instance, .. } => {
                instance
            }
        }
    }
}
