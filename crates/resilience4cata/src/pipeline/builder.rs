//! [`PipelineBuilder`]: which policies a pipeline has, and how each one's configuration is layered.
//!
//! The builder is untyped (it does not know `T` or `E`), so it only collects, for each policy, the
//! named configuration and the overrides the caller asked for. [`build`](PipelineBuilder::build)
//! resolves them all at once through the same registry calls the generated code makes, so the
//! pipeline's instances are the generated code's instances: same ids, same layering, same errors.
//! Its type-state ([`BuilderTypestate`]) records whether a policy that can refuse calls, or a timeout, was
//! added, so `build` asks for `E: ResilienceError` exactly when the generated code would.

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use super::execute::{AsyncPipeline, Pipeline, find_rejection};
use super::guards::{GuardSet, Guards};
use super::keyed_set::KeyedSet;
use super::order::{self, Policy, Step};
use super::preset::Preset;
use super::rules::FindRejection;
use super::typestate::{AsyncOnly, BuilderTypestate, Hedged, Plain, Rejecting, Unkeyed};
use crate::__private::{
    KeyedAdaptiveLimitPolicy, KeyedBulkheadPolicy, KeyedCircuitBreakerPolicy, KeyedRateLimiterPolicy,
};
use crate::error::{RegistryError, codes};
use crate::registry::{Layer, Registered, Registry, for_each_pipeline_policy};
use crate::{Rejection, ResilienceError};

/// What the caller asked of one policy: a named configuration and overrides on top of it, over
/// the values of a preset ([`PipelineBuilder::preset`]), if one brought this policy.
#[derive(Clone, Debug, Default)]
struct Wanted<B> {
    config: Option<String>,
    overrides: B,
    /// The preset's values: below the overrides key by key, whatever order the calls came in.
    preset: B,
}

impl<B: Layer> Wanted<B> {
    /// The policy with its defaults, keeping whatever was asked before.
    fn add(slot: &mut Option<Self>) -> &mut Self {
        slot.get_or_insert_with(Wanted::default)
    }

    fn config(slot: &mut Option<Self>, name: String) {
        Self::add(slot).config = Some(name);
    }

    /// Chains `f` onto the overrides already set: a key set twice keeps the later value.
    fn with(slot: &mut Option<Self>, f: impl FnOnce(B) -> B) {
        let wanted = Self::add(slot);
        wanted.overrides = f(std::mem::take(&mut wanted.overrides));
    }

    /// The preset's values for this policy (a later preset's replace an earlier one's).
    fn preset(slot: &mut Option<Self>, values: Option<B>) {
        if let Some(values) = values {
            Self::add(slot).preset = values;
        }
    }

    /// Resolves through `build(config, overrides)`, the generated code's registry call; the
    /// overrides are the preset's values with the caller's on top, as a bundle's values sit under
    /// a method's own attributes.
    fn resolve<P>(
        slot: Option<Self>,
        build: impl FnOnce(Option<&str>, B) -> Result<P, RegistryError>,
    ) -> Result<Option<P>, RegistryError> {
        slot.map(|wanted| {
            let mut layered = wanted.preset;
            layered.merge(&wanted.overrides);
            build(wanted.config.as_deref(), layered)
        })
        .transpose()
    }
}

/// How to put a refusal into `E` and find one in it: `E::from_rejection` and `E::rejection`,
/// captured where `E: ResilienceError` is required.
pub(super) type Rejections<E> = (fn(Rejection) -> E, FindRejection<E>);

/// How to make `E` from a chaos fault's name (`E::from_variant_name`, and whether it knows the
/// name), captured where `E: ResilienceError` is required; used only with the feature `chaos`.
pub(super) type Faults<E> = (fn(&str) -> Option<E>, fn(&str) -> bool);

/// `E`'s [`Faults`].
pub(super) fn faults_of<E: ResilienceError>() -> Faults<E> {
    (E::from_variant_name, |name| E::from_variant_name(name).is_some())
}

