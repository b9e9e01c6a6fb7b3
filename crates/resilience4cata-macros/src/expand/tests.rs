//! The expansion's shape on `proc_macro2` input (the behaviour is tested through the runtime in
//! `crates/resilience4cata/tests/expansion.rs`).

use proc_macro2::TokenStream;
use quote::quote;

use crate::diag::Errors;

fn expand(input: TokenStream) -> String {
    expand_with(TokenStream::new(), input)
}

fn expand_with(args: TokenStream, input: TokenStream) -> String {
    let mut errors = Errors::default();
    let parsed = crate::parse::parse_trait(args, input, &mut errors).unwrap_or_else(|_| panic!("not a trait"));
    let model = crate::validate::validate(parsed, &mut errors);
    assert!(errors.is_empty(), "{:?}", errors.messages());
    super::expand(&model).to_string()
}

/// `out` contains `expected`; the message shows the whole expansion.
#[track_caller]
fn assert_contains(out: &str, expected: &str) {
    assert!(out.contains(expected), "expected `{expected}` in: {out}");
}

#[test]
fn attributes_become_builder_calls_and_the_site() {
    let out = expand(quote! {
        pub trait Api {
            #[retry(max_attempts = 3, delay = "100ms", backoff = fixed, multiplier = 2, enabled = false, name = "n")]
            fn get(&self) -> Result<u32, E>;
        }
    });
    for expected in [
        "pub struct ResilientApi < D >",
        "__r4c_retry_get : :: resilience4cata :: __private :: RetryPolicy",
        ":: resilience4cata :: __private :: retry (registry",
        ":: core :: concat ! (:: core :: module_path ! () , \"::Api::get\")",
        "name : :: core :: option :: Option :: Some (\"n\")",
        "config : :: core :: option :: Option :: None",
        "is_async : false",
        ". max_attempts (3u32)",
        ". delay (:: resilience4cata :: __private :: nanos (100000000u64))",
        ". backoff (:: resilience4cata :: __private :: Backoff :: Fixed)",
        ". multiplier (2f64)",
        ". enabled (false)",
        "version_0_1_0 :: CHECK",
        "impl < D : Api > Api for ResilientApi < D >",
        ". retry_after_from (& mut __r4c_call , __r4c_failure , (& :: resilience4cata :: __private :: Probe (& __r4c_error)) . rejection ())",
    ] {
        assert!(out.contains(expected), "missing `{expected}` in\n{out}");
    }
    assert_eq!(out.matches("version_0_1_0").count(), 1);
}

#[test]
fn the_policy_attributes_are_stripped_from_the_re_emitted_trait() {
    let out = expand(quote!(
        #[retry]
        pub trait Api {
            #[retry(delay = "1s")]
            #[doc = "kept"]
            fn get(&self) -> Result<u32, E>;
        }
    ));
    assert!(!out.contains("# [retry"), "{out}");
    assert!(out.contains("# [doc = \"kept\"]"), "{out}");
}

#[test]
fn async_forms_await_and_send_futures_require_a_sync_delegate() {
    let out = expand(quote! {
        pub trait Api {
            #[retry] async fn a(&self) -> Result<u32, E>;
            #[retry] fn b(&self) -> impl Future<Output = Result<u32, E>> + Send;
        }
    });
    assert!(out.contains("is_async : true"), "{out}");
    assert_eq!(
        out.matches("wait_holding (__r4c_retry , & __r4c_call , __r4c_wait , __r4c_error) . await").count(),
        2,
        "{out}"
    );
    assert_eq!(out.matches("let __r4c_quick = __r4c_retry . retry_now_from").count(), 2, "{out}");
    assert!(out.contains("impl < D : Api + :: core :: marker :: Sync > Api"), "{out}");
    assert!(out.contains("async move"), "{out}");
}

