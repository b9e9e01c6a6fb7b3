//! The bulkhead layer: a slot held while the inner layers (the delegate) run, given back when the
//! guard drops, however the call ends.

use proc_macro2::TokenStream;
use quote::quote;

use super::Ctx;
use crate::model::Settings;

/// `'bulkhead: { let slot = match self.<field>.acquire() { Ok(s) => s, Err(r) => break 'bulkhead … };
/// <inner> }`: bound by a `let`, so an async method's future does not keep the whole `Result` the
/// acquisition returned across the delegate's await (issue 16); the slot drops when the block
/// ends, after `<inner>` is evaluated, as the block's locals do. Inside a timeout the acquisition
/// is `acquire_async_watched(&__r4c_slot_watch)` (see `expand::timeout`).
pub(crate) fn layer(ctx: &Ctx<'_>, _settings: &Settings, inner: TokenStream) -> TokenStream {
    let acquire = match crate::policy::watched_bulkhead(ctx.method) {
        // Inside a timeout (async only): the wait tells the timeout it is still waiting.
        Some(_) => {
            let (field, watch) = (ctx.field(), super::timeout::slot_watch());
            quote!(#field.acquire_async_watched(&#watch).await)
        }
        None => ctx.acquire(),
    };
    let refusal = ctx.refusal(quote!(__r4c_rejection));
    quote! {
        '__r4c_bulkhead: {
            let __r4c_slot = match #acquire {
                ::core::result::Result::Ok(__r4c_slot) => __r4c_slot,
                ::core::result::Result::Err(__r4c_rejection) => break '__r4c_bulkhead #refusal,
            };
            #inner
        }
    }
}
