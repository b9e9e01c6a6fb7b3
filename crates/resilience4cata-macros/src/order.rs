//! `#[policy_order(Timeout, Retry)]` on a method or on the trait: which layers nest outermost,
//! overriding the default order of [`POLICIES`](crate::policy::POLICIES) (SPEC §6).
//!
//! The attribute is parsed and judged here (names, duplicates, the fallback's place) and applied
//! to a method's merged policies by [`apply`]: the listed policies the method uses come first, in
//! the listed order, then the others in their default relative order; a fallback is always
//! outermost. The layers are expressions of type `Result<T, E>` nested in the order of
//! `Method::policies`, so any order expands to the same straight-line, unboxed code.

use syn::punctuated::Punctuated;
use syn::{Attribute, Ident, ItemTrait, Meta, Token, TraitItem, TraitItemConst, TraitItemType};

use crate::bundle::INLINED;
use crate::diag::{ATR_DUPLICATE, ATR_PLACEMENT, ATR_SYNTAX, ATR_UNKNOWN_KEY, Errors};
use crate::model::{Layer, Method};
use crate::policy::POLICIES;

/// `[R4C-ATR-060]`: a policy named twice in one `#[policy_order]`.
pub(crate) const ATR_ORDER_DUPLICATE: &str = "R4C-ATR-060";
/// `[R4C-ATR-061]`: `Fallback` listed anywhere but first.
pub(crate) const ATR_ORDER_FALLBACK: &str = "R4C-ATR-061";

/// The name `#[policy_order]` takes for a policy attribute: `circuit_breaker` is `CircuitBreaker`,
/// the variant of `resilience4cata::Policy`. Every policy of [`POLICIES`] has one, so a new policy
/// is orderable as soon as it is registered there.
fn order_name(attribute: &str) -> String {
    let mut name = String::with_capacity(attribute.len());
    for word in attribute.split('_') {
        let mut chars = word.chars();
        name.extend(chars.next().map(|c| c.to_ascii_uppercase()));
        name.push_str(chars.as_str());
    }
    name
}

/// The attribute a name in `#[policy_order]` stands for. A listed policy the method does not use
/// is ignored, so every policy's name is accepted whether or not the method has it.
fn attribute_named(name: &Ident) -> Option<&'static str> {
    POLICIES.iter().map(|spec| spec.name).find(|attribute| *name == order_name(attribute))
}

/// Whether `attr` is a `#[policy_order(…)]`: for a place that must refuse one (a bundle: the
/// order is written on the method or the trait, SPEC §3; its code is the next of the
/// `#[policy_order]` family, kept in docs/errors.md).
pub(crate) fn is_policy_order(attr: &Attribute) -> bool {
    attr.path().is_ident("policy_order")
}

/// A judged `#[policy_order(…)]`: the attribute names of the listed policies, outermost first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Order {
    pub(crate) listed: Vec<&'static str>,
}

/// The `#[policy_order]`s of one trait: the trait's own and each method's.
#[derive(Default)]
pub(crate) struct Orders {
    trait_level: Order,
    /// Per item of the trait, same index; `None` where the item has none.
    members: Vec<Option<Order>>,
}

impl Orders {
    /// Takes `#[policy_order]` off the trait and its methods. On an associated const or type it is
    /// `[R4C-ATR-010]`.
    pub(crate) fn take(item: &mut ItemTrait, errors: &mut Errors) -> Orders {
        let trait_level = take(&mut item.attrs, errors).unwrap_or_default();
        let members = item
            .items
            .iter_mut()
            .map(|member| match member {
                TraitItem::Fn(f) => take(&mut f.attrs, errors),
                TraitItem::Const(TraitItemConst { attrs, .. }) | TraitItem::Type(TraitItemType { attrs, .. }) => {
                    if let Some(attr) = attrs.iter().find(|a| is_policy_order(a)) {
                        errors.add(attr.path(), ATR_PLACEMENT, "`#[policy_order]` applies to a method or to the whole trait, not to an associated const or type");
                    }
                    attrs.retain(|a| !is_policy_order(a));
                    None
                }
                _ => None,
            })
            .collect();
        Orders { trait_level, members }
    }