#[test]
fn without_send_futures_the_delegate_needs_no_sync() {
    let out = expand_with(
        quote!(?Send),
        quote!(
            pub trait Api {
                #[retry]
                async fn a(&self) -> Result<u32, E>;
                fn b(&self) -> impl Future<Output = u32> + Send;
            }
        ),
    );
    assert!(out.contains("impl < D : Api > Api"), "{out}");
    let future = "fn a (& self) -> impl :: core :: future :: Future < Output = Result < u32 , E > >";
    assert_eq!(out.matches(&format!("{future} ;")).count(), 1, "{out}");
    assert_eq!(out.matches(&format!("{future} {{")).count(), 1, "{out}");
}

#[test]
fn async_fn_desugars_to_a_send_future_in_the_trait_and_the_impl() {
    let out = expand(quote!(
        pub trait Api {
            #[retry]
            async fn a(&self) -> Result<u32, E>;
            async fn b(&self, n: u32) {
                let _ = n;
            }
        }
    ));
    assert!(!out.contains("async fn"), "{out}");
    let a =
        "fn a (& self) -> impl :: core :: future :: Future < Output = Result < u32 , E > > + :: core :: marker :: Send";
    assert_eq!(out.matches(a).count(), 2, "trait and impl: {out}");
    let b = "fn b (& self , n : u32) -> impl :: core :: future :: Future < Output = () > + :: core :: marker :: Send";
    assert!(out.contains(&format!("{b} {{ async move {{ let _ = n ; }} }}")), "default body: {out}");
    assert!(out.contains(&format!("{b} {{ < D as Api > :: b (& self . delegate , n) }}")), "forwarded: {out}");
    assert!(out.contains("impl < D : Api + :: core :: marker :: Sync > Api"), "{out}");
}

#[test]
fn arguments_are_handed_to_each_attempt_by_kind() {
    let out = expand(quote!(
        pub trait Api {
            #[retry]
            fn a(&self, r: &str, m: &mut Vec<u8>, o: String) -> Result<u32, E>;
        }
    ));
    assert_contains(&out, "(& self . delegate , r , & mut * m , :: resilience4cata :: __private :: attempt_arg (& o))");
}

#[test]
fn patterns_and_predicates_decide_the_failure() {
    let out = expand(quote!(
        pub trait Api {
            #[retry(retry_on = E::A | E::B(_), abort_on_if = fatal)]
            fn a(&self) -> Result<u32, E>;
        }
    ));
    assert!(out.contains("is_call_not_permitted () || fatal (& __r4c_error) || ! (:: core :: matches ! (& __r4c_error , E :: A | E :: B (_)))"), "{out}");
    let plain = expand(quote!(
        pub trait Api {
            #[retry]
            fn a(&self) -> Result<u32, E>;
        }
    ));
    assert_contains(
        &plain,
        "is_call_not_permitted () { :: resilience4cata :: __private :: Failure :: not_retried ((& :: resilience4cata :: __private :: Probe (& __r4c_error)) . rejection ()) }",
    );
}

#[test]
fn the_delegate_parameter_is_renamed_when_the_trait_names_d() {
    let out = expand(quote!(
        pub trait Api {
            #[retry]
            fn a(&self) -> Result<D, E>;
        }
    ));
    assert!(out.contains("pub struct ResilientApi < Delegate >"), "{out}");
}

#[test]
fn layers_nest_in_the_fixed_order_whatever_order_they_are_written_in() {
    let out = expand(quote! {
        pub trait Api {
            #[bulkhead(max_concurrent_calls = 3)]
            #[timeout(duration = "1s")]
            #[rate_limiter(permits = 5)]
            #[retry]
            async fn get(&self) -> Result<u32, E>;
        }
    });
    let at = |needle: &str| out.find(needle).unwrap_or_else(|| panic!("missing `{needle}` in\n{out}"));
    let order = [
        at("let mut __r4c_call = __r4c_retry . start ()"),
        at("self . __r4c_rate_limiter_get . pass_now ()"),
        at("let __r4c_attempt = :: core :: pin :: pin ! (async"),
        at("self . __r4c_bulkhead_get . acquire_async_watched (& __r4c_slot_watch) . await"),
        at("< D as Api > :: get (& self . delegate ,) . await"),
    ];
    assert!(order.is_sorted(), "retry → rate limiter → timeout → bulkhead → method: {order:?}\n{out}");
    // The bulkhead inside the timeout tells it whether the attempt still waits for its slot
    // (SPEC §6): one watch, declared before the attempt that borrows it.
    let watch = at("let __r4c_slot_watch = :: resilience4cata :: __private :: SlotWatch :: new ()");
    assert!(watch < order[2], "{out}");
    at("run_pinned_watched (__r4c_attempt , & __r4c_slot_watch , & self . __r4c_bulkhead_get)");
    assert!(out.contains("require_resilience_error"), "the limits can refuse: {out}");
    for setter in [". permits (5u32)", ". duration (:: resilience4cata :: __private :: nanos (1000000000u64))"] {
        assert!(out.contains(setter), "missing `{setter}` in\n{out}");
    }
}

