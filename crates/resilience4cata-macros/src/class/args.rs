//! The class style's arguments: `#[resilient(policies = field)]`, optionally `vis = pub(crate)`.
//! Parsed like tokio-macros' arguments: each key once, an unknown key named with the valid ones.

use proc_macro2::{Span, TokenStream};
use syn::parse::{ParseStream, Parser};
use syn::{Ident, Token, Visibility};

use crate::diag::{self, CLS_ARGUMENT, CLS_POLICIES_MISSING, CLS_VALUE, Errors};

/// `policies = field, vis = …`, checked.
pub(crate) struct Args {
    /// The field of the type that holds its generated policies struct (a name, or an index for a
    /// tuple struct), with the user's span: rustc's errors about the field point at it.
    pub(crate) field: syn::Member,
    /// The generated structs' visibility, `pub` unless narrowed.
    pub(crate) vis: Visibility,
}

/// Parses the arguments; every mistake goes to `errors` and a usable value is still returned
/// (`policies` then names a field `policies`), so the impl block is still rewritten and nothing
/// cascades.
pub(crate) fn parse(args: TokenStream, errors: &mut Errors) -> Args {
    let mut field: Option<syn::Member> = None;
    let mut vis: Option<Visibility> = None;
    let parsed = (|input: ParseStream| {
        while !input.is_empty() {
            let key: Ident = input.call(syn::ext::IdentExt::parse_any)?;
            input.parse::<Token![=]>().map_err(|_| {
                diag::error(&key, CLS_ARGUMENT, format!("expected `{key} = …`: write `policies = <field>`"))
            })?;
            match key.to_string().as_str() {
                "policies" if field.is_some() => return Err(repeated(&key)),
                "vis" if vis.is_some() => return Err(repeated(&key)),
                "policies" => field = Some(input.parse().map_err(|_| not_a_field(input.span()))?),
                "vis" => vis = Some(visibility(input, &key)?),
                _ => return Err(unknown(&key)),
            }
            if !input.is_empty() {
                input.parse::<Token![,]>()?;
            }
        }
        Ok(())
    })
    .parse2(args.clone());
    if let Err(e) = parsed {
        errors.push(coded(e));
    }
    let field = field.unwrap_or_else(|| {
        if errors.is_empty() {
            errors.add(
                if args.is_empty() { quote::quote!(resilient) } else { args },
                CLS_POLICIES_MISSING,
                "`#[resilient]` on an impl block needs `policies = <field>`: the field of the type that holds its \
                 generated `<Type>Policies` (built with `<Type>Policies::new(&registry)`)",
            );
        }
        syn::Member::Named(Ident::new("policies", Span::call_site()))
    });
    Args { field, vis: vis.unwrap_or_else(|| syn::parse_quote!(pub)) }
}

fn repeated(key: &Ident) -> syn::Error {
    diag::error(key, CLS_ARGUMENT, format!("`{key}` set multiple times"))
}

fn unknown(key: &Ident) -> syn::Error {
    let hint = crate::validate::closest(&key.to_string(), &["policies", "vis"])
        .map(|c| format!(" (did you mean `{c}`?)"))
        .unwrap_or_default();
    diag::error(
        key,
        CLS_ARGUMENT,
        format!(
            "unknown argument `{key}` of `#[resilient]` on an impl block{hint}: it takes `policies = <field>` and \
             optionally `vis = <visibility>`"
        ),
    )
}

fn not_a_field(span: Span) -> syn::Error {
    syn::Error::new(
        span,
        format!("[{CLS_VALUE}] `policies` takes the name of a field of the type (or its index in a tuple struct)"),
    )
}

/// `vis = pub`, `pub(crate)`, `pub(super)`, `pub(in path)`, `pub(self)`; nothing else.
fn visibility(input: ParseStream, key: &Ident) -> syn::Result<Visibility> {
    let span = input.span();
    match input.parse::<Visibility>() {
        Ok(Visibility::Inherited) | Err(_) => Err(syn::Error::new(
            span,
            format!(
                "[{CLS_VALUE}] `{key}` takes a visibility for the generated structs: `pub`, `pub(crate)`, `pub(super)`, \
                 `pub(in path)` or `pub(self)`"
            ),
        )),
        Ok(vis) => Ok(vis),
    }
}

/// syn's own parse errors (a missing comma) get the argument code.
fn coded(e: syn::Error) -> syn::Error {
    let message = e.to_string();
    if message.starts_with("[R4C-") {
        e
    } else {
        syn::Error::new(e.span(), format!("[{CLS_ARGUMENT}] {message}: write `policies = <field>, vis = <visibility>`"))
    }
}
