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
//! with the index of the bundle among its attribute list ([`policies`]), which `validate` uses for
//! the precedence of SPEC §3.
//!
//! [`pending`], [`inline_trait`] / [`inline_impl`] and [`policies`] are generic over the item's
//! attribute lists: a trait and its methods, or an `impl` block and its methods.

use std::collections::HashMap;

use proc_macro2::TokenStream;
use quote::{ToTokens, format_ident, quote};
use syn::ext::IdentExt;
use syn::parse::discouraged::Speculative;
use syn::parse::{Parse, ParseStream};
use syn::{Attribute, Ident, ImplItem, Item, ItemImpl, ItemTrait, Meta, Token, TraitItem, Visibility};

use crate::diag::{ATR_BUNDLE_NOT_POLICY, ATR_BUNDLE_ORDER, ATR_BUNDLE_SYNTAX, ATR_BUNDLE_USE, ATR_PLACEMENT, Errors};
use crate::parse::RawPolicy;
use crate::policy::{self, POLICIES};

/// The attribute a user writes: `#[bundle(path)]`.
const USE: &str = "bundle";
/// A bundle's content, as its macro hands it back: `#[__r4c_bundle([path] #[retry(…)] …)]`.
const RESOLVED: &str = "__r4c_bundle";
/// A `#[bundle(path)]` replaced by its content, for `parse`: `#[__r4c_bundled(#[retry(…)] …)]`.
const INLINED: &str = "__r4c_bundled";

// ---------------------------------------------------------------- bundle! (the definition)

/// `bundle! { … }`: one hidden `macro_rules!` and one `use` per entry. `site` makes the hidden
/// names unique in the crate (the invocation's file, line and column).
pub(crate) fn define(input: TokenStream, site: &str) -> TokenStream {
    let entries = match syn::parse2::<Entries>(input) {
        Ok(entries) => entries.0,
        Err(e) => return e.to_compile_error(),
    };
    let mut errors = Errors::default();
    let items: TokenStream = entries
        .into_iter()
        .filter_map(|entry| match entry {
            Ok(entry) => Some(entry.emit(site, &mut errors)),
            Err((error, named)) => {
                errors.push(coded(error));
                named.map(|entry| entry.emit(site, &mut errors))
            }
        })
        .collect();
    [errors.to_compile_errors(), items].into_iter().collect()
}

/// Every entry; a malformed one is its error, with the bundle it names when the mistake comes after
/// the name, defined empty so that its uses do not add "cannot find macro" to the one error.
struct Entries(Vec<Result<Entry, (syn::Error, Option<Entry>)>>);

/// `/// docs \n pub name = #[retry(…)] #[circuit_breaker(…)];`
struct Entry {
    attrs: Vec<Attribute>,
    vis: Visibility,
    name: Ident,
    content: Vec<Attribute>,
}

impl Parse for Entries {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let mut entries = Vec::new();
        while !input.is_empty() {
            let fork = input.fork();
            match fork.parse::<Entry>() {
                Ok(entry) => {
                    input.advance_to(&fork);
                    entries.push(Ok(entry));
                }
                Err(error) => {
                    let named = input.fork().call(Entry::head).ok();
                    skip_past_semicolon(input)?;
                    entries.push(Err((error, named)));
                }
            }
        }
        Ok(Entries(entries))
    }
}

/// Moves `input` past the next `;` (or to its end), for the entry after a malformed one.
fn skip_past_semicolon(input: ParseStream) -> syn::Result<()> {
    input.step(|cursor| {
        let mut rest = *cursor;
        while let Some((tree, next)) = rest.token_tree() {
            rest = next;
            if matches!(&tree, proc_macro2::TokenTree::Punct(p) if p.as_char() == ';') {
                break;
            }
        }
        Ok(((), rest))
    })
}

impl Entry {
    /// `/// docs pub name`: an entry without content, standing in for a malformed one.
    fn head(input: ParseStream) -> syn::Result<Entry> {
        let attrs = input.call(Attribute::parse_outer)?;
        Ok(Entry { attrs, vis: input.parse()?, name: input.parse()?, content: Vec::new() })
    }
}

impl Parse for Entry {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let attrs = input.call(Attribute::parse_outer)?;
        let vis = input.parse()?;
        let name: Ident = input.parse()?;
        input.parse::<Token![=]>()?;
        let content = input.call(Attribute::parse_outer)?;
        if content.is_empty() {
            let message =
                format!("bundle `{name}` holds no attribute: write `{name} = #[retry(…)] #[circuit_breaker(…)];`");
            return Err(syn::Error::new(input.span(), message));
        }
        input.parse::<Token![;]>()?;
        Ok(Entry { attrs, vis, name, content })
    }
}

