//! The policy set, declared once.
//!
//! Each policy kind implements [`PolicyKind`] beside its facade (`<policy>/policy.rs`): its
//! configuration builder, shared state, event, snapshot, and how an instance is checked and made.
//! [`for_each_policy!`] holds the one list of the policies; every per-policy piece of the registry
//! follows from it: the registry's stores and the builder's configuration layers
//! ([`registry_parts!`] below), the `x_defaults` / `x` / `x_instance` builder trio, the handle
//! lookups, the snapshot lists, the listener table and [`AnyEvent`](crate::events::AnyEvent)
//! (`events.rs`), the configuration-file tables (`config_file.rs`) and the `__private` constructors.
//! Adding a policy is its own module, one `impl PolicyKind`, and one line in the list.

use std::fmt;
use std::sync::Arc;

use super::{Configs, Inner, Instances, Layer, Registry, UnusedConfig, Usage};
use crate::error::RegistryError;
use crate::events::{Published, Publisher};

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
    /// The metric handles one instance records into (feature `metrics`), registered once when the
    /// instance is built so recording never allocates.
    #[cfg(feature = "metrics")]
    type Metrics: Send + Sync;

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

    /// The facade over a (possibly shared) state.
    fn from_state(state: Arc<Self::State>) -> Self;

    /// One instance's snapshot.
    fn snapshot(state: &Self::State) -> Self::Snapshot;

    /// Registers the instance's metric handles (feature `metrics`).
    #[cfg(feature = "metrics")]
    fn register_metrics(instance: &Arc<str>) -> Self::Metrics;
}

/// Where the registry keeps a policy kind: implemented for every policy of the list by
/// [`registry_parts!`], so a `PolicyKind` outside the list cannot be built.
pub(crate) trait Registered: PolicyKind {
    /// The kind's configuration layers and live instances in `inner`.
    fn store(inner: &Inner) -> &Store<Self>;

    /// The one way an instance comes to be, for the generated code (`__private`) and pipelines
    /// alike: admit the call site, resolve `name` (else `id`) through the layers over `attrs`
    /// (`R4C-REG-004`, `R4C-REG-003`), check, then find the shared state or make it
    /// (`R4C-REG-008` if the id resolves differently elsewhere).
    fn build(
        registry: &Registry,
        id: &str,
        name: Option<&str>,
        config: Option<&str>,
        is_async: bool,
        attrs: Self::Builder,
    ) -> Result<Self, RegistryError> {
        Self::admit(id, is_async)?;
        let inner = registry.inner();
        let id = name.unwrap_or(id);
        let store = Self::store(inner);
        store.usage.note(id, config);
        let resolved = store.configs.resolve(id, config, &attrs)?;
        Self::check(inner, id, is_async, &resolved)?;
        let state = store.instances.get_or_create(Self::NAME, id, resolved, |instance, config| {
            let events = Publisher::new(&inner.listeners, &instance);
            Self::new_state(inner, instance, config, events)
        })?;
        Ok(Self::from_state(state))
    }
}

/// Implements [`PolicyKind`] for a facade: the associated types and the items every policy writes
/// alike (`from_state` is `Facade::new`, `snapshot` is `State::snapshot`, the metric handles are
/// `<policy>::metrics::$metrics::register`); the policy's own `admit` / `check` / `new_state`
/// follow the braces.
macro_rules! policy_kind {
    ($policy:ident { builder: $builder:ty, state: $state:ty, event: $event:ty, snapshot: $snapshot:ty,
        metrics: $metrics:ident $(,)? } $($item:item)*) => {
        impl $crate::registry::PolicyKind for $policy {
            type Builder = $builder;
            type State = $state;
            type Event = $event;
            type Snapshot = $snapshot;
            #[cfg(feature = "metrics")]
            type Metrics = super::metrics::$metrics;

            fn from_state(state: ::std::sync::Arc<$state>) -> Self {
                $policy::new(state)
            }

            fn snapshot(state: &$state) -> $snapshot {
                state.snapshot()
            }

            #[cfg(feature = "metrics")]
            fn register_metrics(instance: &::std::sync::Arc<str>) -> Self::Metrics {
                super::metrics::$metrics::register(instance)
            }

            $($item)*
        }
    };
}
pub(crate) use policy_kind;

