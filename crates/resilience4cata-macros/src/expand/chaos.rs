//! Fault injection (SPEC §17): whether the expansion has injection points, which the runtime's
//! feature `chaos` decides by turning on this crate's feature of the same name. Off, nothing of
//! chaos is emitted, so the expansion is token for token what it was before chaos existed.

#[cfg(test)]
thread_local! {
    /// A test's choice, over the feature.
    static FORCED: std::cell::Cell<Option<bool>> = const { std::cell::Cell::new(None) };
}

/// Whether protected methods get an injection point.
pub(crate) fn on() -> bool {
    #[cfg(test)]
    if let Some(forced) = FORCED.with(std::cell::Cell::get) {
        return forced;
    }
    cfg!(feature = "chaos")
}

/// Runs `f` with the injection points on or off, whatever the feature.
#[cfg(test)]
pub(crate) fn with<R>(chaos: bool, f: impl FnOnce() -> R) -> R {
    FORCED.with(|c| c.set(Some(chaos)));
    let out = f();
    FORCED.with(|c| c.set(None));
    out
}

use proc_macro2::{Span, TokenStream, TokenTree};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

use crate::model::Method;

/// The span of the method's return type, which every token naming the error type carries: a
/// return type that is not a `Result` is then reported once, there (the same diagnostic as the
/// policies' own, which the compiler shows once).
fn ret_span(method: &Method) -> Span {
    method.ret.as_ref().map_or_else(|| method.item.sig.ident.span(), |t| t.span())
}

/// `<Ret as ResultLike>::Err`: the method's error type, which the runtime's probe asks for its
/// unit variants by name.
fn err_type(method: &Method) -> TokenStream {
    let ret = &method.ret;
    quote_spanned!(ret_span(method)=> <#ret as ::resilience4cata::__private::ResultLike>::Err)
}

/// Whether the return type names `Self` (`Result<u32, Self::Error>`): then the error type is known
/// only where the trait is implemented, not in the wrapper's constructor.
fn names_self(method: &Method) -> bool {
    fn walk(tokens: TokenStream) -> bool {
        tokens.into_iter().any(|t| match t {
            TokenTree::Ident(ident) => ident == "Self",
            TokenTree::Group(group) => walk(group.stream()),
            _ => false,
        })
    }
    walk(method.ret.to_token_stream())
}

/// `__r4c_chaos_<method>`: the field of the method's injection point.
pub(crate) fn field(method: &Method) -> syn::Ident {
    format_ident!("__r4c_chaos_{}", syn::ext::IdentExt::unraw(&method.item.sig.ident))
}

/// The field's type.
pub(crate) fn field_ty() -> TokenStream {
    quote!(::resilience4cata::__private::ChaosPolicy)
}

/// The injection point's construction in the method's constructor, under `id` (the scoped derived
/// id): `R4C-REG-003` there when the configured fault is no unit variant of the error type.
pub(crate) fn instance(method: &Method, id: TokenStream) -> TokenStream {
    let is_async = method.is_async();
    if names_self(method) {
        // The error type is an associated type of the trait: its names are not checked at `new`
        // (a fault it lacks injects nothing; docs/chaos.md).
        return quote! {
            ::resilience4cata::__private::chaos_point_unchecked(
                registry,
                &::resilience4cata::__private::scoped(__r4c_scope, #id),
                #is_async,
            )?
        };
    }
    let err = err_type(method);
    // The call's tokens on the return type's span: a return type that is not a `Result` is
    // reported once. (The `use` keeps the macro's span: a trait import the probe does not pick is
    // then not reported as unused.)
    let call = quote_spanned! {ret_span(method)=>
        ::resilience4cata::__private::chaos_point::<#err>(
            registry,
            &::resilience4cata::__private::scoped(__r4c_scope, #id),
            #is_async,
            (&::resilience4cata::__private::Faults::<#err>::new()).has(),
        )?
    };
    quote! {{
        use ::resilience4cata::__private::{FaultsByName as _, NoFaultsByName as _};
        #call
    }}
}

/// The injection point around one call of the delegate (`attempt`, a `Result<T, E>`), reached
/// through `fields` (`self`, or the class style's accessor). While no chaos instance of the process
/// is enabled, one relaxed load of a static and one branch, then `attempt`; past it, out of line,
/// the instance's switch, the draw's delay on the registry's clock, then its fault instead of the
/// delegate. The async injection awaits one small future (its delay boxed), so the method's own
/// future does not grow by a sleep's.
pub(crate) fn inject(fields: &TokenStream, method: &Method, attempt: TokenStream) -> TokenStream {
    let (field, err) = (field(method), err_type(method));
    let p = quote!(::resilience4cata::__private);
    let span = ret_span(method);
    // Every token of the maker on the return type's span, its path too: a path that starts on the
    // macro's span would report a return type that is not a `Result` a second time, at
    // `#[resilient]`.
    let maker = quote_spanned!(span=> (&::resilience4cata::__private::Faults::<#err>::new()).maker());
    let injected = match method.is_async() {
        true => quote_spanned!(span=> #fields.#field.inject_async(#maker).await),
        false => quote_spanned!(span=> #fields.#field.inject(#maker)),
    };
    // A labelled block: the fault leaves it with `break`, so the pass path carries no `Option` of
    // the fault into the attempt. Its tokens on the return type's span (a return type that is not
    // a `Result` is reported once); the `use`, inside the `if` (whose type names no error type),
    // keeps the macro's (no unused-import lint on the user's tokens).
    let uses = quote!(use #p::{FaultsByName as _, NoFaultsByName as _};);
    quote_spanned! {span=>
        '__r4c_chaos: {
            if #p::ChaosPolicy::anywhere() {
                #uses
                if let ::core::option::Option::Some(__r4c_fault) = #injected {
                    break '__r4c_chaos ::core::result::Result::Err(__r4c_fault);
                }
            }
            #attempt
        }
    }
}
