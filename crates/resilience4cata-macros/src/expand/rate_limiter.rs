//! The rate limiter layer: a permit before the inner layers run, or the refusal as the method's
//! error. Sync methods may block on the wait for a permit, async ones await it.

use proc_macro2::TokenStream;
use quote::quote;

use super::Ctx;
use crate::model::Settings;

/// `'rate_limiter: { if let Err(r) = self.<field>.acquire() { break 'rate_limiter Err(E::from_rejection(r)) } <inner> }`:
/// the acquisition's `Result` ends with the `if let`, so an async method's future does not keep it
/// across the inner layers' awaits, as a `match` around `<inner>` would (issue 16).
pub(crate) fn layer(ctx: &Ctx<'_>, _settings: &Settings, inner: TokenStream) -> TokenStream {
    // Async: the pass path is a plain call, and the slow path's future exists only when it fails,
    // so a passing call stores nothing of it in the method's future.
    let acquire = match ctx.is_async() {
        true => {
            let field = ctx.field();
            quote! {
                if #field.pass_now() {
                    ::core::result::Result::Ok(())
                } else {
                    #field.acquire_slow_async().await
                }
            }
        }
        false => ctx.acquire(),
    };
    let refusal = ctx.refusal(quote!(__r4c_rejection));
    quote! {
        '__r4c_rate_limiter: {
            if let ::core::result::Result::Err(__r4c_rejection) = #acquire {
                break '__r4c_rate_limiter #refusal;
            }
            #inner
        }
    }
}
