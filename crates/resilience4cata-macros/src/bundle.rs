//! Bundles: `bundle!` defines a named set of policy attributes; `#[bundle(path)]` on a trait, an
//! `impl` block or one of their methods applies it.
//!
//! A proc macro cannot read another item, so a bundle is a `macro_rules!` callback (the pattern of
//! `macro_rules_attribute`). `bundle! { pub critical = #[retry(…)]; }` emits a hidden macro of a
//! unique name holding the attributes, and `pub use <hidden> as critical;`. When `#[resilient]`
//! meets a `#[bundle(critical)]` it has no content for yet, it re-emits the whole item, unchanged,
//! as input of `critical! { @__r4c_apply [critical] [#[resilient(…)]] item }`; the bundle's macro
//! puts `#[resilient(…)]` back on top, followed by `#[__r4c_bundle([critical] #[retry(…)])]` (the
//! bundle's content, keyed by the path the item wrote), and the item. `#[resilient]` runs again,
//! and so on until every bundle of the item has its content: one round per distinct bundle path.
//! The item's tokens travel through `$($item:tt)*`, so they keep the user's spans (and `self` its
//! hygiene); only the bundle's own tokens carry the bundle's spans, so a diagnostic about a value
//! written in a bundle points into the bundle.
//!
//! Then [`inline_trait`] (or [`inline_impl`]) replaces every `#[bundle(path)]` by its content,
//! still marked as a bundle's ([`INLINED`]), and `parse` takes each marked attribute's policies
//! with the index of the bundle among its attribute list, which `validate` uses for the
//! precedence of SPEC §3.
//!
//! This module is the uses' side, below `parse`: [`pending`] and [`inline_trait`] /
//! [`inline_impl`], generic over the item's attribute lists (a trait and its methods, or an
//! `impl` block and its methods), shuffle tokens and know no policy. The definitions' side,
//! `bundle! { … }`, judges its content as `#[resilient]` would, so it sits above `validate`, in
//! `define`.

use std::collections::HashMap;

use proc_macro2::TokenStream;
use quote::{ToTokens, quote};
use syn::{Attribute, Ident, ImplItem, Item, ItemImpl, ItemTrait, Meta, TraitItem};

use crate::diag::{ATR_BUNDLE_USE, ATR_PLACEMENT, Errors};

/// The attribute a user writes: `#[bundle(path)]`.
pub(crate) const USE: &str = "bundle";
/// A bundle's content, as its macro hands it back: `#[__r4c_bundle([path] #[retry(…)] …)]`.
const RESOLVED: &str = "__r4c_bundle";
/// A `#[bundle(path)]` replaced by its content, for `parse`: `#[__r4c_bundled(#[retry(…)] …)]`.
pub(crate) const INLINED: &str = "__r4c_bundled";

