//! The timeout layer (async methods only): the inner layers run as one future under the attempt's
//! deadline; at the deadline that future is dropped and the call fails with the refusal.
//!
//! With a bulkhead inside the timeout (the default order), the attempt keeps a
//! `__private::SlotWatch` beside it: the bulkhead's wait marks it, and a deadline that comes while
//! the attempt still waits for its slot ends it as the bulkhead's `BulkheadFull` (SPEC §6).

use proc_macro2::TokenStream;
use quote::quote;

use super::{Ctx, private};
use crate::model::Settings;

/// The name of the watch a timeout keeps for the bulkhead inside it (one of each per method).
pub(crate) fn slot_watch() -> TokenStream {
    quote!(__r4c_slot_watch)
}

/// `let a = pin!(async { <inner> }); match self.<field>.run_pinned(a).await { Ok(r) => r, Err(r) => Err(E::from_rejection(r)) }`;
/// with a bulkhead inside, `run_pinned_watched(a, &watch, &self.<bulkhead>)`, the watch declared
/// before the attempt (which borrows it).
pub(crate) fn layer(ctx: &Ctx<'_>, _settings: &Settings, inner: TokenStream) -> TokenStream {
    let field = ctx.field();
    let refusal = ctx.refusal(quote!(__r4c_rejection));
    let (watch_decl, run) = match crate::policy::watched_bulkhead(ctx.method) {
        Some(bulkhead) => {
            let (p, watch) = (private(), slot_watch());
            let bulkhead = Ctx { method: ctx.method, layer: bulkhead, host: ctx.host }.field();
            (
                quote!(let #watch = #p::SlotWatch::new();),
                quote!(#field.run_pinned_watched(__r4c_attempt, &#watch, &#bulkhead)),
            )
        }
        None => (TokenStream::new(), quote!(#field.run_pinned(__r4c_attempt))),
    };
    quote! {{
        #watch_decl
        let __r4c_attempt = ::core::pin::pin!(async { #inner });
        match #run.await {
            ::core::result::Result::Ok(__r4c_value) => __r4c_value,
            ::core::result::Result::Err(__r4c_rejection) => #refusal,
        }
    }}
}
