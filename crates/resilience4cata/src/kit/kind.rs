//! What a policy kind is to the registry ([`PolicyKind`]: its configuration, state, event and
//! snapshot types and how an instance is made), the build context a policy reads ([`Inner`]: the
//! clock, the jitter seed, the listeners, the fleet store), and the macros a policy declares its
//! kind with ([`policy_kind!`]; its handle's macro is in `handle.rs`).

use std::fmt;
use std::sync::Arc;

use crate::clock::Timer;
use crate::error::{RegistryError, codes};
use crate::events::{Listeners, Published, Publisher};
use crate::fleet::Fleet;
use crate::kit::Layer;

/// The resolved configuration of policy kind `P`.
pub(crate) type ConfigOf<P> = <<P as PolicyKind>::Builder as Layer>::Config;

/// One kind of policy as the registry knows it, implemented by the facade the generated code
/// holds (`RetryPolicy`, `CircuitBreakerPolicy`, …). Its name, configuration, state, event and
/// snapshot types, and the three steps that make an instance: `admit` the call site, `check` the
/// resolved configuration, make the shared `State`.
pub(crate) trait PolicyKind: Sized + 'static {
    /// The attribute name, also the key in configuration files and messages.
    const NAME: &'static str = <Self::Builder as Layer>::POLICY;
    /// The layered configuration builder (`XConfigBuilder`).
    type Builder: Layer;
    /// The state one instance shares between every user of its id.
    type State: Send + Sync + 'static;
    /// What the policy publishes.
    type Event: Published;
    /// One instance at one moment (`registry.snapshot()`).
    type Snapshot: Clone + fmt::Debug + PartialEq;

    /// Refuses a call site before anything is resolved (a timeout on a blocking method).
    fn admit(id: &str, is_async: bool) -> Result<(), RegistryError> {
        let _ = (id, is_async);
        Ok(())
    }

    /// Checks the resolved configuration against the call site (an async wait needs a clock that
    /// can sleep in a future, `R4C-REG-010`).
    fn check(inner: &Inner, id: &str, is_async: bool, config: &ConfigOf<Self>) -> Result<(), RegistryError> {
        let _ = (inner, id, is_async, config);
        Ok(())
    }

    /// The shared state of a new instance.
    fn new_state(
        inner: &Inner,
        instance: Arc<str>,
        config: ConfigOf<Self>,
        events: Publisher<Self::Event>,
    ) -> Self::State;

    /// Applies a new resolved configuration to a live instance (SPEC §16): it applies from the
    /// instance's next call or decision on, and the state is kept by the policy's own rules (see
    /// `docs/live-config.md`). Called by the registry only with a configuration that passed
    /// [`check`](Self::check) and differs from the current one.
    #[cfg_attr(not(feature = "serde"), allow(dead_code))] // reached through a live update (feature `serde`)
    fn reconfigure(state: &Self::State, config: ConfigOf<Self>);

    /// Checks a live update's configuration against what only the live instance knows (chaos: the
    /// error types of its users, whose unit variants a `fault` must name); `Err` refuses the whole
    /// update, nothing changed. Called for an instance whose configuration changes.
    fn check_live(state: &Self::State, config: &ConfigOf<Self>) -> Result<(), RegistryError> {
        let _ = (state, config);
        Ok(())
    }

    /// The key that cannot change on a live instance, if `new` changes it from `old`.
    #[cfg_attr(not(feature = "serde"), allow(dead_code))] // reached through a live update (feature `serde`)
    fn fixed_key(old: &ConfigOf<Self>, new: &ConfigOf<Self>) -> Option<Fixed> {
        let _ = (old, new);
        None
    }

    /// The facade over a (possibly shared) state.
    fn from_state(state: Arc<Self::State>) -> Self;

    /// One instance's snapshot.
    fn snapshot(state: &Self::State) -> Self::Snapshot;
}

