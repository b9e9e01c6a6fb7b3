//! Typed event listeners: registered on the registry builder, called synchronously, free when absent.

use std::fmt;
use std::sync::Arc;

use crate::adaptive_limit::AdaptiveLimitEvent;
use crate::bulkhead::BulkheadEvent;
use crate::circuit_breaker::CircuitBreakerEvent;
use crate::rate_limiter::RateLimiterEvent;
use crate::retry::RetryEvent;
use crate::timeout::TimeoutEvent;

/// A registered listener of events of type `E`.
#[allow(unreachable_pub)] // named by the sealed `Event` machinery only
pub type Listener<E> = Arc<dyn Fn(&E) + Send + Sync>;

/// The listeners of every event type, as registered on the builder.
#[derive(Clone, Default)]
#[allow(unreachable_pub)] // named by the sealed `Event` machinery only
pub struct Listeners {
    pub(crate) retry: Vec<Listener<RetryEvent>>,
    pub(crate) rate_limiter: Vec<Listener<RateLimiterEvent>>,
    pub(crate) timeout: Vec<Listener<TimeoutEvent>>,
    pub(crate) bulkhead: Vec<Listener<BulkheadEvent>>,
    pub(crate) circuit_breaker: Vec<Listener<CircuitBreakerEvent>>,
    pub(crate) adaptive_limit: Vec<Listener<AdaptiveLimitEvent>>,
}

impl fmt::Debug for Listeners {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Listeners")
            .field("retry", &self.retry.len())
            .field("rate_limiter", &self.rate_limiter.len())
            .field("timeout", &self.timeout.len())
            .field("bulkhead", &self.bulkhead.len())
            .field("circuit_breaker", &self.circuit_breaker.len())
            .field("adaptive_limit", &self.adaptive_limit.len())
            .finish()
    }
}

pub(crate) mod sealed {
    use super::{Listener, Listeners};

    /// Where listeners of this event type are kept; not implementable outside the crate.
    pub trait Sealed: Sized {
        fn listeners_of(listeners: &mut Listeners) -> &mut Vec<Listener<Self>>;

        /// The metric handles one instance records this event type into (feature `metrics`),
        /// registered once when the instance is built so recording never allocates.
        #[cfg(feature = "metrics")]
        type Metrics: Send + Sync;

        #[cfg(feature = "metrics")]
        fn register_metrics(instance: &std::sync::Arc<str>) -> Self::Metrics;

        #[cfg(feature = "metrics")]
        fn record(&self, metrics: &Self::Metrics);
    }
}

/// An event type one can listen to with `RegistryBuilder::listen`: [`RetryEvent`],
/// [`CircuitBreakerEvent`], and the event enum of each other policy.
pub trait Event: sealed::Sealed + Clone + fmt::Debug + Send + Sync + 'static {}

/// Makes an event enum listenable, its listeners kept in `Listeners::$field`.
/// With feature `metrics`, the type names its metric handles and how an event records into them.
macro_rules! event_type {
    ($ty:ty => $field:ident, metrics: $metrics:ty, register: $register:path, record: $record:path) => {
        impl $crate::events::sealed::Sealed for $ty {
            fn listeners_of(listeners: &mut $crate::events::Listeners) -> &mut Vec<$crate::events::Listener<Self>> {
                &mut listeners.$field
            }

            #[cfg(feature = "metrics")]
            type Metrics = $metrics;

            #[cfg(feature = "metrics")]
            fn register_metrics(instance: &std::sync::Arc<str>) -> Self::Metrics {
                $register(instance)
            }

            #[cfg(feature = "metrics")]
            fn record(&self, metrics: &Self::Metrics) {
                $record(self, metrics)
            }
        }
        impl $crate::events::Event for $ty {}
    };
}

event_type!(RetryEvent => retry, metrics: crate::retry::metrics::RetryMetrics,
    register: crate::retry::metrics::RetryMetrics::register, record: crate::retry::metrics::RetryMetrics::record);
event_type!(RateLimiterEvent => rate_limiter, metrics: crate::rate_limiter::metrics::RateLimiterMetrics,
    register: crate::rate_limiter::metrics::RateLimiterMetrics::register,
    record: crate::rate_limiter::metrics::RateLimiterMetrics::record);
