//! The `Send` desugar of `async fn` (SPEC §3): in the re-emitted trait and in the wrapper's `impl`,
//! `async fn m(…) -> R` becomes `fn m(…) -> impl Future<Output = R> + Send`, as `trait_variant`
//! writes it, so a public trait raises no `async_fn_in_trait` warning and generic callers can spawn
//! its futures. Under `#[resilient(?Send)]` the future promises no `Send`. Implementations keep
//! writing `async fn`: it satisfies either signature.

use proc_macro2::Span;
use quote::quote_spanned;
use syn::spanned::Spanned;
use syn::{ItemTrait, ReturnType, Signature, TraitItem};

/// The trait with every `async fn` desugared; a default body becomes `async move { body }`.
pub(crate) fn trait_item(item: &ItemTrait, send: bool) -> ItemTrait {
    let mut item = item.clone();
    for member in &mut item.items {
        let TraitItem::Fn(f) = member else { continue };
        if !signature(&mut f.sig, send) {
            continue;
        }
        if let Some(block) = &mut f.default {
            let span = block.span();
            let stmts = &block.stmts;
            *block = syn::parse_quote_spanned!(span=> { async move { #(#stmts)* } });
        }
    }
    item
}

/// Desugars `sig` in place when it is an `async fn`; returns whether it was one.
pub(crate) fn signature(sig: &mut Signature, send: bool) -> bool {
    let Some(token) = sig.asyncness.take() else { return false };
    let span: Span = token.span;
    let output = match &sig.output {
        ReturnType::Default => quote_spanned!(span=> ()),
        ReturnType::Type(_, ty) => quote_spanned!(span=> #ty),
    };
    let send = send.then(|| quote_spanned!(span=> + ::core::marker::Send));
    sig.output = syn::parse_quote_spanned!(span=>
        -> impl ::core::future::Future<Output = #output> #send
    );
    true
}
