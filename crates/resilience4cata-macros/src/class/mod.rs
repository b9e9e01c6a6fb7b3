//! The class style: `#[resilient(policies = field)]` on an inherent `impl Type { … }` or on a
//! trait impl `impl Trait for Type { … }` (SPEC §3, "Class style").
//!
//! The block is judged by the trait style's validation (`validate::class`), and each protected
//! method is emitted by the trait style's expansion (`expand::method::protected`): only the
//! [`Host`](crate::expand::Host) differs. The instance fields live in a generated `<Type>Policies`
//! (`<Type><Trait>Policies` for a trait impl; `policies.rs`), which the type holds in the field
//! the arguments name (`args.rs`); each protected method keeps its signature and runs its own
//! body, moved into a private hidden method, through those policies (`emit.rs`).

mod args;
mod emit;
mod policies;
#[cfg(test)]
mod tests;

use proc_macro2::TokenStream;
use quote::{ToTokens, format_ident, quote};
use syn::{Ident, ImplItem, Item, ItemImpl, Type};

use crate::diag::{CLS_IMPL_SHAPE, Errors};
use crate::model::Member;
use crate::parse::{refuse_attributes, take_attributes};

/// The expansion of `#[resilient(args)]` on an impl block; `None` when `input` is not one (the
/// trait style then takes it).
pub(crate) fn expand(args: TokenStream, input: TokenStream) -> Option<TokenStream> {
    match syn::parse2::<Item>(input) {
        Ok(Item::Impl(item)) => Some(expand_impl(args, item)),
        _ => None,
    }
}

/// An impl block, checked: everything the emitters read.
struct ClassModel {
    /// The block as written, our attributes stripped.
    item: ItemImpl,
    args: args::Args,
    names: Names,
    /// One per item of `item.items`.
    members: Vec<Member>,
}

/// The names an impl block gives to what is generated for it.
struct Names {
    /// The type's name (`Client` in `impl Client<T>`).
    ty: Ident,
    /// The trait's path and name, for a trait impl.
    trait_: Option<(syn::Path, Ident)>,
}

impl Names {
    /// What the ids derive from: `Client`, or `Client::Api`.
    fn owner(&self) -> String {
        match &self.trait_ {
            Some((_, name)) => format!("{}::{name}", self.ty),
            None => self.ty.to_string(),
        }
    }

    /// `ClientPolicies`, or `ClientApiPolicies`.
    fn policies(&self) -> Ident {
        let trait_name = self.trait_.as_ref().map(|(_, name)| name.to_string()).unwrap_or_default();
        format_ident!("{}{trait_name}Policies", self.ty)
    }

    /// The generated function that reads the `policies` field.
    fn accessor(&self) -> Ident {
        format_ident!("__r4c_policies_of_{}", self.owner().replace("::", "_"))
    }

    /// The prefix of inner methods' names.
    fn inner_prefix(&self) -> String {
        match &self.trait_ {
            Some((_, name)) => format!("__r4c_inner_{name}_"),
            None => "__r4c_inner_".to_owned(),
        }
    }

    /// What a fallback method is called on, and the name messages give the block.
    fn qualified(&self) -> (TokenStream, &Ident) {
        match &self.trait_ {
            Some((path, name)) => (quote!(<Self as #path>), name),
            None => (quote!(Self), &self.ty),
        }
    }
}

fn expand_impl(args: TokenStream, mut item: ItemImpl) -> TokenStream {
    let mut errors = Errors::default();
    let args = args::parse(args, &mut errors);
    // Bundles already resolved by their callbacks (`crate::bundle`) become policy attributes.
    crate::bundle::inline_impl(&mut item, &mut errors);
    // `#[policy_order]` first, so the policy collection below never sees it: the block's list
    // serves every method without its own, a method's list replaces it (as on a trait); a
    // preset's order, inlined above, counts as its list's when it has none written.
    let block_order = crate::order::take(&mut item.attrs, &mut errors).unwrap_or_default();
    let orders: Vec<Option<crate::order::Order>> = item
        .items
        .iter_mut()
        .map(|member| match member {
            ImplItem::Fn(f) => crate::order::take(&mut f.attrs, &mut errors),
            _ => None,
        })
        .collect();
    let block = take_attributes(&mut item.attrs, &mut errors);
    let raw: Vec<_> = item
        .items
        .iter_mut()
        .map(|member| match member {
            ImplItem::Fn(f) => take_attributes(&mut f.attrs, &mut errors),
            ImplItem::Const(c) => refuse_attributes(&mut c.attrs, &mut errors),
            ImplItem::Type(t) => refuse_attributes(&mut t.attrs, &mut errors),
            _ => Vec::new(),
        })
        .collect();
    let Some(names) = names(&item, &mut errors) else {
        return [errors.to_compile_errors(), item.into_token_stream()].into_iter().collect();
    };
    let (qualified, owner) = names.qualified();
    let members = crate::validate::class::members(
        &item,
        (&block, &raw),
        (&block_order, &orders),
        (owner, &qualified),
        &mut errors,
    );
    let model = ClassModel { item, args, names, members };
    if errors.is_empty() {
        emit::expand(&model)
    } else {
        [errors.to_compile_errors(), emit::stub(&model)].into_iter().collect()
    }
}

/// The type's and the trait's names; `[R4C-CLS-004]` when the type is not a named one.
fn names(item: &ItemImpl, errors: &mut Errors) -> Option<Names> {
    let ty = match &*item.self_ty {
        Type::Path(p) if p.qself.is_none() => p.path.segments.last().map(|s| s.ident.clone()),
        _ => None,
    };
    let Some(ty) = ty else {
        errors.add(
            &item.self_ty,
            CLS_IMPL_SHAPE,
            "the class style rewrites an impl block of a named struct or enum (`impl Client { … }`): the type must \
             have a field holding its policies",
        );
        return None;
    };
    let trait_ = item.trait_.as_ref().map(|(_, path, _)| {
        let name = path.segments.last().expect("a trait path has a segment").ident.clone();
        (path.clone(), name)
    });
    Some(Names { ty, trait_ })
}
