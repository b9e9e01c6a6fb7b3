//! What a timeout publishes: one event per attempt it cuts off. Attempts that finish in time
//! publish nothing.

use std::sync::Arc;
use std::time::Duration;

/// An event of a timeout instance.
///
/// ```
/// use std::sync::atomic::{AtomicU32, Ordering};
/// use std::sync::Arc;
/// use resilience4cata::Registry;
/// use resilience4cata::timeout::TimeoutEvent;
///
/// let timeouts = Arc::new(AtomicU32::new(0));
/// let count = Arc::clone(&timeouts);
/// let registry = Registry::builder()
///     .listen(move |_: &TimeoutEvent| {
///         count.fetch_add(1, Ordering::Relaxed);
///     })
///     .build()?;
/// # Ok::<(), resilience4cata::RegistryError>(())
/// ```
#[cfg_attr(feature = "serde", derive(serde::Serialize), serde(tag = "kind"))]
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TimeoutEvent {
    /// An attempt was still running at its deadline: it was dropped and the call failed with
    /// `Rejection::CallTimeout`. Not published for an attempt still waiting for a bulkhead slot
    /// inside the timeout: that one is the bulkhead's refusal (`BulkheadEvent::Rejected`).
    TimedOut {
        /// The timeout's instance id (the derived id: a timeout has no name).
        instance: Arc<str>,
        /// The timeout that expired.
        #[cfg_attr(feature = "serde", serde(serialize_with = "crate::serde_millis::duration"))]
        timeout: Duration,
    },
}

impl TimeoutEvent {
    /// The instance id of the timeout that published the event.
    ///
    /// ```
    /// use std::time::Duration;
    /// use resilience4cata::timeout::TimeoutEvent;
    ///
    /// let e = TimeoutEvent::TimedOut { instance: "shop::Api::get".into(), timeout: Duration::from_secs(1) };
    /// assert_eq!(e.instance(), "shop::Api::get");
    /// ```
    pub fn instance(&self) -> &str {
        match self {
            TimeoutEvent::TimedOut { instance, .. } => instance,
        }
    }
}