/// When the item has a well-formed `#[bundle(path)]` whose content it has not received yet, the
/// callback that asks the bundle for it (the first such path, in source order); `None` when every
/// bundle is resolved (or the input is not an item we can read: `parse` reports that).
pub(crate) fn pending(args: &TokenStream, input: &TokenStream) -> Option<TokenStream> {
    if !mentions_use(input.clone()) {
        return None; // most items: no second parse
    }
    let item = syn::parse2::<Item>(input.clone()).ok()?;
    let resolved: Vec<String> = own_attrs(&item)?.iter().filter_map(resolved_key).collect();
    let path =
        attr_lists(&item).into_iter().flatten().filter_map(use_path).find(|path| !resolved.contains(&key(path)))?;
    let args = (!args.is_empty()).then(|| quote!((#args)));
    Some(quote! {
        #path ! { @__r4c_apply [#path] [#[::resilience4cata::resilient #args]] #input }
    })
}

/// Replaces every `#[bundle(path)]` of the trait (on the trait or a method) by its content, marked
/// [`INLINED`], and takes the resolved contents off the trait. A malformed `#[bundle]`
/// (`[R4C-ATR-081]`) or one on an associated const or type (`[R4C-ATR-010]`) is reported and
/// removed.
pub(crate) fn inline_trait(item: &mut ItemTrait, errors: &mut Errors) {
    let members = item.items.iter_mut().filter_map(|member| match member {
        TraitItem::Fn(f) => Some((&mut f.attrs, true)),
        TraitItem::Const(c) => Some((&mut c.attrs, false)),
        TraitItem::Type(t) => Some((&mut t.attrs, false)),
        _ => None,
    });
    inline_item(&mut item.attrs, members, errors);
}

/// [`inline_trait`] for an `impl` block and its methods.
pub(crate) fn inline_impl(item: &mut ItemImpl, errors: &mut Errors) {
    let members = item.items.iter_mut().filter_map(|member| match member {
        ImplItem::Fn(f) => Some((&mut f.attrs, true)),
        ImplItem::Const(c) => Some((&mut c.attrs, false)),
        ImplItem::Type(t) => Some((&mut t.attrs, false)),
        _ => None,
    });
    inline_item(&mut item.attrs, members, errors);
}

/// The item's own attributes, then each member's (`true` for a method, which may carry bundles).
fn inline_item<'a>(
    own: &mut Vec<Attribute>,
    members: impl Iterator<Item = (&'a mut Vec<Attribute>, bool)>,
    errors: &mut Errors,
) {
    let contents = take_resolved(own);
    inline_list(own, &contents, errors);
    for (attrs, is_method) in members {
        if is_method {
            inline_list(attrs, &contents, errors);
        } else {
            refuse_placement(attrs, errors);
        }
    }
}

/// Whether the identifier `bundle` appears anywhere in `tokens`.
fn mentions_use(tokens: TokenStream) -> bool {
    tokens.into_iter().any(|t| match t {
        proc_macro2::TokenTree::Ident(i) => i == USE,
        proc_macro2::TokenTree::Group(g) => mentions_use(g.stream()),
        _ => false,
    })
}

fn own_attrs(item: &Item) -> Option<&Vec<Attribute>> {
    match item {
        Item::Trait(t) => Some(&t.attrs),
        Item::Impl(i) => Some(&i.attrs),
        _ => None,
    }
}

/// The item's own attributes, then each method's.
fn attr_lists(item: &Item) -> Vec<&Vec<Attribute>> {
    let methods: Vec<&Vec<Attribute>> = match item {
        Item::Trait(t) => {
            t.items.iter().filter_map(|m| if let TraitItem::Fn(f) = m { Some(&f.attrs) } else { None }).collect()
        }
        Item::Impl(i) => {
            i.items.iter().filter_map(|m| if let ImplItem::Fn(f) = m { Some(&f.attrs) } else { None }).collect()
        }
        _ => Vec::new(),
    };
    own_attrs(item).into_iter().chain(methods).collect()
}

/// The path of a well-formed `#[bundle(path)]`.
fn use_path(attr: &Attribute) -> Option<syn::Path> {
    if !attr.path().is_ident(USE) {
        return None;
    }
    attr.parse_args::<syn::Path>().ok()
}

/// How a bundle path is compared: its tokens, spans aside.
fn key(path: &impl ToTokens) -> String {
    path.to_token_stream().to_string()
}

/// The key of a resolved content marker.
fn resolved_key(attr: &Attribute) -> Option<String> {
    Some(key(&split_resolved(attr)?.0))
}

/// `#[__r4c_bundle([path] content…)]` → (path tokens, content).
fn split_resolved(attr: &Attribute) -> Option<(TokenStream, TokenStream)> {
    if !attr.path().is_ident(RESOLVED) {
        return None;
    }
    let Meta::List(list) = &attr.meta else { return None };
    let mut tokens = list.tokens.clone().into_iter();
    let Some(proc_macro2::TokenTree::Group(path)) = tokens.next() else { return None };
    Some((path.stream(), tokens.collect()))
}

/// Takes the resolved contents off the item: path key → content.
fn take_resolved(attrs: &mut Vec<Attribute>) -> HashMap<String, TokenStream> {
    let mut contents = HashMap::new();
    attrs.retain(|attr| match split_resolved(attr) {
        Some((path, content)) => {
            contents.insert(key(&path), content);
            false
        }
        None => true,
    });
    contents
}

/// Replaces each `#[bundle(path)]` of one list by its content, in place.
fn inline_list(attrs: &mut [Attribute], contents: &HashMap<String, TokenStream>, errors: &mut Errors) {
    for attr in attrs.iter_mut().filter(|a| a.path().is_ident(USE)) {
        let content = match use_path(attr) {
            Some(path) => contents.get(&key(&path)).cloned(),
            None => {
                let message = "write `#[bundle(path)]` with the path of one bundle defined by `resilience4cata::bundle!`, \
                               e.g. `#[bundle(crate::policies::critical)]`; repeat the attribute for several bundles";
                errors.add(attr.meta.to_token_stream(), ATR_BUNDLE_USE, message);
                None
            }
        };
        let ident = Ident::new(INLINED, attr.path().segments[0].ident.span());
        let content = content.unwrap_or_default();
        *attr = syn::parse_quote!(#[#ident(#content)]);
    }
}

/// `#[bundle]` on an associated const or type: reported and dropped.
fn refuse_placement(attrs: &mut Vec<Attribute>, errors: &mut Errors) {
    attrs.retain(|attr| {
        if !attr.path().is_ident(USE) {
            return true;
        }
        let message =
            "`#[bundle(…)]` applies to a method or to the whole trait / impl block, not to an associated const or type";
        errors.add(attr.path(), ATR_PLACEMENT, message);
        false
    });
}