event_type!(TimeoutEvent => timeout, metrics: crate::timeout::metrics::TimeoutMetrics,
    register: crate::timeout::metrics::TimeoutMetrics::register, record: crate::timeout::metrics::TimeoutMetrics::record);
event_type!(BulkheadEvent => bulkhead, metrics: crate::bulkhead::metrics::BulkheadMetrics,
    register: crate::bulkhead::metrics::BulkheadMetrics::register,
    record: crate::bulkhead::metrics::BulkheadMetrics::record);
event_type!(CircuitBreakerEvent => circuit_breaker, metrics: crate::circuit_breaker::metrics::CircuitBreakerMetrics,
    register: crate::circuit_breaker::metrics::CircuitBreakerMetrics::register,
    record: crate::circuit_breaker::metrics::CircuitBreakerMetrics::record);
event_type!(AdaptiveLimitEvent => adaptive_limit, metrics: crate::adaptive_limit::metrics::AdaptiveLimitMetrics,
    register: crate::adaptive_limit::metrics::AdaptiveLimitMetrics::register,
    record: crate::adaptive_limit::metrics::AdaptiveLimitMetrics::record);

/// What one policy instance publishes to: nothing is built unless someone listens.
pub(crate) struct Publisher<E: Event> {
    listeners: Box<[Listener<E>]>,
    #[cfg(feature = "metrics")]
    metrics: <E as sealed::Sealed>::Metrics,
}

impl<E: Event> Publisher<E> {
    /// The publisher of one instance: its listeners, and (feature `metrics`) its metric handles.
    pub(crate) fn new(listeners: &[Listener<E>], instance: &std::sync::Arc<str>) -> Self {
        #[cfg(not(feature = "metrics"))]
        let _ = instance;
        Publisher {
            listeners: listeners.into(),
            #[cfg(feature = "metrics")]
            metrics: <E as sealed::Sealed>::register_metrics(instance),
        }
    }

    /// Whether anyone listens (so per-call events can be skipped entirely). The `tracing` and
    /// `metrics` features always listen.
    #[inline]
    pub(crate) fn is_active(&self) -> bool {
        !self.listeners.is_empty() || cfg!(feature = "tracing") || cfg!(feature = "metrics")
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
        #[cfg(feature = "metrics")]
        sealed::Sealed::record(&event, &self.metrics);
        for listener in self.listeners.iter() {
            listener(&event);
        }
    }
}

impl<E: Event> fmt::Debug for Publisher<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Publisher").field("listeners", &self.listeners.len()).finish()
    }
}

#[cfg(all(test, feature = "tracing"))]
mod tracing_tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use tracing::span::{Attributes, Id, Record};
    use tracing::{Event as TracingEvent, Metadata, Subscriber};

    use super::*;

    /// Counts events with target `resilience4cata`.
    struct Count(Arc<AtomicUsize>);

    impl Subscriber for Count {
        fn enabled(&self, _: &Metadata<'_>) -> bool {
            true
        }
        fn new_span(&self, _: &Attributes<'_>) -> Id {
            Id::from_u64(1)
        }
        fn record(&self, _: &Id, _: &Record<'_>) {}
        fn record_follows_from(&self, _: &Id, _: &Id) {}
        fn event(&self, event: &TracingEvent<'_>) {
            if event.metadata().target() == "resilience4cata" {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
        fn enter(&self, _: &Id) {}
        fn exit(&self, _: &Id) {}
    }

    #[test]
    fn every_event_is_a_tracing_event() {
        let seen = Arc::new(AtomicUsize::new(0));
        let instance: Arc<str> = Arc::from("m::A::f");
        let publisher = Publisher::<RetryEvent>::new(&[], &instance);
        tracing::subscriber::with_default(Count(Arc::clone(&seen)), || {
            publisher.emit(|| RetryEvent::GaveUp {
                instance: Arc::clone(&instance),
                attempts: 1,
                reason: crate::GiveUpReason::NotRetryable,
            });
        });
        assert_eq!(seen.load(Ordering::SeqCst), 1);
    }
}