#[test]
fn sync_limits_neither_await_nor_box() {
    let out = expand(quote! {
        pub trait Api {
            #[rate_limiter]
            #[bulkhead(max_wait = "5ms")]
            fn get(&self) -> Result<u32, E>;
        }
    });
    assert!(out.contains("self . __r4c_rate_limiter_get . acquire ()"), "{out}");
    assert!(out.contains("self . __r4c_bulkhead_get . acquire ()"), "{out}");
    assert!(!out.contains("await") && !out.contains("Box"), "{out}");
}

#[test]
fn a_fallback_wraps_the_retry_and_calls_through_the_wrapper_with_the_attempt_count() {
    let out = expand(quote! {
        pub trait Api {
            #[retry(delay = "0")]
            #[fallback(method = cached, skip_on = E::Fatal)]
            fn get(&self, key: String) -> Result<u32, E>;
            fn cached(&self, key: String, ctx: FallbackContext<E>) -> Result<u32, E>;
        }
    });
    for expected in [
        "__r4c_fallback_get : :: resilience4cata :: __private :: FallbackPolicy",
        ":: resilience4cata :: __private :: fallback (registry , :: resilience4cata :: __private :: Site {",
        "let mut __r4c_attempts : u32 = 1 ;",
        "__r4c_attempts = __r4c_call . attempts () ;",
        "if true && ! (:: core :: matches ! (& __r4c_error , E :: Fatal))",
        "self . __r4c_fallback_get . apply (__r4c_error , __r4c_attempts)",
        "< Self as Api > :: cached (self , :: resilience4cata :: __private :: fallback_arg :: < String , _ > (key) ,",
        ":: resilience4cata :: __private :: attempt_arg (& key)",
    ] {
        assert!(out.contains(expected), "missing `{expected}` in\n{out}");
    }
    // The fallback layer is outside the retry's loop.
    assert!(out.find("let mut __r4c_attempts").unwrap() < out.find("let mut __r4c_call").unwrap());
}

#[test]
fn delay_from_decides_the_wait_of_an_error_before_any_await() {
    let out = expand(quote!(
        pub trait Api {
            #[retry(delay_from = crate::retry_after)]
            fn a(&self) -> Result<u32, E>;
            #[retry(delay_from = retry_after)]
            async fn b(&self) -> Result<u32, E>;
            #[retry(classifier = classify, delay_from = retry_after)]
            fn c(&self) -> Result<u32, E>;
        }
    ));
    // Through `__private::delay_from`, whose `DelayFrom` bound makes a wrong signature `[R4C-SIG-040]`.
    let hook = "| __r4c_attempt , __r4c_computed | :: resilience4cata :: __private :: delay_from (& __r4c_error , retry_after , __r4c_attempt , __r4c_computed)";
    assert!(out.contains(
        "__r4c_retry . retry_after_with (& mut __r4c_call , __r4c_failure , | __r4c_attempt , __r4c_computed | :: resilience4cata :: __private :: delay_from (& __r4c_error , crate :: retry_after , __r4c_attempt , __r4c_computed)"
    ), "{out}");
    assert!(out.contains(&format!("let __r4c_quick = false ; let __r4c_wait = if __r4c_quick {{ :: core :: option :: Option :: None }} else {{ __r4c_retry . decide_with (& mut __r4c_call , __r4c_failure , {hook}) }}")), "{out}");
    assert!(
        out.contains(
            "=> __r4c_retry . retry_after_from (& mut __r4c_call , __r4c_failure , :: core :: option :: Option :: None)"
        ),
        "classified Ok: {out}"
    );
    assert!(!out.contains("retry_now_from"), "no quick path past a hook: {out}");
}

