//! `bundle!` at its definition, the callback `#[resilient]` emits for an unresolved bundle, and
//! the precedence once every bundle is resolved (the round-trip itself runs in
//! `crates/resilience4cata/tests/bundles.rs`).

use proc_macro2::TokenStream;
use quote::quote;

use syn::{ImplItem, ItemImpl, ItemTrait};

use super::*;
use crate::bundle::{inline_impl, inline_trait, pending};
use crate::model::{Member, Method, Value};
use crate::validate;

fn define_text(input: TokenStream) -> String {
    define(input, "src/lib.rs:1:1").to_string()
}

/// The `[R4C-…]` codes of the `compile_error!`s `bundle!` emits for `input`.
fn codes(input: TokenStream) -> Vec<String> {
    let text = define_text(input);
    text.match_indices("[R4C-").map(|(i, _)| text[i + 1..i + 12].to_owned()).collect()
}

/// The attributes the hidden macro hands back, as text.
fn content(input: TokenStream) -> String {
    let text = define_text(input);
    let start = text.find("__r4c_bundle ([$ ($ key) *]").expect("the resolved marker");
    let end = text[start..].find("$ ($ item) *").expect("the item") + start;
    text[start..end].to_owned()
}

#[test]
fn a_pub_bundle_is_exported_under_a_hidden_name_and_re_exported_under_its_own() {
    let text = define_text(quote! {
        /// Calls that must not be lost.
        pub critical = #[retry(max_attempts = 5)] #[circuit_breaker(window_size = 50)];
    });
    assert!(text.contains("# [macro_export] macro_rules ! __r4c_bundle_critical_"), "{text}");
    assert!(text.contains("pub use __r4c_bundle_critical_"), "{text}");
    assert!(text.contains("as critical ;"), "{text}");
    assert!(text.contains("Calls that must not be lost."), "the user's docs: {text}");
    assert!(
        text.contains("Policy attributes: `#[retry(max_attempts = 5)] #[circuit_breaker(window_size = 50)]`"),
        "{text}"
    );
    assert!(!text.contains("compile_error"), "{text}");
}

