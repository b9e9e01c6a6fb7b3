//! The retry layer: a `loop` around the inner layers that asks the policy only after a failure.
//!
//! Without a classifier, `Ok` leaves the loop at once; an `Err` is `NotRetryable` when it is an open
//! breaker's refusal (found by autoref specialisation, whatever the patterns say), matches
//! `abort_on` / `abort_on_if`, or misses `retry_on` / `retry_on_if` (when any is given); otherwise
//! `Retryable`. With a classifier, its `Verdict` decides for `Ok` and `Err` alike.

use proc_macro2::TokenStream;
use quote::quote;

use super::{Ctx, private};
use crate::validate::{Setting, Settings, Value};

/// `{ let retry = &self.<field>; let mut call = retry.start(); loop { … } }`, an expression of
/// type `Result<T, E>` around `inner`.
pub(crate) fn layer(ctx: &Ctx<'_>, settings: &Settings, inner: TokenStream) -> TokenStream {
    let p = private();
    let field = ctx.field();
    let retry_after = if ctx.is_async() {
        // The zero-wait quick path first, so the common retry builds no future.
        quote!(
            (__r4c_retry.retry_now(&mut __r4c_call, __r4c_failure)
                || __r4c_retry.retry_after_async(&mut __r4c_call, __r4c_failure).await)
        )
    } else {
        quote!(__r4c_retry.retry_after(&mut __r4c_call, __r4c_failure))
    };
    let round = match settings.get("classifier") {
        Some(classifier) => classified(classifier, settings.get("on_exhausted_result"), inner, retry_after),
        None => by_error(settings, inner, retry_after),
    };
    quote! {{
        #[allow(unused_imports)]
        use #p::{ProbeFallback as _, ProbeRejection as _};
        let __r4c_retry = &self.#field;
        let mut __r4c_call = __r4c_retry.start();
        loop { #round }
    }}
}

/// One round without a classifier: `Ok` breaks out; an `Err` is judged by the patterns.
fn by_error(settings: &Settings, inner: TokenStream, retry_after: TokenStream) -> TokenStream {
    let p = private();
    let abort = [settings.get("abort_on"), settings.get("abort_on_if")].into_iter().flatten().map(test_error);
    let retry: Vec<_> =
        [settings.get("retry_on"), settings.get("retry_on_if")].into_iter().flatten().map(test_error).collect();
    let outside_retry_on = (!retry.is_empty()).then(|| quote!(|| !(#(#retry)||*)));
    quote! {
        match #inner {
            ::core::result::Result::Ok(__r4c_value) => break ::core::result::Result::Ok(__r4c_value),
            ::core::result::Result::Err(__r4c_error) => {
                let __r4c_failure = if (&#p::Probe(&__r4c_error)).is_call_not_permitted() #(|| #abort)* #outside_retry_on {
                    #p::Failure::NotRetryable
                } else {
                    #p::Failure::Retryable
                };
                if !#retry_after {
                    break ::core::result::Result::Err(__r4c_error);
                }
            }
        }
    }
}

/// `matches!(&error, <pattern>)` or `predicate(&error)`.
fn test_error(setting: &Setting) -> TokenStream {
    match &setting.value {
        Value::Pattern(pattern) => quote!(::core::matches!(&__r4c_error, #pattern)),
        Value::Path(predicate) => quote!(#predicate(&__r4c_error)),
        _ => unreachable!("retry_on/abort_on are patterns, *_if are paths"),
    }
}

/// One round with a classifier: `Success` breaks out, `Retry` is retryable (an open breaker's
/// refusal excepted), `Fail` gives up; a rejected `Ok` left at the end goes through
/// `on_exhausted_result` when given.
fn classified(
    classifier: &Setting,
    exhausted: Option<&Setting>,
    inner: TokenStream,
    retry_after: TokenStream,
) -> TokenStream {
    let p = private();
    let Value::Path(classifier) = &classifier.value else { unreachable!("classifier is a path") };
    let give_up = match exhausted.map(|s| &s.value) {
        Some(Value::Path(map)) => quote! {
            match __r4c_result {
                ::core::result::Result::Ok(__r4c_value) => #map(__r4c_value),
                ::core::result::Result::Err(__r4c_error) => ::core::result::Result::Err(__r4c_error),
            }
        },
        _ => quote!(__r4c_result),
    };
    quote! {
        let __r4c_result = #inner;
        let __r4c_failure = match #classifier(&__r4c_result) {
            #p::Verdict::Success => break __r4c_result,
            #p::Verdict::Retry => match &__r4c_result {
                ::core::result::Result::Err(__r4c_error) if (&#p::Probe(__r4c_error)).is_call_not_permitted() => {
                    #p::Failure::NotRetryable
                }
                _ => #p::Failure::Retryable,
            },
            #p::Verdict::Fail => #p::Failure::ClassifierFailed,
            // `Verdict` is `#[non_exhaustive]`: a verdict added later gives up as `Fail` does until
            // this expansion learns it.
            #[allow(unreachable_patterns)]
            _ => #p::Failure::ClassifierFailed,
        };
        if !#retry_after {
            break #give_up;
        }
    }
}
