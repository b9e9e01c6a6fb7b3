//! The circuit breaker layer: acquire a permit (or return the refusal without calling inward), run
//! the inner layers, classify and record the outcome.
//!
//! Inside a retry loop, this layer runs once per attempt, so each attempt is acquired and recorded
//! separately. An `Err` is classified by `Outcome::of_error`: its rejection first (a local refusal
//! is not recorded, a timeout or a nested breaker's refusal is a failure), then `ignore_on` /
//! `ignore_on_if` (not recorded), then `record_on` / `record_on_if` (a failure; every `Err` when
//! none is given); any other `Err` is a success.

use proc_macro2::TokenStream;
use quote::quote;

use super::{Ctx, private};
use crate::model::{Setting, Settings, Value};

/// `'breaker: { let permit = match self.<field>.acquire() { Ok(p) => p, Err(r) => break 'breaker Err(…) }; …;
/// match result { Ok(v) => { permit.record(Success); Ok(v) } Err(e) => { permit.record(outcome); Err(e) } } }`.
///
/// The permit is bound by a `let` rather than matched in place: a `match` keeps its scrutinee, the
/// whole `Result<Permit, Rejection>`, alive to its end, so in an async method it was stored in
/// the future across the delegate's await and copied out again (issue 16).
pub(crate) fn layer(ctx: &Ctx<'_>, settings: &Settings, inner: TokenStream) -> TokenStream {
    let p = private();
    let field = ctx.field();
    let err = ctx.err_type();
    let ignored = any(settings, ["ignore_on", "ignore_on_if"]).unwrap_or_else(|| quote!(false));
    let recorded = any(settings, ["record_on", "record_on_if"]).unwrap_or_else(|| quote!(true));
    let of_error = quote! {
        #p::Outcome::of_error((&#p::Probe(__r4c_error)).rejection(), || #ignored, || #recorded)
    };
    // Each arm records its own outcome and rebuilds the result it returns (the `Err` arm, marked
    // cold, classifies the error by reference before moving it back out), so LLVM knows on the
    // `Ok` path that the layer's value is `Ok` and the outer layers and the caller test nothing
    // more (issue 16, user-shaped: breaker_closed sync 33 → 29, async 80 → 73; stack sync 110 →
    // 94, async 230 → 212). Recording the outcome computed by a match on `&result`, then returning
    // `result`, made LLVM test the enum's discriminant against the rejections' bit sets; recording
    // in each arm of that match without rebuilding the value measured breaker_closed sync 45.
    let record = quote! {
        match __r4c_result {
            ::core::result::Result::Ok(__r4c_value) => {
                __r4c_permit.record(#p::Outcome::Success);
                ::core::result::Result::Ok(__r4c_value)
            }
            ::core::result::Result::Err(__r4c_failed) => {
                ::core::hint::cold_path();
                let __r4c_error = &__r4c_failed;
                __r4c_permit.record(#of_error);
                ::core::result::Result::Err(__r4c_failed)
            }
        }
    };
    quote! {{
        #[allow(unused_imports)]
        use #p::{ProbeFallback as _, ProbeRejection as _, RejectFallback as _, RejectInto as _};
        '__r4c_circuit_breaker: {
            let __r4c_permit = match #field.acquire() {
                ::core::result::Result::Ok(__r4c_permit) => __r4c_permit,
                ::core::result::Result::Err(__r4c_rejection) => {
                    ::core::hint::cold_path();
                    break '__r4c_circuit_breaker ::core::result::Result::Err(
                        (&#p::Reject::<#err>::new()).reject(__r4c_rejection),
                    );
                }
            };
            let __r4c_result = #inner;
            #record
        }
    }}
}

/// `matches!(error, a) || b(error)` over the given keys, `None` when none is set.
pub(crate) fn any<const N: usize>(settings: &Settings, keys: [&str; N]) -> Option<TokenStream> {
    let tests: Vec<_> = keys.iter().filter_map(|k| settings.get(k)).map(test_error).collect();
    (!tests.is_empty()).then(|| quote!(#(#tests)||*))
}

/// `matches!(error, <pattern>)` or `predicate(error)` on `__r4c_error: &E`.
fn test_error(setting: &Setting) -> TokenStream {
    match &setting.value {
        Value::Pattern(pattern) => quote!(::core::matches!(__r4c_error, #pattern)),
        Value::Path(predicate) => quote!(#predicate(__r4c_error)),
        _ => unreachable!("record_on/ignore_on are patterns, *_if are paths"),
    }
}