/// A key a live update cannot change on an instance that exists (SPEC §16).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(not(feature = "serde"), allow(dead_code))] // reached through a live update (feature `serde`)
pub(crate) enum Fixed {
    /// Where the instance keeps its state (`shared`, `lease`, and what a fleet link took when it
    /// was built): `R4C-CFG-005`.
    Placement(&'static str),
    /// A key whose live change is not supported yet: `R4C-CFG-006`.
    NotLive(&'static str),
}

/// Implements [`PolicyKind`] for a facade: the associated types and the items every policy writes
/// alike (`from_state` is `Facade::new`, `snapshot` is `State::snapshot`), and
/// [`Published`](crate::events::Published) for its event: the policy's name and its metric handles
/// (`<policy>::metrics::$metrics::register`). The policy's own `admit` / `check` / `new_state`
/// follow the braces.
macro_rules! policy_kind {
    ($policy:ident { builder: $builder:ty, state: $state:ty, event: $event:ty, snapshot: $snapshot:ty,
        metrics: $metrics:ident $(,)? } $($item:item)*) => {
        impl $crate::kit::PolicyKind for $policy {
            type Builder = $builder;
            type State = $state;
            type Event = $event;
            type Snapshot = $snapshot;

            fn from_state(state: ::std::sync::Arc<$state>) -> Self {
                $policy::new(state)
            }

            fn snapshot(state: &$state) -> $snapshot {
                state.snapshot()
            }

            $($item)*
        }

        impl $crate::events::Published for $event {
            const POLICY: &'static str = <$policy as $crate::kit::PolicyKind>::NAME;

            #[cfg(feature = "metrics")]
            type Metrics = super::metrics::$metrics;

            #[cfg(feature = "metrics")]
            fn register_metrics(labels: &$crate::metric_handles::MetricLabels) -> Self::Metrics {
                super::metrics::$metrics::register(labels)
            }
        }
    };
}
pub(crate) use policy_kind;

/// What a policy reads of its registry while one instance is made: the clock, the jitter seed, the
/// listeners its publisher is built from, and the fleet store of `shared = true` instances.
pub(crate) struct Inner {
    pub(crate) timer: Arc<Timer>,
    pub(crate) seed: u64,
    pub(crate) listeners: Listeners,
    /// Where `shared = true` instances keep their fleet-wide state.
    pub(crate) shared: Option<Arc<dyn Fleet>>,
}

impl Inner {
    /// The same, without the fleet store: what the instance a keyed site registers is made with
    /// (SPEC §15: its keys share through the store, each under its own key; the instance that
    /// stands for them holds no fleet state). Made when such an instance is built, never on a call.
    pub(crate) fn unshared(&self) -> Inner {
        Inner { timer: Arc::clone(&self.timer), seed: self.seed, listeners: self.listeners.clone(), shared: None }
    }

    /// The same, for the keys of one keyed instance: their fleet links report their outages to
    /// one count, so the instance publishes `Degraded` / `Recovered` once per outage, not once per
    /// key (SPEC §15). Made when the keyed instance is built.
    pub(crate) fn grouped(&self) -> Inner {
        let shared = self.shared.as_ref().map(|store| {
            let outage = Arc::default();
            Arc::new(crate::fleet::Grouped { store: Arc::clone(store), outage }) as Arc<dyn Fleet>
        });
        Inner { shared, ..self.unshared() }
    }

    /// `R4C-REG-011` unless the registry was given a shared store.
    pub(crate) fn require_shared_store(&self, id: &str) -> Result<(), RegistryError> {
        match self.shared {
            Some(_) => Ok(()),
            None => Err(no_shared_store(Some(id))),
        }
    }

    /// `R4C-REG-010` unless the clock can wait inside a future (needed by `why`).
    pub(crate) fn require_async_clock(&self, id: &str, why: &str) -> Result<(), RegistryError> {
        if self.timer.can_sleep_async() {
            return Ok(());
        }
        Err(RegistryError::new(
            codes::NO_ASYNC_CLOCK,
            Some(id),
            format!(
                "{why}, but the registry's clock cannot sleep in a future: enable the `tokio` feature or build \
                 the registry on a clock that can"
            ),
        ))
    }

    /// [`require_async_clock`](Self::require_async_clock) where the method `needs` one: its waits
    /// happen inside a future; `Ok` otherwise.
    pub(crate) fn require_async_clock_if(&self, needs: bool, id: &str, why: &str) -> Result<(), RegistryError> {
        match needs {
            true => self.require_async_clock(id, why),
            false => Ok(()),
        }
    }

    /// The sites of a policy whose calls may wait for a slot or a permit (bulkhead, rate limiter):
    /// a `shared` instance needs the registry's store, and an async method that may wait
    /// (`max_wait`, or a round trip to the store) a clock that can wait in a future (`why`).
    pub(crate) fn require_waits(
        &self,
        id: &str,
        is_async: bool,
        (enabled, shared): (bool, bool),
        max_wait: std::time::Duration,
        why: &str,
    ) -> Result<(), RegistryError> {
        if shared {
            self.require_shared_store(id)?;
        }
        self.require_async_clock_if(is_async && enabled && (!max_wait.is_zero() || shared), id, why)
    }
}

/// `shared = true` somewhere (`at`: the instance id or named configuration) without a store.
pub(crate) fn no_shared_store(at: Option<&str>) -> RegistryError {
    RegistryError::new(
        codes::NO_SHARED_STORE,
        at,
        "`shared = true` needs a shared store: give the registry one with \
         `RegistryBuilder::shared_state(store)` (e.g. `resilience4cata_redis::RedisStore`)",
    )
}