/// Chooses a pipeline's policies; [`build`](PipelineBuilder::build) resolves them.
///
/// Start it with [`Pipeline::builder`]. For each policy there are three methods, which compose:
/// `.retry()` (registry defaults), `.retry_config("name")` (a named configuration of the registry)
/// and `.retry_with(|r| …)` (overrides on top of both). They rank as a method's attributes do:
/// built-in defaults < registry defaults < the named configuration < the `_with` overrides <
/// `retry_instance(id, …)` on the registry. The order of the builder calls does not matter: the
/// policies always nest in the order of the generated code (retry outermost, then circuit breaker,
/// rate limiter, adaptive limit, timeout, bulkhead).
///
/// `K` is the builder's type-state ([`Plain`], [`Rejecting`] or [`AsyncOnly`]): it decides what
/// `build` asks of the error type and whether the pipeline can run blocking calls.
///
/// ```
/// use std::time::Duration;
/// use resilience4cata::{Pipeline, Registry};
///
/// let registry = Registry::builder().retry("patient", |r| r.max_attempts(5)).build()?;
/// let prices = Pipeline::builder(&registry, "prices")
///     .retry_config("patient")                                 // 5 attempts…
///     .retry_with(|r| r.delay(Duration::from_millis(10)))       // …10 ms apart at first
///     .build::<u32, std::io::Error>()?;
/// assert_eq!(prices.execute(|| Ok(7))?, 7);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "a builder does nothing until `build` is called"]
pub struct PipelineBuilder<'r, K = Plain, Key = Unkeyed> {
    registry: &'r Registry,
    id: String,
    /// `.scope(…)`: the pipeline's instance id becomes `<scope>/<id>`.
    scope: Option<String>,
    wants: Wants,
    kind: PhantomData<fn() -> (K, Key)>,
}

impl<K, Key> fmt::Debug for PipelineBuilder<'_, K, Key> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PipelineBuilder")
            .field("id", &self.id)
            .field("scope", &self.scope)
            .field("wants", &self.wants)
            .finish_non_exhaustive()
    }
}

impl<'r> PipelineBuilder<'r, Plain> {
    pub(super) fn new(registry: &'r Registry, id: String) -> Self {
        PipelineBuilder { registry, id, scope: None, wants: Wants::default(), kind: PhantomData }
    }

    /// The same builder for a keyed pipeline (`PipelineBuilder::keyed`).
    pub(super) fn into_keyed<Key>(self) -> PipelineBuilder<'r, Plain, Key> {
        self.retyped()
    }
}

impl<'r, K, Key> PipelineBuilder<'r, K, Key> {
    /// The same fields under other type parameters: the typestate moves on (`into_kind`), or the
    /// builder becomes keyed (`into_keyed`).
    fn retyped<K2, Key2>(self) -> PipelineBuilder<'r, K2, Key2> {
        PipelineBuilder {
            registry: self.registry,
            id: self.id,
            scope: self.scope,
            wants: self.wants,
            kind: PhantomData,
        }
    }
}

/// The three builder methods of one policy: defaults, a named configuration, overrides.
macro_rules! policy_methods {
    (
        $policy:ident, $config:ident, $with:ident, $builder:ty => $next:ty,
        $what:literal,
        [$example:literal, $config_example:literal, $with_example:literal]
    ) => {
        #[doc = concat!("Adds a ", $what, " with the registry's defaults (and the instance's overrides, if any).")]
        ///
        /// ```
        #[doc = $example]
        /// # Ok::<(), resilience4cata::RegistryError>(())
        /// ```
        #[must_use = "the policy is on the returned builder; this one is consumed"]
        pub fn $policy(mut self) -> PipelineBuilder<'r, $next, Key> {
            Wanted::add(&mut self.wants.$policy);
            self.into_kind()
        }

        #[doc = concat!("Adds a ", $what, " configured by the registry's named configuration `name`. An unknown")]
        /// name fails [`build`](PipelineBuilder::build) with `R4C-REG-004`.
        ///
        /// ```
        #[doc = $config_example]
        /// # Ok::<(), resilience4cata::RegistryError>(())
        /// ```
        #[must_use = "the policy is on the returned builder; this one is consumed"]
        pub fn $config(mut self, name: impl Into<String>) -> PipelineBuilder<'r, $next, Key> {
            Wanted::config(&mut self.wants.$policy, name.into());
            self.into_kind()
        }

        #[doc = concat!("Adds a ", $what, " with overrides on top of the defaults and of the named configuration,")]
        /// if one was chosen; they rank as a method's attributes do. Calling it twice chains the
        /// closures.
        ///
        /// ```
        #[doc = $with_example]
        /// # Ok::<(), resilience4cata::RegistryError>(())
        /// ```
        #[must_use = "the policy is on the returned builder; this one is consumed"]
        pub fn $with(mut self, f: impl FnOnce($builder) -> $builder) -> PipelineBuilder<'r, $next, Key> {
            Wanted::with(&mut self.wants.$policy, f);
            self.into_kind()
        }
    };
}

