//! Parse → validate on `proc_macro2` input: merging, value judging, combinations, signatures.

use proc_macro2::TokenStream;
use quote::quote;

use super::*;
use crate::diag::Errors;
use crate::model::*;
use crate::parse::parse_trait;

fn run(input: TokenStream) -> (Model, Vec<String>) {
    let mut errors = Errors::default();
    let parsed = parse_trait(TokenStream::new(), input, &mut errors).unwrap_or_else(|_| panic!("not a trait"));
    let model = validate(parsed, &mut errors);
    (model, errors.messages())
}

fn errors_of(input: TokenStream) -> Vec<String> {
    run(input).1
}

/// The single error of `input`, which must start with `[code]`.
fn single(input: TokenStream, code: &str) -> String {
    let errors = errors_of(input);
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert!(errors[0].starts_with(&format!("[{code}]")), "{errors:#?}");
    errors[0].clone()
}

fn method<'m>(model: &'m Model, name: &str) -> &'m Method {
    model
        .members
        .iter()
        .find_map(|m| match m {
            Member::Method(m) if m.item.sig.ident == name => Some(&**m),
            _ => None,
        })
        .expect("method")
}

fn retry_keys(method: &Method) -> Vec<(String, Origin)> {
    method.layers[0].settings.iter().map(|s| (s.key.name.to_owned(), s.origin)).collect()
}

#[test]
fn trait_level_keys_merge_below_method_keys() {
    let (model, errors) = run(quote! {
        #[retry(max_attempts = 2, delay = "100ms")]
        trait Api {
            #[retry(max_attempts = 4, jitter = none)]
            fn a(&self) -> Result<u32, E>;
            fn b(&self) -> Result<u32, E>;
        }
    });
    assert!(errors.is_empty(), "{errors:?}");
    let a = method(&model, "a");
    assert_eq!(
        retry_keys(a),
        [("delay".into(), Origin::Trait), ("max_attempts".into(), Origin::Method), ("jitter".into(), Origin::Method)]
    );
    assert!(matches!(a.layers[0].settings.get("max_attempts").unwrap().value, Value::Count(4)));
    assert!(matches!(a.layers[0].settings.get("jitter").unwrap().value, Value::Enum("None")));
    assert_eq!(retry_keys(method(&model, "b")).len(), 2);
    assert_eq!(model.wrapper, "ResilientApi");
}

#[test]
fn methods_without_policies_are_forwarded_and_not_checked() {
    let (model, errors) = run(quote! {
        trait Api {
            fn name() -> String;
            fn owned(self) -> u32;
            #[retry]
            fn get(&self) -> Result<u32, E>;
        }
    });
    assert!(errors.is_empty(), "{errors:?}");
    assert!(method(&model, "name").layers.is_empty());
    assert_eq!(method(&model, "owned").receiver, Receiver::Value);
    assert_eq!(method(&model, "get").layers.len(), 1);
}

#[test]
fn values_are_judged_against_the_key_table() {
    let cases = [
        (quote!(max_attempts = 0), "R4C-ATR-003"),
        (quote!(multiplier = 0.5), "R4C-ATR-004"),
        (quote!(budget_percent = -5), "R4C-ATR-007"),
        (quote!(budget_percent = 1001), "R4C-ATR-007"),
        (quote!(budget_min_retries_per_second = -1), "R4C-ATR-007"),
        (quote!(budget_window = "0"), "R4C-ATR-007"),
        (quote!(budget_window = "999ms"), "R4C-ATR-007"),
        (quote!(delay = "1µs"), "R4C-ATR-001"),
        (quote!(delay = "€5s"), "R4C-ATR-001"),
        (quote!(delay = "PT340282366920938463463374607431.9S"), "R4C-ATR-001"),
        (quote!(delay = "10 parsecs"), "R4C-ATR-001"),
        (quote!(delay = 100ms), "R4C-ATR-001"),
        (quote!(enabled = "no"), "R4C-ATR-006"),
        (quote!(backoff = Linear), "R4C-ATR-005"),
        (quote!(max_attempts = "3"), "R4C-ATR-005"),
        (quote!(name = 3), "R4C-ATR-005"),
        (quote!(classifier = "f"), "R4C-ATR-005"),
    ];
    for (entry, code) in cases {
        single(
            quote!(
                trait Api {
                    #[retry(#entry)]
                    fn get(&self) -> Result<u32, E>;
                }
            ),
            code,
        );
    }
}

