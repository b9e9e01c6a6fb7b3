//! `impl<D: Trait> Trait for Resilient<Trait><D>`: associated items forwarded from `D`, methods
//! without policies forwarded unchanged, protected methods keeping their exact signature (sync,
//! `async fn`, or `impl Future (+ Send)`) around a chain of policy layers.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{FnArg, Ident, Pat, PatIdent, Signature, Type};

use super::wrapper::cfgs;
use super::{Callee, Ctx, Host, emitter, inner_ident, private};
use crate::model::{Form, Member, Method, Model, Receiver};

/// The trait's `impl` for the wrapper.
pub(crate) fn impl_trait(model: &Model) -> TokenStream {
    let items = model.members.iter().map(|m| match m {
        Member::Method(method) => method_item(model, method, body(model, method)),
        other => associated(model, other),
    });
    impl_block(model, items.collect(), needs_sync(model))
}

/// The `impl` beside errors: protected and unforwardable methods are `unimplemented!()`; none
/// at all when the trait's own shape is the mistake.
pub(crate) fn stub_impl(model: &Model) -> TokenStream {
    if !model.implementable {
        return TokenStream::new();
    }
    let items = model.members.iter().map(|m| match m {
        Member::Method(method) if method.layers.is_empty() && method.forwardable => {
            method_item(model, method, forward(model, method))
        }
        Member::Method(method) => {
            let body = match method.form {
                Form::ImplFuture { .. } | Form::AsyncFn => quote!(async { ::core::unimplemented!() }),
                _ => quote!(::core::unimplemented!()),
            };
            let item = method_item(model, method, body);
            quote!(#[allow(unused_variables)] #item)
        }
        other => associated(model, other),
    });
    impl_block(model, items.collect(), false)
}

/// A future that must be `Send` holds `&self` across its awaits, so the delegate must be `Sync`
/// (an `async fn` is a `Send` future unless the trait says `?Send`).
fn needs_sync(model: &Model) -> bool {
    model.members.iter().any(|m| match m {
        Member::Method(method) if !method.layers.is_empty() => match method.form {
            Form::ImplFuture { send } => send,
            Form::AsyncFn => model.send,
            _ => false,
        },
        _ => false,
    })
}

fn impl_block(model: &Model, items: Vec<TokenStream>, sync: bool) -> TokenStream {
    let (name, d, trait_name) = (&model.wrapper, &model.delegate, &model.item.ident);
    let bound = sync.then(|| quote!(+ ::core::marker::Sync));
    quote! {
        #[automatically_derived]
        impl<#d: #trait_name #bound> #trait_name for #name<#d> {
            #(#items)*
        }
    }
}