/// The builder's per-policy parts, from the list (`for_each_pipeline_policy!`): the imports, the
/// slots of [`Wants`], the three builder methods of each policy, and the resolution of the retry
/// and the guards in nesting order (the hedge is resolved first, by `resolve`, for its checks).
macro_rules! builder_parts {
    (retry: $retry:tt hedge: $hedge:tt guards: [$({ $guard:ident: $($guard_rest:tt)* })*]) => {
        builder_parts!(@all $retry $hedge $({ $guard: $($guard_rest)* })*);

        impl Wants {
            /// Whether the pipeline has the policy of `step`.
            fn has(&self, step: Step) -> bool {
                builder_parts!(@has self, step, $retry $({ $guard: $($guard_rest)* })*)
            }

            /// The hedge, resolved on its own (before the order is checked).
            fn resolve_hedge(&mut self, registry: &Registry, id: &str) -> Result<Option<HedgePolicy>, RegistryError> {
                builder_parts!(@resolve self, registry, id, false, $hedge)
            }

            /// The retry, resolved as the generated code resolves it.
            fn resolve_retry(&mut self, registry: &Registry, id: &str, is_async: bool) -> Result<Option<RetryPolicy>, RegistryError> {
                builder_parts!(@resolve self, registry, id, is_async, $retry)
            }

            /// Every guard, in nesting order.
            fn resolve_guards(&mut self, registry: &Registry, id: &str, is_async: bool) -> Result<GuardSet, RegistryError> {
                Ok(GuardSet {
                    $($guard: builder_parts!(@resolve self, registry, id, is_async, { $guard: $($guard_rest)* })?,)*
                })
            }
        }
    };
    (@all $({ $module:ident: $policy:ident($builder:ident) as $variant:ident, [$add:ident, $config:ident, $with:ident] => $next:ty,
        always_async: $always_async:literal, $what:literal, [$($example:literal),*] })*) => {
        $(use crate::$module::policy::$policy;)*
        $(use crate::$module::$builder;)*

        /// Every policy asked for, one slot per policy kind.
        #[derive(Clone, Debug, Default)]
        struct Wants {
            $($module: Option<Wanted<$builder>>,)*
            /// `.order(…)`, outermost first; empty for the default order.
            order: Vec<Policy>,
            /// Whether `.order(…)` was called: then a preset's order does not apply.
            ordered: bool,
            /// The order of the last preset, used when `.order(…)` was not called.
            preset_order: Option<Vec<Policy>>,
        }

        impl<'r, K: BuilderTypestate, Key> PipelineBuilder<'r, K, Key> {
            $(policy_methods!($module, $config, $with, $builder => $next, $what, [$($example),*]);)*
        }
    };
    (@has $wants:ident, $step:ident, $({ $module:ident: $policy:ident($builder:ident) as $variant:ident, $($rest:tt)* })*) => {
        match $step {
            $(Step::$variant => $wants.$module.is_some(),)*
        }
    };
    (@resolve $wants:ident, $registry:ident, $id:ident, $is_async:expr, { $module:ident: $policy:ident($builder:ident) as $variant:ident,
        [$($methods:ident),*] => $next:ty, always_async: $always_async:literal, $($rest:tt)* }) => {
        Wanted::resolve($wants.$module.take(), |config, attrs| {
            $policy::build($registry, $id, None, config, $always_async || $is_async, attrs)
        })
    };
}

for_each_pipeline_policy!(builder_parts);