/// One policy kind's configuration layers and live instances.
pub(crate) struct Store<P: PolicyKind> {
    pub(crate) configs: Configs<P::Builder>,
    pub(crate) instances: Instances<ConfigOf<P>, P::State>,
    usage: Usage,
}

impl<P: PolicyKind> Store<P> {
    pub(crate) fn new(configs: Configs<P::Builder>) -> Self {
        Store { configs, instances: Instances::default(), usage: Usage::default() }
    }

    /// The named configurations and instance overrides no resolution has used so far.
    fn unused(&self) -> Vec<UnusedConfig> {
        self.usage.unused(&self.configs)
    }

    /// Every instance's snapshot, ordered by id.
    pub(crate) fn snapshots(&self) -> Vec<P::Snapshot> {
        self.instances.all().iter().map(|state| P::snapshot(state)).collect()
    }
}

/// The list of policies, in nesting order, handed to `$generator` (a macro taking the same
/// entries). One entry per policy:
/// `{ module: Facade(ConfigBuilder, Snapshot), Event => AnyEvent variant, "human name", snapshot
/// list, [defaults, named, instance] builder methods, [HandleType] or [] }`
/// (the types are named here so the docs show them; they must be the `PolicyKind` impl's).
/// where `module` is also the field, the `__private` constructor and the config-file table.
macro_rules! for_each_policy {
    ($generator:path) => {
        $generator! {
            { retry: RetryPolicy(RetryConfigBuilder, RetrySnapshot), RetryEvent => Retry, "retry", retries, [retry_defaults, retry, retry_instance], [] }
            { hedge: HedgePolicy(HedgeConfigBuilder, HedgeSnapshot), HedgeEvent => Hedge, "hedge", hedges, [hedge_defaults, hedge, hedge_instance], [] }
            { circuit_breaker: CircuitBreakerPolicy(CircuitBreakerConfigBuilder, CircuitBreakerSnapshot), CircuitBreakerEvent => CircuitBreaker, "circuit breaker",
                circuit_breakers, [circuit_breaker_defaults, circuit_breaker, circuit_breaker_instance],
                [CircuitBreakerHandle] }
            { rate_limiter: RateLimiterPolicy(RateLimiterConfigBuilder, RateLimiterSnapshot), RateLimiterEvent => RateLimiter, "rate limiter", rate_limiters,
                [rate_limiter_defaults, rate_limiter, rate_limiter_instance], [RateLimiterHandle] }
            { adaptive_limit: AdaptiveLimitPolicy(AdaptiveLimitConfigBuilder, AdaptiveLimitSnapshot), AdaptiveLimitEvent => AdaptiveLimit,
                "adaptive limit", adaptive_limits, [adaptive_limit_defaults, adaptive_limit, adaptive_limit_instance],
                [AdaptiveLimitHandle] }
            { timeout: TimeoutPolicy(TimeoutConfigBuilder, TimeoutSnapshot), TimeoutEvent => Timeout, "timeout", timeouts,
                [timeout_defaults, timeout, timeout_instance], [] }
            { bulkhead: BulkheadPolicy(BulkheadConfigBuilder, BulkheadSnapshot), BulkheadEvent => Bulkhead, "bulkhead", bulkheads,
                [bulkhead_defaults, bulkhead, bulkhead_instance], [BulkheadHandle] }
        }
    };
}
pub(crate) use for_each_policy;

