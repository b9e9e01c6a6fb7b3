//! What a hedge publishes: one event per extra attempt it starts, and one when a call that hedged
//! ends. Calls answered by their first attempt alone publish nothing.

use std::sync::Arc;

/// An event of a hedge instance.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use resilience4cata::Registry;
/// use resilience4cata::hedge::HedgeEvent;
///
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let sink = Arc::clone(&seen);
/// let registry = Registry::builder()
///     .listen(move |e: &HedgeEvent| sink.lock().unwrap().push(e.clone()))
///     .build()?;
/// # Ok::<(), resilience4cata::RegistryError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize), serde(tag = "kind"))]
#[non_exhaustive]
pub enum HedgeEvent {
    /// An extra attempt started: the previous one went `delay` without an answer, or failed.
    Hedged {
        /// The hedge's instance id.
        instance: Arc<str>,
        /// The number of the attempt that started (2, 3, …).
        attempt: u32,
    },
    /// A call that started at least one extra attempt ended with a result (not published when the
    /// caller drops the call).
    Finished {
        /// The hedge's instance id.
        instance: Arc<str>,
        /// Attempts started, numbered from 1.
        attempts: u32,
        /// The attempt whose `Ok` was returned, or `None` when every attempt failed.
        winner: Option<u32>,
    },
}

impl HedgeEvent {
    /// The instance id of the hedge that published the event.
    ///
    /// ```
    /// use resilience4cata::hedge::HedgeEvent;
    ///
    /// let e = HedgeEvent::Hedged { instance: "shop::Api::get".into(), attempt: 2 };
    /// assert_eq!(e.instance(), "shop::Api::get");
    /// ```
    pub fn instance(&self) -> &str {
        match self {
            HedgeEvent::Hedged { instance, .. } | HedgeEvent::Finished { instance, .. } => instance,
        }
    }
}
