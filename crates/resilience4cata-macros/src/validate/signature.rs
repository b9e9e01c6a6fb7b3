//! Trait and method shapes the wrapper can implement: what the generated `impl` can forward, and
//! what a protected method (one with a policy) must look like.

use proc_macro2::{TokenStream, TokenTree};
use quote::{ToTokens, format_ident};
use syn::{
    FnArg, GenericArgument, GenericParam, ItemTrait, Pat, PathArguments, ReturnType, TraitItem, TraitItemFn, Type,
    TypeParamBound, WherePredicate,
};

use crate::diag::{
    Errors, SIG_ASYNC_FORM, SIG_FUTURE_OUTPUT, SIG_GENERIC_METHOD, SIG_NOT_FORWARDABLE, SIG_NOT_RESULT, SIG_RECEIVER,
    SIG_SUPERTRAIT, SIG_TRAIT_SHAPE,
};
use crate::model::{Arg, Form, Receiver};

/// Auto traits a supertrait list may name: the wrapper has them whenever the delegate does.
const AUTO_TRAITS: &[&str] = &["Send", "Sync", "Unpin"];

/// Checks the trait itself: no generics, no `unsafe`, only auto-trait supertraits, no macro items.
/// Returns whether the wrapper can implement it (else the stub leaves the `impl` out, since it
/// would only repeat the mistake).
pub(crate) fn check_trait(item: &ItemTrait, errors: &mut Errors) -> bool {
    let before = errors.len();
    if let Some(param) = item.generics.params.first() {
        errors.add(
            param,
            SIG_TRAIT_SHAPE,
            "`#[resilient]` does not support generic traits yet: make the parameters associated types",
        );
    }
    if let Some(token) = &item.unsafety {
        errors.add(
            token,
            SIG_TRAIT_SHAPE,
            "`#[resilient]` cannot implement an `unsafe trait`: the wrapper would need `unsafe impl`",
        );
    }
    if let Some(token) = &item.auto_token {
        errors.add(token, SIG_TRAIT_SHAPE, "`#[resilient]` applies to ordinary traits, not auto traits");
    }
    item.supertraits.iter().for_each(|bound| check_auto_bound(bound, errors));
    for predicate in item.generics.where_clause.iter().flat_map(|w| &w.predicates) {
        match predicate {
            WherePredicate::Type(p) if is_self(&p.bounded_ty) => {
                p.bounds.iter().for_each(|b| check_auto_bound(b, errors))
            }
            other => errors.add(
                other,
                SIG_SUPERTRAIT,
                "`#[resilient]` supports no `where` clause on the trait except `Self: Send + Sync`",
            ),
        }
    }
    for member in &item.items {
        if let TraitItem::Macro(_) | TraitItem::Verbatim(_) = member {
            errors.add(
                member,
                SIG_NOT_FORWARDABLE,
                "`#[resilient]` cannot forward a macro-generated trait item: write the item out",
            );
        }
    }
    errors.len() == before
}

fn check_auto_bound(bound: &TypeParamBound, errors: &mut Errors) {
    let TypeParamBound::Trait(t) = bound else { return };
    let auto = t.path.segments.last().is_some_and(|s| AUTO_TRAITS.iter().any(|a| s.ident == a));
    if !auto || !matches!(t.modifier, syn::TraitBoundModifier::None) {
        errors.add(
            bound,
            SIG_SUPERTRAIT,
            format!(
                "`#[resilient]` supports only auto-trait supertraits (`Send`, `Sync`, `Unpin`), not `{}`: the wrapper \
                 cannot implement other supertraits for you; move those methods into this trait or wrap the other trait separately",
                bound.to_token_stream()
            ),
        );
    }
}

fn is_self(ty: &Type) -> bool {
    matches!(ty, Type::Path(p) if p.qself.is_none() && p.path.is_ident("Self"))
}

/// What the generated code needs to know about one method's signature.
pub(crate) struct Shape {
    pub(crate) form: Form,
    pub(crate) receiver: Receiver,
    pub(crate) args: Vec<Arg>,
    /// The `Result` type: the return type, or the future's `Output`.
    pub(crate) ret: Option<Type>,
    /// Whether the wrapper can call the delegate's method with this signature.
    pub(crate) forwardable: bool,
}

/// Reads a method's signature; `protected` methods are held to the rules of SIG-001…006.
pub(crate) fn method(f: &TraitItemFn, protected: bool, errors: &mut Errors) -> Shape {
    let mut shape = read(f);
    shape.forwardable = check_forwardable(f, shape.receiver, protected, errors);
    if protected {
        check_protected(f, shape.receiver, &shape.args, &shape.form, shape.ret.as_ref(), errors);
    }
    shape
}

