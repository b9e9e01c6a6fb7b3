//! `bundle! { … }`: the definitions of bundles (see `crate::bundle` for the mechanism). Each entry
//! is parsed, its attributes judged as `#[resilient]` would judge them on a method (a faulty one
//! reported once, here, and left out), and emitted as one hidden `macro_rules!` and one `use`.
//! Above `validate`, whose judging it reuses; the uses' side (`crate::bundle`) sits below `parse`.

use proc_macro2::TokenStream;
use quote::{ToTokens, format_ident, quote};
use syn::ext::IdentExt;
use syn::parse::discouraged::Speculative;
use syn::parse::{Parse, ParseStream};
use syn::{Attribute, Ident, Token, Visibility};

use crate::bundle::USE;
use crate::diag::{ATR_BUNDLE_NOT_POLICY, ATR_BUNDLE_ORDER, ATR_BUNDLE_SYNTAX, ATR_DUPLICATE, Errors};
use crate::policy::{self, POLICIES};

/// `bundle! { … }`: one hidden `macro_rules!` and one `use` per entry. `site` makes the hidden
/// names unique in the crate (the invocation's file, line and column).
pub(crate) fn define(input: TokenStream, site: &str) -> TokenStream {
    let entries = match syn::parse2::<Entries>(input) {
        Ok(entries) => entries.0,
        Err(e) => return e.to_compile_error(),
    };
    let mut errors = Errors::default();
    let items: TokenStream = entries
        .into_iter()
        .filter_map(|entry| match entry {
            Ok(entry) => Some(entry.emit(site, &mut errors)),
            Err((error, named)) => {
                errors.push(coded(error));
                named.map(|entry| entry.emit(site, &mut errors))
            }
        })
        .collect();
    [errors.to_compile_errors(), items].into_iter().collect()
}

/// Every entry; a malformed one is its error, with the bundle it names when the mistake comes after
/// the name, defined empty so that its uses do not add "cannot find macro" to the one error.
struct Entries(Vec<Result<Entry, (syn::Error, Option<Entry>)>>);

/// `/// docs \n pub name = #[retry(…)] #[circuit_breaker(…)];`
struct Entry {
    attrs: Vec<Attribute>,
    vis: Visibility,
    name: Ident,
    content: Vec<Attribute>,
    /// Marked [`PRESET`]: a preset shipped by the runtime (`resilience4cata::presets`), which may
    /// carry one `#[policy_order]`.
    preset: bool,
}

/// The hidden marker of a preset entry, `#[__r4c_preset]` above its name: the runtime's
/// `presets` module defines its presets with it. A preset is a bundle that carries the order its
/// policies are meant to nest in, so its content may hold one `#[policy_order]`, judged here like
/// any; at the use, that order applies where the attribute list has no `#[policy_order]` of its
/// own (`crate::order::take`). A user's bundle still may not carry one (`[R4C-ATR-062]`): the
/// marker is not part of the documented syntax.
const PRESET: &str = "__r4c_preset";

/// Takes the [`PRESET`] marker off an entry's attributes.
fn take_preset_marker(attrs: &mut Vec<Attribute>) -> bool {
    let before = attrs.len();
    attrs.retain(|a| !a.path().is_ident(PRESET));
    attrs.len() != before
}

impl Parse for Entries {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let mut entries = Vec::new();
        while !input.is_empty() {
            let fork = input.fork();
            match fork.parse::<Entry>() {
                Ok(entry) => {
                    input.advance_to(&fork);
                    entries.push(Ok(entry));
                }
                Err(error) => {
                    let named = input.fork().call(Entry::head).ok();
                    skip_past_semicolon(input)?;
                    entries.push(Err((error, named)));
                }
            }
        }
        Ok(Entries(entries))
    }
}

/// Moves `input` past the next `;` (or to its end), for the entry after a malformed one.
fn skip_past_semicolon(input: ParseStream) -> syn::Result<()> {
    input.step(|cursor| {
        let mut rest = *cursor;
        while let Some((tree, next)) = rest.token_tree() {
            rest = next;
            if matches!(&tree, proc_macro2::TokenTree::Punct(p) if p.as_char() == ';') {
                break;
            }
        }
        Ok(((), rest))
    })
}

impl Entry {
    /// `/// docs pub name`: an entry without content, standing in for a malformed one.
    fn head(input: ParseStream) -> syn::Result<Entry> {
        let mut attrs = input.call(Attribute::parse_outer)?;
        let preset = take_preset_marker(&mut attrs);
        Ok(Entry { attrs, vis: input.parse()?, name: input.parse()?, content: Vec::new(), preset })
    }
}

