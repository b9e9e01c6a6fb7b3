//! The retry layer: a `loop` around the inner layers that asks the policy only after a failure.
//! A sync method without a classifier makes its first attempt before the loop, straight-line, and
//! enters the loop only after a failure (see [`Rounds::Peeled`]).
//!
//! Without a classifier, `Ok` leaves the loop at once; an `Err` is not retried when it is an open
//! breaker's refusal (found by autoref specialisation, whatever the patterns say), matches
//! `abort_on` / `abort_on_if`, or misses `retry_on` / `retry_on_if` (when any is given): it gives
//! up as `Refused` when it carries a policy's refusal (`Failure::not_retried`), else as
//! `NotRetryable`; otherwise it is `Retryable`. With a classifier, its `Verdict` decides for `Ok`
//! and `Err` alike (an open breaker's refusal under `Retry` gives up as `Refused`).
//!
//! The wait (SPEC §7.1, "Delay from the failure"): with `delay_from = f`, `f(&error, attempt,
//! computed)` decides it for an `Err`; without, the policy is handed the rejection the probe finds
//! in the error, so a rate limiter's refusal waits at least its `retry_after`. Async rounds decide
//! in a statement of their own before awaiting, so no borrow of the error lives across the await.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

use super::{Ctx, private};
use crate::model::{Setting, Settings, Value};

