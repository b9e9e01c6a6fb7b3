//! The event of a shared instance's link to its fleet store (`crate::shared`).

use std::sync::Arc;

/// An event of the shared state of one instance: it left the fleet for its local state, or came
/// back. Listen with `listen(|e: &SharedStateEvent| …)`; subscribers get it as
/// [`AnyEvent::SharedState`](crate::events::AnyEvent::SharedState).
///
/// ```
/// use std::sync::Arc;
/// use resilience4cata::shared::SharedStateEvent;
///
/// let e = SharedStateEvent::Degraded { instance: Arc::from("prices") };
/// assert_eq!(e.instance(), "prices");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize), serde(tag = "kind"))]
#[non_exhaustive]
pub enum SharedStateEvent {
    /// The store could not be reached in time: the instance decides on its local state alone.
    Degraded {
        /// The instance id.
        instance: Arc<str>,
    },
    /// The store answered again: the instance is shared again.
    Recovered {
        /// The instance id.
        instance: Arc<str>,
    },
}

impl SharedStateEvent {
    /// The instance id.
    pub fn instance(&self) -> &str {
        match self {
            SharedStateEvent::Degraded { instance } | SharedStateEvent::Recovered { instance } => instance,
        }
    }
}
