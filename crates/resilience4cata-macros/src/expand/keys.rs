//! Keyed layers (`key = …`, SPEC §15): each keyed policy's key is looked up once per call, before
//! every other policy but the fallback, and the call holds it until it ends.
//!
//! ```text
//! '__r4c_keys: {
//!     let __r4c_hold_rate_limiter = match KeyedRateLimiterPolicy::for_key(&self.__r4c_rate_limiter_m, <key arg>) {
//!         Ok(hold) => hold,
//!         Err(r) => break '__r4c_keys Err(E::from_rejection(r)),   // KeysExhausted: never retried
//!     };
//!     let __r4c_key_rate_limiter = &*__r4c_hold_rate_limiter;      // the key's own instance
//!     <retry, breaker, …, each keyed layer on (*__r4c_key_<policy>)>
//! }
//! ```
//! Inside a fallback the refusal is an `Err` like any other, so the fallback sees it. The key
//! expression runs once, inside the lookup's statement: a key that borrows a parameter (`tenant`,
//! `req.host()`) is looked up by reference and the borrow ends there, before owned arguments are
//! moved or cloned into the attempts; the hold borrows the instance, never the key. The layers use
//! a plain reference to the key's instance, so a hedge's `move` closures copy it.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::Ident;
use syn::spanned::Spanned;

use super::{Ctx, Host, field, private};
use crate::model::{Method, PolicySpec};

/// The reference to the key's instance that `spec`'s layer uses: `__r4c_key_rate_limiter`.
pub(crate) fn hold(spec: &PolicySpec) -> Ident {
    format_ident!("__r4c_key_{}", spec.name)
}

/// `inner` behind the lookups of the method's keyed layers, in nesting order; `inner` itself when
/// none is keyed (an unkeyed method's expansion is what it was).
pub(crate) fn lookups(host: &Host, method: &Method, inner: TokenStream) -> TokenStream {
    let lets: Vec<_> = method
        .layers
        .iter()
        .filter_map(|layer| {
            let key = crate::policy::key_of(layer)?;
            Some(lookup(&Ctx { method, layer, host }, key))
        })
        .collect();
    if lets.is_empty() {
        return inner;
    }
    let p = private();
    quote! {
        '__r4c_keys: {
            #[allow(unused_imports)]
            use #p::{KeyByRef as _, KeyByValue as _};
            #(#lets)*
            #inner
        }
    }
}

/// One keyed layer's lookup: the hold, or the refusal as the method's error. The key goes through
/// the runtime's autoref probe (`KeyArg`: a reference `&Q` is looked up as `Q`, any other value as
/// itself), written out here rather than through `key_arg!` so that every token of the lookup is
/// spanned on the key expression: a key whose type cannot be a key (`for_key`'s bound,
/// `[R4C-SIG-050]`) is reported there, not on `#[resilient]`.
fn lookup(ctx: &Ctx<'_>, key: &syn::Expr) -> TokenStream {
    let p = private();
    let spec = ctx.layer.spec;
    let (fields, name) = (&ctx.host.fields, field(spec, ctx.method));
    let (owned, hold) = (format_ident!("__r4c_hold_{}", spec.name), hold(spec));
    let facade = format_ident!("Keyed{}", spec.field_ty);
    let refusal = ctx.refusal(quote!(__r4c_rejection));
    let found = quote_spanned! {key.span()=>
        match #p::KeyArg(#key) {
            ref __r4c_key_arg => #p::#facade::for_key(&#fields.#name, __r4c_key_arg.key_arg()),
        }
    };
    quote! {
        let #owned = match #found {
            ::core::result::Result::Ok(__r4c_hold) => __r4c_hold,
            ::core::result::Result::Err(__r4c_rejection) => break '__r4c_keys #refusal,
        };
        let #hold = &*#owned;
    }
}