impl<'r, K: BuilderTypestate, Key> PipelineBuilder<'r, K, Key> {
    fn into_kind<K2>(self) -> PipelineBuilder<'r, K2, Key> {
        self.retyped()
    }

    /// Gives the pipeline instances of its own, as [`WrapperBuilder::scope`](crate::WrapperBuilder::scope)
    /// does for a generated wrapper (SPEC §5): the pipeline's id, the instance id of each of its
    /// policies, becomes `<scope>/<id>` (`Pipeline::builder(&registry, "prices").scope("host-a")`
    /// is `host-a/prices`). Pipelines built with the same id in two scopes share nothing, and the
    /// scoped id takes configuration like any id (`retry_instance("host-a/prices", …)`,
    /// `[instances."host-a/prices"]`); handles, snapshots, events and
    /// [`Pipeline::id`](crate::Pipeline::id) use it. Typically one scope per backend host. An
    /// empty scope fails [`build`](PipelineBuilder::build) with `R4C-REG-003`; a later call
    /// replaces an earlier one.
    ///
    /// ```
    /// use resilience4cata::circuit_breaker::State;
    /// use resilience4cata::{Pipeline, Registry};
    ///
    /// let registry = Registry::builder()
    ///     .circuit_breaker_instance("host-a/prices", |c| c.window_size(2).minimum_calls(2))
    ///     .build()?;
    /// let host = |scope: &str| {
    ///     Pipeline::builder(&registry, "prices").scope(scope).circuit_breaker().build::<u32, std::io::Error>()
    /// };
    /// let (a, b) = (host("host-a")?, host("host-b")?);
    /// assert_eq!(a.id(), "host-a/prices");
    /// for _ in 0..2 {
    ///     let _ = a.execute(|| Err(std::io::Error::other("host a is down")));
    /// }
    /// assert_eq!(registry.circuit_breaker("host-a/prices").unwrap().state(), State::Open);
    /// assert_eq!(registry.circuit_breaker("host-b/prices").unwrap().state(), State::Closed);
    /// assert_eq!(b.execute(|| Ok(3))?, 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use = "the scope is on the returned builder; this one is consumed"]
    pub fn scope(mut self, scope: impl Into<String>) -> Self {
        self.scope = Some(scope.into());
        self
    }

    /// Changes how the policies nest, outermost first, as `#[policy_order(…)]` does: the listed
    /// policies the pipeline has nest in the listed order, the others keep their default relative
    /// order inside them; a listed policy the pipeline does not have is ignored. A name twice, or
    /// `Policy::Fallback` anywhere but first, is `R4C-REG-001` from `build`, and so is an order
    /// that moves a hedge from outermost (list `Policy::Hedge` first to reorder the policies
    /// inside its attempts). A later call replaces
    /// an earlier one. See the module docs ("A non-default order") for what a reordered pipeline
    /// costs.
    ///
    /// ```
    /// use std::time::Duration;
    /// use resilience4cata::{Pipeline, Policy, Registry};
    ///
    /// let registry = Registry::builder().retry_defaults(|r| r.delay(Duration::ZERO)).build()?;
    /// // The bulkhead outside the retry: one slot for the whole retried call.
    /// let reports = Pipeline::builder(&registry, "reports")
    ///     .retry()
    ///     .bulkhead_with(|b| b.max_concurrent_calls(1))
    ///     .order([Policy::Bulkhead, Policy::Retry])
    ///     .build::<u32, std::io::Error>()?;
    /// let mut calls = 0;
    /// let outcome = reports.execute(|| {
    ///     calls += 1;
    ///     if calls < 3 { Err(std::io::Error::other("busy")) } else { Ok(9) }
    /// });
    /// assert_eq!(outcome?, 9);
    ///
    /// let twice = Pipeline::builder(&registry, "twice").retry().order([Policy::Retry, Policy::Retry]);
    /// assert_eq!(twice.build::<u32, String>().unwrap_err().code(), "R4C-REG-001");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use = "the order is on the returned builder; this one is consumed"]
    pub fn order(mut self, policies: impl IntoIterator<Item = Policy>) -> Self {
        self.wants.order = policies.into_iter().collect();
        self.wants.ordered = true;
        self
    }

    /// Adds the policies of a [`Preset`] with its values and its order: the same stack, the same
    /// values and the same nesting as `#[bundle(resilience4cata::presets::…)]` on a method (see
    /// [`crate::presets`] for each preset's values and the reasons for them).
    ///
    /// It ranks as a bundle does under a method's attributes: the `_with` overrides win over the
    /// preset's values key by key, **whatever order the calls come in**, and
    /// [`order`](PipelineBuilder::order) replaces the preset's order (before or after it). A
    /// named configuration (`.retry_config("name")`) sits below the preset's values, the
    /// registry's `…_instance(id, …)` above everything. Every preset has a timeout, so the pipeline
    /// runs async calls only and `build` asks for `E: ResilienceError`. A second preset replaces
    /// the first's values and order, and keeps its policies: [`StandardHttp`](crate::presets::StandardHttp)
    /// then [`HedgedHttp`](crate::presets::HedgedHttp) is a retry beside a hedge, `R4C-REG-001`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use resilience4cata::{Pipeline, Registry, presets};
    ///
    /// let registry = Registry::builder().build()?;
    /// let quotes = Pipeline::builder(&registry, "quotes")
    ///     .retry_with(|r| r.max_attempts(2)) // wins over the preset's 4 attempts, even written first
    ///     .preset(presets::StandardHttp)
    ///     .build::<u32, std::io::Error>()?;
    /// let snapshot = registry.snapshot();
    /// let retry = &snapshot.retries()[0].config;
    /// assert_eq!((retry.max_attempts, retry.delay), (2, Duration::from_secs(2)));
    /// assert_eq!(snapshot.timeouts()[0].config.duration, Duration::from_secs(10));
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// assert_eq!(quotes.execute_async(|| async { Ok(7) }).await.unwrap(), 7);
    /// # });
    /// # Ok::<(), resilience4cata::RegistryError>(())
    /// ```
    #[must_use = "the preset is on the returned builder; this one is consumed"]
    pub fn preset<P: Preset>(mut self, preset: P) -> PipelineBuilder<'r, K::AsyncOnly, Key> {
        let layers = preset.layers();
        Wanted::preset(&mut self.wants.retry, layers.retry);
        Wanted::preset(&mut self.wants.hedge, layers.hedge);
        Wanted::preset(&mut self.wants.circuit_breaker, layers.circuit_breaker);
        Wanted::preset(&mut self.wants.bulkhead, layers.bulkhead);
        Wanted::preset(&mut self.wants.timeout, layers.timeout);
        self.wants.preset_order = Some(layers.order);
        self.into_kind()
    }

    /// Resolves every policy once, in the generated code's order, under the pipeline's id.
    /// `is_async`: the pipeline can only run async calls (it has a timeout). `rejections`: how to
    /// put a refusal into `E` and find one in it, where `E: ResilienceError` is required.
    fn resolve<T, E, M>(
        self,
        is_async: bool,
        rejections: Option<Rejections<E>>,
        faults: Option<Faults<E>>,
    ) -> Result<Pipeline<T, E, M>, RegistryError> {
        let (pipeline, _) = self.resolve_keyed(false, is_async, rejections, faults)?;
        Ok(pipeline)
    }

    /// [`resolve`](Self::resolve), and with `keyed` the keyable policies (breaker, rate limiter,
    /// adaptive limit, bulkhead) resolved as keyed instances (SPEC §15): they are left out of the
    /// pipeline's guards, which each call fills with its key's own (`keyed.rs`).
    pub(super) fn resolve_keyed<T, E, M>(
        self,
        keyed: bool,
        is_async: bool,
        rejections: Option<Rejections<E>>,
        faults: Option<Faults<E>>,
    ) -> Result<(Pipeline<T, E, M>, KeyedSet), RegistryError> {
        let id = match self.scope {
            Some(scope) if scope.is_empty() => {
                return Err(RegistryError::new(codes::INVALID_VALUE, Some(&self.id), "a scope must not be empty"));
            }
            Some(scope) => format!("{scope}/{}", self.id),
            None => self.id,
        };
        let (registry, id, mut wants) = (self.registry, id.as_str(), self.wants);
        if let (false, Some(order)) = (wants.ordered, wants.preset_order.take()) {
            wants.order = order;
        }
        if wants.retry.is_some() && wants.hedge.is_some() {
            return Err(RegistryError::new(
                codes::INVALID_COMBINATION,
                Some(id),
                "a pipeline takes a retry or a hedge, not both: both decide when another attempt starts",
            ));
        }
        let hedge = wants.resolve_hedge(registry, id)?;
        let order = order::resolve(id, &wants.order, |step| wants.has(step))?;
        // The hedge sits in the retry's place (a hedged pipeline has no retry, so a listed `Retry`
        // is ignored) and must stay outermost: its attempts race through `Pipeline::hedged`, each
        // through the other policies, in the order resolved above.
        let as_retry: Vec<Policy> = wants
            .order
            .iter()
            .filter(|p| **p != Policy::Retry)
            .map(|p| if *p == Policy::Hedge { Policy::Retry } else { *p })
            .collect();
        let hedge_steps = order::resolve(id, &as_retry, |s| s == Step::Retry || wants.has(s))?;
        if hedge.is_some() && hedge_steps.is_some_and(|steps| steps.get()[0] != Step::Retry) {
            return Err(RegistryError::new(
                codes::INVALID_COMBINATION,
                Some(id),
                "a hedge stays the outermost policy of a pipeline (inside a fallback): list `Policy::Hedge` \
                 first to reorder the policies inside its attempts",
            ));
        }
        let retry = wants.resolve_retry(registry, id, is_async)?;
        let keys = if keyed { wants.resolve_keyed(registry, id, is_async)? } else { KeyedSet::default() };
        let set = wants.resolve_guards(registry, id, is_async)?;
        let guards = rejections.filter(|_| set.any() || keys.any()).map(|(wrap, find)| Guards::new(set, wrap, find));
        let async_waits = registry.inner().timer.can_sleep_async();
        #[allow(unused_mut)]
        let mut pipeline =
            Pipeline::from_parts(registry.clone(), Arc::from(id), retry, guards, async_waits, order).with_hedge(hedge);
        // The injection point, innermost (feature `chaos`): a fault by name needs `E: ResilienceError`.
        #[cfg(feature = "chaos")]
        {
            pipeline.chaos = Some(super::chaos::ChaosSite::build(registry, id, is_async, faults)?);
        }
        #[cfg(not(feature = "chaos"))]
        let _ = faults;
        Ok((pipeline, keys))
    }
}

