//! The bulkhead layer: a slot held while the inner layers (the delegate) run, given back when the
//! guard drops, however the call ends.

use proc_macro2::TokenStream;
use quote::quote;

use super::Ctx;
use crate::validate::Settings;

/// `match self.<field>.acquire() { Ok(slot) => { let r = <inner>; drop(slot); r }, Err(r) => … }`.
pub(crate) fn layer(ctx: &Ctx<'_>, _settings: &Settings, inner: TokenStream) -> TokenStream {
    let field = ctx.field();
    let acquire = if ctx.is_async() { quote!(#field.acquire_async().await) } else { quote!(#field.acquire()) };
    let refusal = ctx.refusal(quote!(__r4c_rejection));
    quote! {
        match #acquire {
            ::core::result::Result::Ok(__r4c_slot) => {
                let __r4c_value = #inner;
                ::core::mem::drop(__r4c_slot);
                __r4c_value
            }
            ::core::result::Result::Err(__r4c_rejection) => #refusal,
        }
    }
}