/// The kinds that publish events but keep no configuration, state, snapshot or handle (the
/// fallback), so they are not in [`for_each_policy!`]: only the event machinery (`events.rs`: the
/// listener table, `Event`, `AnyEvent`) lists them, after the policies it is handed.
/// `{ module: EventType => AnyEvent variant, "human name", metric handles in module::metrics }`.
macro_rules! for_each_event_only {
    ($generator:path { $($policies:tt)* }) => {
        $generator! {
            $($policies)*
            ;
            { fallback: FallbackEvent => Fallback, "fallback", FallbackMetrics }
        }
    };
}
pub(crate) use for_each_event_only;

/// The pipeline's view of the list (`pipeline/builder.rs`, `pipeline/order.rs`,
/// `pipeline/guards.rs`), in [`for_each_policy!`]'s order, handed to `$generator`: the retry, the
/// hedge (each special: the retry loop, the race of attempts), then the guards, each one layer
/// around an attempt implementing `crate::guard::Guard`. One entry per policy:
/// `{ module: Facade(ConfigBuilder) as Variant, [builder methods: defaults, named, overrides] =>
/// builder type-state after it, always_async: whether it needs an async call site, "what it is",
/// [the three methods' doc examples] }` where `Variant` names it in `pipeline::Policy`.
/// A new guard is one entry at the end of `guards` (its place in the default nesting).
macro_rules! for_each_pipeline_policy {
    ($generator:path) => {
        $generator! {
            retry:
            { retry: RetryPolicy(RetryConfigBuilder) as Retry, [retry, retry_config, retry_with] => K, always_async: false,
                "retry",
                [
                    "use resilience4cata::{Pipeline, Registry};\n\
                     let registry = Registry::builder().build()?;\n\
                     Pipeline::builder(&registry, \"inventory\").retry().build::<u32, String>()?;\n\
                     assert_eq!(registry.snapshot().retries()[0].config.max_attempts, 3);",
                    "use resilience4cata::{Pipeline, Registry};\n\
                     let registry = Registry::builder().retry(\"external\", |r| r.max_attempts(5)).build()?;\n\
                     Pipeline::builder(&registry, \"inventory\").retry_config(\"external\").build::<u32, String>()?;\n\
                     assert_eq!(registry.snapshot().retries()[0].config.max_attempts, 5);",
                    "use std::time::Duration;\n\
                     use resilience4cata::{Pipeline, Registry};\n\
                     let registry = Registry::builder().build()?;\n\
                     Pipeline::builder(&registry, \"inventory\")\n    \
                         .retry_with(|r| r.max_attempts(3).delay(Duration::from_millis(100)))\n    \
                         .build::<u32, String>()?;\n\
                     assert_eq!(registry.snapshot().retries()[0].config.delay, Duration::from_millis(100));"
                ] }
            hedge:
            { hedge: HedgePolicy(HedgeConfigBuilder) as Hedge, [hedge, hedge_config, hedge_with] => K::Hedged, always_async: true,
                "hedge (then the pipeline offers only `execute_async`; a retry beside it fails `build` with \
                 `R4C-REG-001`)",
                [
                    "use resilience4cata::{Pipeline, Registry};\n\
                     let registry = Registry::builder().build()?;\n\
                     Pipeline::builder(&registry, \"search\").hedge().build::<u32, String>()?;\n\
                     assert_eq!(registry.snapshot().hedges()[0].config.max_hedged_attempts, 1);",
                    "use resilience4cata::{Pipeline, Registry};\n\
                     let registry = Registry::builder().hedge(\"wide\", |h| h.max_hedged_attempts(3)).build()?;\n\
                     Pipeline::builder(&registry, \"search\").hedge_config(\"wide\").build::<u32, String>()?;\n\
                     assert_eq!(registry.snapshot().hedges()[0].config.max_hedged_attempts, 3);",
                    "use std::time::Duration;\n\
                     use resilience4cata::{Pipeline, Registry};\n\
                     let registry = Registry::builder().build()?;\n\
                     let search = Pipeline::builder(&registry, \"search\")\n    \
                         .hedge_with(|h| h.delay(Duration::from_millis(20)))\n    \
                         .build::<u32, String>()?;\n\
                     # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {\n\
                     assert_eq!(search.execute_async(|| async { Ok(4) }).await, Ok(4));\n\
                     # });\n\
                     assert_eq!(registry.snapshot().hedges()[0].config.delay, Duration::from_millis(20));"
                ] }
            guards: [
            { circuit_breaker: CircuitBreakerPolicy(CircuitBreakerConfigBuilder) as CircuitBreaker, [circuit_breaker, circuit_breaker_config, circuit_breaker_with] => K::Rejecting, always_async: false,
                "circuit breaker (then `build` needs `E: ResilienceError`)",
                [
                    "use resilience4cata::{Pipeline, Registry};\n\
                     let registry = Registry::builder().build()?;\n\
                     Pipeline::builder(&registry, \"prices\").circuit_breaker().build::<u32, std::io::Error>()?;\n\
                     assert!(registry.circuit_breaker(\"prices\").is_some());",
                    "use resilience4cata::{Pipeline, Registry};\n\
                     let registry = Registry::builder().circuit_breaker(\"touchy\", |c| c.minimum_calls(5)).build()?;\n\
                     Pipeline::builder(&registry, \"prices\").circuit_breaker_config(\"touchy\").build::<u32, std::io::Error>()?;\n\
                     assert_eq!(registry.snapshot().circuit_breakers()[0].config.minimum_calls, 5);",
                    "use resilience4cata::circuit_breaker::State;\n\
                     use resilience4cata::{Pipeline, Registry};\n\
                     let registry = Registry::builder().build()?;\n\
                     let prices = Pipeline::builder(&registry, \"prices\")\n    \
                         .circuit_breaker_with(|c| c.window_size(2).minimum_calls(2))\n    \
                         .build::<u32, std::io::Error>()?;\n\
                     for _ in 0..2 {\n    \
                         let _ = prices.execute(|| Err(std::io::Error::other(\"down\")));\n\
                     }\n\
                     assert_eq!(registry.circuit_breaker(\"prices\").unwrap().state(), State::Open);"
                ] }
            { rate_limiter: RateLimiterPolicy(RateLimiterConfigBuilder) as RateLimiter, [rate_limiter, rate_limiter_config, rate_limiter_with] => K::Rejecting, always_async: false,
                "rate limiter (then `build` needs `E: ResilienceError`)",
                [
                    "use resilience4cata::{Pipeline, Registry};\n\
                     let registry = Registry::builder().build()?;\n\
                     Pipeline::builder(&registry, \"quotes\").rate_limiter().build::<u32, std::io::Error>()?;\n\
                     assert_eq!(registry.snapshot().rate_limiters()[0].config.permits, 50);",
                    "use resilience4cata::{Pipeline, Registry};\n\
                     let registry = Registry::builder().rate_limiter(\"slow\", |l| l.permits(5)).build()?;\n\
                     Pipeline::builder(&registry, \"quotes\").rate_limiter_config(\"slow\").build::<u32, std::io::Error>()?;\n\
                     assert_eq!(registry.snapshot().rate_limiters()[0].config.permits, 5);",
                    "use resilience4cata::{Pipeline, Registry};\n\
                     let registry = Registry::builder().build()?;\n\
                     let quotes = Pipeline::builder(&registry, \"quotes\")\n    \
                         .rate_limiter_with(|l| l.permits(1))\n    \
                         .build::<u32, std::io::Error>()?;\n\
                     assert!(quotes.execute(|| Ok(1)).is_ok());\n\
                     assert!(quotes.execute(|| Ok(2)).is_err()); // RateLimitExceeded: one permit per second"
                ] }
            { adaptive_limit: AdaptiveLimitPolicy(AdaptiveLimitConfigBuilder) as AdaptiveLimit, [adaptive_limit, adaptive_limit_config, adaptive_limit_with] => K::Rejecting, always_async: false,
                "adaptive concurrency limit (then `build` needs `E: ResilienceError`)",
                [
                    "use resilience4cata::{Pipeline, Registry};\n\
                     let registry = Registry::builder().build()?;\n\
                     Pipeline::builder(&registry, \"search\").adaptive_limit().build::<u32, std::io::Error>()?;\n\
                     assert_eq!(registry.adaptive_limit(\"search\").unwrap().snapshot().limit, 20);",
                    "use resilience4cata::adaptive_limit::Algorithm;\n\
                     use resilience4cata::{Pipeline, Registry};\n\
                     let registry = Registry::builder().adaptive_limit(\"vegas\", |a| a.algorithm(Algorithm::Vegas)).build()?;\n\
                     Pipeline::builder(&registry, \"search\").adaptive_limit_config(\"vegas\").build::<u32, std::io::Error>()?;\n\
                     assert_eq!(registry.snapshot().adaptive_limits()[0].config.algorithm, Algorithm::Vegas);",
                    "use resilience4cata::{Pipeline, Registry};\n\
                     let registry = Registry::builder().build()?;\n\
                     let search = Pipeline::builder(&registry, \"search\")\n    \
                         .adaptive_limit_with(|a| a.initial_limit(10))\n    \
                         .build::<u32, std::io::Error>()?;\n\
                     let _ = search.execute(|| Err(std::io::Error::other(\"overloaded\"))); // a drop: 10 × 0.9\n\
                     assert_eq!(registry.adaptive_limit(\"search\").unwrap().snapshot().limit, 9);"
                ] }
            { timeout: TimeoutPolicy(TimeoutConfigBuilder) as Timeout, [timeout, timeout_config, timeout_with] => K::AsyncOnly, always_async: true,
                "timeout on each attempt (then `build` needs `E: ResilienceError`, and the pipeline offers \
                 only `execute_async`)",
                [
                    "use resilience4cata::{Pipeline, Registry};\n\
                     let registry = Registry::builder().build()?;\n\
                     Pipeline::builder(&registry, \"search\").timeout().build::<u32, std::io::Error>()?;\n\
                     assert_eq!(registry.snapshot().timeouts()[0].config.duration, std::time::Duration::from_secs(1));",
                    "use std::time::Duration;\n\
                     use resilience4cata::{Pipeline, Registry};\n\
                     let registry = Registry::builder().timeout(\"quick\", |t| t.duration(Duration::from_millis(50))).build()?;\n\
                     Pipeline::builder(&registry, \"search\").timeout_config(\"quick\").build::<u32, std::io::Error>()?;\n\
                     assert_eq!(registry.snapshot().timeouts()[0].config.duration, Duration::from_millis(50));",
                    "use std::time::Duration;\n\
                     use resilience4cata::{Pipeline, Registry};\n\
                     let registry = Registry::builder().build()?;\n\
                     Pipeline::builder(&registry, \"search\")\n    \
                         .timeout_with(|t| t.duration(Duration::from_millis(250)))\n    \
                         .build::<u32, std::io::Error>()?;\n\
                     assert_eq!(registry.snapshot().timeouts()[0].config.duration, Duration::from_millis(250));"
                ] }
            { bulkhead: BulkheadPolicy(BulkheadConfigBuilder) as Bulkhead, [bulkhead, bulkhead_config, bulkhead_with] => K::Rejecting, always_async: false,
                "bulkhead (then `build` needs `E: ResilienceError`)",
                [
                    "use resilience4cata::{Pipeline, Registry};\n\
                     let registry = Registry::builder().build()?;\n\
                     Pipeline::builder(&registry, \"reports\").bulkhead().build::<u32, std::io::Error>()?;\n\
                     assert_eq!(registry.snapshot().bulkheads()[0].config.max_concurrent_calls, 25);",
                    "use resilience4cata::{Pipeline, Registry};\n\
                     let registry = Registry::builder().bulkhead(\"narrow\", |b| b.max_concurrent_calls(2)).build()?;\n\
                     Pipeline::builder(&registry, \"reports\").bulkhead_config(\"narrow\").build::<u32, std::io::Error>()?;\n\
                     assert_eq!(registry.snapshot().bulkheads()[0].config.max_concurrent_calls, 2);",
                    "use resilience4cata::{Pipeline, Registry};\n\
                     let registry = Registry::builder().build()?;\n\
                     Pipeline::builder(&registry, \"reports\")\n    \
                         .bulkhead_with(|b| b.max_concurrent_calls(4))\n    \
                         .build::<u32, std::io::Error>()?;\n\
                     assert_eq!(registry.snapshot().bulkheads()[0].config.max_concurrent_calls, 4);"
                ] }
            ]
        }
    };
}
pub(crate) use for_each_pipeline_policy;