#[test]
fn accepted_values_take_every_documented_spelling() {
    let (model, errors) = run(quote! {
        trait Api {
            #[retry(backoff = resilience4cata::Backoff::FIXED, jitter = Jitter::equal, multiplier = 2,
                    budget_percent = 20.5, max_duration = "PT2S", delay = "1m30s", enabled = false,
                    retry_on = | E::A | E::B(_), name = "n", config = "c")]
            fn get(&self) -> Result<u32, E>;
        }
    });
    assert!(errors.is_empty(), "{errors:?}");
    let settings = &method(&model, "get").layers[0].settings;
    assert!(matches!(settings.get("backoff").unwrap().value, Value::Enum("Fixed")));
    assert!(matches!(settings.get("multiplier").unwrap().value, Value::Number(n) if n == 2.0));
    assert!(matches!(settings.get("max_duration").unwrap().value, Value::Duration(2_000_000_000)));
    assert!(matches!(settings.get("delay").unwrap().value, Value::Duration(90_000_000_000)));
}

#[test]
fn unknown_key_lists_valid_keys_and_the_closest() {
    let unknown = |key: TokenStream| {
        single(
            quote!(
                trait Api {
                    #[retry(#key = 3)]
                    fn get(&self) -> Result<u32, E>;
                }
            ),
            "R4C-ATR-002",
        )
    };
    let message = unknown(quote!(max_atempts));
    assert!(message.contains("did you mean `max_attempts`?"), "{message}");
    assert!(message.contains("budget_min_retries_per_second"), "{message}");
    let message = unknown(quote!(colour));
    assert!(!message.contains("did you mean"), "{message}");
}

#[test]
fn duplicates_are_reported_once_each() {
    let message = single(
        quote!(
            trait Api {
                #[retry(delay = "1s", delay = "2s")]
                fn get(&self) -> Result<u32, E>;
            }
        ),
        "R4C-ATR-008",
    );
    assert!(message.contains("`delay` set multiple times"), "{message}");
    single(
        quote!(
            trait Api {
                #[retry]
                #[retry(delay = "1s")]
                fn get(&self) -> Result<u32, E>;
            }
        ),
        "R4C-ATR-008",
    );
}

#[test]
fn syntax_mistakes_carry_the_syntax_code() {
    single(
        quote!(
            trait Api {
                #[retry(max_attempts)]
                fn get(&self) -> Result<u32, E>;
            }
        ),
        "R4C-ATR-009",
    );
    single(
        quote!(
            trait Api {
                #[retry(max_attempts = 3 4)]
                fn get(&self) -> Result<u32, E>;
            }
        ),
        "R4C-ATR-009",
    );
    single(
        quote!(
            trait Api {
                #[retry = 3]
                fn get(&self) -> Result<u32, E>;
            }
        ),
        "R4C-ATR-009",
    );
    single(
        quote!(
            trait Api {
                #[retry]
                type T;
            }
        ),
        "R4C-ATR-010",
    );
}

#[test]
fn classifier_combinations_are_checked_after_the_merge() {
    // A trait-level conflict is reported once, not once per method.
    let errors = errors_of(quote! {
        #[retry(classifier = c, retry_on = E::A)]
        trait Api {
            fn a(&self) -> Result<u32, E>;
            fn b(&self) -> Result<u32, E>;
        }
    });
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].starts_with("[R4C-CLF-001]"));
    // A method's own key against the trait's: reported on the method's key.
    single(
        quote!(
            #[retry(classifier = c)]
            trait Api {
                #[retry(abort_on_if = f)]
                fn a(&self) -> Result<u32, E>;
            }
        ),
        "R4C-CLF-001",
    );
    single(
        quote!(
            trait Api {
                #[retry(on_exhausted_result = f)]
                fn a(&self) -> Result<u32, E>;
            }
        ),
        "R4C-CLF-002",
    );
    // The merge supplies the classifier: no error.
    assert!(
        errors_of(quote!(
            #[retry(on_exhausted_result = f)]
            trait Api {
                #[retry(classifier = c)]
                fn a(&self) -> Result<u32, E>;
            }
        ))
        .is_empty()
    );
}