impl Wants {
    /// The keyable policies asked for, taken out and resolved as keyed instances under `id`, in
    /// nesting order (a keyed pipeline's; the other policies stay unkeyed).
    fn resolve_keyed(&mut self, registry: &Registry, id: &str, is_async: bool) -> Result<KeyedSet, RegistryError> {
        Ok(KeyedSet {
            circuit_breaker: Wanted::resolve(self.circuit_breaker.take(), |config, attrs| {
                KeyedCircuitBreakerPolicy::build(registry, (id, None, config, is_async), attrs)
            })?,
            rate_limiter: Wanted::resolve(self.rate_limiter.take(), |config, attrs| {
                KeyedRateLimiterPolicy::build(registry, (id, None, config, is_async), attrs)
            })?,
            adaptive_limit: Wanted::resolve(self.adaptive_limit.take(), |config, attrs| {
                KeyedAdaptiveLimitPolicy::build(registry, (id, None, config, is_async), attrs)
            })?,
            bulkhead: Wanted::resolve(self.bulkhead.take(), |config, attrs| {
                KeyedBulkheadPolicy::build(registry, (id, None, config, is_async), attrs)
            })?,
        })
    }
}

impl PipelineBuilder<'_, Plain> {
    /// Resolves every policy once, into the registry's shared instances under the pipeline's id.
    ///
    /// Fails as wrapping a trait does: `R4C-REG-004` for an unknown named configuration,
    /// `R4C-REG-003` for an invalid resolved value, `R4C-REG-008` when the id is already used with
    /// another configuration. A retry-only pipeline accepts any error type `E` (see
    /// `Pipeline::detect_rejections` for what that means for nested refusals).
    ///
    /// ```
    /// use resilience4cata::{Pipeline, Registry};
    ///
    /// let registry = Registry::builder().build()?;
    /// let err = Pipeline::builder(&registry, "inventory").retry_config("nope").build::<u32, String>().unwrap_err();
    /// assert_eq!(err.code(), "R4C-REG-004");
    /// # Ok::<(), resilience4cata::RegistryError>(())
    /// ```
    pub fn build<T, E>(self) -> Result<Pipeline<T, E>, RegistryError> {
        self.resolve(false, None, None)
    }
}

