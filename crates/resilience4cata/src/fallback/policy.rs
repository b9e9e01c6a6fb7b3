//! The object a fallback-protected method (or pipeline) holds: its instance id and its publisher.
//! No configuration and no shared state, so nothing is registered in the registry.

use std::fmt;
use std::sync::Arc;

use super::{FallbackContext, FallbackEvent};
use crate::events::{Publisher, publish};
use crate::kit::Inner;

/// The field the generated code keeps for one method with `#[fallback]`.
#[derive(Clone)]
pub struct FallbackPolicy {
    instance: Arc<str>,
    events: Arc<Publisher<FallbackEvent>>,
}

impl FallbackPolicy {
    /// The fallback of instance `id` (a method's derived id, or a pipeline's id), publishing to the
    /// listeners of `inner` (`registry.inner()`).
    pub(crate) fn build(inner: &Inner, id: &str) -> Self {
        let instance: Arc<str> = Arc::from(id);
        let events = Arc::new(Publisher::new(&inner.listeners, &instance));
        FallbackPolicy { instance, events }
    }

    /// The instance id.
    pub fn instance(&self) -> &str {
        &self.instance
    }

    /// Called once the fallback is going to run: publishes `Applied` (only when someone listens)
    /// and hands over the context. Allocates nothing without listeners (one reference count).
    #[cold]
    pub fn apply<E>(&self, error: E, attempts: u32) -> FallbackContext<E> {
        publish!(self.events, |m| m.applied(), || FallbackEvent::Applied {
            instance: Arc::clone(&self.instance),
            attempts
        });
        FallbackContext::new(error, attempts, Arc::clone(&self.instance))
    }
}

impl fmt::Debug for FallbackPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FallbackPolicy").field("instance", &self.instance).finish_non_exhaustive()
    }
}
