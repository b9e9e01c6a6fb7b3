//! Events: typed listeners registered on the registry builder (called synchronously, free when
//! absent), and [`Subscription`]s that attach to a built registry ([`Registry::subscribe`]).
//!
//! [`Registry::subscribe`]: crate::Registry::subscribe

mod config;
mod key_use;
mod shared_state;
mod subscription;

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

pub use config::ConfigEvent;
pub(crate) use key_use::KeyUse;
pub use shared_state::{SharedPolicy, SharedStateEvent};
pub use subscription::Subscription;
pub(crate) use subscription::{Hub, any_subscription};

use crate::policy_list::{for_each_event_only, for_each_policy};

/// A registered listener of events of type `E`.
pub(crate) type Listener<E> = Arc<dyn Fn(&E) + Send + Sync>;

/// A listener that keeps every event it sees, and the list it keeps them in (unit tests).
#[cfg(test)]
pub(crate) fn recorder<E: Clone + Send + 'static>() -> (Arc<std::sync::Mutex<Vec<E>>>, Listener<E>) {
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    (seen, Arc::new(move |e: &E| sink.lock().unwrap().push(e.clone())))
}

pub(crate) mod sealed {
    use super::{Listener, Listeners};

    /// Where listeners of this event type are kept; not implementable outside the crate.
    pub trait Sealed: Sized {
        fn listeners_of(listeners: &mut Listeners) -> &mut Vec<Listener<Self>>;

        fn listeners_in(listeners: &Listeners) -> &[Listener<Self>];

        /// The event as a subscriber receives it.
        fn into_any(self) -> super::AnyEvent;
    }
}

/// An event type one can listen to with `RegistryBuilder::listen`: [`RetryEvent`],
/// [`CircuitBreakerEvent`], and the event enum of each other policy.
pub trait Event: sealed::Sealed + Clone + fmt::Debug + Send + Sync + 'static {}

/// One event type: where its listeners are kept (`Listeners::$field`) and its `AnyEvent` variant;
/// for a kind that only publishes events, also the name of the policy that publishes it and
/// (feature `metrics`) its metric handles (a policy of the list has them from `policy_kind!`).
macro_rules! event_kind {
    ($event:ident => $field:ident, $variant:ident, $name:expr, $metrics:ty, $register:expr) => {
        event_kind!($event => $field, $variant);

        impl Published for $event {
            const POLICY: &'static str = $name;

            #[cfg(feature = "metrics")]
            type Metrics = $metrics;

            #[cfg(feature = "metrics")]
            fn register_metrics(labels: &crate::metric_handles::MetricLabels) -> Self::Metrics {
                $register(labels)
            }
        }
    };
    ($event:ident => $field:ident, $variant:ident) => {
        impl sealed::Sealed for $event {
            fn listeners_of(listeners: &mut Listeners) -> &mut Vec<Listener<Self>> {
                &mut listeners.$field
            }

            fn listeners_in(listeners: &Listeners) -> &[Listener<Self>] {
                &listeners.$field
            }

            fn into_any(self) -> AnyEvent {
                AnyEvent::$variant(self)
            }
        }

        impl Event for $event {}
    };
}

