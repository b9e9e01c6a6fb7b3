//! The fallback layer, outermost: on the final `Err` that `apply_on` accepts and `skip_on` does not,
//! call the fallback method through the wrapper with the arguments and a `FallbackContext`.
//!
//! The attempt count comes from the layer that makes attempts: `__r4c_attempts` starts at 1 and the
//! retry layer sets it when it gives up (see `expand/retry.rs`); the hedge layer counts into it
//! every attempt it starts (see `expand/hedge.rs`). Each of the fallback's types goes
//! through a `__private` conversion spanned on the fallback's own token, so a parameter, context or
//! return type that does not match is one `[R4C-SIG-031]` there.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

use super::{Ctx, private};
use crate::model::{Setting, Settings, Value};

/// `{ let mut attempts = 1; match <inner> { Ok(v) => Ok(v), Err(e) if applies => <fallback>, Err(e) => Err(e) } }`.
pub(crate) fn layer(ctx: &Ctx<'_>, settings: &Settings, inner: TokenStream) -> TokenStream {
    let field = ctx.field();
    let Some(call) = fallback_call(ctx) else {
        // The target was reported (validation failed), so only the stub is emitted; never reached.
        return inner;
    };
    let applies = applies(settings);
    quote! {{
        #[allow(unused_mut, unused_assignments)]
        let mut __r4c_attempts: u32 = 1;
        match #inner {
            ::core::result::Result::Ok(__r4c_value) => ::core::result::Result::Ok(__r4c_value),
            ::core::result::Result::Err(__r4c_error) if #applies => {
                let __r4c_context = #field.apply(__r4c_error, __r4c_attempts);
                #call
            }
            ::core::result::Result::Err(__r4c_error) => ::core::result::Result::Err(__r4c_error),
        }
    }}
}

/// `(apply_on || apply_on_if) && !(skip_on || skip_on_if)` over `&__r4c_error`; `true` when no key
/// is written.
fn applies(settings: &Settings) -> TokenStream {
    let apply: Vec<_> = ["apply_on", "apply_on_if"].iter().filter_map(|k| settings.get(k)).map(test_error).collect();
    let skip: Vec<_> = ["skip_on", "skip_on_if"].iter().filter_map(|k| settings.get(k)).map(test_error).collect();
    let apply = if apply.is_empty() { quote!(true) } else { quote!((#(#apply)||*)) };
    let skip = (!skip.is_empty()).then(|| quote!(&& !(#(#skip)||*)));
    quote!(#apply #skip)
}

fn test_error(setting: &Setting) -> TokenStream {
    match &setting.value {
        Value::Pattern(pattern) => quote!(::core::matches!(&__r4c_error, #pattern)),
        Value::Path(predicate) => quote!(#predicate(&__r4c_error)),
        _ => unreachable!("apply_on/skip_on are patterns, *_if are paths"),
    }
}

/// `<Ret as ResultLike>::into_result(fallback_returns::<Ret, _>(<Self as Trait>::target(self, args…, ctx)))`.
fn fallback_call(ctx: &Ctx<'_>) -> Option<TokenStream> {
    let p = private();
    let method = ctx.method;
    let target = method.fallback.as_ref()?;
    let args = method.args.iter().zip(&target.params).map(|(arg, ty)| {
        let ident = &arg.ident;
        quote_spanned!(ty.span()=> #p::fallback_arg::<#ty, _>(#ident))
    });
    let context = &target.context;
    let context = quote_spanned!(context.span()=> #p::fallback_context::<#context, _>(__r4c_context));
    let (owner, ident) = (&target.owner, &target.ident);
    let mut call = quote!(#owner::#ident(self, #(#args,)* #context));
    if ctx.is_async() {
        call = quote!(#call.await);
    }
    let ret = &method.ret;
    let target_ret = &target.ret;
    let returned = quote_spanned!(target_ret.span()=> #p::fallback_returns::<#ret, #target_ret>(#call));
    Some(ctx.wrap_attempt(returned))
}
