//! The expansion of keyed layers (`key = …`, SPEC §15): the keyed facade and constructor, one
//! lookup per keyed policy before every layer but the fallback, and the layers on the key's hold
//! (the behaviour is tested through the runtime in `tests/keyed.rs`).

use proc_macro2::TokenStream;
use quote::quote;

use crate::diag::Errors;

fn expand(input: TokenStream) -> String {
    let mut errors = Errors::default();
    let parsed =
        crate::parse::parse_trait(TokenStream::new(), input, &mut errors).unwrap_or_else(|_| panic!("not a trait"));
    let model = crate::validate::validate(parsed, &mut errors);
    assert!(errors.is_empty(), "{:?}", errors.messages());
    super::expand(&model).to_string()
}

/// Where `expected` starts in `out`, which must contain it.
#[track_caller]
fn at(out: &str, expected: &str) -> usize {
    out.find(expected).unwrap_or_else(|| panic!("expected `{expected}` in: {out}"))
}

const LOOKUP_RATE_LIMITER: &str = "let __r4c_hold_rate_limiter = match match :: resilience4cata :: __private :: KeyArg (tenant) { ref __r4c_key_arg => :: resilience4cata :: __private :: KeyedRateLimiterPolicy :: for_key (& self . __r4c_rate_limiter_get , __r4c_key_arg . key_arg ()) , }";

#[test]
fn a_keyed_policy_is_built_keyed_and_its_layer_runs_on_the_key_s_hold() {
    let out = expand(quote! {
        pub trait Api {
            #[rate_limiter(permits = 5, key = tenant, max_keys = 50, key_metrics = true)]
            fn get(&self, tenant: &str) -> Result<u32, E>;
        }
    });
    at(&out, "__r4c_rate_limiter_get : :: resilience4cata :: __private :: KeyedRateLimiterPolicy");
    at(&out, ":: resilience4cata :: __private :: keyed_rate_limiter (registry");
    at(&out, ". permits (5u32) . max_keys (50u32) . key_metrics (true)");
    let lookup = at(&out, LOOKUP_RATE_LIMITER);
    let refused = at(&out, "break '__r4c_keys {");
    let held = at(&out, "let __r4c_key_rate_limiter = & * __r4c_hold_rate_limiter ;");
    let acquired = at(&out, "(* __r4c_key_rate_limiter) . acquire ()");
    assert!(lookup < refused && refused < held && held < acquired, "{out}");
    assert!(!out.contains("self . __r4c_rate_limiter_get . acquire"), "{out}");
    assert!(!out.contains("key ="), "the key setting is no builder call: {out}");
}

#[test]
fn an_unkeyed_method_beside_a_keyed_one_expands_as_before() {
    let alone = expand(quote! {
        pub trait Api {
            #[rate_limiter(permits = 5)]
            fn plain(&self, tenant: &str) -> Result<u32, E>;
        }
    });
    assert!(!alone.contains("for_key") && !alone.contains("Keyed") && !alone.contains("__r4c_keys"), "{alone}");
    assert!(!alone.contains("max_keys") && !alone.contains("keyed_"), "{alone}");
}

#[test]
fn keys_are_looked_up_once_before_the_retry_in_nesting_order_each_with_its_own_expression() {
    let out = expand(quote! {
        pub trait Api {
            #[retry(max_attempts = 3)]
            #[rate_limiter(key = tenant)]
            #[circuit_breaker(key = req.host())]
            fn get(&self, tenant: &str, req: Request) -> Result<u32, E>;
        }
    });
    let breaker = at(&out, ":: resilience4cata :: __private :: KeyArg (req . host ())");
    at(&out, "KeyedCircuitBreakerPolicy :: for_key (& self . __r4c_circuit_breaker_get , __r4c_key_arg . key_arg ())");
    let limiter = at(&out, LOOKUP_RATE_LIMITER);
    let retry = at(&out, "let __r4c_retry = & self . __r4c_retry_get");
    assert!(breaker < limiter && limiter < retry, "{out}");
    assert_eq!(out.matches(":: for_key (").count(), 2, "{out}");
    at(&out, "match (* __r4c_key_circuit_breaker) . acquire ()");
    // The owned argument is cloned into each attempt after the key borrowed it.
    assert!(at(&out, "attempt_arg (& req)") > limiter, "{out}");
}

#[test]
fn under_a_fallback_the_lookup_s_refusal_is_an_error_the_fallback_sees() {
    let out = expand(quote! {
        pub trait Api {
            #[fallback(method = cached)]
            #[bulkhead(key = tenant)]
            fn get(&self, tenant: u64) -> Result<u32, E>;
            fn cached(&self, tenant: u64, ctx: FallbackContext<E>) -> Result<u32, E>;
        }
    });
    let attempts = at(&out, "let mut __r4c_attempts : u32 = 1 ;");
    let matched = at(&out, "match '__r4c_keys : {");
    let lookup = at(&out, "KeyedBulkheadPolicy :: for_key (& self . __r4c_bulkhead_get , __r4c_key_arg . key_arg ())");
    assert!(attempts < matched && matched < lookup, "{out}");
    at(&out, "match (* __r4c_key_bulkhead) . acquire ()");
}

#[test]
fn async_layers_and_a_hedge_s_attempts_use_the_hold_by_reference() {
    let out = expand(quote! {
        pub trait Api {
            #[hedge(delay = "10ms")]
            #[circuit_breaker(key = host)]
            #[timeout(duration = "1s")]
            #[bulkhead(key = (host, shard))]
            #[adaptive_limit(key = host)]
            async fn get(&self, host: &str, shard: u8) -> Result<u32, E>;
        }
    });
    let lookup = at(&out, "let __r4c_key_circuit_breaker = & * __r4c_hold_circuit_breaker ;");
    let hedge = at(&out, ". run (move ||");
    assert!(lookup < hedge, "{out}");
    at(&out, "KeyArg ((host , shard))");
    at(&out, "(* __r4c_key_circuit_breaker) . acquire ()");
    at(&out, "(* __r4c_key_adaptive_limit) . acquire_async () . await");
    for policy in ["circuit_breaker", "bulkhead", "adaptive_limit"] {
        at(&out, &format!(":: resilience4cata :: __private :: keyed_{policy} (registry"));
    }
    at(&out, ":: resilience4cata :: __private :: timeout (registry");
}

#[test]
fn a_keyed_bulkhead_inside_a_timeout_is_watched_on_its_key() {
    let out = expand(quote! {
        pub trait Api {
            #[timeout(duration = "1s")]
            #[bulkhead(key = tenant)]
            async fn get(&self, tenant: &str) -> Result<u32, E>;
        }
    });
    at(&out, "run_pinned_watched (__r4c_attempt , & __r4c_slot_watch , & (* __r4c_key_bulkhead))");
    at(&out, "(* __r4c_key_bulkhead) . acquire_async_watched (& __r4c_slot_watch) . await");
}
