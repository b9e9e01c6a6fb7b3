//! The rate limiter layer: a permit before the inner layers run, or the refusal as the method's
//! error. Sync methods may block on the wait for a permit, async ones await it.

use proc_macro2::TokenStream;
use quote::quote;

use super::Ctx;
use crate::validate::Settings;

/// `match self.<field>.acquire() { Ok(()) => <inner>, Err(r) => Err(E::from_rejection(r)) }`.
pub(crate) fn layer(ctx: &Ctx<'_>, _settings: &Settings, inner: TokenStream) -> TokenStream {
    let field = ctx.field();
    let acquire = if ctx.is_async() { quote!(#field.acquire_async().await) } else { quote!(#field.acquire()) };
    let refusal = ctx.refusal(quote!(__r4c_rejection));
    quote! {
        match #acquire {
            ::core::result::Result::Ok(()) => #inner,
            ::core::result::Result::Err(__r4c_rejection) => #refusal,
        }
    }
}
