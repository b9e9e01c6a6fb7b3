//! What a chaos instance publishes: one event per injected fault and per injected delay.

use std::sync::Arc;
use std::time::Duration;

/// An event of a chaos instance.
///
/// ```
/// use std::sync::atomic::{AtomicU32, Ordering};
/// use std::sync::Arc;
/// use resilience4cata::Registry;
/// use resilience4cata::chaos::ChaosEvent;
///
/// let faults = Arc::new(AtomicU32::new(0));
/// let count = Arc::clone(&faults);
/// let registry = Registry::builder()
///     .listen(move |e: &ChaosEvent| {
///         if matches!(e, ChaosEvent::FaultInjected { .. }) {
///             count.fetch_add(1, Ordering::Relaxed);
///         }
///     })
///     .build()?;
/// # Ok::<(), resilience4cata::RegistryError>(())
/// ```
#[cfg_attr(feature = "serde", derive(serde::Serialize), serde(tag = "kind"))]
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ChaosEvent {
    /// A call failed with the configured fault; its delegate was not called.
    FaultInjected {
        /// The injection point's id (the method's derived id, or the pipeline's).
        instance: Arc<str>,
    },
    /// A call's delegate was delayed by `latency`: published when the delay starts, even if a
    /// timeout then cuts it short.
    LatencyInjected {
        /// The injection point's id.
        instance: Arc<str>,
        /// The delay.
        #[cfg_attr(feature = "serde", serde(serialize_with = "crate::serde_millis::duration"))]
        latency: Duration,
    },
}

impl ChaosEvent {
    /// The instance id of the injection point that published the event.
    ///
    /// ```
    /// use resilience4cata::chaos::ChaosEvent;
    ///
    /// let e = ChaosEvent::FaultInjected { instance: "shop::Api::get".into() };
    /// assert_eq!(e.instance(), "shop::Api::get");
    /// ```
    pub fn instance(&self) -> &str {
        match self {
            ChaosEvent::FaultInjected { instance } | ChaosEvent::LatencyInjected { instance, .. } => instance,
        }
    }
}