#[test]
fn a_hedged_method_races_attempts_made_by_a_move_closure_over_references() {
    let out = expand(quote! {
        pub trait Api {
            #[hedge(delay = "50ms", max_hedged_attempts = 2)]
            #[circuit_breaker]
            async fn get(&self, key: String, page: &str) -> Result<u32, E>;
        }
    });
    for expected in [
        "__r4c_hedge_get : :: resilience4cata :: __private :: HedgePolicy",
        ":: resilience4cata :: __private :: hedge (registry",
        ". delay (:: resilience4cata :: __private :: nanos (50000000u64))",
        ". max_hedged_attempts (2u32)",
        "let key = & key ;",
        ". run (move || async move {",
        "attempt_arg (key)",
        "is_call_not_permitted ()",
    ] {
        assert!(out.contains(expected), "missing `{expected}` in\n{out}");
    }
    assert!(!out.contains("let page = & page"), "a reference argument is not rebound:\n{out}");
    let hedge = out.find(". run (move").unwrap();
    let breaker = out.find("__r4c_circuit_breaker_get . acquire").unwrap();
    assert!(hedge < breaker, "the breaker is inside each hedged attempt:\n{out}");
}

#[test]
fn a_hedge_under_a_fallback_counts_its_attempts_into_the_fallback_context() {
    let out = expand(quote! {
        pub trait Api {
            #[hedge(delay = "50ms")]
            #[fallback(method = cached)]
            async fn get(&self, key: String) -> Result<u32, E>;
            async fn cached(&self, key: String, ctx: FallbackContext<E>) -> Result<u32, E>;
        }
    });
    let counted = ". run_counting ({ __r4c_attempts = 0 ; & mut __r4c_attempts } , move || async move {";
    assert!(out.contains(counted), "missing `{counted}` in\n{out}");
    assert!(!out.contains(". run (move"), "a hedge under a fallback counts its attempts:\n{out}");
    // The counter is the fallback layer's, declared outside the race and read after it.
    let declared = out.find("let mut __r4c_attempts : u32 = 1 ;").unwrap();
    let race = out.find(". run_counting").unwrap();
    let read = out.find("self . __r4c_fallback_get . apply (__r4c_error , __r4c_attempts)").unwrap();
    assert!(declared < race && race < read, "{out}");
}

