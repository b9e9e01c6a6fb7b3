//! `#[fallback(method = …)]` against the whole trait: the named method exists (`R4C-SIG-030`),
//! is not the method itself nor leads back to it through other fallbacks (`R4C-SIG-032`), and has
//! the method's shape plus a last `FallbackContext<E>` (`R4C-SIG-031`). What only type checking
//! can tell (a parameter of another type, another `E` or return type) is reported by the runtime's
//! `#[diagnostic::on_unimplemented]` traits, with the same code, on the fallback's own tokens.

use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::visit_mut::VisitMut;
use syn::{Ident, Lifetime, Type};

use super::value::closest;
use crate::diag::{ATR_PLACEMENT, Errors, SIG_FALLBACK_ITSELF, SIG_FALLBACK_NOT_FOUND, SIG_FALLBACK_SIGNATURE, error};
use crate::model::{FallbackTarget, Form, Member, Method, Origin, Receiver, Setting, Value};
use crate::policy::fallback::FALLBACK;

/// `#[fallback]` on the trait itself: one method cannot serve every signature.
pub(super) fn refuse_on_trait(trait_level: &mut Vec<super::Judged>, errors: &mut Errors) {
    trait_level.retain(|judged| {
        if !std::ptr::eq(judged.spec, &FALLBACK) {
            return true;
        }
        if let Some(written) = &judged.settings.attribute {
            errors.add(
                &written.path,
                ATR_PLACEMENT,
                "`#[fallback]` applies to a method, not to the whole trait: each method needs a fallback with its \
                 own parameters and return type; write `#[fallback(method = …)]` on each method",
            );
        }
        false
    });
}

/// Resolves every method's fallback target, reporting what is wrong with it.
/// `owner` is the trait (or type) the methods belong to, as messages name it; `qualified` what a
/// call is made on (see [`FallbackTarget::owner`]); `class`: the methods are an `impl` block's (class
/// style), not a trait's.
pub(super) fn resolve(
    (owner, qualified, class): (&Ident, &TokenStream, bool),
    members: &mut [Member],
    errors: &mut Errors,
) {
    let methods: Vec<&Method> = members
        .iter()
        .filter_map(|m| match m {
            Member::Method(m) => Some(&**m),
            _ => None,
        })
        .collect();
    let targets: Vec<Option<FallbackTarget>> =
        methods.iter().map(|m| target_of((owner, qualified, class), &methods, m, errors)).collect();
    let mut targets = targets.into_iter();
    for member in members.iter_mut() {
        if let Member::Method(m) = member {
            m.fallback = targets.next().flatten();
        }
    }
}

/// The `method = …` setting of `method`'s fallback, if it has one.
fn named(method: &Method) -> Option<(&syn::ExprPath, &Setting)> {
    let policy = method.layers.iter().find(|p| std::ptr::eq(p.spec, &FALLBACK))?;
    let setting = policy.settings.get("method")?;
    match &setting.value {
        Value::Path(path) => Some((path, setting)),
        _ => None,
    }
}

fn target_of(
    (owner, qualified, class): (&Ident, &TokenStream, bool),
    methods: &[&Method],
    method: &Method,
    errors: &mut Errors,
) -> Option<FallbackTarget> {
    let (path, setting) = named(method)?;
    debug_assert_eq!(setting.origin, Origin::Method, "trait-level fallbacks are refused");
    let own = &method.item.sig.ident;
    let Some(name) = path.path.get_ident().filter(|_| path.qself.is_none()) else {
        errors.add(
            path,
            SIG_FALLBACK_NOT_FOUND,
            format!("`method` names a method of `{}` by its name alone, not a path", owner),
        );
        return None;
    };
    let Some(target) = methods.iter().copied().find(|m| same_name(&m.item.sig.ident, name)) else {
        errors.push(not_found((owner, class), methods, own, name));
        return None;
    };
    if std::ptr::eq(target, method) {
        errors.add(name, SIG_FALLBACK_ITSELF, format!("`{own}` cannot be its own fallback: calling it again on failure would repeat the call it replaces; name another method of `{}`", owner));
        return None;
    }
    if let Some((cycle, first)) = cycle_from(methods, method) {
        // One error per circle, on its first method; the others stay silent.
        if first {
            errors.add(name, SIG_FALLBACK_ITSELF, format!("the fallbacks `{}` lead back to `{own}`, so a failure would call them in a circle; end the chain with a method without `#[fallback]`", cycle.join(" → ")));
        }
        return None;
    }
    let before = errors.len();
    check_signature(method, target, errors);
    (errors.len() == before).then(|| FallbackTarget {
        owner: qualified.clone(),
        ident: target.item.sig.ident.clone(),
        params: target.args[..method.args.len()].iter().map(|a| erased(&a.ty)).collect(),
        context: erased(&target.args[method.args.len()].ty),
        ret: erased(target.ret.as_ref().expect("checked")),
    })
}

fn same_name(a: &Ident, b: &Ident) -> bool {
    syn::ext::IdentExt::unraw(a) == syn::ext::IdentExt::unraw(b)
}

