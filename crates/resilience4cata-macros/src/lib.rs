//! The macros of [resilience4cata](https://docs.rs/resilience4cata): `#[resilient]` on a trait and
//! `#[derive(ResilienceError)]`. Use them through the `resilience4cata` crate, which re-exports
//! both; the generated code calls its hidden `__private` API.
//!
//! The attribute is a pipeline: `parse` (syntax, keeping every token for diagnostics) → `validate`
//! (values against the policy tables of `policy`, trait/method merge, signatures) → `expand` (the
//! wrapper and one layer per policy). Every compile error carries an `[R4C-…]` code, listed in
//! `docs/errors.md`, and points at the offending token.
#![forbid(unsafe_code)]
#![warn(missing_docs, unreachable_pub)]

extern crate proc_macro;

mod derive;
mod diag;
mod expand;
mod parse;
mod policy;
mod validate;

use proc_macro::TokenStream;

/// Generates `Resilient<Trait><D>`, a wrapper that implements the trait by calling a delegate
/// through the policies declared on the trait's methods. See the `resilience4cata` crate docs.
#[proc_macro_attribute]
pub fn resilient(args: TokenStream, input: TokenStream) -> TokenStream {
    resilient2(args.into(), input.into()).into()
}

/// Implements `ResilienceError` for an enum with one `#[rejection]` variant holding a `Rejection`.
#[proc_macro_derive(ResilienceError, attributes(rejection))]
pub fn derive_resilience_error(input: TokenStream) -> TokenStream {
    derive::derive(input.into()).into()
}

/// parse → validate → expand; on any mistake, the errors beside a stub so nothing cascades.
fn resilient2(args: proc_macro2::TokenStream, input: proc_macro2::TokenStream) -> proc_macro2::TokenStream {
    let mut errors = diag::Errors::default();
    let parsed = match parse::parse_trait(args, input, &mut errors) {
        Ok(parsed) => parsed,
        Err(unchanged) => return [errors.to_compile_errors(), unchanged].into_iter().collect(),
    };
    let model = validate::validate(parsed, &mut errors);
    if errors.is_empty() {
        expand::expand(&model)
    } else {
        [errors.to_compile_errors(), expand::stub(&model)].into_iter().collect()
    }
}
