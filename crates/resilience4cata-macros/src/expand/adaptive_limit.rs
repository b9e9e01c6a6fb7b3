//! The adaptive limit layer: take a slot (or return the refusal without calling inward), run the
//! inner layers, classify the outcome and hand it to the algorithm with the slot.
//!
//! An `Err` is classified by `LimitOutcome::of_error`: an inner timeout is a drop, a local refusal
//! from further in is ignored, then `ignore_on` / `ignore_on_if` (ignored), then `drop_on` /
//! `drop_on_if` (a drop; every `Err` when none is given); any other `Err` is a success. A panic or
//! a dropped future gives the slot back without a sample.

use proc_macro2::TokenStream;
use quote::quote;

use super::circuit_breaker::any;
use super::{Ctx, private};
use crate::model::Settings;

/// `'adaptive_limit: { let permit = match self.<field>.acquire() { Ok(p) => p, Err(r) => break 'adaptive_limit … };
/// let r = <inner>; permit.finish(outcome); r }`: the permit is bound by a `let`, so an async
/// method's future does not keep the acquisition's whole `Result` across the delegate's await (as
/// the circuit breaker layer, issue 16).
pub(crate) fn layer(ctx: &Ctx<'_>, settings: &Settings, inner: TokenStream) -> TokenStream {
    let p = private();
    let acquire = ctx.acquire();
    let ignored = any(settings, ["ignore_on", "ignore_on_if"]).unwrap_or_else(|| quote!(false));
    let dropped = any(settings, ["drop_on", "drop_on_if"]).unwrap_or_else(|| quote!(true));
    let refusal = ctx.refusal(quote!(__r4c_rejection));
    quote! {{
        #[allow(unused_imports)]
        use #p::{ProbeFallback as _, ProbeRejection as _};
        '__r4c_adaptive_limit: {
            let __r4c_permit = match #acquire {
                ::core::result::Result::Ok(__r4c_permit) => __r4c_permit,
                ::core::result::Result::Err(__r4c_rejection) => break '__r4c_adaptive_limit #refusal,
            };
            let __r4c_result = #inner;
            __r4c_permit.finish(match &__r4c_result {
                ::core::result::Result::Ok(_) => #p::LimitOutcome::Success,
                ::core::result::Result::Err(__r4c_error) => #p::LimitOutcome::of_error(
                    (&#p::Probe(__r4c_error)).rejection(),
                    || #ignored,
                    || #dropped,
                ),
            });
            __r4c_result
        }
    }}
}