/// The pipeline list's modules and facades, in its order, for the test that holds it to
/// [`for_each_policy!`].
#[cfg(test)]
macro_rules! pipeline_listed {
    (retry: $retry:tt hedge: $hedge:tt guards: [$($guard:tt)*]) => {
        pipeline_listed!(@each $retry $hedge $($guard)*);
    };
    (@each $({ $module:ident: $policy:ident($builder:ident) as $variant:ident, $($rest:tt)* })*) => {
        const PIPELINE_LISTED: &[[&str; 3]] = &[$([stringify!($module), stringify!($builder), stringify!($policy)]),*];
    };
}

#[cfg(test)]
for_each_pipeline_policy!(pipeline_listed);

/// The registry's per-policy parts: stores, configuration layers, snapshot lists, builder trio,
/// handle lookups.
macro_rules! registry_parts {
    ($({ $module:ident: $policy:ident($builder:ident, $snapshot:ident), $event:ident => $variant:ident,
        $human:literal, $list:ident, [$defaults:ident, $named:ident, $instance:ident], [$($handle:ident)?] })*) => {
        $(use crate::$module::policy::$policy;)*
        $(use crate::$module::{$builder, $snapshot};)*
        $($(use crate::$module::$handle;)?)*

        /// Every policy kind's store.
        pub(crate) struct Stores {
            $(pub(crate) $module: Store<$policy>,)*
        }

        /// Every policy kind's configuration layers, as the builder collects them.
        #[derive(Default)]
        pub(crate) struct PolicyConfigs {
            $(pub(crate) $module: Configs<$builder>,)*
        }

        impl PolicyConfigs {
            pub(crate) fn into_stores(self) -> Stores {
                Stores { $($module: Store::new(self.$module),)* }
            }
        }

        impl Stores {
            /// What no wrapper or pipeline has resolved so far, in every policy (`Registry::unused_config`).
            pub(crate) fn unused(&self) -> Vec<UnusedConfig> {
                let mut unused = Vec::new();
                $(unused.extend(self.$module.unused());)*
                unused.sort();
                unused
            }
        }

        $(impl Registered for $policy {
            fn store(inner: &Inner) -> &Store<Self> {
                &inner.stores.$module
            }
        })*

        /// Every policy instance of a registry at one moment (`Registry::snapshot`).
        #[cfg_attr(feature = "serde", derive(serde::Serialize))]
        #[derive(Clone, Debug, PartialEq, Default)]
        #[non_exhaustive]
        pub struct RegistrySnapshot {
            $($list: Vec<$snapshot>,)*
        }

        impl RegistrySnapshot {
            pub(crate) fn of(stores: &Stores) -> Self {
                RegistrySnapshot { $($list: stores.$module.snapshots(),)* }
            }

            $(
                #[doc = concat!("Every ", $human, " instance, ordered by id.")]
                ///
                /// ```
                /// let registry = resilience4cata::Registry::builder().build()?;
                #[doc = concat!("assert!(registry.snapshot().", stringify!($list), "().is_empty()); // nothing wrapped yet")]
                /// # Ok::<(), resilience4cata::RegistryError>(())
                /// ```
                pub fn $list(&self) -> &[$snapshot] {
                    &self.$list
                }
            )*
        }

        impl super::RegistryBuilder {
            $(
                #[doc = concat!("Overrides built-in ", $human, " defaults for every ", $human, " of this registry \
                    (see the [`", stringify!($module), "`](crate::", stringify!($module), ") module for each key).")]
                ///
                /// ```
                /// let registry = resilience4cata::Registry::builder()
                #[doc = concat!("    .", stringify!($defaults), "(|c| c.enabled(false))")]
                ///     .build()?;
                /// # Ok::<(), resilience4cata::RegistryError>(())
                /// ```
                pub fn $defaults(
                    mut self,
                    f: impl FnOnce($builder) -> $builder,
                ) -> Self {
                    super::edit(&mut self.policies.$module.defaults, f);
                    self
                }

                #[doc = concat!("A named ", $human, " configuration, chosen with `#[", stringify!($module),
                    "(config = \"name\")]` or `.", stringify!($module), "_config(\"name\")` on a pipeline.")]
                ///
                /// ```
                /// let registry = resilience4cata::Registry::builder()
                #[doc = concat!("    .", stringify!($named), "(\"quiet\", |c| c.enabled(false))")]
                ///     .build()?;
                /// # Ok::<(), resilience4cata::RegistryError>(())
                /// ```
                pub fn $named(
                    mut self,
                    name: impl Into<String>,
                    f: impl FnOnce($builder) -> $builder,
                ) -> Self {
                    super::edit(self.policies.$module.named.entry(name.into()).or_default(), f);
                    self
                }

                #[doc = concat!("Overrides for one ", $human, " instance id; they win over everything else.")]
                ///
                /// ```
                /// let registry = resilience4cata::Registry::builder()
                #[doc = concat!("    .", stringify!($instance), "(\"shop::InventoryApi::stock\", |c| c.enabled(false))")]
                ///     .build()?;
                /// # Ok::<(), resilience4cata::RegistryError>(())
                /// ```
                pub fn $instance(
                    mut self,
                    id: impl Into<String>,
                    f: impl FnOnce($builder) -> $builder,
                ) -> Self {
                    super::edit(self.policies.$module.instances.entry(id.into()).or_default(), f);
                    self
                }
            )*
        }

        impl Registry {
            $($(
                #[doc = concat!("The ", $human, " instance `id` (its `name`, or the derived \
                    `<module_path>::<Trait>::<method>`), once a wrapper or pipeline has built it; see [`",
                    stringify!($handle), "`].")]
                pub fn $module(&self, id: &str) -> Option<$handle> {
                    <$policy as Registered>::store(self.inner()).instances.get(id).map($handle::of_state)
                }
            )?)*
        }

        /// Each policy's attribute name, `__private` constructor, config builder and facade, in
        /// nesting order, for the test that holds the macro's list to this one.
        #[cfg(test)]
        pub(crate) const LISTED: &[[&str; 4]] =
            &[$([<$policy as PolicyKind>::NAME, stringify!($module), stringify!($builder), stringify!($policy)]),*];
    };
}