#[test]
fn a_timeout_watches_the_slot_wait_of_the_bulkhead_inside_it_unless_a_hedge_is_between() {
    let expanded = |order: proc_macro2::TokenStream| {
        expand(quote! {
            pub trait Api {
                #order
                #[hedge] #[timeout] #[bulkhead(max_wait = "1s")]
                async fn get(&self) -> Result<u32, E>;
            }
        })
    };
    // Default order: hedge → timeout → bulkhead, the bulkhead right inside the timeout.
    let default = expanded(quote!());
    assert!(default.contains("acquire_async_watched (& __r4c_slot_watch)"), "{default}");
    // The hedge's attempts run side by side between the two: no one attempt to watch.
    let hedged = expanded(quote!(#[policy_order(Timeout, Hedge)]));
    assert!(!hedged.contains("SlotWatch") && !hedged.contains("_watched"), "{hedged}");
    // The bulkhead outside the timeout: its wait is not under the deadline at all.
    let outside = expanded(quote!(#[policy_order(Bulkhead, Timeout)]));
    assert!(!outside.contains("SlotWatch") && !outside.contains("_watched"), "{outside}");
}

// `#[policy_order]` in the expansion (the judging of the attribute is tested in `crate::order`).

#[test]
fn the_default_order_expands_exactly_as_without_a_list() {
    let plain = expand(quote::quote! {
        pub trait Api {
            #[bulkhead] #[retry] #[circuit_breaker] #[rate_limiter]
            fn get(&self) -> Result<u32, E>;
        }
    });
    let spelled = expand(quote::quote! {
        #[policy_order(Fallback, Retry, Hedge, CircuitBreaker, RateLimiter, AdaptiveLimit, Timeout, Bulkhead)]
        pub trait Api {
            #[bulkhead] #[retry] #[circuit_breaker] #[rate_limiter]
            fn get(&self) -> Result<u32, E>;
        }
    });
    assert_eq!(plain, spelled);
}

#[test]
fn a_listed_policy_wraps_the_others_in_the_expansion() {
    let out = expand(quote::quote! {
        pub trait Api {
            #[policy_order(Bulkhead, Retry)]
            #[retry] #[circuit_breaker] #[bulkhead]
            fn get(&self) -> Result<u32, E>;
        }
    });
    let at = |needle: &str| out.find(needle).unwrap_or_else(|| panic!("{needle} in {out}"));
    let (bulkhead, retry, breaker) = (
        at("self . __r4c_bulkhead_get . acquire"),
        at("& self . __r4c_retry_get"),
        at("self . __r4c_circuit_breaker_get"),
    );
    assert!(bulkhead < retry && retry < breaker, "bulkhead → retry → breaker: {out}");
    assert!(!out.contains("Box"), "still unboxed");
}

/// Every permutation of `items`.
fn permutations(items: &[&'static str]) -> Vec<Vec<&'static str>> {
    if items.len() <= 1 {
        return vec![items.to_vec()];
    }
    let mut all = Vec::new();
    for (i, first) in items.iter().enumerate() {
        let mut rest = items.to_vec();
        rest.remove(i);
        for mut tail in permutations(&rest) {
            tail.insert(0, first);
            all.push(tail);
        }
    }
    all
}

#[test]
fn every_order_of_six_layers_expands_straight_line_in_the_listed_nesting() {
    // Where each layer starts in the async expansion, by the policy's order name.
    let starts = [
        ("Retry", "let mut __r4c_call = __r4c_retry . start ()"),
        ("CircuitBreaker", "self . __r4c_circuit_breaker_get . acquire ()"),
        ("RateLimiter", "self . __r4c_rate_limiter_get . pass_now ()"),
        ("AdaptiveLimit", "self . __r4c_adaptive_limit_get . acquire_async ()"),
        ("Timeout", "let __r4c_attempt = :: core :: pin :: pin ! (async"),
        // `acquire_async ()`, or `acquire_async_watched (…)` inside the timeout.
        ("Bulkhead", "self . __r4c_bulkhead_get . acquire_async"),
    ];
    let names: Vec<&'static str> = starts.iter().map(|(name, _)| *name).collect();
    let orders = permutations(&names);
    assert_eq!(orders.len(), 720);
    for order in orders {
        let listed: Vec<syn::Ident> = order.iter().map(|name| quote::format_ident!("{name}")).collect();
        let out = expand(quote::quote! {
            pub trait Api {
                #[policy_order(#(#listed),*)]
                #[retry] #[circuit_breaker] #[rate_limiter] #[adaptive_limit] #[timeout] #[bulkhead]
                async fn get(&self) -> Result<u32, E>;
            }
        });
        let at = |name: &str| {
            let (_, needle) = starts.iter().find(|(n, _)| *n == name).unwrap();
            assert_eq!(out.matches(needle).count(), 1, "{needle} once for {order:?}: {out}");
            out.find(needle).unwrap()
        };
        let positions: Vec<usize> = order.iter().map(|name| at(name)).collect();
        assert!(positions.is_sorted(), "{order:?} nests outermost first: {out}");
        // A timeout outside the bulkhead watches its slot wait (SPEC §6), and only then.
        let timeout_outside = at("Timeout") < at("Bulkhead");
        assert_eq!(out.contains("acquire_async_watched (& __r4c_slot_watch)"), timeout_outside, "{order:?}: {out}");
        assert_eq!(out.contains("run_pinned_watched"), timeout_outside, "{order:?}: {out}");
        for boxed in ["Box", "dyn", "Pin"] {
            assert!(!out.contains(boxed), "{order:?} expands without `{boxed}`: {out}");
        }
        assert_eq!(out.matches("loop").count(), 1, "{order:?}: one retry loop, no other: {out}");
    }
}