impl PipelineBuilder<'_, Rejecting> {
    /// Resolves every policy once, as [`PipelineBuilder::<Plain>::build`](PipelineBuilder::build)
    /// does; the pipeline has a policy that can refuse calls, so `E` must implement
    /// [`ResilienceError`] (its refusals travel in `E`, and a nested open breaker's refusal is found
    /// and never retried).
    ///
    /// ```
    /// use resilience4cata::{Pipeline, Registry};
    ///
    /// let registry = Registry::builder().build()?;
    /// let quotes = Pipeline::builder(&registry, "quotes").retry().bulkhead().build::<u32, std::io::Error>()?;
    /// assert_eq!(quotes.execute(|| Ok(3))?, 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn build<T, E: ResilienceError>(self) -> Result<Pipeline<T, E>, RegistryError> {
        Ok(self
            .resolve(false, Some((E::from_rejection, find_rejection::<E>)), Some(faults_of::<E>()))?
            .detect_rejections())
    }
}

impl PipelineBuilder<'_, Hedged> {
    /// Resolves every policy once; with a hedge and no policy that refuses calls, any `E` will do
    /// (an `E: ResilienceError` is still looked into after
    /// [`detect_rejections`](Pipeline::detect_rejections), so a nested open breaker stops the
    /// hedging), and the pipeline runs only async calls ([`Pipeline::execute_async`]): it is an
    /// [`AsyncPipeline<T, E>`](AsyncPipeline). A retry
    /// beside the hedge is `R4C-REG-001`.
    ///
    /// ```
    /// use resilience4cata::{Pipeline, Registry};
    ///
    /// let registry = Registry::builder().build()?;
    /// let err = Pipeline::builder(&registry, "search").retry().hedge().build::<u32, String>().unwrap_err();
    /// assert_eq!(err.code(), "R4C-REG-001");
    /// # Ok::<(), resilience4cata::RegistryError>(())
    /// ```
    pub fn build<T, E>(self) -> Result<AsyncPipeline<T, E>, RegistryError> {
        self.resolve(true, None, None)
    }
}