for_each_policy!(registry_parts);

/// A policy's public handle: the instance id and its snapshot. Manual controls go in an `impl` of
/// the policy's own.
macro_rules! policy_handle {
    ($(#[$meta:meta])* $handle:ident for $policy:ty => $snapshot:ty) => {
        $(#[$meta])*
        #[derive(Clone)]
        pub struct $handle {
            state: ::std::sync::Arc<<$policy as $crate::registry::PolicyKind>::State>,
        }

        impl $handle {
            /// The handle of one live instance (the registry's lookup).
            pub(crate) fn of_state(state: ::std::sync::Arc<<$policy as $crate::registry::PolicyKind>::State>) -> Self {
                $handle { state }
            }

            /// The instance id.
            pub fn instance(&self) -> &str {
                &self.state.instance
            }

            /// The configuration and the instance's live state.
            pub fn snapshot(&self) -> $snapshot {
                <$policy as $crate::registry::PolicyKind>::snapshot(&self.state)
            }
        }

        impl ::std::fmt::Debug for $handle {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.debug_struct(stringify!($handle)).field("instance", &self.instance()).finish_non_exhaustive()
            }
        }
    };
}
pub(crate) use policy_handle;

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::{LISTED, PIPELINE_LISTED};

    /// A policy in the registry's list but not in the pipeline's (or in another order, or with
    /// another builder or facade) fails here: the pipeline would silently lack it.
    #[test]
    fn the_pipeline_lists_every_policy_of_the_registry_in_the_same_order() {
        let registry: Vec<[&str; 3]> =
            LISTED.iter().map(|[_, module, builder, facade]| [*module, *builder, *facade]).collect();
        assert_eq!(PIPELINE_LISTED, registry.as_slice(), "for_each_pipeline_policy! vs for_each_policy!");
    }

    /// `field: "value"` in a macro-side `PolicySpec` source.
    fn spec_field<'a>(source: &'a str, field: &str) -> Option<&'a str> {
        let start = source.find(&format!("\n    {field}: \""))? + field.len() + 8;
        source[start..].split('"').next()
    }

    /// `name`, `runtime_fn`, `builder` and `field_ty` of a macro-side `PolicySpec` source: written
    /// out, or given by `policy_spec!(module, Prefix, …)` (the module name twice, then
    /// `<Prefix>ConfigBuilder` and `<Prefix>Policy`).
    fn spec_fields(source: &str) -> [Option<String>; 4] {
        if let Some(start) = source.find("policy_spec!(") {
            let mut args = source[start + "policy_spec!(".len()..].split(',').map(str::trim);
            let (module, prefix) = (args.next().unwrap(), args.next().unwrap());
            return [module.into(), module.into(), format!("{prefix}ConfigBuilder"), format!("{prefix}Policy")]
                .map(Some);
        }
        ["name", "runtime_fn", "builder", "field_ty"].map(|field| spec_field(source, field).map(str::to_string))
    }

    /// A policy half-registered (in the macro's `POLICIES` but not in `for_each_policy!`, or the
    /// other way round, or in another order, or with another constructor, builder or facade)
    /// fails here.
    #[test]
    fn the_macro_and_the_runtime_list_the_same_policies_in_the_same_order() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../resilience4cata-macros/src/policy");
        let index = std::fs::read_to_string(dir.join("mod.rs")).unwrap();
        let list = &index[index.find("POLICIES: &[&PolicySpec] = &[").unwrap()..];
        let list = &list[..list.find("];").unwrap()];
        let modules: Vec<&str> = list.lines().filter_map(|l| l.trim().strip_prefix('&')?.split("::").next()).collect();
        // The fallback, outermost, has no configuration (an empty builder) and is not in the list.
        let fallback: &[[&str; 4]] = &[["fallback", "fallback", "", "FallbackPolicy"]];
        let expected: Vec<&[&str; 4]> = fallback.iter().chain(LISTED).collect();
        let listed: Vec<&str> = expected.iter().map(|[name, ..]| *name).collect();
        assert_eq!(modules, listed, "policy/mod.rs POLICIES vs registry::for_each_policy!");
        for [name, constructor, builder, facade] in expected {
            let source = std::fs::read_to_string(dir.join(format!("{name}.rs"))).unwrap();
            assert_eq!(
                spec_fields(&source),
                [Some(*name), Some(*constructor), Some(*builder), Some(*facade)].map(|f| f.map(str::to_string)),
                "policy/{name}.rs"
            );
        }
    }
}