/// Per policy of the list: its listeners' field, its `Event` impl, its `AnyEvent` variant; then the
/// same for each kind that only publishes events (`for_each_event_only!`), with its name and metric
/// handles named directly since it has no `PolicyKind` (a policy's come with its `policy_kind!`).
macro_rules! event_parts {
    ($({ $module:ident: $policy:ident($($types:tt)*), $event:ident => $variant:ident, $human:literal, $($rest:tt)* })*
     ; $({ $only:ident: $only_event:ident => $only_variant:ident, $only_human:literal, $only_metrics:ident })*) => {
        $(use crate::$module::$event;)*
        $(use crate::$only::$only_event;)*

        /// The listeners of every event type, as registered on the builder, and the subscribers
        /// that attach after build.
        #[derive(Clone, Default)]
        #[allow(unreachable_pub)] // named by the sealed `Event` machinery only
        #[doc(hidden)]
        pub struct Listeners {
            pub(crate) hub: Arc<Hub>,
            $(pub(crate) $module: Vec<Listener<$event>>,)*
            $(pub(crate) $only: Vec<Listener<$only_event>>,)*
            pub(crate) shared_state: Vec<Listener<SharedStateEvent>>,
            pub(crate) config: Vec<Listener<ConfigEvent>>,
        }

        impl fmt::Debug for Listeners {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct("Listeners")
                    $(.field(stringify!($module), &self.$module.len()))*
                    $(.field(stringify!($only), &self.$only.len()))*
                    .finish()
            }
        }

        $(event_kind!($event => $module, $variant);)*
        $(event_kind!($only_event => $only, $only_variant, stringify!($only), crate::$only::metrics::$only_metrics,
            crate::$only::metrics::$only_metrics::register);)*

        /// Every event a registry publishes, as a [`Subscription`] delivers it: one variant per
        /// policy.
        ///
        /// ```
        /// use std::sync::Arc;
        /// use resilience4cata::events::AnyEvent;
        /// use resilience4cata::{GiveUpReason, RetryEvent};
        ///
        /// let event = AnyEvent::Retry(RetryEvent::GaveUp {
        ///     instance: Arc::from("shop::Api::get"),
        ///     attempts: 3,
        ///     reason: GiveUpReason::MaxAttempts,
        /// });
        /// assert_eq!((event.policy(), event.instance()), ("retry", "shop::Api::get"));
        /// ```
        #[derive(Clone, Debug, PartialEq)]
        #[non_exhaustive]
        pub enum AnyEvent {
            $(
                #[doc = concat!("A ", $human, "'s event.")]
                $variant($event),
            )*
            $(
                #[doc = concat!("A ", $only_human, "'s event.")]
                $only_variant($only_event),
            )*
            /// A shared instance left the fleet for its local state, or came back.
            SharedState(SharedStateEvent),
            /// A live configuration update changed an instance, or a watched file was refused.
            Config(ConfigEvent),
        }

        impl AnyEvent {
            /// The instance id of the policy that published the event.
            pub fn instance(&self) -> &str {
                match self {
                    $(AnyEvent::$variant(e) => e.instance(),)*
                    $(AnyEvent::$only_variant(e) => e.instance(),)*
                    AnyEvent::SharedState(e) => e.instance(),
                    AnyEvent::Config(e) => e.instance(),
                }
            }

            /// The policy's attribute name: `"retry"`, `"circuit_breaker"`, `"rate_limiter"`, …
            pub fn policy(&self) -> &'static str {
                match self {
                    $(AnyEvent::$variant(_) => <$event as Published>::POLICY,)*
                    $(AnyEvent::$only_variant(_) => <$only_event as Published>::POLICY,)*
                    AnyEvent::SharedState(_) => "shared_state",
                    AnyEvent::Config(_) => "config",
                }
            }
        }

        /// With feature `serde`: one object per event, `policy` (as [`AnyEvent::policy`]) then the
        /// event's own fields, `kind` (the variant's name), `instance` and the rest, durations in
        /// milliseconds: what the admin's `/events` streams. A variant whose event type is not
        /// `Serialize` does not compile.
        ///
        /// ```
        /// # use std::sync::Arc;
        /// # use resilience4cata::events::AnyEvent;
        /// # use resilience4cata::{GiveUpReason, RetryEvent};
        /// let event = AnyEvent::Retry(RetryEvent::GaveUp {
        ///     instance: Arc::from("shop::Api::get"),
        ///     attempts: 3,
        ///     reason: GiveUpReason::MaxAttempts,
        /// });
        /// assert_eq!(
        ///     serde_json::to_string(&event)?,
        ///     r#"{"policy":"retry","kind":"GaveUp","instance":"shop::Api::get","attempts":3,"reason":"MaxAttempts"}"#
        /// );
        /// # Ok::<(), serde_json::Error>(())
        /// ```
        #[cfg(feature = "serde")]
        impl serde::Serialize for AnyEvent {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let policy = self.policy();
                match self {
                    $(AnyEvent::$variant(event) => policy_tagged(policy, event, serializer),)*
                    $(AnyEvent::$only_variant(event) => policy_tagged(policy, event, serializer),)*
                    AnyEvent::SharedState(event) => policy_tagged(policy, event, serializer),
                    AnyEvent::Config(event) => policy_tagged(policy, event, serializer),
                }
            }
        }
    };
}

