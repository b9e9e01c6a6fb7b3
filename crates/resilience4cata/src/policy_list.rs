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
