//! The timeout layer (async methods only): the inner layers run as one future under the attempt's
//! deadline; at the deadline that future is dropped and the call fails with the refusal.

use proc_macro2::TokenStream;
use quote::quote;

use super::Ctx;
use crate::validate::Settings;

/// `let a = pin!(async { <inner> }); match self.<field>.run_pinned(a).await { Ok(r) => r, Err(r) => Err(E::from_rejection(r)) }`.
pub(crate) fn layer(ctx: &Ctx<'_>, _settings: &Settings, inner: TokenStream) -> TokenStream {
    let field = ctx.field();
    let refusal = ctx.refusal(quote!(__r4c_rejection));
    quote! {{
        let __r4c_attempt = ::core::pin::pin!(async { #inner });
        match #field.run_pinned(__r4c_attempt).await {
            ::core::result::Result::Ok(__r4c_value) => __r4c_value,
            ::core::result::Result::Err(__r4c_rejection) => #refusal,
        }
    }}
}