/// `event` with its policy's name in front of its own fields (`AnyEvent`'s `Serialize`): the bound
/// on `E` is what makes a policy whose events do not serialize fail to compile
/// (``the trait bound `XEvent: Serialize` is not satisfied``).
#[cfg(feature = "serde")]
fn policy_tagged<E: serde::Serialize, S: serde::Serializer>(
    policy: &'static str,
    event: &E,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    #[derive(serde::Serialize)]
    struct PolicyTagged<'a, E> {
        policy: &'static str,
        #[serde(flatten)]
        event: &'a E,
    }
    serde::Serialize::serialize(&PolicyTagged { policy, event }, serializer)
}

#[cfg(all(test, feature = "serde"))]
mod serialize_tests {
    use std::sync::Arc;
    use std::time::Duration;

    use serde_json::{Value, json};

    use super::*;
    use crate::GiveUpReason;
    use crate::circuit_breaker::State;

    /// The variants of `AnyEvent`, numbered: no `_` arm, so a new variant does not compile here
    /// until it is numbered (and `VARIANTS` grows, so the test below wants a sample of it).
    const VARIANTS: usize = 10 + cfg!(feature = "chaos") as usize;

    fn variant(event: &AnyEvent) -> usize {
        match event {
            AnyEvent::Retry(_) => 0,
            AnyEvent::Hedge(_) => 1,
            AnyEvent::CircuitBreaker(_) => 2,
            AnyEvent::RateLimiter(_) => 3,
            AnyEvent::AdaptiveLimit(_) => 4,
            AnyEvent::Timeout(_) => 5,
            AnyEvent::Bulkhead(_) => 6,
            AnyEvent::Fallback(_) => 7,
            AnyEvent::SharedState(_) => 8,
            AnyEvent::Config(_) => 9,
            #[cfg(feature = "chaos")]
            AnyEvent::Chaos(_) => 10,
        }
    }

    /// The event's own serialization, without the policy (what the admin wrote before `AnyEvent`
    /// serialized itself).
    fn own_fields(event: &AnyEvent) -> Value {
        match event {
            AnyEvent::Retry(e) => serde_json::to_value(e),
            AnyEvent::Hedge(e) => serde_json::to_value(e),
            AnyEvent::CircuitBreaker(e) => serde_json::to_value(e),
            AnyEvent::RateLimiter(e) => serde_json::to_value(e),
            AnyEvent::AdaptiveLimit(e) => serde_json::to_value(e),
            AnyEvent::Timeout(e) => serde_json::to_value(e),
            AnyEvent::Bulkhead(e) => serde_json::to_value(e),
            AnyEvent::Fallback(e) => serde_json::to_value(e),
            AnyEvent::SharedState(e) => serde_json::to_value(e),
            AnyEvent::Config(e) => serde_json::to_value(e),
            #[cfg(feature = "chaos")]
            AnyEvent::Chaos(e) => serde_json::to_value(e),
        }
        .unwrap()
    }

    /// One event of every variant, with the policy and kind its JSON must carry.
    fn one_of_each() -> Vec<(AnyEvent, &'static str, &'static str)> {
        let i: Arc<str> = Arc::from("shop::Api::get");
        vec![
            (
                AnyEvent::Retry(RetryEvent::Retrying {
                    instance: i.clone(),
                    attempt: 1,
                    delay: Duration::from_millis(5),
                }),
                "retry",
                "Retrying",
            ),
            (AnyEvent::Hedge(HedgeEvent::Hedged { instance: i.clone(), attempt: 2 }), "hedge", "Hedged"),
            (
                AnyEvent::CircuitBreaker(CircuitBreakerEvent::StateTransition {
                    instance: i.clone(),
                    key: None,
                    from: State::Closed,
                    to: State::Open,
                }),
                "circuit_breaker",
                "StateTransition",
            ),
            (
                AnyEvent::RateLimiter(RateLimiterEvent::Rejected {
                    instance: i.clone(),
                    key: None,
                    retry_after: Duration::from_micros(1500),
                }),
                "rate_limiter",
                "Rejected",
            ),
            (
                AnyEvent::AdaptiveLimit(AdaptiveLimitEvent::LimitChanged {
                    instance: i.clone(),
                    key: None,
                    from: 10,
                    to: 9,
                }),
                "adaptive_limit",
                "LimitChanged",
            ),
            (
                AnyEvent::Timeout(TimeoutEvent::TimedOut { instance: i.clone(), timeout: Duration::from_secs(2) }),
                "timeout",
                "TimedOut",
            ),
            (AnyEvent::Bulkhead(BulkheadEvent::Finished { instance: i.clone(), key: None }), "bulkhead", "Finished"),
            (AnyEvent::Fallback(FallbackEvent::Applied { instance: i.clone(), attempts: 3 }), "fallback", "Applied"),
            (
                AnyEvent::SharedState(SharedStateEvent::Degraded {
                    instance: i.clone(),
                    policy: SharedPolicy::Bulkhead,
                }),
                "shared_state",
                "Degraded",
            ),
            #[cfg(feature = "chaos")]
            (
                AnyEvent::Chaos(crate::chaos::ChaosEvent::LatencyInjected {
                    instance: i.clone(),
                    latency: Duration::from_millis(300),
                }),
                "chaos",
                "LatencyInjected",
            ),
            (
                AnyEvent::Config(ConfigEvent::Changed { instance: i, policy: crate::Policy::RateLimiter }),
                "config",
                "Changed",
            ),
        ]
    }