#[test]
fn protected_signatures_are_checked() {
    let cases = [
        (
            quote!(
                fn get(&mut self) -> Result<u32, E>;
            ),
            "R4C-SIG-001",
        ),
        (
            quote!(
                fn get() -> Result<u32, E>;
            ),
            "R4C-SIG-001",
        ),
        (
            quote!(
                fn get<T>(&self, t: T) -> Result<u32, E>;
            ),
            "R4C-SIG-003",
        ),
        (
            quote!(
                fn get(&self, t: impl AsRef<str>) -> Result<u32, E>;
            ),
            "R4C-SIG-003",
        ),
        (
            quote!(
                fn get(&self);
            ),
            "R4C-SIG-002",
        ),
        (
            quote!(
                fn get(&self) -> impl Future;
            ),
            "R4C-SIG-006",
        ),
        (
            quote!(
                fn get(&self) -> impl Iterator<Item = u32>;
            ),
            "R4C-SIG-005",
        ),
        (
            quote!(
                fn get(&self) -> Pin<Box<dyn Future<Output = Result<u32, E>>>>;
            ),
            "R4C-SIG-005",
        ),
        (
            quote!(
                fn get(&self) -> impl Future<Output = Result<u32, E>> + Unpin;
            ),
            "R4C-SIG-005",
        ),
    ];
    for (sig, code) in cases {
        single(quote!(trait Api { #[retry] #sig }), code);
    }
}

#[test]
fn signature_forms_are_recognised() {
    let (model, errors) = run(quote! {
        trait Api {
            #[retry] fn a<'a>(&'a self, s: &'a str) -> io::Result<u32>;
            #[retry] async fn b(&self) -> Result<u32, E>;
            #[retry] fn c(&self) -> impl Future<Output = Result<u32, E>> + Send + '_;
            #[retry] fn d(&self, (x, y): (u32, u32)) -> impl core::future::Future<Output = Result<u32, E>>;
        }
    });
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(method(&model, "a").form, Form::Sync);
    assert_eq!(method(&model, "b").form, Form::AsyncFn);
    assert_eq!(method(&model, "c").form, Form::ImplFuture { send: true });
    let d = method(&model, "d");
    assert_eq!(d.form, Form::ImplFuture { send: false });
    assert_eq!(d.args[0].ident, "__r4c_arg0");
}

#[test]
fn trait_shapes_are_checked() {
    assert!(
        errors_of(quote!(
            trait Api: Send + Sync + 'static
            where
                Self: Unpin,
            {
            }
        ))
        .is_empty()
    );
    single(
        quote!(
            trait Api: Clone {}
        ),
        "R4C-SIG-004",
    );
    single(
        quote!(
            trait Api
            where
                Self: Clone,
            {
            }
        ),
        "R4C-SIG-004",
    );
    single(
        quote!(
            trait Api<T> {}
        ),
        "R4C-SIG-008",
    );
    single(
        quote!(
            unsafe trait Api {}
        ),
        "R4C-SIG-008",
    );
    single(
        quote!(
            trait Api {
                fn same(&self, other: &Self) -> bool;
            }
        ),
        "R4C-SIG-009",
    );
    single(
        quote!(
            trait Api {
                fn boxed(self: Box<Self>) -> u32;
            }
        ),
        "R4C-SIG-009",
    );
    assert!(
        errors_of(quote!(
            trait Api {
                type T;
                fn get(&self) -> Self::T;
                fn cast(&self) -> <Self as Api>::T;
            }
        ))
        .is_empty()
    );
}

#[test]
fn the_delegate_parameter_avoids_a_user_type_named_d() {
    assert_eq!(
        run(quote!(
            trait Api {}
        ))
        .0
        .delegate,
        "D"
    );
    assert_eq!(
        run(quote!(
            trait Api {
                fn get(&self) -> D;
            }
        ))
        .0
        .delegate,
        "Delegate"
    );
}

#[test]
fn limit_values_carry_their_own_codes() {
    let cases = [
        (quote!(#[rate_limiter(permits = 0)]), "R4C-ATR-030"),
        (quote!(#[rate_limiter(permits = 5000000000)]), "R4C-ATR-030"),
        (quote!(#[rate_limiter(period = "0")]), "R4C-ATR-031"),
        (quote!(#[rate_limiter(max_wait = "soon")]), "R4C-ATR-001"),
        (quote!(#[bulkhead(max_concurrent_calls = 0)]), "R4C-ATR-032"),
        (quote!(#[bulkhead(max_concurrent_calls = "8")]), "R4C-ATR-005"),
        (quote!(#[timeout(duration = "0")]), "R4C-ATR-033"),
        (quote!(#[timeout(enabled = 1)]), "R4C-ATR-006"),
        (quote!(#[timeout(name = "t")]), "R4C-ATR-002"),
    ];
    for (attr, code) in cases {
        single(quote!(pub trait Api { #attr async fn get(&self) -> Result<u32, E>; }), code);
    }
}

#[test]
fn timeout_needs_an_async_method_and_a_trait_level_one_is_reported_once() {
    let message = single(
        quote!(
            pub trait Api {
                #[timeout]
                fn get(&self) -> Result<u32, E>;
            }
        ),
        "R4C-SIG-020",
    );
    assert!(message.contains("`get` is sync") && message.contains("cannot be cancelled"), "{message}");
    let trait_level = quote! {
        #[timeout(duration = "1s")]
        pub trait Api {
            async fn ok(&self) -> Result<u32, E>;
            fn first(&self) -> Result<u32, E>;
            fn second(&self) -> Result<u32, E>;
        }
    };
    assert!(single(trait_level, "R4C-SIG-020").contains("`first`"));
    let overridden = quote! {
        #[timeout(duration = "1s")]
        pub trait Api {
            fn get(&self) -> Result<u32, E>;
            #[timeout(duration = "2s")]
            fn put(&self) -> Result<u32, E>;
        }
    };
    assert_eq!(errors_of(overridden).len(), 2, "the method's own attribute is reported on its own");
}

#[test]
fn a_circle_of_fallbacks_is_one_error_on_its_first_method() {
    let message = single(
        quote! {
            trait Api {
                fn plain(&self) -> Result<u32, E>;
                #[fallback(method = b)]
                fn a(&self) -> Result<u32, E>;
                #[fallback(method = c)]
                fn b(&self, x: FallbackContext<E>) -> Result<u32, E>;
                #[fallback(method = a)]
                fn c(&self, x: FallbackContext<E>, y: FallbackContext<E>) -> Result<u32, E>;
            }
        },
        "R4C-SIG-032",
    );
    assert!(message.contains("`a → b → c → a`"), "{message}");
}

#[test]
fn a_fallback_chain_that_ends_resolves_every_target() {
    let (model, errors) = run(quote! {
        trait Api {
            #[retry]
            #[fallback(method = b, skip_on = E::Fatal)]
            fn a(&self, key: &'a str) -> Result<u32, E>;
            #[fallback(method = c)]
            fn b(&self, key: &'b str, x: FallbackContext<E>) -> Result<u32, E>;
            fn c(&self, key: &str, x: FallbackContext<E>, y: FallbackContext<E>) -> Result<u32, E>;
        }
    });
    assert!(errors.is_empty(), "{errors:?}");
    let a = method(&model, "a");
    assert_eq!(a.layers.iter().map(|p| p.spec.name).collect::<Vec<_>>(), ["fallback", "retry"]);
    let target = a.fallback.as_ref().expect("resolved");
    assert_eq!(target.ident, "b");
    assert_eq!(target.params[0].to_token_stream().to_string(), "& '_ str", "lifetimes are erased");
    assert!(method(&model, "b").fallback.is_some());
    assert!(method(&model, "c").fallback.is_none());
}

#[test]
fn a_fallback_named_by_path_or_missing_is_sig_030() {
    let message = single(
        quote! {
            trait Api {
                #[fallback(method = other::b)]
                fn a(&self) -> Result<u32, E>;
            }
        },
        "R4C-SIG-030",
    );
    assert!(message.contains("by its name alone"), "{message}");
    let message = single(
        quote! {
            trait Api {
                #[fallback(method = bb)]
                fn a(&self) -> Result<u32, E>;
                fn b(&self, x: FallbackContext<E>) -> Result<u32, E>;
            }
        },
        "R4C-SIG-030",
    );
    assert!(message.contains("did you mean `b`?"), "{message}");
    assert!(message.contains("a fallback must be a method of the same trait"), "{message}");
    assert!(message.contains("(the trait's other methods: `b`)"), "{message}");
}

#[test]
fn a_fallback_with_another_receiver_or_type_parameters_is_sig_031() {
    for input in [
        quote! { trait Api { #[fallback(method = b)] fn a(&self) -> Result<u32, E>; fn b(&mut self, x: FallbackContext<E>) -> Result<u32, E>; } },
        quote! { trait Api { #[fallback(method = b)] fn a(&self) -> Result<u32, E>; fn b<T>(&self, x: FallbackContext<E>) -> Result<u32, E>; } },
        quote! { trait Api { #[fallback(method = b)] fn a(&self) -> Result<u32, E>; fn b(&self, x: E) -> Result<u32, E>; } },
        quote! { trait Api { #[fallback(method = b)] fn a(&self) -> Result<u32, E>; fn b(&self, x: FallbackContext<E>); } },
    ] {
        single(input, "R4C-SIG-031");
    }
}
