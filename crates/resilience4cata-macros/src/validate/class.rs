//! Validation of a class-style impl block (`#[resilient(policies = field)]`): the same judging,
//! merging, signature and fallback checks as a trait's, over the block's methods. Attributes on
//! the block apply to every method with a `self` receiver (associated functions such as `new`
//! are never protected unless annotated themselves, which is then `R4C-SIG-001`).

use std::collections::HashSet;

use proc_macro2::TokenStream;
use syn::{ImplItem, ImplItemFn, ItemImpl, TraitItemFn};

use super::{Validator, fallback};
use crate::diag::Errors;
use crate::model::{Member, Origin};
use crate::order::Order;
use crate::parse::RawAttribute;

/// One [`Member`] per item of `item` (`Member::Skip` for what is not a method). `owner` names
/// the impl in messages (`Client`, `Api`); `qualified` is what a fallback is called on (`Self`,
/// or `<Self as Api>` in a trait impl). `orders` holds each item's own `#[policy_order]`, which
/// replaces the block's.
pub(crate) fn members(
    item: &ItemImpl,
    (block, raw): (&[RawAttribute], &[Vec<RawAttribute>]),
    (block_order, orders): (&Order, &[Option<Order>]),
    (owner, qualified): (&syn::Ident, &TokenStream),
    errors: &mut Errors,
) -> Vec<Member> {
    let mut v = Validator { errors, next_id: 0, reported: HashSet::new(), class: true };
    let mut block_level = v.judge_all(block, Origin::Trait);
    fallback::refuse_on_trait(&mut block_level, v.errors);
    let mut members: Vec<Member> = item
        .items
        .iter()
        .zip(raw)
        .zip(orders)
        .map(|((member, raw), order)| match member {
            ImplItem::Fn(f) => {
                let level = if f.sig.receiver().is_some() { &block_level[..] } else { &[] };
                let order = order.as_ref().unwrap_or(block_order);
                Member::Method(Box::new(v.method(&as_trait_fn(f), raw, level, order)))
            }
            _ => Member::Skip,
        })
        .collect();
    fallback::resolve((owner, qualified, true), &mut members, errors);
    members
}

/// The method as the shared model holds it (a trait method with a default body).
fn as_trait_fn(f: &ImplItemFn) -> TraitItemFn {
    TraitItemFn { attrs: f.attrs.clone(), sig: f.sig.clone(), default: Some(f.block.clone()), semi_token: None }
}
