//! What a fallback publishes: one event each time it replaces a failure.

use std::sync::Arc;

/// An event of a fallback. Published only when someone listens (a listener, or the `tracing` /
/// `metrics` features); calls that succeed, or whose error the fallback skips, publish nothing.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use resilience4cata::fallback::FallbackEvent;
/// use resilience4cata::{FallbackContext, Pipeline, Registry};
///
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let sink = Arc::clone(&seen);
/// let registry = Registry::builder()
///     .listen(move |e: &FallbackEvent| sink.lock().unwrap().push(e.clone()))
///     .build()?;
/// let prices = Pipeline::builder(&registry, "prices")
///     .build::<u32, String>()?
///     .fallback(|_ctx: FallbackContext<String>| Ok(0));
/// assert_eq!(prices.execute(|| Err("down".to_owned())), Ok(0));
/// assert_eq!(*seen.lock().unwrap(), [FallbackEvent::Applied { instance: "prices".into(), attempts: 1 }]);
/// # Ok::<(), resilience4cata::RegistryError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize), serde(tag = "kind"))]
#[non_exhaustive]
pub enum FallbackEvent {
    /// The call failed, the error passed `apply_on` / `skip_on`, and the fallback was called.
    Applied {
        /// The protected method's instance id (as [`FallbackContext::instance`](crate::FallbackContext::instance)),
        /// or the pipeline's id.
        instance: Arc<str>,
        /// Attempts started before giving up (as [`FallbackContext::attempts`](crate::FallbackContext::attempts)).
        attempts: u32,
    },
}

impl FallbackEvent {
    /// The instance id of the method (or pipeline) whose fallback ran.
    ///
    /// ```
    /// use resilience4cata::fallback::FallbackEvent;
    ///
    /// let e = FallbackEvent::Applied { instance: "shop::Prices::price".into(), attempts: 3 };
    /// assert_eq!(e.instance(), "shop::Prices::price");
    /// ```
    pub fn instance(&self) -> &str {
        match self {
            FallbackEvent::Applied { instance, .. } => instance,
        }
    }
}