#[test]
fn a_narrower_bundle_is_not_exported_from_the_crate() {
    for vis in [quote!(pub(crate)), quote!()] {
        let text = define_text(quote!(#vis internal = #[retry];));
        assert!(!text.contains("macro_export"), "{text}");
        assert!(text.contains(&format!("{vis} use __r4c_bundle_internal_")), "{text}");
    }
}

#[test]
fn hidden_names_differ_by_site_and_by_name() {
    let name = |input: TokenStream, site: &str| {
        let text = define(input, site).to_string();
        let start = text.find("__r4c_bundle_").unwrap();
        text[start..].split_whitespace().next().unwrap().to_owned()
    };
    let here = name(quote!(pub a = #[retry];), "src/a.rs:3:1");
    assert_eq!(here, name(quote!(pub a = #[retry];), "src/a.rs:3:1"), "stable for one site");
    assert_ne!(here, name(quote!(pub a = #[retry];), "src/b.rs:3:1"));
    assert_ne!(here, name(quote!(pub b = #[retry];), "src/a.rs:3:1"));
}

#[test]
fn several_entries_make_several_bundles() {
    let text = define_text(quote! {
        pub a = #[retry];
        pub(crate) b = #[timeout(duration = "1s")];
    });
    assert_eq!(text.matches("macro_rules !").count(), 2, "{text}");
    assert!(text.contains("as a ;") && text.contains("as b ;"), "{text}");
}

#[test]
fn policy_order_in_a_bundle_is_refused() {
    assert_eq!(codes(quote!(pub b = #[retry] #[policy_order(Timeout, Retry)];)), ["R4C-ATR-062"]);
    assert!(!content(quote!(pub b = #[retry] #[policy_order(Timeout, Retry)];)).contains("policy_order"));
}

#[test]
fn an_attribute_that_is_not_a_policy_is_refused() {
    assert_eq!(codes(quote!(pub b = #[retry] #[inline];)), ["R4C-ATR-080"]);
    let nested = define_text(quote!(pub b = #[bundle(other)];));
    assert!(nested.contains("R4C-ATR-080") && nested.contains("bundles do not nest"), "{nested}");
}

#[test]
fn a_bad_value_is_reported_at_the_bundle_with_its_code_and_left_out() {
    let input = quote!(pub b = #[retry(max_attempts = 0)] #[circuit_breaker(window_size = 5)];);
    assert_eq!(codes(input.clone()), ["R4C-ATR-003"]);
    let kept = content(input);
    assert!(!kept.contains("retry") && kept.contains("circuit_breaker"), "{kept}");
    assert_eq!(codes(quote!(pub b = #[retry(max_atempts = 2)];)), ["R4C-ATR-002"]);
    assert_eq!(codes(quote!(pub b = #[retry(delay = "soon")];)), ["R4C-ATR-001"]);
}

#[test]
fn a_key_in_a_bundle_is_refused_and_left_out() {
    let input = quote!(pub b = #[rate_limiter(key = tenant, permits = 5)] #[bulkhead(max_keys = 10)];);
    assert_eq!(codes(input.clone()), ["R4C-ATR-071"]);
    let kept = content(input);
    assert!(!kept.contains("rate_limiter") && kept.contains("max_keys = 10"), "{kept}");
}

#[test]
fn a_policy_twice_in_one_bundle_is_refused() {
    assert_eq!(codes(quote!(pub b = #[retry] #[retry(max_attempts = 2)];)), ["R4C-ATR-008"]);
}

#[test]
fn a_malformed_entry_is_refused() {
    assert_eq!(codes(quote!(pub b #[retry];)), ["R4C-ATR-082"]);
    assert_eq!(codes(quote!(pub b = #[retry])), ["R4C-ATR-082"], "no `;`");
    let empty = define_text(quote!(pub b = ;));
    assert!(empty.contains("R4C-ATR-082") && empty.contains("holds no attribute"), "{empty}");
}

#[test]
fn a_malformed_entry_still_defines_its_bundle_and_the_next_entries() {
    let text = define_text(quote! {
        pub broken #[retry];
        pub fine = #[timeout(duration = "1s")];
    });
    assert_eq!(text.matches("R4C-ATR-082").count(), 1, "{text}");
    assert!(text.contains("as broken ;"), "defined empty, so its uses add no error: {text}");
    assert!(text.contains("as fine ;"), "{text}");
    let unnamed = define_text(quote!(= #[retry]; pub fine = #[retry];));
    assert!(unnamed.contains("R4C-ATR-082") && unnamed.contains("as fine ;"), "{unnamed}");
}

#[test]
fn an_unresolved_bundle_calls_back_through_its_macro() {
    let input = quote! {
        #[bundle(crate::policies::critical)]
        trait Api { fn a(&self) -> Result<u32, E>; }
    };
    let callback = pending(&quote!(?Send), &input).expect("a callback").to_string();
    assert!(
        callback.starts_with("crate :: policies :: critical ! { @ __r4c_apply [crate :: policies :: critical]"),
        "{callback}"
    );
    assert!(callback.contains("[# [:: resilience4cata :: resilient (? Send)]]"), "{callback}");
    assert!(callback.ends_with(&format!("{input} }}")), "the item, unchanged: {callback}");
}

#[test]
fn bundles_resolve_one_path_at_a_time_in_source_order() {
    let first = quote! {
        trait Api {
            #[bundle(a)] #[bundle(b)] fn x(&self) -> Result<u32, E>;
            #[bundle(a)] fn y(&self) -> Result<u32, E>;
        }
    };
    let callback = pending(&TokenStream::new(), &first).unwrap().to_string();
    assert!(callback.starts_with("a ! { @ __r4c_apply [a] [# [:: resilience4cata :: resilient]]"), "{callback}");
    let second = quote!(#[__r4c_bundle([a] #[retry])] #first);
    assert!(pending(&TokenStream::new(), &second).unwrap().to_string().starts_with("b !"));
    let done = quote!(#[__r4c_bundle([b] #[timeout])] #second);
    assert!(pending(&TokenStream::new(), &done).is_none());
}

#[test]
fn impl_blocks_and_their_methods_call_back_too() {
    let input = quote! {
        impl Client {
            #[bundle(critical)]
            fn get(&self) -> Result<u32, E> { Ok(1) }
        }
    };
    assert!(pending(&TokenStream::new(), &input).unwrap().to_string().starts_with("critical !"));
    let mut item: ItemImpl = syn::parse2(quote!(#[__r4c_bundle([critical] #[retry])] #input)).unwrap();
    let mut errors = Errors::default();
    inline_impl(&mut item, &mut errors);
    assert!(errors.is_empty() && item.attrs.is_empty());
    let ImplItem::Fn(get) = &item.items[0] else { panic!("a method") };
    assert!(get.attrs[0].path().is_ident(crate::bundle::INLINED));
    let taken = crate::parse::take_attributes(&mut get.attrs.clone(), &mut errors);
    assert_eq!(taken.iter().map(|p| (p.spec.name, p.bundle)).collect::<Vec<_>>(), [("retry", Some(1))]);
}

#[test]
fn a_malformed_or_misplaced_use_is_reported() {
    let errors_of = |input: TokenStream| {
        let mut item: ItemTrait = syn::parse2(input).unwrap();
        let mut errors = Errors::default();
        inline_trait(&mut item, &mut errors);
        errors.messages()
    };
    for malformed in [quote!(#[bundle]), quote!(#[bundle = critical]), quote!(#[bundle(a, b)]), quote!(#[bundle("a")])]
    {
        let errors = errors_of(quote!(trait Api { #malformed fn a(&self) -> Result<u32, E>; }));
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].starts_with("[R4C-ATR-081]"), "{errors:?}");
    }
    let errors = errors_of(quote!(
        #[__r4c_bundle([a] #[retry])]
        trait Api {
            #[bundle(a)]
            const N: u32;
        }
    ));
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].starts_with("[R4C-ATR-010]"), "{errors:?}");
}

// ---------------------------------------------------------------- precedence, once resolved

/// The retry settings of method `name` as `(key, value)` text, after parse → validate.
fn retry_of(input: TokenStream, name: &str) -> Vec<(String, String)> {
    let mut errors = Errors::default();
    let parsed =
        crate::parse::parse_trait(TokenStream::new(), input, &mut errors).unwrap_or_else(|_| panic!("a trait"));
    let model = validate::validate(parsed, &mut errors);
    assert!(errors.is_empty(), "{:?}", errors.messages());
    let method: &Method = model
        .members
        .iter()
        .find_map(|m| match m {
            Member::Method(m) if m.item.sig.ident == name => Some(&**m),
            _ => None,
        })
        .expect("the method");
    let retry = method.layers.iter().find(|p| p.spec.name == "retry").expect("a retry");
    let mut settings: Vec<_> = retry.settings.iter().map(|s| (s.key.name.to_owned(), shown(&s.value))).collect();
    settings.sort();
    settings
}

fn shown(value: &Value) -> String {
    match value {
        Value::Count(n) => n.to_string(),
        Value::Duration(nanos) => format!("{}ms", nanos / 1_000_000),
        _ => "other".to_owned(),
    }
}

/// Method `name` of `item` retries with `delay` and `attempts` (and the `low` bundle's `max_delay`,
/// which no other place writes).
fn expect_retry(item: &TokenStream, name: &str, delay: &str, attempts: &str) {
    let expected = [("delay", delay), ("max_attempts", attempts), ("max_delay", "10000ms")];
    let expected: Vec<_> = expected.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
    assert_eq!(retry_of(item.clone(), name), expected, "{name}");
}

/// Bundles `low` (2 attempts, 10 ms, 10 s total) and `high` (3 attempts, 20 ms), resolved.
fn resolved(item: TokenStream) -> TokenStream {
    quote! {
        #[__r4c_bundle([low] #[retry(max_attempts = 2, delay = "10ms", max_delay = "10s")])]
        #[__r4c_bundle([high] #[retry(max_attempts = 3, delay = "20ms")])]
        #item
    }
}

#[test]
fn precedence_type_bundles_below_type_attributes_below_method_bundles_below_method_attributes() {
    let item = resolved(quote! {
        #[bundle(low)]
        #[retry(max_attempts = 4)]
        trait Api {
            fn type_level(&self) -> Result<u32, E>;
            #[bundle(high)]
            fn method_bundle(&self) -> Result<u32, E>;
            #[bundle(high)]
            #[retry(delay = "50ms")]
            fn method_attribute(&self) -> Result<u32, E>;
        }
    });
    expect_retry(&item, "type_level", "10ms", "4");
    expect_retry(&item, "method_bundle", "20ms", "3");
    expect_retry(&item, "method_attribute", "50ms", "3");
}

#[test]
fn of_two_bundles_in_one_place_the_later_wins_key_by_key() {
    let item = resolved(quote! {
        trait Api {
            #[bundle(low)] #[bundle(high)]
            fn high_last(&self) -> Result<u32, E>;
            #[bundle(high)] #[bundle(low)]
            fn low_last(&self) -> Result<u32, E>;
        }
    });
    expect_retry(&item, "high_last", "20ms", "3");
    expect_retry(&item, "low_last", "10ms", "2");
}

#[test]
fn a_bundle_and_an_attribute_of_one_policy_at_one_level_are_no_duplicate() {
    let item = resolved(quote! {
        trait Api {
            #[retry(max_attempts = 9)] #[bundle(low)]
            fn a(&self) -> Result<u32, E>;
        }
    });
    expect_retry(&item, "a", "10ms", "9");
}

/// The expansion of a trait, as text.
fn expanded(input: TokenStream) -> String {
    let mut errors = Errors::default();
    let parsed =
        crate::parse::parse_trait(TokenStream::new(), input, &mut errors).unwrap_or_else(|_| panic!("a trait"));
    let model = validate::validate(parsed, &mut errors);
    assert!(errors.is_empty(), "{:?}", errors.messages());
    crate::expand::expand(&model).to_string()
}

#[test]
fn a_bundle_expands_to_exactly_the_code_of_its_attributes_written_in_place() {
    let bundled = expanded(quote! {
        #[__r4c_bundle([critical] #[retry(max_attempts = 5, delay = "100ms")] #[circuit_breaker(window_size = 50)])]
        trait Payments {
            #[bundle(critical)]
            #[retry(max_attempts = 2)]
            fn charge(&self, cents: u64) -> Result<u64, E>;
        }
    });
    let written = expanded(quote! {
        trait Payments {
            #[retry(delay = "100ms", max_attempts = 2)]
            #[circuit_breaker(window_size = 50)]
            fn charge(&self, cents: u64) -> Result<u64, E>;
        }
    });
    assert_eq!(bundled, written);
}

#[test]
fn a_preset_may_carry_one_order_and_a_bundle_still_may_not() {
    let preset = quote!(#[__r4c_preset] pub p = #[policy_order(Timeout, Retry)] #[retry] #[timeout];);
    assert_eq!(codes(preset.clone()), Vec::<String>::new());
    let text = define_text(preset.clone());
    assert!(!text.contains("__r4c_preset"), "the marker is taken off: {text}");
    assert!(content(preset).contains("# [policy_order (Timeout , Retry)]"), "the order travels in the content");
    assert_eq!(codes(quote!(pub b = #[retry] #[policy_order(Timeout, Retry)];)), ["R4C-ATR-062"]);
    let twice = quote!(#[__r4c_preset] pub p = #[policy_order(Retry)] #[retry] #[policy_order(Timeout)];);
    assert_eq!(codes(twice), ["R4C-ATR-008"]);
    assert_eq!(codes(quote!(#[__r4c_preset] pub p = #[retry] #[policy_order(Retry, Retry)];)), ["R4C-ATR-060"]);
}

#[test]
fn a_presets_order_applies_where_none_is_written_and_a_written_order_replaces_it() {
    let preset = |method: TokenStream| {
        expanded(quote! {
            #[__r4c_bundle([p] #[policy_order(Timeout, Retry)] #[retry(max_attempts = 2)] #[timeout(duration = "1s")])]
            trait Search {
                #[bundle(p)]
                #method
                async fn query(&self) -> Result<u64, E>;
            }
        })
    };
    let written = |order: TokenStream| {
        expanded(quote! {
            trait Search {
                #order
                #[retry(max_attempts = 2)]
                #[timeout(duration = "1s")]
                async fn query(&self) -> Result<u64, E>;
            }
        })
    };
    let carried = preset(quote!());
    assert_eq!(carried, written(quote!(#[policy_order(Timeout, Retry)])));
    assert_ne!(carried, written(quote!()), "the order changes the expansion");
    assert_eq!(preset(quote!(#[policy_order()])), written(quote!()), "a written order replaces the preset's");
    // On the trait, the preset's order serves the method; the method's own order replaces it.
    let on_trait = |method: TokenStream| {
        expanded(quote! {
            #[__r4c_bundle([p] #[policy_order(Timeout, Retry)] #[retry(max_attempts = 2)] #[timeout(duration = "1s")])]
            #[bundle(p)]
            trait Search {
                #method
                async fn query(&self) -> Result<u64, E>;
            }
        })
    };
    assert_eq!(on_trait(quote!()), carried);
    assert_eq!(on_trait(quote!(#[policy_order()])), written(quote!()));
}