/// Associated consts and types are the delegate's.
fn associated(model: &Model, member: &Member) -> TokenStream {
    let (d, trait_name) = (&model.delegate, &model.item.ident);
    match member {
        Member::Const(c) => {
            let (cfg, ident, ty) = (cfgs(&c.attrs), &c.ident, &c.ty);
            quote!(#(#cfg)* const #ident: #ty = <#d as #trait_name>::#ident;)
        }
        Member::Type(t) => {
            let (cfg, ident) = (cfgs(&t.attrs), &t.ident);
            let (params, args, where_clause) = t.generics.split_for_impl();
            quote!(#(#cfg)* type #ident #params = <#d as #trait_name>::#ident #args #where_clause;)
        }
        Member::Method(_) | Member::Skip => TokenStream::new(),
    }
}

/// `#[cfg] <signature with plain argument names> { body }`. Always inlined: with a mere `#[inline]`,
/// LLVM keeps a breaker-protected method out of line (its refusal and error arms make it look big),
/// and the call's prologue, epilogue and result copy then cost more than the breaker itself. The
/// `breaker_closed/ours_sync` row of docs/benchmarks.md's "Results" table is measured with this
/// attribute; swap it for `#[inline]` and rerun `crates/bench/callgrind.sh breaker_closed` to see
/// the difference.
fn method_item(model: &Model, method: &Method, body: TokenStream) -> TokenStream {
    let cfg = cfgs(&method.item.attrs);
    let mut sig = signature(method);
    super::desugar::signature(&mut sig, model.send);
    quote!(#(#cfg)* #[inline(always)] #sig { #body })
}

/// The trait's signature with each argument named as in [`Method::args`].
pub(crate) fn signature(method: &Method) -> Signature {
    let mut sig = method.item.sig.clone();
    let typed = sig.inputs.iter_mut().filter_map(|a| match a {
        FnArg::Typed(t) => Some(t),
        FnArg::Receiver(_) => None,
    });
    for (input, arg) in typed.zip(&method.args) {
        input.attrs.clear();
        *input.pat = Pat::Ident(PatIdent {
            attrs: vec![],
            by_ref: None,
            mutability: None,
            ident: arg.ident.clone(),
            subpat: None,
        });
    }
    sig
}

fn body(model: &Model, method: &Method) -> TokenStream {
    if method.layers.is_empty() {
        return forward(model, method);
    }
    let host = Host {
        fields: quote!(self),
        callee: Callee::Delegate { d: model.delegate.clone(), trait_name: model.item.ident.clone() },
    };
    let block = protected(&host, method);
    match method.form {
        Form::ImplFuture { .. } | Form::AsyncFn => async_body(method, block),
        _ => block,
    }
}

/// `#[inline(always)] async move { block }`: the method's future, whose poll is always inlined into
/// the caller's.
///
/// `#[inline(always)]` on the method only inlines the function that *builds* the future; the
/// future's poll is a function of its own, which LLVM weighs like any other. The poll of even a
/// one-policy method (the delegate's future nested in ours, the state switch, the panics of a
/// resumed-after-completion future) costs more than LLVM's threshold, so it stayed out of line and
/// every awaited call paid a call, a prologue saving six registers, a jump table on the state byte
/// and the output's trip through memory. The attribute on the `async` block (accepted on stable
/// as the function's tail expression) marks that poll `alwaysinline`. The runtime keeps the rare
/// paths out of it: a retry's wait and a timeout's race against its timer are futures whose polls
/// are never inlined. The figures are in docs/benchmarks.md ("Now: issue 16's
/// targets").
///
/// A hedged method takes the attribute too: `HedgePolicy::run` is split as
/// `TimeoutPolicy::run_pinned` is (an always-inlined first poll, the race in a never-inlined
/// future).
fn async_body(_method: &Method, block: TokenStream) -> TokenStream {
    quote!(#[inline(always)] async move { #block })
}

/// The statements of a protected method: the chain of layers around one call of what `host`
/// calls, ending in the method's return value. Both styles emit their methods with it.
pub(crate) fn protected(host: &Host, method: &Method) -> TokenStream {
    let ctx = Ctx { method, layer: &method.layers[0], host };
    let chain = |layers: &[crate::model::Layer], inner| {
        layers
            .iter()
            .rev()
            .fold(inner, |inner, layer| emitter(layer.spec)(&Ctx { method, layer, host }, &layer.settings, inner))
    };
    // The keys are looked up inside the fallback (always first) and outside everything else.
    let (fallback, layers) = method.layers.split_at(usize::from(crate::policy::has_fallback(method)));
    let chained = chain(fallback, super::keys::lookups(host, method, chain(layers, innermost(host, method))));
    let rejects = method.layers.iter().any(|p| p.spec.rejects).then(|| {
        let p = private();
        let err = ctx.err_type();
        quote!(#p::require_resilience_error::<#err>();)
    });
    let returned = ctx.unwrap_returned(quote!(__r4c_result));
    let timer = timer(host, method);
    let p = private();
    quote! {
        #rejects
        let __r4c_result = #p::timed_call!(#timer, #chained);
        #returned
    }
}

/// The method's call timer: `self.__r4c_durations_<method>` (or through the class style's
/// accessor), handed to `__private::timed_call!` (around the whole call) and `timed_attempt!`
/// (around the delegate): runtime macros that, without the runtime's feature `durations`, drop it
/// and leave the expression as it is; with it, read the registry's exact clock around it.
fn timer(host: &Host, method: &Method) -> TokenStream {
    let (fields, name) = (&host.fields, super::wrapper::timer_field(method));
    quote!(#fields.#name)
}

/// One call of the delegate, as `Result<T, E>`, its arguments handed over for this attempt: an
/// owned argument is cloned per attempt when a policy may call more than once, moved otherwise.
fn innermost(host: &Host, method: &Method) -> TokenStream {
    let p = private();
    let repeats = method.layers.iter().any(|layer| crate::policy::repeats(layer.spec));
    // A hedge's attempts run side by side: its layer rebinds each owned argument to a reference.
    let hedged = crate::policy::hedged(method);
    let args = method.args.iter().map(|a| {
        let ident = &a.ident;
        match &a.ty {
            Type::Reference(r) if r.mutability.is_some() => quote!(&mut *#ident),
            Type::Reference(_) => quote!(#ident),
            ty if hedged => quote_spanned!(ty.span()=> #p::attempt_arg(#ident)),
            ty if repeats => quote_spanned!(ty.span()=> #p::attempt_arg(&#ident)),
            _ => quote!(#ident),
        }
    });
    let args = quote!(#(#args),*);
    let call = match &host.callee {
        Callee::Delegate { d, trait_name } => delegate_call(d, trait_name, method, args, method.is_async()),
        Callee::Inner { prefix } => {
            let inner = inner_ident(prefix, method);
            let awaited = method.is_async().then(|| quote!(.await));
            quote!(Self::#inner(self, #args) #awaited)
        }
    };
    let mut attempt = Ctx { method, layer: &method.layers[0], host }.wrap_attempt(call);
    // With chaos (the runtime's feature `chaos`), the injection point innermost, around the delegate.
    if super::chaos::on() {
        attempt = super::chaos::inject(&host.fields, method, attempt);
    }
    let timer = timer(host, method);
    quote!(#p::timed_attempt!(#timer, #attempt))
}

/// The unprotected method: the delegate's, called directly (an `async fn` returns the
/// delegate's future as is, so forwarding needs no `D: Sync`).
fn forward(model: &Model, method: &Method) -> TokenStream {
    let args = method.args.iter().map(|a| &a.ident);
    delegate_call(&model.delegate, &model.item.ident, method, quote!(#(#args),*), false)
}

/// `<D as Trait>::method(<receiver>, args)`, then `.await` when `awaited`.
fn delegate_call(d: &Ident, trait_name: &Ident, method: &Method, args: TokenStream, awaited: bool) -> TokenStream {
    let ident = &method.item.sig.ident;
    let receiver = match method.receiver {
        Receiver::Ref => quote!(&self.delegate,),
        Receiver::RefMut => quote!(&mut self.delegate,),
        Receiver::Value => quote!(self.delegate,),
        Receiver::None => TokenStream::new(),
        Receiver::Other => return quote!(::core::unimplemented!()),
    };
    let call = quote!(<#d as #trait_name>::#ident(#receiver #args));
    if awaited { quote!(#call.await) } else { call }
}