    #[test]
    fn every_variant_serializes_with_its_policy_and_kind() {
        let events = one_of_each();
        let mut covered: Vec<usize> = events.iter().map(|(e, ..)| variant(e)).collect();
        covered.sort_unstable();
        assert_eq!(covered, (0..VARIANTS).collect::<Vec<_>>(), "one sample per variant");
        for (event, policy, kind) in &events {
            let value = serde_json::to_value(event).unwrap();
            assert_eq!((&value["policy"], &value["kind"]), (&json!(policy), &json!(kind)), "{event:?}");
            assert_eq!(
                (value["policy"].as_str(), value["instance"].as_str()),
                (Some(event.policy()), Some(event.instance()))
            );
            // Exactly the event's own fields plus `policy`: nothing lost, nothing renamed.
            let mut own = own_fields(event);
            own.as_object_mut().unwrap().insert("policy".into(), json!(policy));
            assert_eq!(value, own, "{event:?}");
            let text = serde_json::to_string(event).unwrap();
            let prefix = format!(r#"{{"policy":"{policy}","kind":"{kind}","instance":"shop::Api::get""#);
            assert!(text.starts_with(&prefix), "{text}");
        }
    }

    #[test]
    fn durations_stay_milliseconds_and_options_stay_null() {
        let i: Arc<str> = Arc::from("a");
        let limited = AnyEvent::RateLimiter(RateLimiterEvent::Rejected {
            instance: i.clone(),
            key: None,
            retry_after: Duration::from_micros(1500),
        });
        assert_eq!(
            serde_json::to_value(&limited).unwrap(),
            json!({ "policy": "rate_limiter", "kind": "Rejected", "instance": "a", "retry_after": 1.5 })
        );
        let lost = AnyEvent::Hedge(HedgeEvent::Finished { instance: i.clone(), attempts: 2, winner: None });
        assert_eq!(
            serde_json::to_value(&lost).unwrap(),
            json!({ "policy": "hedge", "kind": "Finished", "instance": "a", "attempts": 2, "winner": null })
        );
        let gave_up = AnyEvent::Retry(RetryEvent::GaveUp { instance: i, attempts: 3, reason: GiveUpReason::Refused });
        assert_eq!(serde_json::to_value(&gave_up).unwrap()["reason"], "Refused");
    }
}

/// The policies of the list, then the kinds that only publish events.
macro_rules! with_event_only {
    ($($policies:tt)*) => {
        for_each_event_only!(event_parts { $($policies)* });
    };
}

for_each_policy!(with_event_only);

impl sealed::Sealed for SharedStateEvent {
    fn listeners_of(listeners: &mut Listeners) -> &mut Vec<Listener<Self>> {
        &mut listeners.shared_state
    }

    fn listeners_in(listeners: &Listeners) -> &[Listener<Self>] {
        &listeners.shared_state
    }

    fn into_any(self) -> AnyEvent {
        AnyEvent::SharedState(self)
    }
}

/// Shared-state events are published by `shared.rs` straight to listeners and subscribers.
impl Event for SharedStateEvent {}

impl sealed::Sealed for ConfigEvent {
    fn listeners_of(listeners: &mut Listeners) -> &mut Vec<Listener<Self>> {
        &mut listeners.config
    }

