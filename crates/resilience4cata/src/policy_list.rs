//! The list of policies, declared once, on the ground floor: every per-policy piece of the crate
//! follows from it (the registry's stores and builder methods, `registry/policies.rs`; the listener
//! table and `AnyEvent`, `events.rs`; the configuration-file tables; the `__private` constructors),
//! so the list itself names no module above it. The types an entry names are resolved where the
//! list is expanded.

/// The list of policies, in nesting order, handed to `$generator` (a macro taking the same
/// entries). One entry per policy:
/// `{ module: Facade(ConfigBuilder, Snapshot), Event => AnyEvent variant, "human name", snapshot
/// list, [defaults, named, instance] builder methods, [HandleType] or [] }`
/// (the types are named here so the docs show them; they must be the `PolicyKind` impl's).
/// where `module` is also the field, the `__private` constructor and the config-file table.
macro_rules! for_each_policy {
    ($generator:path) => {
        $crate::policy_list::with_chaos! { $generator,
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

/// Hands `$generator` the entries of [`for_each_policy!`], and with the feature `chaos` the
/// injection point's entry after them (innermost, inside the bulkhead). Chaos is configured only
/// through configuration: it is in no attribute table and no pipeline builder list.
#[cfg(feature = "chaos")]
macro_rules! with_chaos {
    ($generator:path, $($entries:tt)*) => {
        $generator! {
            $($entries)*
            { chaos: ChaosPolicy(ChaosConfigBuilder, ChaosSnapshot), ChaosEvent => Chaos, "chaos", chaos,
                [chaos_defaults, chaos, chaos_instance], [] }
        }
    };
}
#[cfg(not(feature = "chaos"))]
macro_rules! with_chaos {
    ($generator:path, $($entries:tt)*) => {
        $generator! { $($entries)* }
    };
}
pub(crate) use with_chaos;

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

/// [`Policy`], the names of the policy kinds, from the pipeline's list: on the ground floor, so
/// the events (`ConfigEvent`) and the registry (`ConfigChange`) name a kind as the pipeline's
/// `.order([…])` does.
macro_rules! policy_names {
    (retry: { $retry:ident: $retry_policy:ident($retry_builder:ident) as $retry_variant:ident, $($retry_rest:tt)* }
     hedge: { $hedge:ident: $hedge_policy:ident($hedge_builder:ident) as $hedge_variant:ident, $($hedge_rest:tt)* }
     guards: [$({ $module:ident: $policy:ident($builder:ident) as $variant:ident, $($rest:tt)* })*]) => {
        /// A policy kind, for [`PipelineBuilder::order`](crate::PipelineBuilder::order): the names
        /// `#[policy_order(…)]` takes, in the default order (outermost first).
        ///
        /// `#[non_exhaustive]`: a policy added to the crate gets its variant here, so a `match` over
        /// `Policy` outside this crate needs a `_` arm; naming the variants, as `.order([…])` does, is
        /// unaffected.
        ///
        /// ```
        /// use resilience4cata::{Pipeline, Policy, Registry};
        ///
        /// let registry = Registry::builder().build()?;
        /// // One timeout bounds the whole retried call instead of each attempt.
        /// let search = Pipeline::builder(&registry, "search")
        ///     .retry()
        ///     .timeout()
        ///     .order([Policy::Timeout, Policy::Retry])
        ///     .build::<u32, std::io::Error>()?;
        /// # let _ = search;
        /// # Ok::<(), resilience4cata::RegistryError>(())
        /// ```
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum Policy {
            /// `#[fallback]`: always the outermost layer.
            Fallback,
            #[doc = concat!("`#[", stringify!($retry), "]`.")]
            $retry_variant,
            #[doc = concat!("`#[", stringify!($hedge), "]`.")]
            $hedge_variant,
            $(
                #[doc = concat!("`#[", stringify!($module), "]`.")]
                $variant,
            )*
            /// Fault injection (feature `chaos`): configured only through configuration, never
            /// ordered (its point is always innermost).
            #[cfg(feature = "chaos")]
            Chaos,
        }


        impl Policy {
            /// The attribute name, also the key in configuration files: `"retry"`, `"circuit_breaker"`, …
            ///
            /// ```
            /// assert_eq!(resilience4cata::Policy::RateLimiter.name(), "rate_limiter");
            /// ```
            pub fn name(self) -> &'static str {
                match self {
                    Policy::Fallback => "fallback",
                    Policy::$retry_variant => stringify!($retry),
                    Policy::$hedge_variant => stringify!($hedge),
                    $(Policy::$variant => stringify!($module),)*
                    #[cfg(feature = "chaos")]
                    Policy::Chaos => "chaos",
                }
            }
        }

        impl std::fmt::Display for Policy {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.name())
            }
        }

        /// With feature `serde`: the attribute name (`"circuit_breaker"`).
        #[cfg(feature = "serde")]
        impl serde::Serialize for Policy {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.name())
            }
        }
    };
}

for_each_pipeline_policy!(policy_names);