/// Gives syn's own parse errors the bundle-syntax code and the expected shape.
fn coded(error: syn::Error) -> syn::Error {
    let message = error.to_string();
    let shape = "each bundle is `/// docs` then `pub name = #[policy(…)] …;`";
    syn::Error::new(error.span(), format!("[{ATR_BUNDLE_SYNTAX}] {message}: {shape}"))
}

impl Entry {
    fn emit(&self, site: &str, errors: &mut Errors) -> TokenStream {
        let Entry { attrs, vis, name, .. } = self;
        let hidden = format_ident!("__r4c_bundle_{}_{:016x}", name.unraw(), fnv(&format!("{site}/{name}")));
        let content = self.checked_content(errors);
        let export = matches!(vis, Visibility::Public(_)).then(|| quote!(#[macro_export]));
        let listing =
            format!("Policy attributes: `{}`", self.content.iter().map(one_line).collect::<Vec<_>>().join(" "));
        quote! {
            #[doc(hidden)]
            #export
            macro_rules! #hidden {
                (@__r4c_apply [$($key:tt)*] [$($resilient:tt)*] $($item:tt)*) => {
                    $($resilient)*
                    #[__r4c_bundle([$($key)*] #(#content)*)]
                    $($item)*
                };
            }
            #(#attrs)*
            #[doc = ""]
            #[doc = #listing]
            #[doc(inline)]
            #vis use #hidden as #name;
        }
    }

    /// The content's attributes that have no mistake; each mistake is reported here, once, at the
    /// bundle, and its attribute left out so no use repeats it.
    fn checked_content(&self, errors: &mut Errors) -> Vec<&Attribute> {
        let mut kept: Vec<&Attribute> = Vec::new();
        for attr in &self.content {
            let before = errors.len();
            check_one(attr, &kept, errors);
            if errors.len() == before {
                kept.push(attr);
            }
        }
        kept
    }
}

/// Judges one attribute of a bundle as `#[resilient]` would judge it on a method.
fn check_one(attr: &Attribute, kept: &[&Attribute], errors: &mut Errors) {
    let path = attr.path();
    let Some(spec) = policy::lookup(path) else {
        return refuse(path, errors);
    };
    if kept.iter().any(|k| k.path().is_ident(spec.name)) {
        let name = spec.name;
        let message = format!("`#[{name}]` set multiple times in this bundle: write its keys in one `#[{name}(…)]`");
        return errors.add(path, crate::diag::ATR_DUPLICATE, message);
    }
    match crate::parse::parse_policy(spec, attr) {
        Ok(raw) => crate::validate::judge_alone(&raw, errors),
        Err(e) => errors.push(e),
    }
}

/// `#[policy_order]` (`[R4C-ATR-062]`) or any other attribute that is not a policy (`[R4C-ATR-080]`).
fn refuse(path: &syn::Path, errors: &mut Errors) {
    if path.is_ident("policy_order") {
        let message =
            "`#[policy_order]` is not allowed in a bundle: write it on the method or on the trait / impl block";
        return errors.add(path, ATR_BUNDLE_ORDER, message);
    }
    let names: Vec<_> = POLICIES.iter().map(|p| format!("`#[{}]`", p.name)).collect();
    let nested = if path.is_ident(USE) { " (bundles do not nest: list the attributes)" } else { "" };
    let message = format!("a bundle holds policy attributes only{nested}; expected one of {}", names.join(", "));
    errors.add(path, ATR_BUNDLE_NOT_POLICY, message);
}

/// An attribute on one line, for the bundle's generated docs.
fn one_line(attr: &Attribute) -> String {
    let text = attr.to_token_stream().to_string();
    text.replace("# [", "#[").replace(" (", "(").replace(" ,", ",").replace(" :: ", "::")
}

/// FNV-1a: a stable hash for the hidden macro's name.
fn fnv(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

// ---------------------------------------------------------------- #[bundle(path)] (the uses)

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

/// Whether `attr` is a bundle's content put in place of a `#[bundle(path)]` by [`inline_trait`].
pub(crate) fn is_inlined(attr: &Attribute) -> bool {
    attr.path().is_ident(INLINED)
}

/// The policies of an inlined bundle, tagged with `index`: its rank among the bundles of one
/// attribute list (1 for the first written; a later bundle wins over an earlier one). Its values
/// were judged where the bundle is defined.
pub(crate) fn policies(attr: &Attribute, index: usize, errors: &mut Errors) -> Vec<RawPolicy> {
    let Ok(content) = attr.parse_args_with(Attribute::parse_outer) else { return Vec::new() };
    let parsed = content.iter().filter_map(|a| Some(crate::parse::parse_policy(policy::lookup(a.path())?, a)));
    let mut taken = Vec::new();
    for raw in parsed {
        match raw {
            Ok(raw) => taken.push(RawPolicy { bundle: Some(index), ..raw }),
            Err(e) => errors.push(e),
        }
    }
    taken
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

#[cfg(test)]
mod tests;