    fn listeners_in(listeners: &Listeners) -> &[Listener<Self>] {
        &listeners.config
    }

    fn into_any(self) -> AnyEvent {
        AnyEvent::Config(self)
    }
}

/// Configuration events are published by the registry (`Registry::update_config`, a watched file)
/// straight to listeners and subscribers.
impl Event for ConfigEvent {}

/// Publishes a configuration event to the registry's listeners (each isolated) and subscribers.
#[cfg_attr(not(feature = "serde"), allow(dead_code))] // reached through a live update (feature `serde`)
pub(crate) fn publish_config(listeners: &Listeners, event: ConfigEvent) {
    #[cfg(feature = "tracing")]
    isolated(|| tracing::event!(target: "resilience4cata", tracing::Level::INFO, event = ?event));
    for listener in &listeners.config {
        isolated(|| listener(&event));
    }
    if listeners.hub.has_subscribers() {
        listeners.hub.publish(&AnyEvent::Config(event));
    }
}

/// An event type of a policy of the list (or of an event-only kind): its policy's name and, with
/// feature `metrics`, the metric handles one instance's publishing sites update ([`publish!`]).
pub(crate) trait Published: Event {
    /// The attribute name of the policy that publishes it (`AnyEvent::policy`).
    const POLICY: &'static str;

    /// One instance's metric handles, registered once so recording never allocates.
    #[cfg(feature = "metrics")]
    type Metrics: Send + Sync;

    #[cfg(feature = "metrics")]
    fn register_metrics(labels: &crate::metric_handles::MetricLabels) -> Self::Metrics;
}

/// Panics of listeners, `tracing` subscribers and `metrics` recorders caught while publishing, in
/// this process.
static LISTENER_PANICS: AtomicU64 = AtomicU64::new(0);

/// How many times, in this process, a listener (or a `tracing` subscriber or `metrics` recorder
/// behind an event) panicked while a policy published an event.
///
/// Publishing is isolated: the policy's state is updated before its event is published, and a
/// panic while publishing is caught, counted here and otherwise ignored (the panic hook has
/// already reported it), so an observer never changes what a policy does next and never turns a
/// call's result into a panic. Watch this counter (and the panic hook's output) to find a faulty
/// observer. With `panic = "abort"` nothing can be caught: the process ends, as with any panic.
///
/// ```
/// use resilience4cata::Registry;
///
/// let registry = Registry::builder().build()?;
/// assert_eq!(resilience4cata::listener_panics(), 0); // nothing published, nothing panicked
/// # drop(registry);
/// # Ok::<(), resilience4cata::RegistryError>(())
/// ```
pub fn listener_panics() -> u64 {
    LISTENER_PANICS.load(Ordering::Relaxed)
}

/// Runs one observer. Its panic is caught, so it can neither change the policy's next step nor
/// escape from a guard's `drop` during an unwind (which would abort the process). Observers hold
/// no state of the policy's, so nothing they leave half-done is read afterwards: asserting unwind
/// safety is sound here.
pub(crate) fn isolated(observe: impl FnOnce()) {
    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(observe)).is_err() {
        LISTENER_PANICS.fetch_add(1, Ordering::Relaxed);
    }
}

/// What one policy instance publishes to: nothing is built unless someone listens.
pub(crate) struct Publisher<E: Published> {
    listeners: Box<[Listener<E>]>,
    /// The key of a keyed instance's key (SPEC §15): its text, which its events carry, and its
    /// refusal mark.
    key: Option<Arc<KeyUse>>,
    hub: Arc<Hub>,
    #[cfg(feature = "metrics")]
    metrics: <E as Published>::Metrics,
}

impl<E: Published> Publisher<E> {
    /// The publisher of one instance: its listeners, the registry's subscribers, and (feature
    /// `metrics`) its metric handles.
    pub(crate) fn new(listeners: &Listeners, instance: &Arc<str>) -> Self {
        Self::with(<E as sealed::Sealed>::listeners_in(listeners), Arc::clone(&listeners.hub), instance, None)
    }