/// `{ let retry = &self.<field>; let mut call = retry.start(); loop { … } }`, an expression of
/// type `Result<T, E>` around `inner`.
pub(crate) fn layer(ctx: &Ctx<'_>, settings: &Settings, inner: TokenStream) -> TokenStream {
    let p = private();
    let field = ctx.field();
    // With a fallback outside, the attempts made so far go to it when the loop ends on a failure:
    // all of them after giving up (the refused or unretryable one included), plus the current one
    // when a classifier accepts an `Err` as it is.
    let (gave_up, accepted) = if crate::policy::has_fallback(ctx.method) {
        (
            quote!(__r4c_attempts = __r4c_call.attempts();),
            quote!(__r4c_attempts = __r4c_call.attempts().saturating_add(1);),
        )
    } else {
        (TokenStream::new(), TokenStream::new())
    };
    // A policy ordered between the fallback and the retry (`#[policy_order(Timeout, Retry)]`) may
    // end the call mid-loop: then each attempt reports itself as it starts.
    let starting = crate::order::cut_short(ctx.method, ctx.layer)
        .then(|| quote!(__r4c_attempts = __r4c_call.attempts().saturating_add(1);));
    if !ctx.is_async() && settings.get("classifier").is_none() {
        let ask = |give_up| ask(ctx, settings, Subject::Error, give_up);
        let rounds = by_error(settings, inner, ask, gave_up, Rounds::Peeled { starting });
        return quote! {{
            #[allow(unused_imports)]
            use #p::{ProbeFallback as _, ProbeRejection as _};
            let __r4c_retry = &#field;
            let __r4c_call = __r4c_retry.start();
            #rounds
        }};
    }
    let round = match settings.get("classifier") {
        Some(classifier) => {
            let again = |give_up: TokenStream| ask(ctx, settings, Subject::Result, give_up);
            classified(classifier, settings.get("on_exhausted_result"), inner, again, [gave_up, accepted])
        }
        None => by_error(settings, inner, |give_up| ask(ctx, settings, Subject::Error, give_up), gave_up, Rounds::Loop),
    };
    quote! {{
        #[allow(unused_imports)]
        use #p::{ProbeFallback as _, ProbeRejection as _};
        let __r4c_retry = &#field;
        let mut __r4c_call = __r4c_retry.start();
        loop { #starting #round }
    }}
}

/// What the round holds when it asks the retry: the `Err` itself, or the classified `Result`.
#[derive(Clone, Copy)]
enum Subject {
    Error,
    Result,
}

impl Subject {
    /// The local the round holds: the `Err`'s error, or the classified `Result`.
    fn held(self) -> TokenStream {
        match self {
            Subject::Error => quote!(__r4c_error),
            Subject::Result => quote!(__r4c_result),
        }
    }
}

/// The statement "go round again, or `give_up`" (`give_up` breaks out of the loop with the held
/// failure): decides the wait (from the failure), waits, and runs `give_up` when the retry says no.
fn ask(ctx: &Ctx<'_>, settings: &Settings, subject: Subject, give_up: TokenStream) -> TokenStream {
    let p = private();
    let args = quote!(&mut __r4c_call, __r4c_failure);
    // `from(method)`: the policy's `…_from` call, handed the rejection the probe finds in an `Err`
    // (in a match arm, so the probe's temporary outlives the call).
    let from = |method: TokenStream| match subject {
        Subject::Error => quote!(__r4c_retry.#method(#args, (&#p::Probe(&__r4c_error)).rejection())),
        Subject::Result => quote! {
            match &__r4c_result {
                ::core::result::Result::Err(__r4c_error) => {
                    __r4c_retry.#method(#args, (&#p::Probe(__r4c_error)).rejection())
                }
                ::core::result::Result::Ok(_) => __r4c_retry.#method(#args, ::core::option::Option::None),
            }
        },
    };
    let hook = settings.get("delay_from").map(|s| match &s.value {
        Value::Path(path) => path.clone(),
        _ => unreachable!("delay_from is a path"),
    });
    // `with(method)`: the hook's call for an `Err` (a classified `Ok` takes the computed wait).
    let with = |method: TokenStream, hook: &syn::ExprPath| {
        // Through `DelayFrom`, so a hook of another signature is `[R4C-SIG-040]` on the path.
        let adjust = |error: TokenStream| {
            let call = quote_spanned!(hook.span()=> #p::delay_from(#error, #hook, __r4c_attempt, __r4c_computed));
            quote!(|__r4c_attempt, __r4c_computed| #call)
        };
        match subject {
            Subject::Error => {
                let adjust = adjust(quote!(&__r4c_error));
                quote!(__r4c_retry.#method(#args, #adjust))
            }
            Subject::Result => {
                let adjust = adjust(quote!(__r4c_error));
                let plain = format_ident!("{}", method.to_string().replace("_with", "_from"));
                quote! {
                    match &__r4c_result {
                        ::core::result::Result::Err(__r4c_error) => __r4c_retry.#method(#args, #adjust),
                        ::core::result::Result::Ok(_) => __r4c_retry.#plain(#args, ::core::option::Option::None),
                    }
                }
            }
        }
    };
    if !ctx.is_async() {
        let again = match &hook {
            Some(hook) => with(quote!(retry_after_with), hook),
            None => from(quote!(retry_after_from)),
        };
        return quote!(if !#again { #give_up });
    }
    // The zero-wait quick path first, so the common retry builds no future. The wait holds the
    // failure and hands it back only to give up with it, so the generated future keeps nothing of
    // its own across this await (see `__private::wait_holding`).
    let (quick, decide) = match &hook {
        Some(hook) => (quote!(false), with(quote!(decide_with), hook)),
        None => (from(quote!(retry_now_from)), from(quote!(decide_from))),
    };
    let held = subject.held();
    // The retry is borrowed again from `self`, which the method's future holds anyway: the binding
    // before the loop then ends at `start()` and is not kept in the future across the attempt's
    // await, which a first attempt that succeeds never needs.
    let field = ctx.field();
    quote! {
        let __r4c_retry = &#field;
        let __r4c_quick = #quick;
        let __r4c_wait = if __r4c_quick { ::core::option::Option::None } else { #decide };
        if !__r4c_quick {
            match __r4c_wait {
                ::core::option::Option::Some(__r4c_wait) => {
                    if let ::core::result::Result::Err(__r4c_held) =
                        #p::wait_holding(__r4c_retry, &__r4c_call, __r4c_wait, #held).await
                    {
                        let #held = __r4c_held;
                        #give_up
                    }
                }
                ::core::option::Option::None => { #give_up }
            }
        }
    }
}

/// The rounds without a classifier: `Ok` breaks out; an `Err` is judged by the patterns, then the
/// retry is asked (`again`). [`Rounds::Loop`] is one round, the body of the caller's `loop`;
/// [`Rounds::Peeled`] is the whole retry of a sync method, its first attempt before the loop.
fn by_error(
    settings: &Settings,
    inner: TokenStream,
    again: impl FnOnce(TokenStream) -> TokenStream,
    gave_up: TokenStream,
    rounds: Rounds,
) -> TokenStream {
    let failure = failure_by_patterns(settings);
    let again = again(quote! {
        #gave_up
        break ::core::result::Result::Err(__r4c_error);
    });
    // `match <inner> { Ok(v) => break [label] Ok(v), Err(__r4c_error) => <on_error> }` (`on_error`
    // brings its own comma when it is an expression).
    let attempt = |label: Option<TokenStream>, on_error: TokenStream| {
        quote! {
            match #inner {
                ::core::result::Result::Ok(__r4c_value) => break #label ::core::result::Result::Ok(__r4c_value),
                ::core::result::Result::Err(__r4c_error) => #on_error
            }
        }
    };
    let Rounds::Peeled { starting } = rounds else {
        return attempt(None, quote!({ #failure #again }));
    };
    let first = attempt(Some(quote!('__r4c_retry)), quote!(__r4c_error,));
    let next = attempt(None, quote!(__r4c_error,));
    quote! {
        '__r4c_retry: {
            #starting
            let mut __r4c_failed = #first;
            // Mutable from here: the call's state goes to memory (the policy's slow path takes
            // it by reference) only once an attempt failed.
            let mut __r4c_call = __r4c_call;
            loop {
                {
                    let __r4c_error = __r4c_failed;
                    #failure
                    #again
                }
                #starting
                __r4c_failed = #next;
            }
        }
    }
}

/// The shapes of [`by_error`]'s rounds.
enum Rounds {
    /// One round, the body of a `loop` around the whole attempt.
    Loop,
    /// The rounds of a sync method without a classifier, its first attempt before the loop: a
    /// first attempt that succeeds leaves the labelled block straight-line, without entering the
    /// loop, so the loop's cost (the inner layers' fields hoisted into registers, spilled to the
    /// stack under register pressure) is paid only after a failure. The loop judges the failure it
    /// holds, asks the retry, then makes the next attempt; the failure is moved into the judging
    /// block, so it drops where a round of a loop around the whole attempt drops it: after the
    /// retry's answer (and wait), before the next attempt starts. (`user_stack/ours_sync` in
    /// docs/benchmarks.md.) `starting` opens each attempt (see [`layer`]).
    Peeled { starting: Option<TokenStream> },
}

/// `let __r4c_failure = …;`: how a round without a classifier judges `__r4c_error` (an open
/// breaker's refusal and `abort_on` are not retryable, nor an error outside a given `retry_on`;
/// a policy's refusal among them gives up as `Refused`).
fn failure_by_patterns(settings: &Settings) -> TokenStream {
    let p = private();
    let abort = [settings.get("abort_on"), settings.get("abort_on_if")].into_iter().flatten().map(test_error);
    let retry: Vec<_> =
        [settings.get("retry_on"), settings.get("retry_on_if")].into_iter().flatten().map(test_error).collect();
    let outside_retry_on = (!retry.is_empty()).then(|| quote!(|| !(#(#retry)||*)));
    quote! {
        let __r4c_failure = if (&#p::Probe(&__r4c_error)).is_call_not_permitted() #(|| #abort)* #outside_retry_on {
            #p::Failure::not_retried((&#p::Probe(&__r4c_error)).rejection())
        } else {
            #p::Failure::Retryable
        };
    }
}

/// `matches!(&error, <pattern>)` or `predicate(&error)`.
fn test_error(setting: &Setting) -> TokenStream {
    match &setting.value {
        Value::Pattern(pattern) => quote!(::core::matches!(&__r4c_error, #pattern)),
        Value::Path(predicate) => quote!(#predicate(&__r4c_error)),
        _ => unreachable!("retry_on/abort_on are patterns, *_if are paths"),
    }
}

/// One round with a classifier: `Success` breaks out, `Retry` is retryable (an open breaker's
/// refusal excepted), `Fail` gives up; a rejected `Ok` left at the end goes through
/// `on_exhausted_result` when given.
fn classified(
    classifier: &Setting,
    exhausted: Option<&Setting>,
    inner: TokenStream,
    again: impl FnOnce(TokenStream) -> TokenStream,
    [gave_up, accepted]: [TokenStream; 2],
) -> TokenStream {
    let p = private();
    let Value::Path(classifier) = &classifier.value else { unreachable!("classifier is a path") };
    let give_up = match exhausted.map(|s| &s.value) {
        Some(Value::Path(map)) => quote! {
            match __r4c_result {
                ::core::result::Result::Ok(__r4c_value) => #map(__r4c_value),
                ::core::result::Result::Err(__r4c_error) => ::core::result::Result::Err(__r4c_error),
            }
        },
        _ => quote!(__r4c_result),
    };
    let again = again(quote! {
        #gave_up
        break #give_up;
    });
    quote! {
        let __r4c_result = #inner;
        let __r4c_failure = match #classifier(&__r4c_result) {
            #p::Verdict::Success => {
                #accepted
                break __r4c_result;
            }
            #p::Verdict::Retry => match &__r4c_result {
                ::core::result::Result::Err(__r4c_error) if (&#p::Probe(__r4c_error)).is_call_not_permitted() => {
                    #p::Failure::Refused
                }
                _ => #p::Failure::Retryable,
            },
            #p::Verdict::Fail => #p::Failure::ClassifierFailed,
            // `Verdict` is `#[non_exhaustive]`: a verdict added later gives up as `Fail` does until
            // this expansion learns it.
            #[allow(unreachable_patterns)]
            _ => #p::Failure::ClassifierFailed,
        };
        #again
    }
}
