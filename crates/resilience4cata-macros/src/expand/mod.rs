//! Expansion: the trait (policy attributes stripped), the wrapper struct with `new`, `delegate` and
//! `Debug` (`wrapper.rs`), and `impl Trait for Wrapper<D>` (`method.rs`), whose protected methods
//! chain one layer per policy (`retry.rs`, …), outer to inner.
//!
//! Every path is absolute (`::resilience4cata::__private::…`, `::core::…`), so the generated code
//! depends on nothing the user imported.

pub(crate) mod adaptive_limit;
pub(crate) mod bulkhead;
pub(crate) mod chaos;
#[cfg(test)]
mod chaos_tests;
pub(crate) mod circuit_breaker;
mod desugar;
pub(crate) mod fallback;
pub(crate) mod hedge;
pub(crate) mod keys;
#[cfg(test)]
mod keys_tests;
pub(crate) mod method;
pub(crate) mod rate_limiter;
pub(crate) mod retry;
#[cfg(test)]
mod tests;
pub(crate) mod timeout;
pub(crate) mod wrapper;

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::Ident;
use syn::spanned::Spanned;

use crate::model::{Layer, Method, Model, PolicySpec, Settings};

/// The whole expansion of a valid trait.
pub(crate) fn expand(model: &Model) -> TokenStream {
    let item = desugar::trait_item(&model.item, model.send);
    let wrapper = wrapper::emit(model);
    let implementation = method::impl_trait(model);
    quote!(#item #wrapper #implementation)
}

/// What is emitted beside the errors of an invalid trait: the trait, the wrapper and an `impl`
/// whose protected methods are `unimplemented!()`, so user code naming them does not cascade.
pub(crate) fn stub(model: &Model) -> TokenStream {
    let item = desugar::trait_item(&model.item, model.send);
    let wrapper = wrapper::emit_stub(model);
    let implementation = method::stub_impl(model);
    quote!(#item #wrapper #implementation)
}

/// The runtime's hidden API.
pub(crate) fn private() -> TokenStream {
    quote!(::resilience4cata::__private)
}

/// The field holding `spec`'s instance for `method`: `__r4c_retry_stock`.
pub(crate) fn field(spec: &PolicySpec, method: &Method) -> Ident {
    let name = syn::ext::IdentExt::unraw(&method.item.sig.ident);
    format_ident!("__r4c_{}_{}", spec.name, name)
}

/// A policy's layer emitter: wraps the inner expression (of type `Result<T, E>`) in the layer.
pub(crate) type Emitter = fn(&Ctx<'_>, &Settings, TokenStream) -> TokenStream;

/// The layer emitter of `spec`: `expand::<module>::layer`, for the module of the same name under
/// `policy/` (one list of both, `policy::for_each_policy!`).
pub(crate) fn emitter(spec: &PolicySpec) -> Emitter {
    macro_rules! find {
        ($($module:ident $spec:ident,)*) => {
            $(
                if ::std::ptr::eq(spec, &crate::policy::$module::$spec) {
                    return $module::layer;
                }
            )*
        };
    }
    crate::policy::for_each_policy!(find);
    unreachable!("`{}` is not in the policy table", spec.name)
}

/// What a layer emitter knows: the method, the layer it writes, and the style that hosts it.
pub(crate) struct Ctx<'a> {
    pub(crate) method: &'a Method,
    pub(crate) layer: &'a Layer,
    pub(crate) host: &'a Host,
}

/// What differs between the trait style and the class style, and nothing else: where the policy
/// fields live, and what the innermost layer calls. Every layer is shared by both styles.
pub(crate) struct Host {
    /// The expression the instance fields hang off: `self` in the wrapper, the generated accessor
    /// of the `policies = field` field in an impl block.
    pub(crate) fields: TokenStream,
    pub(crate) callee: Callee,
}

/// What the innermost layer calls once per attempt.
pub(crate) enum Callee {
    /// The wrapper's delegate: `<D as Trait>::method(&self.delegate, args…)`.
    Delegate { d: Ident, trait_name: Ident },
    /// The method's own body, moved aside by the class style: `Self::<prefix><method>(self,
    /// args…)` (see [`inner_ident`]).
    Inner { prefix: String },
}

/// The inner method holding a protected method's body in the class style: `__r4c_inner_get`
/// (inherent), `__r4c_inner_Api_get` (trait impl, so both blocks of one type can protect a `get`).
pub(crate) fn inner_ident(prefix: &str, method: &Method) -> Ident {
    let ident = &method.item.sig.ident;
    format_ident!("{prefix}{}", syn::ext::IdentExt::unraw(ident), span = ident.span())
}

impl Ctx<'_> {
    /// This policy's field, as an expression: `self.__r4c_retry_stock`, or
    /// `__r4c_policies_of_Client(self).__r4c_retry_stock` in an impl block.
    ///
    /// A keyed layer (`key = …`, SPEC §15) uses the call's hold on its key instead:
    /// `(*__r4c_key_<policy>)`, the key's own instance, looked up before every layer (`keys`).
    pub(crate) fn field(&self) -> TokenStream {
        if crate::policy::key_of(self.layer).is_some() {
            let hold = keys::hold(self.layer.spec);
            return quote!((*#hold));
        }
        let (fields, name) = (&self.host.fields, field(self.layer.spec, self.method));
        quote!(#fields.#name)
    }

    /// Whether waits are awaited (`async fn` or `impl Future`).
    pub(crate) fn is_async(&self) -> bool {
        self.method.is_async()
    }

    /// `<field>.acquire_async().await` in an async method, `<field>.acquire()` (which may block)
    /// otherwise: how the bulkhead, rate limiter and adaptive limit layers take their permit.
    pub(crate) fn acquire(&self) -> TokenStream {
        let field = self.field();
        if self.is_async() { quote!(#field.acquire_async().await) } else { quote!(#field.acquire()) }
    }

    /// The span of the method's `Result` type, where type errors about it are reported.
    pub(crate) fn ret_span(&self) -> Span {
        self.method.ret.as_ref().map_or_else(|| self.method.item.sig.ident.span(), |t| t.span())
    }

    /// `<Ret as ResultLike>::into_result(call)`, every token of it spanned on the return type, so a
    /// return type that is not a `Result` is reported once, there.
    pub(crate) fn wrap_attempt(&self, call: TokenStream) -> TokenStream {
        let ret = &self.method.ret;
        quote_spanned!(self.ret_span()=> <#ret as ::resilience4cata::__private::ResultLike>::into_result(#call))
    }

    /// `<Ret as ResultLike>::from_result(result)`, spanned like [`wrap_attempt`](Self::wrap_attempt).
    pub(crate) fn unwrap_returned(&self, result: TokenStream) -> TokenStream {
        let ret = &self.method.ret;
        quote_spanned!(self.ret_span()=> <#ret as ::resilience4cata::__private::ResultLike>::from_result(#result))
    }

    /// `<Ret as ResultLike>::Err`, spanned like [`wrap_attempt`](Self::wrap_attempt).
    pub(crate) fn err_type(&self) -> TokenStream {
        let ret = &self.method.ret;
        quote_spanned!(self.ret_span()=> <#ret as ::resilience4cata::__private::ResultLike>::Err)
    }

    /// `Err(<E as ResilienceError>::from_rejection(rejection))`: a policy's refusal as the method's
    /// error (the body requires `E: ResilienceError`, `[R4C-SIG-010]`). The path is marked cold
    /// (`core::hint::cold_path`, no instruction): LLVM then lays the layers out for the permitted
    /// call (`user_stack/ours_sync` in docs/benchmarks.md).
    pub(crate) fn refusal(&self, rejection: TokenStream) -> TokenStream {
        let p = private();
        let err = self.err_type();
        quote!({
            ::core::hint::cold_path();
            ::core::result::Result::Err(<#err as #p::ResilienceError>::from_rejection(#rejection))
        })
    }
}
