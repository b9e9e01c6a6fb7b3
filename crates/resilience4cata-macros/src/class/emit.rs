//! The rewritten impl block: each protected method keeps its signature and runs the trait style's
//! chain of layers around a call of its own body, moved into a private `#[doc(hidden)]` method
//! (spans kept, so `self` and errors inside the body behave as written). Unannotated items are
//! re-emitted as they are.

use proc_macro2::{Group, TokenStream, TokenTree};
use quote::{ToTokens, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{ImplItem, ImplItemFn, ReturnType, Signature, Visibility};

use super::{ClassModel, policies};
use crate::expand::method::{protected, signature};
use crate::expand::wrapper::cfgs;
use crate::expand::{Callee, Host, inner_ident, private};
use crate::model::{Form, Member, Method};

/// The block, its inner methods, the accessor of the policies field and `<Type>Policies`.
pub(super) fn expand(model: &ClassModel) -> TokenStream {
    let host = Host {
        fields: {
            let accessor = model.names.accessor();
            quote!(#accessor(self))
        },
        callee: Callee::Inner { prefix: model.names.inner_prefix() },
    };
    let mut items = Vec::new();
    let mut inners = Vec::new();
    for (item, member) in model.item.items.iter().zip(&model.members) {
        match (item, member) {
            (ImplItem::Fn(f), Member::Method(method)) if !method.layers.is_empty() => {
                items.push(outer(f, method, &host));
                inners.push(inner(model, f, method));
            }
            _ => items.push(item.to_token_stream()),
        }
    }
    let block = if model.names.trait_.is_some() {
        let inherent = inherent_block(model, inners);
        let rewritten = with_items(model, items);
        quote!(#rewritten #inherent)
    } else {
        items.extend(inners);
        with_items(model, items)
    };
    let accessor = accessor(model);
    let policies = policies::emit(model, true);
    quote!(#block #accessor #policies)
}

/// Beside errors: the block as written (our attributes stripped) and a `<Type>Policies` without
/// instances, so code naming them does not cascade.
pub(super) fn stub(model: &ClassModel) -> TokenStream {
    let block = model.item.to_token_stream();
    let policies = policies::emit(model, false);
    quote!(#block #policies)
}

/// The impl block as written, with `items` in place of its own.
fn with_items(model: &ClassModel, items: Vec<TokenStream>) -> TokenStream {
    let mut block = model.item.clone();
    block.items = items.into_iter().map(ImplItem::Verbatim).collect();
    block.into_token_stream()
}

/// A trait impl's inner methods, in an inherent block of the type (a trait impl may hold only the
/// trait's items).
fn inherent_block(model: &ClassModel, inners: Vec<TokenStream>) -> TokenStream {
    let item = &model.item;
    let cfg = cfgs(&item.attrs);
    let (generics, self_ty) = (&item.generics, &item.self_ty);
    let where_clause = &generics.where_clause;
    quote! {
        #(#cfg)*
        #[automatically_derived]
        impl #generics #self_ty #where_clause { #(#inners)* }
    }
}

/// The protected method: the user's signature and attributes (but `#[inline]`, which goes with
/// the body) around the chain of layers. Always inlined, as the trait style's methods are (see
/// `expand::method`): the chain is small, the body stays out of line unless the user asks.
///
/// An async method's body is `#[inline(always)] async move { … }`, as the trait style's (see
/// `expand::method::async_body`), so the future's poll is inlined into the caller's too. An
/// `async fn` cannot carry that attribute to its future, so it is written
/// `fn … -> impl Future<Output = R>` (`async_fn_signature`): the future is `Send` exactly when the
/// body's is (an `impl Trait` return leaks its auto traits, as an `async fn`'s does), it captures
/// every lifetime and type parameter in scope, as an `async fn`'s does, and it satisfies a trait's
/// `async fn` or `-> impl Future<…>` declaration alike.
fn outer(f: &ImplItemFn, method: &Method, host: &Host) -> TokenStream {
    let attrs = f.attrs.iter().filter(|a| !a.path().is_ident("inline"));
    let (vis, defaultness, mut sig) = (&f.vis, &f.defaultness, signature(method));
    let block = protected(host, method);
    let body = match method.form {
        Form::ImplFuture { .. } => quote!(#[inline(always)] async move { #block }),
        Form::AsyncFn => {
            async_fn_signature(&mut sig);
            quote!(#[inline(always)] async move { #block })
        }
        _ => block,
    };
    quote!(#(#attrs)* #[inline(always)] #vis #defaultness #sig { #body })
}

/// `async fn m(…) -> R` becomes `fn m(…) -> impl Future<Output = R>`. The `impl` type is spanned
/// at the macro's call site, whose edition is this crate's (2024): its lifetime capture rules are
/// those of an `async fn` (every lifetime in scope, elided ones included) whatever the edition of
/// the crate that writes the impl.
fn async_fn_signature(sig: &mut Signature) {
    sig.asyncness = None;
    let output = match &sig.output {
        ReturnType::Default => quote!(()),
        ReturnType::Type(_, ty) => quote!(#ty),
    };
    sig.output = syn::parse_quote!(-> impl ::core::future::Future<Output = #output>);
}

/// The body moved aside: the method as written, renamed, private and hidden; it keeps the user's
/// `#[cfg]`, `#[allow]` and `#[inline]`. In a trait impl, `Self::Assoc` of the trait's associated
/// types becomes `<Self as Trait>::Assoc`, which an inherent block needs.
fn inner(model: &ClassModel, f: &ImplItemFn, method: &Method) -> TokenStream {
    let mut f = f.clone();
    f.sig.ident = inner_ident(&model.names.inner_prefix(), method);
    f.vis = Visibility::Inherited;
    f.defaultness = None;
    f.attrs.retain(|a| ["cfg", "allow", "inline"].iter().any(|name| a.path().is_ident(name)));
    let tokens = f.into_token_stream();
    let tokens = match &model.names.trait_ {
        Some((path, _)) => qualify(tokens, path, &associated_types(model)),
        None => tokens,
    };
    quote!(#[doc(hidden)] #[allow(non_snake_case)] #tokens)
}

/// The names of the associated types the trait impl defines.
fn associated_types(model: &ClassModel) -> Vec<syn::Ident> {
    let types = model.item.items.iter().filter_map(|i| match i {
        ImplItem::Type(t) => Some(t.ident.clone()),
        _ => None,
    });
    types.collect()
}

/// `Self::Assoc` → `<Self as Trait>::Assoc` for each of `assoc`, spans kept.
fn qualify(tokens: TokenStream, trait_path: &syn::Path, assoc: &[syn::Ident]) -> TokenStream {
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    let mut out = Vec::with_capacity(tokens.len());
    let mut i = 0;
    while i < tokens.len() {
        let names_assoc = matches!(&tokens[i], TokenTree::Ident(s) if s == "Self")
            && matches!(tokens.get(i + 1), Some(TokenTree::Punct(p)) if p.as_char() == ':')
            && matches!(tokens.get(i + 2), Some(TokenTree::Punct(p)) if p.as_char() == ':')
            && matches!(tokens.get(i + 3), Some(TokenTree::Ident(x)) if assoc.iter().any(|a| a == x));
        match &tokens[i] {
            TokenTree::Ident(s) if names_assoc => {
                let span = s.span();
                out.extend(quote_spanned!(span=> <Self as #trait_path>));
                i += 1;
                continue;
            }
            TokenTree::Group(g) => {
                let mut group = Group::new(g.delimiter(), qualify(g.stream(), trait_path, assoc));
                group.set_span(g.span());
                out.push(TokenTree::Group(group));
            }
            other => out.push(other.clone()),
        }
        i += 1;
    }
    out.into_iter().collect()
}

/// `fn __r4c_policies_of_<Type>(&Type) -> &<Type>Policies`: how every protected method reaches
/// its policies. It is the one place that reads the field, spanned on the field's name in the
/// arguments, so a missing field is one rustc error there ("no field `…` on type `&Client`"), and
/// a field of another type is one `[R4C-CLS-005]` there.
fn accessor(model: &ClassModel) -> TokenStream {
    let p = private();
    let item = &model.item;
    let (name, policies, field) = (model.names.accessor(), model.names.policies(), &model.args.field);
    let mut generics = item.generics.clone();
    generics.params.insert(0, syn::parse_quote!('__r4c));
    let (params, _, where_clause) = generics.split_for_impl();
    let self_ty = &item.self_ty;
    let cfg = cfgs(&item.attrs);
    // The struct is named, so a field of another type fails the trait bound (`[R4C-CLS-005]`)
    // rather than rustc inferring the field's type and reporting a mismatch on the whole attribute.
    let read = quote_spanned!(field.span()=> #p::policies_field::<#policies, _>(&__r4c_self.#field));
    quote! {
        #(#cfg)*
        #[doc(hidden)]
        #[allow(non_snake_case, dead_code)] // unused when the block protects no method
        #[inline(always)]
        fn #name #params(__r4c_self: &'__r4c #self_ty) -> &'__r4c #policies #where_clause {
            #read
        }
    }
}