    /// The order for the trait's `index`-th item: its own list, which replaces the trait's.
    pub(crate) fn of_member(&self, index: usize) -> &Order {
        self.members.get(index).and_then(Option::as_ref).unwrap_or(&self.trait_level)
    }
}

/// Removes every `#[policy_order]` from `attrs` and judges it; `None` when there is none. A second
/// `#[policy_order]` on one item is `[R4C-ATR-008]`. Without one, the order a preset carries
/// (see [`take_carried`]) is the list's.
pub(crate) fn take(attrs: &mut Vec<Attribute>, errors: &mut Errors) -> Option<Order> {
    let carried = take_carried(attrs, errors);
    take_written(attrs, errors).or(carried)
}

/// The order carried by the presets inlined in `attrs` (`#[__r4c_bundled(#[policy_order(…)] …)]`,
/// see `crate::bundle`), taken out of their content: the last preset's, as a later bundle wins.
/// A preset's order ranks as its attributes do, below a `#[policy_order]` written in the same
/// list (which replaces it, as lists are not merged), and a method's replaces the trait's like
/// any method-level list. Judged again here, silently: a faulty order was reported where the
/// preset is defined and left out of it.
fn take_carried(attrs: &mut [Attribute], errors: &mut Errors) -> Option<Order> {
    let mut carried = None;
    for attr in attrs.iter_mut().filter(|a| a.path().is_ident(INLINED)) {
        let Ok(content) = attr.parse_args_with(Attribute::parse_outer) else { continue };
        if !content.iter().any(is_policy_order) {
            continue;
        }
        let (orders, rest): (Vec<Attribute>, Vec<Attribute>) = content.into_iter().partition(is_policy_order);
        carried = orders.last().map(|order| judge(order, errors));
        let path = attr.path().clone();
        *attr = syn::parse_quote!(#[#path(#(#rest)*)]);
    }
    carried
}

/// The `#[policy_order]` written in `attrs` itself.
fn take_written(attrs: &mut Vec<Attribute>, errors: &mut Errors) -> Option<Order> {
    let mut found: Option<Order> = None;
    let mut kept = Vec::with_capacity(attrs.len());
    for attr in attrs.drain(..) {
        if !is_policy_order(&attr) {
            kept.push(attr);
            continue;
        }
        if found.is_some() {
            errors.add(
                attr.path(),
                ATR_DUPLICATE,
                "`#[policy_order]` set multiple times here: list every policy in one `#[policy_order(…)]`",
            );
            continue;
        }
        found = Some(judge(&attr, errors));
    }
    *attrs = kept;
    found
}

fn judge(attr: &Attribute, errors: &mut Errors) -> Order {
    let names = match &attr.meta {
        Meta::List(list) => match list.parse_args_with(Punctuated::<Ident, Token![,]>::parse_terminated) {
            Ok(names) => names,
            Err(e) => {
                errors.add(
                    &list.tokens,
                    ATR_SYNTAX,
                    format!("{e}: write policy names separated by commas, e.g. `#[policy_order(Timeout, Retry)]`"),
                );
                return Order::default();
            }
        },
        _ => {
            errors.add(attr, ATR_SYNTAX, "write `#[policy_order(Timeout, Retry)]`: the policies, outermost first");
            return Order::default();
        }
    };
    let mut order = Order::default();
    for (position, name) in names.iter().enumerate() {
        let Some(policy) = attribute_named(name) else {
            let valid: Vec<String> = POLICIES.iter().map(|spec| order_name(spec.name)).collect();
            errors.add(name, ATR_UNKNOWN_KEY, format!("unknown policy `{name}`: expected one of {}", valid.join(", ")));
            continue;
        };
        if order.listed.contains(&policy) {
            errors.add(name, ATR_ORDER_DUPLICATE, format!("`{name}` listed twice: each policy at most once"));
            continue;
        }
        if policy == "fallback" && position != 0 {
            errors.add(
                name,
                ATR_ORDER_FALLBACK,
                "a fallback is always the outermost layer: list `Fallback` first or leave it out",
            );
            continue;
        }
        order.listed.push(policy);
    }
    order
}

/// Reorders a method's policies (given in the default order): the fallback first, then the listed
/// ones in the listed order, then the rest in their default relative order.
pub(crate) fn apply(order: &Order, layers: Vec<Layer>) -> Vec<Layer> {
    let rank = |p: &Layer| match p.spec.name {
        "fallback" => 0,
        name => order.listed.iter().position(|l| *l == name).map_or(usize::MAX, |i| i + 1),
    };
    let mut layers = layers;
    // A stable sort: the unlisted layers (all `usize::MAX`) keep their default relative order.
    layers.sort_by_key(rank);
    layers
}

/// Whether a layer sits between the method's fallback and `layer` (an attempt-making one), so
/// the call may end inside `layer`'s loop, before it reports its attempts to the fallback.
pub(crate) fn cut_short(method: &Method, layer: &Layer) -> bool {
    let position = |name: &str| method.layers.iter().position(|p| p.spec.name == name);
    matches!((position("fallback"), position(layer.spec.name)), (Some(f), Some(p)) if p > f + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judged(attr: Attribute) -> (Option<Order>, Vec<String>) {
        let mut errors = Errors::default();
        let mut attrs = vec![attr];
        let order = take(&mut attrs, &mut errors);
        assert!(attrs.is_empty(), "the attribute is taken off the item");
        (order, errors.messages())
    }

    #[test]
    fn names_are_judged_outermost_first() {
        let (order, errors) = judged(syn::parse_quote!(#[policy_order(Timeout, Retry, CircuitBreaker)]));
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(order.unwrap().listed, ["timeout", "retry", "circuit_breaker"]);
    }

    #[test]
    fn a_name_twice_is_060() {
        let (order, errors) = judged(syn::parse_quote!(#[policy_order(Timeout, Retry, Timeout)]));
        assert_eq!(order.unwrap().listed, ["timeout", "retry"]);
        assert_eq!(errors.len(), 1);
        assert!(errors[0].starts_with("[R4C-ATR-060]"), "{errors:?}");
    }

    #[test]
    fn fallback_not_first_is_061() {
        let (_, errors) = judged(syn::parse_quote!(#[policy_order(Retry, Fallback)]));
        assert_eq!(errors.len(), 1);
        assert!(errors[0].starts_with("[R4C-ATR-061]"), "{errors:?}");
        let (order, errors) = judged(syn::parse_quote!(#[policy_order(Fallback, Retry)]));
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(order.unwrap().listed, ["fallback", "retry"]);
    }

    #[test]
    fn an_unknown_name_is_002_and_lists_the_names() {
        let (_, errors) = judged(syn::parse_quote!(#[policy_order(Retry, retry)]));
        assert_eq!(errors.len(), 1);
        assert!(errors[0].starts_with("[R4C-ATR-002] unknown policy `retry`"), "{errors:?}");
        assert!(errors[0].contains("Fallback, Retry, Hedge, CircuitBreaker"), "{errors:?}");
    }

    #[test]
    fn malformed_forms_are_009_and_two_attributes_008() {
        let (_, errors) = judged(syn::parse_quote!(#[policy_order]));
        assert!(errors[0].starts_with("[R4C-ATR-009]"), "{errors:?}");
        let (_, errors) = judged(syn::parse_quote!(#[policy_order(Retry = 1)]));
        assert!(errors[0].starts_with("[R4C-ATR-009]"), "{errors:?}");
        let mut errors = Errors::default();
        let mut attrs: Vec<Attribute> =
            vec![syn::parse_quote!(#[policy_order(Retry)]), syn::parse_quote!(#[policy_order(Timeout)])];
        assert_eq!(take(&mut attrs, &mut errors).unwrap().listed, ["retry"]);
        assert!(errors.messages()[0].starts_with("[R4C-ATR-008]"));
    }

    #[test]
    fn every_registered_policy_is_orderable_under_the_runtime_enums_names() {
        // The variants of `resilience4cata::Policy`, in the default order: a policy added to
        // `POLICIES` fails here until it has its variant there too.
        let names: Vec<String> = POLICIES.iter().map(|spec| order_name(spec.name)).collect();
        let variants =
            ["Fallback", "Retry", "Hedge", "CircuitBreaker", "RateLimiter", "AdaptiveLimit", "Timeout", "Bulkhead"];
        assert_eq!(names, variants);
    }
}
