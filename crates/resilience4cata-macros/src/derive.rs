//! `#[derive(ResilienceError)]`: for an enum with exactly one variant marked `#[rejection]` that
//! holds a `Rejection` (one unnamed or one named field). Emits only the `ResilienceError` impl: no
//! `Display`, `Error` or `From`.

use proc_macro2::TokenStream;
use quote::{ToTokens, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, Fields, Meta, Variant};

use crate::diag::{DRV_ATTR_ARGS, DRV_DUPLICATE, DRV_MISSING, DRV_NOT_ENUM, DRV_SHAPE, Errors};

/// The derive's expansion: the impl, or the errors beside a stub impl.
pub(crate) fn derive(input: TokenStream) -> TokenStream {
    let input = match syn::parse2::<DeriveInput>(input) {
        Ok(input) => input,
        Err(e) => return e.to_compile_error(),
    };
    let mut errors = Errors::default();
    let marked = rejection_variant(&input, &mut errors);
    match (marked, errors.is_empty()) {
        (Some((variant, field)), true) => implementation(&input, variant, field),
        _ => {
            let stub = stub(&input);
            let errors = errors.to_compile_errors();
            quote!(#errors #stub)
        }
    }
}

/// The marked variant and its field (`None` for a tuple variant's position 0, else the name).
fn rejection_variant<'a>(input: &'a DeriveInput, errors: &mut Errors) -> Option<(&'a Variant, &'a syn::Field)> {
    let data = match &input.data {
        Data::Enum(data) => data,
        Data::Struct(s) => return not_enum(errors, s.struct_token),
        Data::Union(u) => return not_enum(errors, u.union_token),
    };
    let mut found: Option<&Variant> = None;
    for variant in &data.variants {
        for attr in variant.attrs.iter().filter(|a| a.path().is_ident("rejection")) {
            if !matches!(attr.meta, Meta::Path(_)) {
                errors.add(&attr.meta, DRV_ATTR_ARGS, "`#[rejection]` takes no arguments");
            }
            match found {
                Some(first) => errors.add(
                    attr,
                    DRV_DUPLICATE,
                    format!("only one variant can be `#[rejection]`; `{}` already is", first.ident),
                ),
                None => found = Some(variant),
            }
        }
    }
    let Some(variant) = found else {
        errors.add(
            &input.ident,
            DRV_MISSING,
            "`#[derive(ResilienceError)]` needs one variant marked `#[rejection]` holding a `resilience4cata::Rejection`, \
             e.g. `#[rejection] Rejected(Rejection)`",
        );
        return None;
    };
    let field = single_field(variant, errors)?;
    Some((variant, field))
}

fn not_enum<T>(errors: &mut Errors, token: impl ToTokens) -> Option<T> {
    errors.add(
        token,
        DRV_NOT_ENUM,
        "`#[derive(ResilienceError)]` applies to an enum with a `#[rejection]` variant; for a struct, implement \
         `ResilienceError` by hand",
    );
    None
}

fn single_field<'a>(variant: &'a Variant, errors: &mut Errors) -> Option<&'a syn::Field> {
    match &variant.fields {
        Fields::Unnamed(f) if f.unnamed.len() == 1 => f.unnamed.first(),
        Fields::Named(f) if f.named.len() == 1 => f.named.first(),
        _ => {
            let ident = &variant.ident;
            let at = match &variant.fields {
                Fields::Unit => variant.ident.to_token_stream(),
                fields => fields.to_token_stream(),
            };
            errors.add(
                at,
                DRV_SHAPE,
                format!(
                    "the `#[rejection]` variant must hold exactly one field, the `Rejection`: `{ident}(Rejection)` or \
                     `{ident} {{ rejection: Rejection }}`"
                ),
            );
            None
        }
    }
}

fn implementation(input: &DeriveInput, variant: &Variant, field: &syn::Field) -> TokenStream {
    let p = quote!(::resilience4cata::__private);
    let (ident, vident) = (&input.ident, &variant.ident);
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    let ty = &field.ty;
    let is_rejection = quote_spanned!(ty.span()=> <#ty as #p::IsRejection>);
    let (build, bind) = match &field.ident {
        Some(name) => (
            quote!(#ident::#vident { #name: #is_rejection::wrap(rejection) }),
            quote!(#ident::#vident { #name: __r4c_field }),
        ),
        None => (quote!(#ident::#vident(#is_rejection::wrap(rejection))), quote!(#ident::#vident(__r4c_field))),
    };
    // The unit variants by name: how chaos makes a configured `fault` (SPEC §17).
    let units: Vec<_> = match &input.data {
        syn::Data::Enum(data) => data.variants.iter().filter(|v| matches!(v.fields, syn::Fields::Unit)).collect(),
        _ => Vec::new(),
    };
    let unit_names = units.iter().map(|v| v.ident.to_string());
    let unit_idents = units.iter().map(|v| &v.ident);
    quote! {
        #[automatically_derived]
        impl #impl_generics #p::ResilienceError for #ident #ty_generics #where_clause {
            #[inline]
            fn from_rejection(rejection: #p::Rejection) -> Self {
                #build
            }

            #[inline]
            #[allow(unreachable_patterns)]
            fn rejection(&self) -> ::core::option::Option<&#p::Rejection> {
                match self {
                    #bind => ::core::option::Option::Some(#is_rejection::unwrap(__r4c_field)),
                    _ => ::core::option::Option::None,
                }
            }

            #[inline]
            fn from_variant_name(name: &str) -> ::core::option::Option<Self> {
                match name {
                    #(#unit_names => ::core::option::Option::Some(#ident::#unit_idents),)*
                    _ => ::core::option::Option::None,
                }
            }
        }
    }
}

/// Beside errors: an impl that compiles, so uses of the trait do not cascade.
fn stub(input: &DeriveInput) -> TokenStream {
    let p = quote!(::resilience4cata::__private);
    let ident = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    quote! {
        #[automatically_derived]
        impl #impl_generics #p::ResilienceError for #ident #ty_generics #where_clause {
            fn from_rejection(_: #p::Rejection) -> Self {
                ::core::unimplemented!()
            }

            fn rejection(&self) -> ::core::option::Option<&#p::Rejection> {
                ::core::option::Option::None
            }
        }
    }
}