    /// The publisher of one key of a keyed instance (SPEC §15): its events carry `key`; its
    /// metrics are the instance's series, or (`key_metrics`) series of their own with a `key` label.
    pub(crate) fn keyed(listeners: &Listeners, instance: &Arc<str>, key: Arc<KeyUse>, key_metrics: bool) -> Self {
        let label = key_metrics.then(|| Arc::clone(key.text()));
        let hub = Arc::clone(&listeners.hub);
        let publisher = Self::with(<E as sealed::Sealed>::listeners_in(listeners), hub, instance, label.as_deref());
        Publisher { key: Some(key), ..publisher }
    }

    /// The key the events carry (`None` for an unkeyed instance); read only to build an event.
    pub(crate) fn key(&self) -> Option<Arc<str>> {
        self.key.as_ref().map(|key| Arc::clone(key.text()))
    }

    /// The policy refused a call (called from its cold refusal path): for a key of a keyed
    /// instance, that call is not a use of the key (SPEC §15); nothing for an unkeyed instance.
    #[inline]
    pub(crate) fn refused(&self) {
        if let Some(key) = &self.key {
            key.refuse();
        }
    }

    /// A publisher outside any registry, for unit tests of one state machine.
    #[cfg(test)]
    pub(crate) fn detached(listeners: &[Listener<E>], instance: &Arc<str>) -> Self {
        Self::with(listeners, Arc::default(), instance, None)
    }

    fn with(listeners: &[Listener<E>], hub: Arc<Hub>, instance: &Arc<str>, key_label: Option<&str>) -> Self {
        #[cfg(not(feature = "metrics"))]
        let _ = (instance, key_label);
        Publisher {
            listeners: listeners.into(),
            key: None,
            hub,
            #[cfg(feature = "metrics")]
            metrics: <E as Published>::register_metrics(&crate::metric_handles::MetricLabels::new(instance, key_label)),
        }
    }

    /// Whether anyone wants the event itself (so per-call events can be skipped entirely): a
    /// listener, a live [`Subscription`], or (feature `tracing`) a tracing subscriber interested in
    /// `resilience4cata` at DEBUG. Metrics never need the event: sites update the handles directly
    /// (see [`publish!`]).
    #[inline]
    pub(crate) fn is_active(&self) -> bool {
        // One test of both words: as cheap as the listener check alone.
        (self.listeners.len() | any_subscription()) != 0 || tracing_wants_events()
    }

    /// Whether a listener was registered on the builder: fixed for the instance's whole life.
    #[inline]
    pub(crate) fn has_listeners(&self) -> bool {
        !self.listeners.is_empty()
    }

    /// Whether a [`Subscription`] may want the event (any registry's: one relaxed load of a static)
    /// or a tracing subscriber is interested (feature `tracing`: the level filter's relaxed load
    /// when none is installed, then the callsite's cached interest): both may change at any time.
    #[inline]
    pub(crate) fn is_watched(&self) -> bool {
        any_subscription() != 0 || tracing_wants_events()
    }

    /// The instance's metric handles (feature `metrics`), registered when it was built.
    #[cfg(feature = "metrics")]
    #[inline]
    pub(crate) fn metrics(&self) -> &<E as Published>::Metrics {
        &self.metrics
    }

    /// Builds the event only when someone wants it, then hands it to tracing, every listener in
    /// order, and every subscriber. Metric handles are updated by the caller ([`publish!`]).
    #[inline]
    pub(crate) fn emit(&self, make: impl FnOnce() -> E) {
        if self.is_active() {
            self.emit_cold(make());
        }
    }

    /// Each observer runs isolated: a panic is caught and counted (see [`listener_panics`]), and
    /// the next observer still gets the event.
    #[cold]
    fn emit_cold(&self, event: E) {
        #[cfg(feature = "tracing")]
        isolated(|| tracing::event!(target: "resilience4cata", tracing::Level::DEBUG, event = ?event));
        for listener in self.listeners.iter() {
            isolated(|| listener(&event));
        }
        if self.hub.has_subscribers() {
            self.hub.publish(&sealed::Sealed::into_any(event));
        }
    }
}

/// Whether a tracing subscriber wants this crate's events (always false without feature `tracing`).
#[inline]
fn tracing_wants_events() -> bool {
    #[cfg(feature = "tracing")]
    return tracing::enabled!(target: "resilience4cata", tracing::Level::DEBUG);
    #[cfg(not(feature = "tracing"))]
    false
}