/// `[R4C-SIG-030]`: where the fallback must be (the same trait, or the same `impl` block: a method
/// of the type in another block is not seen by the macro), the closest name and the other methods.
fn not_found((owner, class): (&Ident, bool), methods: &[&Method], own: &Ident, name: &Ident) -> syn::Error {
    let names: Vec<String> =
        methods.iter().map(|m| m.item.sig.ident.to_string()).filter(|n| n != &own.to_string()).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let hint = closest(&name.to_string(), &refs).map(|c| format!(" (did you mean `{c}`?)")).unwrap_or_default();
    let listed = if names.is_empty() {
        "none".to_owned()
    } else {
        names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
    };
    let message = if class {
        format!(
            "`{name}` is not a method of this `impl` block of `{owner}`{hint}: a fallback must be defined in the \
             same `impl` block as the method it serves (the block's other methods: {listed})"
        )
    } else {
        format!(
            "`{name}` is not a method of the trait `{owner}`{hint}: a fallback must be a method of the same trait \
             as the method it serves (the trait's other methods: {listed})"
        )
    };
    error(name, SIG_FALLBACK_NOT_FOUND, message)
}

/// The chain of fallbacks from `start`, if it comes back to `start`, and whether `start` is the
/// circle's first method in declaration order (the one that reports it).
fn cycle_from(methods: &[&Method], start: &Method) -> Option<(Vec<String>, bool)> {
    let index = |m: &Method| methods.iter().position(|x| std::ptr::eq(*x, m));
    let mut chain = vec![start.item.sig.ident.to_string()];
    let mut current = start;
    for _ in 0..methods.len() {
        let (path, _) = named(current)?;
        let name = path.path.get_ident()?;
        let next = methods.iter().copied().find(|m| same_name(&m.item.sig.ident, name))?;
        if std::ptr::eq(next, start) {
            let first = chain.iter().filter_map(|n| methods.iter().position(|m| m.item.sig.ident == n)).min();
            let is_first = first == index(start);
            chain.push(start.item.sig.ident.to_string());
            return Some((chain, is_first));
        }
        if std::ptr::eq(next, current) {
            return None;
        }
        chain.push(next.item.sig.ident.to_string());
        current = next;
    }
    None
}

/// What the macro can see of the fallback's signature: receiver, generics, parameter count, the
/// context parameter's type name, the form and a return type.
fn check_signature(method: &Method, target: &Method, errors: &mut Errors) {
    let (own, sig) = (&method.item.sig.ident, &target.item.sig);
    let wrong = |errors: &mut Errors, node: &dyn ToTokens, what: String| {
        errors.add(node, SIG_FALLBACK_SIGNATURE, format!("`{}` cannot be the fallback of `{own}`: {what}", sig.ident));
    };
    if target.receiver != Receiver::Ref {
        let at = sig.receiver().map_or_else(|| sig.ident.to_token_stream(), ToTokens::to_token_stream);
        wrong(errors, &at, "it must take `&self`, as the method does".to_owned());
    }
    if let Some(param) = sig.generics.type_params().next() {
        wrong(errors, param, "it must not have type parameters".to_owned());
    }
    let expected = method.args.len() + 1;
    if target.args.len() != expected {
        let at = sig.inputs.to_token_stream();
        let at = if at.is_empty() { sig.ident.to_token_stream() } else { at };
        wrong(
            errors,
            &at,
            format!(
                "it takes {} parameter(s) after `&self`, but needs {expected}: the {} of `{own}`, then `FallbackContext<E>`",
                target.args.len(),
                method.args.len()
            ),
        );
    } else if !names_context(&target.args[method.args.len()].ty) {
        let ty = &target.args[method.args.len()].ty;
        wrong(
            errors,
            ty,
            format!(
                "its last parameter must be `FallbackContext<E>` (with `E` the error type of `{own}`), not `{}`",
                ty.to_token_stream()
            ),
        );
    }
    check_form(method, target, &wrong, errors);
}

fn check_form(
    method: &Method,
    target: &Method,
    wrong: &dyn Fn(&mut Errors, &dyn ToTokens, String),
    errors: &mut Errors,
) {
    let sig = &target.item.sig;
    let form = |m: &Method| if m.is_async() { "async" } else { "sync" };
    if method.is_async() != target.is_async() || target.form == Form::ImplOther {
        let at = sig.asyncness.map_or_else(|| sig.ident.to_token_stream(), |a| a.to_token_stream());
        let what = format!(
            "it is {}, but `{}` is {}: a fallback has the same form as its method",
            form(target),
            method.item.sig.ident,
            form(method)
        );
        return wrong(errors, &at, what);
    }
    if method.form == (Form::ImplFuture { send: true }) && target.form == (Form::ImplFuture { send: false }) {
        let what =
            format!("its future must be `+ Send` too, or the future of `{}` could not be", method.item.sig.ident);
        return wrong(errors, &sig.output, what);
    }
    if target.ret.is_none() {
        wrong(errors, &sig.ident, format!("it must return the same `Result` as `{}`", method.item.sig.ident));
    }
}

/// Whether `ty` is spelled `…FallbackContext<…>`.
fn names_context(ty: &Type) -> bool {
    match ty {
        Type::Path(p) => p.path.segments.last().is_some_and(|s| s.ident == "FallbackContext"),
        Type::Group(g) => names_context(&g.elem),
        _ => false,
    }
}

/// `ty` with every lifetime replaced by `'_`, so it can be named inside the generated body (where
/// the fallback's own lifetime names are not in scope) and is inferred there.
fn erased(ty: &Type) -> Type {
    struct Erase;
    impl VisitMut for Erase {
        fn visit_lifetime_mut(&mut self, lifetime: &mut Lifetime) {
            *lifetime = Lifetime::new("'_", lifetime.span());
        }
    }
    let mut ty = ty.clone();
    Erase.visit_type_mut(&mut ty);
    ty
}
