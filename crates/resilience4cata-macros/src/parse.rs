//! Parsing: the trait, its items and our policy attributes, keeping the original syntax node of
//! every key and value so each diagnostic points at the exact token. Nothing is judged here beyond
//! syntax: values are checked against the key table in `validate`.

use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::ext::IdentExt;
use syn::parse::ParseStream;
use syn::{Attribute, Expr, Ident, Item, ItemTrait, Meta, Pat, Token, TraitItem};

use crate::bundle::INLINED;
use crate::diag::{self, ATR_PLACEMENT, ATR_RESILIENT_ARGS, ATR_SYNTAX, Errors, SIG_TRAIT_SHAPE};
use crate::model::{PolicySpec, ValueKind};
use crate::order::Orders;
use crate::policy;

/// The trait under `#[resilient]`, with our attributes taken off it and its items.
pub(crate) struct TraitInput {
    /// The trait as it will be re-emitted: policy attributes stripped.
    pub(crate) item: ItemTrait,
    /// Policy attributes on the trait itself, applying to every method.
    pub(crate) attributes: Vec<RawAttribute>,
    /// Policy attributes of each item of `item.items`, same index.
    pub(crate) members: Vec<Vec<RawAttribute>>,
    /// Whether `async fn` desugars to a `Send` future (`false` under `#[resilient(?Send)]`).
    pub(crate) send: bool,
    /// `#[policy_order]` on the trait, and on each item of `item.items` (same index).
    pub(crate) orders: Orders,
}

/// One policy attribute as written, unjudged: `#[retry(max_attempts = 3)]`.
pub(crate) struct RawAttribute {
    pub(crate) spec: &'static PolicySpec,
    /// The attribute's path (`retry`), for diagnostics about the attribute as a whole.
    pub(crate) path: syn::Path,
    pub(crate) entries: Vec<RawEntry>,
    /// `Some(n)` when it comes from the n-th `#[bundle(…)]` of its attribute list (`crate::bundle`).
    pub(crate) bundle: Option<usize>,
}

/// `key = value`, unjudged.
pub(crate) struct RawEntry {
    pub(crate) key: Ident,
    pub(crate) value: RawValue,
}

/// A value is an expression, except for keys whose kind is a pattern.
pub(crate) enum RawValue {
    Expr(Expr),
    Pat(Pat),
}

impl ToTokens for RawValue {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        match self {
            RawValue::Expr(e) => e.to_tokens(tokens),
            RawValue::Pat(p) => p.to_tokens(tokens),
        }
    }
}

/// Parses `#[resilient(args)] input`. `Err` carries what to emit instead when the input is not a
/// trait: the input unchanged (the error is in `errors`).
pub(crate) fn parse_trait(
    args: TokenStream,
    input: TokenStream,
    errors: &mut Errors,
) -> Result<TraitInput, TokenStream> {
    let send = match parse_args(&args) {
        Some(send) => send,
        None => {
            errors.add(&args, ATR_RESILIENT_ARGS, "`#[resilient]` takes no arguments but `?Send`: policies are attributes on the trait or its methods, e.g. `#[retry(max_attempts = 3)]`");
            true
        }
    };
    let mut item = match syn::parse2::<Item>(input.clone()) {
        Ok(Item::Trait(item)) => item,
        Ok(other) => {
            errors.add(
                item_keyword(&other),
                SIG_TRAIT_SHAPE,
                "`#[resilient]` applies to a trait or an impl block: put it on `trait … { … }` or `impl Type { … }`",
            );
            return Err(input);
        }
        Err(e) => {
            errors.push(e);
            return Err(input);
        }
    };
    // Bundles first: a preset carries its order in its content (`crate::order::take`).
    crate::bundle::inline_trait(&mut item, errors);
    let orders = Orders::take(&mut item, errors);
    let attributes = take_attributes(&mut item.attrs, errors);
    let members = item.items.iter_mut().map(|member| take_member_attributes(member, errors)).collect();
    Ok(TraitInput { item, attributes, members, send, orders })
}

/// `Some(true)` for no arguments, `Some(false)` for `?Send`, `None` for anything else.
fn parse_args(args: &TokenStream) -> Option<bool> {
    let tokens: Vec<_> = args.clone().into_iter().map(|t| t.to_string()).collect();
    match tokens.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        [] => Some(true),
        ["?", "Send"] => Some(false),
        _ => None,
    }
}

/// The first keyword of an item, so an error about the whole item points at one token.
fn item_keyword(item: &Item) -> TokenStream {
    let tokens = item.to_token_stream();
    let skip_attrs = tokens.into_iter().skip_while(|t| !matches!(t, proc_macro2::TokenTree::Ident(i) if i != "pub"));
    skip_attrs.take(1).collect()
}

