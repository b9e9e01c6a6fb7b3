//! Validation: judges every attribute value against the policy tables, merges trait-level and
//! method-level attributes key by key, checks combinations and signatures, and produces the
//! `Model` the expansion reads (`crate::model`). Every mistake is reported once, on its own token.

pub(crate) mod class;
mod fallback;
mod signature;
mod value;

pub(crate) use value::closest;

use std::collections::HashSet;

use proc_macro2::{Span, TokenStream, TokenTree};
use quote::{ToTokens, format_ident};
use syn::{Ident, ItemTrait, TraitItem, TraitItemFn};

use crate::diag::{ATR_DUPLICATE, ATR_KEY_PLACEMENT, Errors};
use crate::model::{Layer, Member, Method, Model, Origin, PolicySpec, Setting, Settings, ValueKind, Written};
use crate::order::Order;
use crate::parse::{RawAttribute, TraitInput};
use crate::policy::POLICIES;

/// One policy attribute, judged.
struct Judged {
    spec: &'static PolicySpec,
    settings: Settings,
}

/// Validates the parsed trait; mistakes go to `errors`, and the model is still produced so a stub
/// can be emitted.
pub(crate) fn validate(input: TraitInput, errors: &mut Errors) -> Model {
    let TraitInput { item, attributes, members, send, orders } = input;
    let implementable = signature::check_trait(&item, errors);
    let mut v = Validator { errors, next_id: 0, reported: HashSet::new(), class: false };
    let mut trait_level = v.judge_all(&attributes, Origin::Trait);
    fallback::refuse_on_trait(&mut trait_level, v.errors);
    let members = item.items.iter().zip(&members).enumerate();
    let mut members: Vec<Member> =
        members.map(|(i, (m, raw))| v.member(m, raw, &trait_level, orders.of_member(i))).collect();
    let trait_ident = &item.ident;
    fallback::resolve((trait_ident, &quote::quote!(<Self as #trait_ident>), false), &mut members, errors);
    Model {
        wrapper: format_ident!("Resilient{}", item.ident),
        delegate: fresh_delegate(&item),
        item,
        members,
        implementable,
        send,
    }
}

struct Validator<'e> {
    errors: &'e mut Errors,
    next_id: usize,
    reported: HashSet<usize>,
    /// Methods of a class-style impl block (see `class`), which keep their bodies.
    class: bool,
}

impl Validator<'_> {
    fn member(&mut self, member: &TraitItem, raw: &[RawAttribute], trait_level: &[Judged], order: &Order) -> Member {
        match member {
            TraitItem::Fn(f) => Member::Method(Box::new(self.method(f, raw, trait_level, order))),
            TraitItem::Const(c) => Member::Const(c.clone()),
            TraitItem::Type(t) => Member::Type(t.clone()),
            _ => Member::Skip,
        }
    }

    fn method(&mut self, f: &TraitItemFn, raw: &[RawAttribute], trait_level: &[Judged], order: &Order) -> Method {
        let own = self.judge_all(raw, Origin::Method);
        let layers = crate::order::apply(order, merge(trait_level, &own));
        let read = if self.class { signature::class_method } else { signature::method };
        let signature::Shape { form, receiver, args, ret, forwardable } = read(f, !layers.is_empty(), self.errors);
        let method = Method { item: f.clone(), form, receiver, args, ret, layers, forwardable, fallback: None };
        for p in &method.layers {
            for problem in (p.spec.check)(&p.settings, &method) {
                if self.reported.insert(problem.id) {
                    self.errors.push(problem.error);
                }
            }
        }
        method
    }

    /// Judges the attributes of one level (the trait, or one method): its bundles in the order
    /// written, each overlaid by the next, then its own attributes over them (SPEC §3, `crate::bundle`).
    fn judge_all(&mut self, raw: &[RawAttribute], origin: Origin) -> Vec<Judged> {
        let bundles = raw.iter().filter_map(|p| p.bundle).max().unwrap_or(0);
        let mut level = Vec::new();
        for n in (1..=bundles).map(Some).chain([None]) {
            let written: Vec<&RawAttribute> = raw.iter().filter(|p| p.bundle == n).collect();
            level = overlay_level(level, self.judge_written(&written, origin));
        }
        level
    }

    /// Judges each attribute of one list; a policy written twice in it is `[R4C-ATR-008]`.
    fn judge_written(&mut self, raw: &[&RawAttribute], origin: Origin) -> Vec<Judged> {
        let mut judged: Vec<Judged> = Vec::new();
        for p in raw.iter().copied() {
            if judged.iter().any(|j| std::ptr::eq(j.spec, p.spec)) {
                let name = p.spec.name;
                self.errors.add(
                    &p.path,
                    ATR_DUPLICATE,
                    format!("`#[{name}]` set multiple times here: write its keys in one `#[{name}(…)]`"),
                );
                continue;
            }
            judged
                .push(Judged { spec: p.spec, settings: self.judge(p, Place { origin, bundled: p.bundle.is_some() }) });
        }
        judged
    }

    /// Judges every entry of one attribute; a key written twice is `[R4C-ATR-008]`.
    fn judge(&mut self, raw: &RawAttribute, Place { origin, bundled }: Place) -> Settings {
        self.next_id += 1;
        let mut settings =
            Settings { items: Vec::new(), attribute: Some(Written { path: raw.path.clone(), id: self.next_id }) };
        for entry in &raw.entries {
            let key = match value::key_of(raw.spec, entry) {
                Ok(key) => key,
                Err(e) => {
                    self.errors.push(e);
                    continue;
                }
            };
            if settings.get(key.name).is_some() {
                self.errors.add(&entry.key, ATR_DUPLICATE, format!("`{}` set multiple times", key.name));
                continue;
            }
            if matches!(key.kind, ValueKind::Expr) && (origin == Origin::Trait || bundled) {
                self.errors.push(misplaced_key(raw, entry, bundled));
                continue;
            }
            match value::judge(key, entry) {
                Ok(value) => {
                    self.next_id += 1;
                    settings.items.push(Setting { key, ident: entry.key.clone(), value, origin, id: self.next_id });
                }
                Err(e) => self.errors.push(e),
            }
        }
        settings
    }
}

/// Where an attribute was written: its level, and whether a bundle brought it.
#[derive(Clone, Copy)]
struct Place {
    origin: Origin,
    bundled: bool,
}

/// `[R4C-ATR-071]`: `key` in a bundle or on the trait (impl block), where there is no one
/// method's parameters for it to name (SPEC §15).
fn misplaced_key(raw: &RawAttribute, entry: &crate::parse::RawEntry, bundled: bool) -> syn::Error {
    let name = raw.spec.name;
    let place = if bundled { "in a bundle" } else { "on a trait or impl block" };
    let message = format!(
        "`key` cannot be set {place}: a key names parameters of one method; write \
         `#[{name}(key = …)]` on each method that is keyed (the other keys of `#[{name}]` may stay here)"
    );
    crate::diag::error(&entry.key, ATR_KEY_PLACEMENT, message)
}

/// `lower` with each policy of `upper` overlaid on it, key by key.
fn overlay_level(lower: Vec<Judged>, upper: Vec<Judged>) -> Vec<Judged> {
    let mut level = lower;
    for Judged { spec, settings } in upper {
        match level.iter_mut().find(|j| std::ptr::eq(j.spec, spec)) {
            Some(j) => j.settings = j.settings.overlay(&settings),
            None => level.push(Judged { spec, settings }),
        }
    }
    level
}

/// Judges one attribute on its own, as `bundle!` does at a bundle's definition.
pub(crate) fn judge_alone(raw: &RawAttribute, errors: &mut Errors) {
    let place = Place { origin: Origin::Method, bundled: true };
    Validator { errors, next_id: 0, reported: HashSet::new(), class: false }.judge(raw, place);
}

/// The method's policies in table order: each trait-level attribute overlaid by the method's own.
fn merge(trait_level: &[Judged], own: &[Judged]) -> Vec<Layer> {
    POLICIES
        .iter()
        .filter_map(|spec| {
            let settings = match (find(trait_level, spec), find(own, spec)) {
                (None, None) => return None,
                (Some(t), None) => t.clone(),
                (None, Some(m)) => m.clone(),
                (Some(t), Some(m)) => t.overlay(m),
            };
            Some(Layer { spec, settings })
        })
        .collect()
}

fn find<'a>(level: &'a [Judged], spec: &PolicySpec) -> Option<&'a Settings> {
    level.iter().find(|j| std::ptr::eq(j.spec, spec)).map(|j| &j.settings)
}

/// `D`, unless the trait mentions an identifier `D` (a type of the user's that the wrapper's
/// parameter would shadow).
fn fresh_delegate(item: &ItemTrait) -> Ident {
    let tokens = item.to_token_stream();
    ["D", "Delegate", "__R4cDelegate"]
        .iter()
        .find(|name| !mentions(tokens.clone(), name))
        .map_or_else(|| Ident::new("__R4cDelegate", Span::call_site()), |name| Ident::new(name, Span::call_site()))
}

fn mentions(tokens: TokenStream, name: &str) -> bool {
    tokens.into_iter().any(|t| match t {
        TokenTree::Ident(i) => i == name,
        TokenTree::Group(g) => mentions(g.stream(), name),
        _ => false,
    })
}

#[cfg(test)]
mod keys_tests;
#[cfg(test)]
mod tests;
