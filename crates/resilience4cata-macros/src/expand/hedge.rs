//! The hedge layer (async methods only): each attempt is the inner layers as one future, made by
//! a closure the runtime calls once per attempt and polls side by side with the others.

use proc_macro2::TokenStream;
use quote::quote;
use syn::Type;

use super::{Ctx, private};
use crate::model::Settings;

/// `self.<field>.run(move || async move { <inner> }, |e| <is CallNotPermitted>).await`, or
/// `run_counting(&mut __r4c_attempts, …)` under a `#[fallback]`, so the fallback's
/// `FallbackContext::attempts` is every attempt the hedge started, a refused one included.
///
/// The closure is `move` and holds only references (`self`, and each owned argument rebound as a
/// reference, which the attempt clones with `attempt_arg`), so every attempt's future borrows the
/// method's frame, never the closure: several are alive at once.
pub(crate) fn layer(ctx: &Ctx<'_>, _settings: &Settings, inner: TokenStream) -> TokenStream {
    let p = private();
    let field = ctx.field();
    let err = ctx.err_type();
    let owned = ctx.method.args.iter().filter(|a| !matches!(a.ty, Type::Reference(_))).map(|a| &a.ident);
    // The fallback layer outside declares `__r4c_attempts` (at 1, for a call that never got here).
    let (run, counted) = if crate::policy::has_fallback(ctx.method) {
        (
            quote!(run_counting),
            quote!({
                __r4c_attempts = 0;
                &mut __r4c_attempts
            },),
        )
    } else {
        (quote!(run), TokenStream::new())
    };
    quote! {{
        #[allow(unused_imports)]
        use #p::{ProbeFallback as _, ProbeRejection as _};
        #(let #owned = &#owned;)*
        #field
            .#run(
                #counted
                move || async move { #inner },
                |__r4c_error: &#err| (&#p::Probe(__r4c_error)).is_call_not_permitted(),
            )
            .await
    }}
}