fn take_member_attributes(member: &mut TraitItem, errors: &mut Errors) -> Vec<RawAttribute> {
    match member {
        TraitItem::Fn(f) => take_attributes(&mut f.attrs, errors),
        TraitItem::Const(c) => refuse_attributes(&mut c.attrs, errors),
        TraitItem::Type(t) => refuse_attributes(&mut t.attrs, errors),
        _ => Vec::new(),
    }
}

/// Policy attributes on an associated const or type: reported and dropped.
pub(crate) fn refuse_attributes(attrs: &mut Vec<Attribute>, errors: &mut Errors) -> Vec<RawAttribute> {
    for p in take_attributes(attrs, errors) {
        let name = p.spec.name;
        errors.add(
            &p.path,
            ATR_PLACEMENT,
            format!("`#[{name}]` applies to a method or to the whole trait, not to an associated const or type"),
        );
    }
    Vec::new()
}

/// Removes our attributes from `attrs` and parses them; others stay in place.
pub(crate) fn take_attributes(attrs: &mut Vec<Attribute>, errors: &mut Errors) -> Vec<RawAttribute> {
    let mut taken = Vec::new();
    let mut bundles = 0;
    attrs.retain(|attr| match policy::lookup(attr.path()) {
        None if attr.path().is_ident(INLINED) => {
            bundles += 1;
            taken.extend(bundled(attr, bundles, errors));
            false
        }
        Some(spec) => {
            match parse_policy(spec, attr) {
                Ok(p) => taken.push(p),
                Err(e) => errors.push(e),
            }
            false
        }
        None => true,
    });
    taken
}

/// The attributes of a bundle inlined by `crate::bundle` (`#[__r4c_bundled(…)]`), tagged with
/// `index`: its rank among the bundles of one attribute list (1 for the first written; a later
/// bundle wins over an earlier one). Its values were judged where the bundle is defined.
fn bundled(attr: &Attribute, index: usize, errors: &mut Errors) -> Vec<RawAttribute> {
    let Ok(content) = attr.parse_args_with(Attribute::parse_outer) else { return Vec::new() };
    let parsed = content.iter().filter_map(|a| Some(parse_policy(policy::lookup(a.path())?, a)));
    let mut taken = Vec::new();
    for raw in parsed {
        match raw {
            Ok(raw) => taken.push(RawAttribute { bundle: Some(index), ..raw }),
            Err(e) => errors.push(e),
        }
    }
    taken
}

pub(crate) fn parse_policy(spec: &'static PolicySpec, attr: &Attribute) -> syn::Result<RawAttribute> {
    let path = attr.path().clone();
    let entries = match &attr.meta {
        Meta::Path(_) => Vec::new(),
        Meta::List(list) => list.parse_args_with(|input: ParseStream| parse_entries(input, spec)).map_err(with_code)?,
        Meta::NameValue(nv) => {
            let name = spec.name;
            return Err(diag::error(
                nv.eq_token,
                ATR_SYNTAX,
                format!("write `#[{name}(key = value, …)]` or `#[{name}]`, not `#[{name} = …]`"),
            ));
        }
    };
    Ok(RawAttribute { spec, path, entries, bundle: None })
}

/// `key = value, …`; the value is a pattern for pattern keys, an expression otherwise (also for
/// unknown keys, reported later with the list of valid keys).
fn parse_entries(input: ParseStream, spec: &PolicySpec) -> syn::Result<Vec<RawEntry>> {
    let mut entries = Vec::new();
    while !input.is_empty() {
        let key = input.call(Ident::parse_any)?;
        if !input.peek(Token![=]) {
            return Err(diag::error(&key, ATR_SYNTAX, format!("expected `{key} = <value>`: every key takes a value")));
        }
        input.parse::<Token![=]>()?;
        let value = match spec.key(&key.unraw().to_string()).map(|k| k.kind) {
            Some(ValueKind::Pattern) => RawValue::Pat(Pat::parse_multi_with_leading_vert(input)?),
            _ => RawValue::Expr(input.parse()?),
        };
        entries.push(RawEntry { key, value });
        if !input.is_empty() {
            input.parse::<Token![,]>()?;
        }
    }
    Ok(entries)
}

/// Gives syn's own parse errors the attribute-syntax code.
fn with_code(error: syn::Error) -> syn::Error {
    let mut coded: Option<syn::Error> = None;
    for e in error {
        let message = e.to_string();
        let e = if message.starts_with("[R4C-") {
            e
        } else {
            syn::Error::new(
                e.span(),
                format!("[{ATR_SYNTAX}] {message}: write `key = value` pairs separated by commas"),
            )
        };
        match &mut coded {
            Some(c) => c.combine(e),
            None => coded = Some(e),
        }
    }
    coded.expect("a syn::Error holds at least one message")
}