/// Reads a method of a class-style impl block: nothing is forwarded there (the method keeps its
/// body), so only a protected method is held to rules: those of the trait style, and no
/// `unsafe fn` (its body would move into an `unsafe` call the macro cannot vouch for).
pub(crate) fn class_method(f: &TraitItemFn, protected: bool, errors: &mut Errors) -> Shape {
    let shape = read(f);
    if protected {
        if let Some(token) = &f.sig.unsafety {
            errors.add(token, SIG_NOT_FORWARDABLE, "a method with a resilience policy cannot be an `unsafe fn`: keep the `unsafe` call inside a safe method");
        }
        check_protected(f, shape.receiver, &shape.args, &shape.form, shape.ret.as_ref(), errors);
    }
    shape
}

/// The signature as the expansion needs it, judged by nobody yet.
fn read(f: &TraitItemFn) -> Shape {
    let sig = &f.sig;
    let (form, ret) = match (&sig.asyncness, &sig.output) {
        (Some(_), ReturnType::Type(_, ty)) => (Form::AsyncFn, Some((**ty).clone())),
        (Some(_), ReturnType::Default) => (Form::AsyncFn, None),
        (None, output) => form(output),
    };
    Shape { form, receiver: receiver(f), args: arguments(f), ret, forwardable: true }
}

fn receiver(f: &TraitItemFn) -> Receiver {
    let Some(r) = f.sig.receiver() else { return Receiver::None };
    let (reference, mutable) = match (&r.colon_token, &*r.ty) {
        (None, _) => (r.reference.is_some(), r.mutability.is_some()),
        (Some(_), Type::Reference(t)) if is_self(&t.elem) => (true, t.mutability.is_some()),
        (Some(_), ty) if is_self(ty) => (false, false),
        (Some(_), _) => return Receiver::Other,
    };
    match (reference, mutable) {
        (true, false) => Receiver::Ref,
        (true, true) => Receiver::RefMut,
        (false, _) => Receiver::Value,
    }
}

/// Arguments after the receiver; patterns other than a plain name get a generated name.
fn arguments(f: &TraitItemFn) -> Vec<Arg> {
    let typed = f.sig.inputs.iter().filter_map(|a| match a {
        FnArg::Typed(t) => Some(t),
        FnArg::Receiver(_) => None,
    });
    typed
        .enumerate()
        .map(|(i, t)| {
            let ident = match &*t.pat {
                Pat::Ident(p) if p.subpat.is_none() && p.by_ref.is_none() => p.ident.clone(),
                _ => format_ident!("__r4c_arg{}", i),
            };
            Arg { ident, ty: (*t.ty).clone() }
        })
        .collect()
}

/// Sync, `async fn` or `fn … -> impl Future`, and the `Result` type inside.
fn form(output: &ReturnType) -> (Form, Option<Type>) {
    let ty = match output {
        ReturnType::Default => return (Form::Sync, None),
        ReturnType::Type(_, ty) => ty,
    };
    let Type::ImplTrait(it) = &**ty else { return (Form::Sync, Some((**ty).clone())) };
    let future = it.bounds.iter().find_map(|b| match b {
        TypeParamBound::Trait(t) if t.path.segments.last().is_some_and(|s| s.ident == "Future") => {
            t.path.segments.last()
        }
        _ => None,
    });
    let Some(future) = future else { return (Form::ImplOther, Some((**ty).clone())) };
    let send = it.bounds.iter().any(|b| matches!(b, TypeParamBound::Trait(t) if t.path.is_ident("Send") || t.path.segments.last().is_some_and(|s| s.ident == "Send")));
    (Form::ImplFuture { send }, future_output(&future.arguments))
}

fn future_output(args: &PathArguments) -> Option<Type> {
    let PathArguments::AngleBracketed(a) = args else { return None };
    a.args.iter().find_map(|g| match g {
        GenericArgument::AssocType(t) if t.ident == "Output" => Some(t.ty.clone()),
        _ => None,
    })
}

/// What any method needs so the wrapper can forward it; `false` when it cannot.
fn check_forwardable(f: &TraitItemFn, receiver: Receiver, protected: bool, errors: &mut Errors) -> bool {
    let before = errors.len();
    let sig = &f.sig;
    if let Some(token) = &sig.unsafety {
        errors.add(
            token,
            SIG_NOT_FORWARDABLE,
            "`#[resilient]` cannot forward an `unsafe fn` (the wrapper would need an `unsafe` block)",
        );
    }
    if let (Receiver::Other, false) = (receiver, protected) {
        let r = sig.receiver().expect("Other is a receiver");
        errors.add(r, SIG_NOT_FORWARDABLE, "the wrapper can forward only `self`, `&self` and `&mut self` receivers");
    }
    let mut types: Vec<TokenStream> = sig
        .inputs
        .iter()
        .filter_map(|a| match a {
            FnArg::Typed(t) => Some(t.ty.to_token_stream()),
            FnArg::Receiver(_) => None,
        })
        .collect();
    types.push(sig.output.to_token_stream());
    if let Some(token) = types.into_iter().find_map(bare_self) {
        errors.add(
            token,
            SIG_NOT_FORWARDABLE,
            "the wrapper cannot forward a method whose signature names `Self` itself (the wrapper is not the delegate); `Self::Assoc` is fine",
        );
    }
    errors.len() == before && receiver != Receiver::Other
}