/// Publishes one event of `$events` (a `Publisher`): with feature `metrics`, runs `$record` on the
/// instance's metric handles (bound to `$m`), a direct handle update that never builds the event;
/// then builds the event with `$make` only if someone wants it (`Publisher::emit`).
macro_rules! publish {
    ($events:expr, |$m:ident| $record:expr, $make:expr) => {{
        let events = &$events;
        #[cfg(feature = "metrics")]
        {
            let $m = events.metrics();
            $crate::events::isolated(|| $record); // a panicking recorder is an observer too
        }
        events.emit($make);
    }};
}
pub(crate) use publish;

impl<E: Published> fmt::Debug for Publisher<E> {
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
        let publisher = Publisher::<RetryEvent>::detached(&[], &instance);
        tracing::subscriber::with_default(Count(Arc::clone(&seen)), || {
            publisher.emit(|| RetryEvent::GaveUp {
                instance: Arc::clone(&instance),
                attempts: 1,
                reason: crate::GiveUpReason::NotRetryable,
            });
        });
        assert_eq!(seen.load(Ordering::SeqCst), 1);
    }

    /// With the feature on but no tracing subscriber interested, the event is not even built.
    #[test]
    fn no_event_is_built_without_an_interested_subscriber() {
        let built = AtomicUsize::new(0);
        let instance: Arc<str> = Arc::from("m::A::f");
        let publisher = Publisher::<RetryEvent>::detached(&[], &instance);
        let make = || {
            built.fetch_add(1, Ordering::SeqCst);
            RetryEvent::Retrying { instance: Arc::clone(&instance), attempt: 1, delay: std::time::Duration::ZERO }
        };
        assert!(!publisher.is_active());
        publisher.emit(make);
        assert_eq!(built.load(Ordering::SeqCst), 0);

        let seen = Arc::new(AtomicUsize::new(0));
        tracing::subscriber::with_default(Count(Arc::clone(&seen)), || publisher.emit(make));
        assert_eq!((built.load(Ordering::SeqCst), seen.load(Ordering::SeqCst)), (1, 1));
    }

    /// The zero-wait quick path stays on with the feature: it steps aside, per retry, only while a
    /// subscriber is interested, which then sees every `Retrying` event.
    #[test]
    fn the_quick_path_publishes_to_an_interested_subscriber() {
        use crate::__private::{Failure, RetryConfigBuilder, RetryPolicy};
        use crate::registry::{Registered, Registry};

        let registry = Registry::builder().build().unwrap();
        let attrs = RetryConfigBuilder::new().max_attempts(3).delay(std::time::Duration::ZERO);
        let policy = RetryPolicy::build(&registry, "m::A::quick", None, None, false, attrs).unwrap();
        let fail_three_times = || {
            let mut call = policy.start();
            while policy.retry_after(&mut call, Failure::Retryable) {}
            call.attempts()
        };
        assert_eq!(fail_three_times(), 3);
        let seen = Arc::new(AtomicUsize::new(0));
        let attempts = tracing::subscriber::with_default(Count(Arc::clone(&seen)), fail_three_times);
        assert_eq!((attempts, seen.load(Ordering::SeqCst)), (3, 3), "2 Retrying + 1 GaveUp");
    }
}

/// Feature `metrics`: handles are updated without building the event.
#[cfg(all(test, feature = "metrics"))]
mod metrics_tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::metrics_counters::{Counters, recording};

    #[test]
    fn metrics_update_handles_without_building_the_event() {
        let instance: Arc<str> = Arc::from("m::A::f");
        let (publisher, snapshotter) = recording(|| Publisher::<RetryEvent>::detached(&[], &instance));
        let built = AtomicUsize::new(0);
        for _ in 0..2 {
            publish!(publisher, |m| m.retrying(), || {
                built.fetch_add(1, Ordering::SeqCst);
                RetryEvent::Retrying { instance: Arc::clone(&instance), attempt: 1, delay: std::time::Duration::ZERO }
            });
        }
        assert_eq!(built.load(Ordering::SeqCst), 0, "only tracing, listeners and subscribers need the event");
        assert_eq!(Counters::of(&snapshotter).get("resilience4cata_retry_retries_total", &[]), Some(2));
    }
}
