//! What a bulkhead publishes: one event per call, built only when someone listens.

use std::sync::Arc;

/// An event of a bulkhead instance. Per-call events are only built when a listener for
/// `BulkheadEvent` is registered (or the `tracing` feature is on), so an unobserved bulkhead pays
/// one branch for each.
///
/// ```
/// use std::sync::atomic::{AtomicI64, Ordering};
/// use std::sync::Arc;
/// use resilience4cata::Registry;
/// use resilience4cata::bulkhead::BulkheadEvent;
///
/// let inside = Arc::new(AtomicI64::new(0));
/// let gauge = Arc::clone(&inside);
/// let registry = Registry::builder()
///     .listen(move |e: &BulkheadEvent| match e {
///         BulkheadEvent::Permitted { .. } => { gauge.fetch_add(1, Ordering::Relaxed); }
///         BulkheadEvent::Finished { .. } => { gauge.fetch_sub(1, Ordering::Relaxed); }
///         _ => {}
///     })
///     .build()?;
/// # Ok::<(), resilience4cata::RegistryError>(())
/// ```
#[cfg_attr(feature = "serde", derive(serde::Serialize), serde(tag = "kind"))]
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BulkheadEvent {
    /// The call got a slot (at once, or after waiting).
    Permitted {
        /// The bulkhead's instance id.
        instance: Arc<str>,
        /// The key of a keyed instance (SPEC §15): its `Debug` text, made once when the key's state
        /// was (at most 256 bytes, then `…`); `None` for an unkeyed instance.
        key: Option<Arc<str>>,
    },
    /// The call was refused with `Rejection::BulkheadFull`: no slot within `max_wait`, or a
    /// timeout outside the bulkhead fired while the call still waited for one.
    Rejected {
        /// The bulkhead's instance id.
        instance: Arc<str>,
        /// The key of a keyed instance (SPEC §15): its `Debug` text, made once when the key's state
        /// was (at most 256 bytes, then `…`); `None` for an unkeyed instance.
        key: Option<Arc<str>>,
    },
    /// A call left the bulkhead (returned, failed, panicked or was dropped) and gave its slot back.
    Finished {
        /// The bulkhead's instance id.
        instance: Arc<str>,
        /// The key of a keyed instance (SPEC §15): its `Debug` text, made once when the key's state
        /// was (at most 256 bytes, then `…`); `None` for an unkeyed instance.
        key: Option<Arc<str>>,
    },
}

impl BulkheadEvent {
    /// The instance id of the bulkhead that published the event.
    ///
    /// ```
    /// use resilience4cata::bulkhead::BulkheadEvent;
    ///
    /// assert_eq!(BulkheadEvent::Rejected { instance: "db".into(), key: None }.instance(), "db");
    /// ```
    pub fn instance(&self) -> &str {
        match self {
            BulkheadEvent::Permitted { instance, .. }
            | BulkheadEvent::Rejected { instance, .. }
            | BulkheadEvent::Finished { instance, .. } => instance,
        }
    }
}
