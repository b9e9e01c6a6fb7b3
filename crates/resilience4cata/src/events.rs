//! Typed event listeners: registered on the registry builder, called synchronously, free when absent.

use std::fmt;
use std::sync::Arc;

use crate::circuit_breaker::CircuitBreakerEvent;
use crate::retry::RetryEvent;

/// A registered listener of events of type `E`.
#[allow(unreachable_pub)] // named by the sealed `Event` machinery only
pub type Listener<E> = Arc<dyn Fn(&E) + Send + Sync>;

/// The listeners of every event type, as registered on the builder.
#[derive(Clone, Default)]
#[allow(unreachable_pub)] // named by the sealed `Event` machinery only
pub struct Listeners {
    pub(crate) retry: Vec<Listener<RetryEvent>>,
    pub(crate) circuit_breaker: Vec<Listener<CircuitBreakerEvent>>,
}

impl fmt::Debug for Listeners {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Listeners")
            .field("retry", &self.retry.len())
            .field("circuit_breaker", &self.circuit_breaker.len())
            .finish()
    }
}

pub(crate) mod sealed {
    use super::{Listener, Listeners};

    /// Where listeners of this event type are kept; not implementable outside the crate.
    pub trait Sealed: Sized {
        fn listeners_of(listeners: &mut Listeners) -> &mut Vec<Listener<Self>>;
    }
}

/// An event type one can listen to with `RegistryBuilder::listen`: [`RetryEvent`],
/// [`CircuitBreakerEvent`], and the event enum of each other policy.
pub trait Event: sealed::Sealed + Clone + fmt::Debug + Send + Sync + 'static {}

/// Makes an event enum listenable, its listeners kept in `Listeners::$field`.
macro_rules! event_type {
    ($ty:ty => $field:ident) => {
        impl $crate::events::sealed::Sealed for $ty {
            fn listeners_of(listeners: &mut $crate::events::Listeners) -> &mut Vec<$crate::events::Listener<Self>> {
                &mut listeners.$field
            }
        }
        impl $crate::events::Event for $ty {}
    };
}

event_type!(RetryEvent => retry);
event_type!(CircuitBreakerEvent => circuit_breaker);

/// What one policy instance publishes to: nothing is built unless someone listens.
pub(crate) struct Publisher<E> {
    listeners: Box<[Listener<E>]>,
}

impl<E: Event> Publisher<E> {
    pub(crate) fn new(listeners: &[Listener<E>]) -> Self {
        Publisher { listeners: listeners.into() }
    }

    /// Whether anyone listens (so per-call events can be skipped entirely).
    #[inline]
    pub(crate) fn is_active(&self) -> bool {
        !self.listeners.is_empty() || cfg!(feature = "tracing")
    }

    /// Builds the event only when someone listens, then hands it to every listener in order.
    #[inline]
    pub(crate) fn emit(&self, make: impl FnOnce() -> E) {
        if self.is_active() {
            self.emit_cold(make());
        }
    }

    #[cold]
    fn emit_cold(&self, event: E) {
        #[cfg(feature = "tracing")]
        tracing::event!(target: "resilience4cata", tracing::Level::DEBUG, event = ?event);
        for listener in self.listeners.iter() {
            listener(&event);
        }
    }
}

impl<E> fmt::Debug for Publisher<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Publisher").field("listeners", &self.listeners.len()).finish()
    }
}
