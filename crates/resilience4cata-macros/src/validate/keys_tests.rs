//! `key`, `max_keys` and `key_metrics` (SPEC §15): where `key` may be written, and the values.

use proc_macro2::TokenStream;
use quote::quote;

use super::validate;
use crate::diag::Errors;
use crate::model::{Member, Value};
use crate::parse::parse_trait;

/// The messages of every error of `input`.
fn errors_of(input: TokenStream) -> Vec<String> {
    let mut errors = Errors::default();
    let parsed = parse_trait(TokenStream::new(), input, &mut errors).unwrap_or_else(|_| panic!("not a trait"));
    validate(parsed, &mut errors);
    errors.messages()
}

/// The single error of `input`, which must start with `[code]`.
#[track_caller]
fn single(input: TokenStream, code: &str) -> String {
    let errors = errors_of(input);
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert!(errors[0].starts_with(&format!("[{code}]")), "{errors:#?}");
    errors[0].clone()
}

#[test]
fn the_four_keyable_policies_take_a_key_and_its_limits() {
    let mut errors = Errors::default();
    let input = quote! {
        trait Api {
            #[rate_limiter(key = tenant, max_keys = 50, key_metrics = true)]
            #[circuit_breaker(key = req.host())]
            #[bulkhead(key = (user.id, region))]
            #[adaptive_limit(key = tenant)]
            fn get(&self, tenant: &str, req: &Req, user: User, region: u8) -> Result<u32, E>;
        }
    };
    let model = validate(
        parse_trait(TokenStream::new(), input, &mut errors).unwrap_or_else(|_| panic!("not a trait")),
        &mut errors,
    );
    assert!(errors.is_empty(), "{:?}", errors.messages());
    let Member::Method(method) = &model.members[0] else { panic!("a method") };
    let keys: Vec<String> = method
        .layers
        .iter()
        .map(|layer| match &layer.settings.get("key").expect("a key").value {
            Value::Expr(e) => quote!(#e).to_string(),
            _ => panic!("an expression"),
        })
        .collect();
    assert_eq!(keys, ["req . host ()", "tenant", "tenant", "(user . id , region)"]);
}

#[test]
fn key_on_a_policy_without_state_per_key_is_refused() {
    for attribute in [
        quote!(#[retry(key = tenant)]),
        quote!(#[timeout(duration = "1s", key = tenant)]),
        quote!(#[fallback(method = other, key = tenant)]),
    ] {
        let message = single(
            quote! {
                trait Api {
                    #attribute
                    async fn get(&self, tenant: &str) -> Result<u32, E>;
                    async fn other(&self, tenant: &str, ctx: FallbackContext<E>) -> Result<u32, E>;
                }
            },
            "R4C-ATR-070",
        );
        assert!(message.contains("only `#[rate_limiter]`, `#[circuit_breaker]`"), "{message}");
    }
    let hedged = quote! {
        trait Api {
            #[hedge(delay = "10ms", key = tenant)]
            async fn get(&self, tenant: &str) -> Result<u32, E>;
        }
    };
    single(hedged, "R4C-ATR-070");
}

#[test]
fn key_on_the_trait_is_refused_once_and_its_other_keys_still_apply() {
    let message = single(
        quote! {
            #[rate_limiter(key = tenant, max_keys = 5)]
            trait Api {
                fn a(&self, tenant: &str) -> Result<u32, E>;
                fn b(&self, tenant: &str) -> Result<u32, E>;
            }
        },
        "R4C-ATR-071",
    );
    assert!(message.contains("on a trait or impl block"), "{message}");
}

#[test]
fn max_keys_below_one_and_a_key_metrics_that_is_no_bool_are_coded() {
    let zero = quote! {
        trait Api {
            #[rate_limiter(key = tenant, max_keys = 0)]
            fn a(&self, tenant: &str) -> Result<u32, E>;
        }
    };
    assert!(single(zero, "R4C-ATR-072").contains("`max_keys` must be at least 1"));
    let not_bool = quote! {
        trait Api {
            #[bulkhead(key = tenant, key_metrics = 1)]
            fn a(&self, tenant: &str) -> Result<u32, E>;
        }
    };
    single(not_bool, "R4C-ATR-005");
}

#[test]
fn max_keys_and_key_metrics_may_be_set_on_the_trait_for_its_keyed_methods() {
    let input = quote! {
        #[circuit_breaker(max_keys = 100, key_metrics = false)]
        trait Api {
            #[circuit_breaker(key = host)]
            fn a(&self, host: &str) -> Result<u32, E>;
        }
    };
    assert!(errors_of(input).is_empty());
}