impl Parse for Entry {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let mut attrs = input.call(Attribute::parse_outer)?;
        let preset = take_preset_marker(&mut attrs);
        let vis = input.parse()?;
        let name: Ident = input.parse()?;
        input.parse::<Token![=]>()?;
        let content = input.call(Attribute::parse_outer)?;
        if content.is_empty() {
            let message =
                format!("bundle `{name}` holds no attribute: write `{name} = #[retry(…)] #[circuit_breaker(…)];`");
            return Err(syn::Error::new(input.span(), message));
        }
        input.parse::<Token![;]>()?;
        Ok(Entry { attrs, vis, name, content, preset })
    }
}

/// Gives syn's own parse errors the bundle-syntax code and the expected shape.
fn coded(error: syn::Error) -> syn::Error {
    let message = error.to_string();
    let shape = "each bundle is `/// docs` then `pub name = #[policy(…)] …;`";
    syn::Error::new(error.span(), format!("[{ATR_BUNDLE_SYNTAX}] {message}: {shape}"))
}

impl Entry {
    fn emit(&self, site: &str, errors: &mut Errors) -> TokenStream {
        let Entry { attrs, vis, name, .. } = self;
        let hidden = format_ident!("__r4c_bundle_{}_{:016x}", name.unraw(), fnv(&format!("{site}/{name}")));
        let content = self.checked_content(errors);
        let export = matches!(vis, Visibility::Public(_)).then(|| quote!(#[macro_export]));
        let listing =
            format!("Policy attributes: `{}`", self.content.iter().map(one_line).collect::<Vec<_>>().join(" "));
        quote! {
            #[doc(hidden)]
            #export
            macro_rules! #hidden {
                (@__r4c_apply [$($key:tt)*] [$($resilient:tt)*] $($item:tt)*) => {
                    $($resilient)*
                    #[__r4c_bundle([$($key)*] #(#content)*)]
                    $($item)*
                };
            }
            #(#attrs)*
            #[doc = ""]
            #[doc = #listing]
            #[doc(inline)]
            #vis use #hidden as #name;
        }
    }

    /// The content's attributes that have no mistake; each mistake is reported here, once, at the
    /// bundle, and its attribute left out so no use repeats it.
    fn checked_content(&self, errors: &mut Errors) -> Vec<&Attribute> {
        let mut kept: Vec<&Attribute> = Vec::new();
        for attr in &self.content {
            let before = errors.len();
            check_one(attr, &kept, self.preset, errors);
            if errors.len() == before {
                kept.push(attr);
            }
        }
        kept
    }
}

/// Judges one attribute of a bundle as `#[resilient]` would judge it on a method; a preset's
/// `#[policy_order]` as it would be judged on a method.
fn check_one(attr: &Attribute, kept: &[&Attribute], preset: bool, errors: &mut Errors) {
    let path = attr.path();
    if preset && crate::order::is_policy_order(attr) {
        if kept.iter().any(|k| crate::order::is_policy_order(k)) {
            let message = "`#[policy_order]` set multiple times in this preset: list every policy in one";
            return errors.add(path, ATR_DUPLICATE, message);
        }
        crate::order::take(&mut vec![attr.clone()], errors);
        return;
    }
    let Some(spec) = policy::lookup(path) else {
        return refuse(path, errors);
    };
    if kept.iter().any(|k| k.path().is_ident(spec.name)) {
        let name = spec.name;
        let message = format!("`#[{name}]` set multiple times in this bundle: write its keys in one `#[{name}(…)]`");
        return errors.add(path, ATR_DUPLICATE, message);
    }
    match crate::parse::parse_policy(spec, attr) {
        Ok(raw) => crate::validate::judge_alone(&raw, errors),
        Err(e) => errors.push(e),
    }
}

/// `#[policy_order]` (`[R4C-ATR-062]`) or any other attribute that is not a policy (`[R4C-ATR-080]`).
fn refuse(path: &syn::Path, errors: &mut Errors) {
    if path.is_ident("policy_order") {
        let message =
            "`#[policy_order]` is not allowed in a bundle: write it on the method or on the trait / impl block";
        return errors.add(path, ATR_BUNDLE_ORDER, message);
    }
    let names: Vec<_> = POLICIES.iter().map(|p| format!("`#[{}]`", p.name)).collect();
    let nested = if path.is_ident(USE) { " (bundles do not nest: list the attributes)" } else { "" };
    let message = format!("a bundle holds policy attributes only{nested}; expected one of {}", names.join(", "));
    errors.add(path, ATR_BUNDLE_NOT_POLICY, message);
}

/// An attribute on one line, for the bundle's generated docs.
fn one_line(attr: &Attribute) -> String {
    let text = attr.to_token_stream().to_string();
    text.replace("# [", "#[").replace(" (", "(").replace(" ,", ",").replace(" :: ", "::")
}

/// FNV-1a: a stable hash for the hidden macro's name.
fn fnv(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

#[cfg(test)]
mod tests;