impl PipelineBuilder<'_, AsyncOnly> {
    /// Resolves every policy once; with a timeout, the pipeline runs only async calls
    /// ([`Pipeline::execute_async`]): it is an [`AsyncPipeline<T, E>`](AsyncPipeline), the name to
    /// write in a struct field. `E` must implement [`ResilienceError`]. Fails with
    /// `R4C-REG-010` when the registry's clock cannot wait in a future.
    ///
    /// ```
    /// use std::time::Duration;
    /// use resilience4cata::{Pipeline, Registry};
    ///
    /// let registry = Registry::builder().build()?;
    /// let search = Pipeline::builder(&registry, "search")
    ///     .timeout_with(|t| t.duration(Duration::from_millis(200)))
    ///     .build::<u32, std::io::Error>()?;
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// assert_eq!(search.execute_async(|| async { Ok(4) }).await.unwrap(), 4);
    /// # });
    /// # Ok::<(), resilience4cata::RegistryError>(())
    /// ```
    pub fn build<T, E: ResilienceError>(self) -> Result<AsyncPipeline<T, E>, RegistryError> {
        Ok(self
            .resolve(true, Some((E::from_rejection, find_rejection::<E>)), Some(faults_of::<E>()))?
            .detect_rejections())
    }
}

impl Pipeline<(), ()> {
    /// Starts a pipeline whose policies take `id` as their instance id.
    ///
    /// ```
    /// use resilience4cata::{Pipeline, Registry};
    ///
    /// let registry = Registry::builder().build()?;
    /// let pipeline = Pipeline::builder(&registry, "inventory").retry().build::<u32, String>()?;
    /// assert_eq!(pipeline.id(), "inventory");
    /// assert_eq!(&*registry.snapshot().retries()[0].instance, "inventory");
    /// # Ok::<(), resilience4cata::RegistryError>(())
    /// ```
    pub fn builder(registry: &Registry, id: impl Into<String>) -> PipelineBuilder<'_> {
        PipelineBuilder::new(registry, id.into())
    }
}