/// The first `Self` not followed by `::` or `as`.
fn bare_self(tokens: TokenStream) -> Option<TokenTree> {
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    for (i, t) in tokens.iter().enumerate() {
        match t {
            TokenTree::Ident(id) if id == "Self" => {
                let path = matches!(tokens.get(i + 1), Some(TokenTree::Punct(p)) if p.as_char() == ':');
                let cast = matches!(tokens.get(i + 1), Some(TokenTree::Ident(n)) if n == "as");
                if !path && !cast {
                    return Some(t.clone());
                }
            }
            TokenTree::Group(g) => {
                if let Some(found) = bare_self(g.stream()) {
                    return Some(found);
                }
            }
            _ => {}
        }
    }
    None
}

fn check_protected(
    f: &TraitItemFn,
    receiver: Receiver,
    args: &[Arg],
    form: &Form,
    ret: Option<&Type>,
    errors: &mut Errors,
) {
    let sig = &f.sig;
    if receiver != Receiver::Ref {
        let at = sig.receiver().map_or_else(|| sig.ident.to_token_stream(), ToTokens::to_token_stream);
        errors.add(
            at,
            SIG_RECEIVER,
            "a method with a resilience policy must take `&self`: the wrapper calls the delegate once per attempt",
        );
    }
    for param in &sig.generics.params {
        if let GenericParam::Type(_) | GenericParam::Const(_) = param {
            errors.add(param, SIG_GENERIC_METHOD, "a method with a resilience policy cannot have type or const parameters (lifetimes are fine): each method has one policy instance for one error type");
        }
    }
    if let Some(arg) = args
        .iter()
        .find(|a| a.ty.to_token_stream().into_iter().any(|t| matches!(t, TokenTree::Ident(i) if i == "impl")))
    {
        errors.add(&arg.ty, SIG_GENERIC_METHOD, "a method with a resilience policy cannot take `impl Trait` arguments (an anonymous type parameter): name a concrete type or take `&dyn Trait`");
    }
    check_return(sig, form, ret, errors);
}

fn check_return(sig: &syn::Signature, form: &Form, ret: Option<&Type>, errors: &mut Errors) {
    match (form, ret) {
        (Form::ImplOther, Some(ty)) => errors.add(ty, SIG_ASYNC_FORM, "a method with a resilience policy returns `Result<T, E>`, is an `async fn`, or returns `impl Future<Output = Result<T, E>>` (optionally `+ Send`)"),
        (Form::ImplFuture { .. }, None) => {
            errors.add(&sig.output, SIG_FUTURE_OUTPUT, "write the future's output: `impl Future<Output = Result<T, E>>`, so the wrapper knows what it retries")
        }
        (Form::ImplFuture { .. }, Some(_)) => check_future_bounds(&sig.output, errors),
        (_, None) => errors.add(&sig.ident, SIG_NOT_RESULT, "a method with a resilience policy must return `Result<T, E>`, but this one returns nothing"),
        (_, Some(ty)) => {
            if let Type::Path(p) = ty {
                let last = p.path.segments.last().map(|s| s.ident.to_string()).unwrap_or_default();
                if matches!(last.as_str(), "Pin" | "BoxFuture" | "LocalBoxFuture") {
                    errors.add(ty, SIG_ASYNC_FORM, "a boxed future is not supported: write `async fn` or return `impl Future<Output = Result<T, E>> + Send`");
                }
            }
        }
    }
}

/// `impl Future<Output = …>` may add `Send` and lifetimes, nothing else.
fn check_future_bounds(output: &ReturnType, errors: &mut Errors) {
    let ReturnType::Type(_, ty) = output else { return };
    let Type::ImplTrait(it) = &**ty else { return };
    for bound in &it.bounds {
        let TypeParamBound::Trait(t) = bound else { continue };
        let last = t.path.segments.last().map(|s| s.ident.to_string()).unwrap_or_default();
        if last != "Future" && last != "Send" {
            errors.add(bound, SIG_ASYNC_FORM, format!("the wrapper's future cannot promise `{last}`: a protected `impl Future` may add only `+ Send` and lifetimes"));
        }
    }
}
