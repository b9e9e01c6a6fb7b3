//! The wrapper struct: `pub struct Resilient<Trait><D>`, its `new` (which builds every policy
//! instance from the registry), `delegate`, and `Debug` when `D: Debug`.

use proc_macro2::{Literal, TokenStream};
use quote::{ToTokens, format_ident, quote};

use super::{field, private};
use crate::policy::{Role, ValueKind};
use crate::validate::{Member, Method, Model, Policy, Setting, Value};

/// Struct, inherent impl, `Build`, the ids struct and `Debug`.
pub(crate) fn emit(model: &Model) -> TokenStream {
    let owner = model.item.ident.to_string();
    let (declarations, inits) = policy_fields(&model.members, &owner);
    let unused = protected(&model.members).next().is_none().then(|| quote!(let _ = (registry, __r4c_scope);));
    let p = private();
    let body = quote! {
        let () = #p::version_0_1_0::CHECK;
        let __r4c_scope: ::core::option::Option<&str> = scope.as_deref();
        #unused
        ::core::result::Result::Ok(Self { delegate, #inits __r4c_scope: scope })
    };
    let declaration = declaration(model, declarations, body, ids_body(&ids_of(model), true));
    let debug = debug(model);
    quote!(#declaration #debug)
}

/// The policy fields of the protected methods among `members`, ids derived as
/// `<module_path>::<owner>::<method>`: their declarations, and their initialisers in `build`
/// (where `registry` and `__r4c_scope` are in scope). Shared by the wrapper and `<Type>Policies`.
pub(crate) fn policy_fields(members: &[Member], owner: &str) -> (TokenStream, TokenStream) {
    let fields: Vec<_> = fields_of(members).collect();
    let declarations = fields.iter().map(|(cfg, name, _, policy)| {
        let ty = field_ty(policy);
        quote!(#(#cfg)* #name: #ty,)
    });
    let inits = fields.iter().map(|(cfg, name, method, policy)| {
        let instance = instance(owner, method, policy);
        quote!(#(#cfg)* #name: #instance,)
    });
    (quote!(#(#declarations)*), quote!(#(#inits)*))
}

/// The stub beside errors: the struct with its delegate only, `new`, `builder`, `delegate`, `ids`.
pub(crate) fn emit_stub(model: &Model) -> TokenStream {
    let body = quote!(let _ = registry; ::core::result::Result::Ok(Self { delegate, __r4c_scope: scope }));
    declaration(model, TokenStream::new(), body, ids_body(&ids_of(model), false))
}

/// What the ids struct of a generated type is made of.
pub(crate) struct Ids<'a> {
    pub(crate) vis: &'a syn::Visibility,
    /// The type `ids()` is a method of (`ResilientApi`, `ClientPolicies`), for the docs.
    pub(crate) of: &'a syn::Ident,
    /// The trait or type the ids derive from (`Api`, `Client`, `Client::Api`).
    pub(crate) owner: String,
    pub(crate) members: &'a [Member],
}

impl Ids<'_> {
    /// `<Generated>Ids`: one `MethodIds` field per protected method.
    pub(crate) fn name(&self) -> syn::Ident {
        format_ident!("{}Ids", self.of)
    }
}

fn ids_of(model: &Model) -> Ids<'_> {
    Ids { vis: &model.item.vis, of: &model.wrapper, owner: model.item.ident.to_string(), members: &model.members }
}

/// The ids struct and the body of `ids()` (which reads `self.__r4c_scope`); the stub's ids are
/// empty.
pub(crate) fn ids_body(ids: &Ids<'_>, real: bool) -> (TokenStream, TokenStream) {
    let p = private();
    let methods: Vec<&Method> = protected(ids.members).collect();
    let fields = methods.iter().map(|m| {
        let (cfg, ident) = (cfgs(&m.item.attrs), &m.item.sig.ident);
        let doc = format!(" The instance ids of `{}::{ident}`.", ids.owner);
        quote!(#(#cfg)* #[doc = #doc] pub #ident: #p::MethodIds,)
    });
    let values = methods.iter().map(|m| {
        let (cfg, ident) = (cfgs(&m.item.attrs), &m.item.sig.ident);
        let ids = m.policies.iter().map(|policy| {
            let spec = policy.spec.name;
            let name = optional_str(policy.settings.iter().find(|s| s.key.role == Role::Name));
            let id = derived_id(&ids.owner, m);
            quote!(#p::method_id(#spec, __r4c_scope, #id, #name))
        });
        let value = if real {
            quote!(<#p::MethodIds as ::core::iter::FromIterator<_>>::from_iter([#(#ids),*]))
        } else {
            quote!(<#p::MethodIds as ::core::default::Default>::default())
        };
        quote!(#(#cfg)* #ident: #value,)
    });
    let (vis, name) = (ids.vis, ids.name());
    let doc = format!(
        " The instance ids of each protected method of `{}`, scope included, as events, snapshots \
         and handles know them: returned by `{}::ids`.",
        ids.owner, ids.of
    );
    let declaration = quote! {
        #[doc = #doc]
        #[derive(Clone, Debug, PartialEq, Eq)]
        #[non_exhaustive]
        #vis struct #name { #(#fields)* }
    };
    let body = quote! {
        let __r4c_scope: ::core::option::Option<&str> = self.__r4c_scope.as_deref();
        let _ = __r4c_scope;
        #name { #(#values)* }
    };
    (declaration, body)
}

fn protected(members: &[Member]) -> impl Iterator<Item = &Method> {
    members.iter().filter_map(|m| match m {
        Member::Method(method) if !method.policies.is_empty() => Some(&**method),
        _ => None,
    })
}

/// `concat!(module_path!(), "::<owner>::method")`.
fn derived_id(owner: &str, method: &Method) -> TokenStream {
    let suffix = format!("::{owner}::{}", syn::ext::IdentExt::unraw(&method.item.sig.ident));
    quote!(::core::concat!(::core::module_path!(), #suffix))
}

/// Every (cfg attributes, field name, method, policy) of the protected methods.
fn fields_of(members: &[Member]) -> impl Iterator<Item = (Vec<syn::Attribute>, syn::Ident, &Method, &Policy)> {
    members
        .iter()
        .filter_map(|m| match m {
            Member::Method(method) => Some(method),
            _ => None,
        })
        .flat_map(|method| {
            method.policies.iter().map(move |p| (cfgs(&method.item.attrs), field(p.spec, method), &**method, p))
        })
}

/// The `#[cfg]` attributes of an item, repeated on everything generated for it.
pub(crate) fn cfgs(attrs: &[syn::Attribute]) -> Vec<syn::Attribute> {
    attrs.iter().filter(|a| a.path().is_ident("cfg")).cloned().collect()
}

fn field_ty(policy: &Policy) -> TokenStream {
    let p = private();
    let ty = format_ident!("{}", policy.spec.field_ty);
    quote!(#p::#ty)
}

/// The struct, `new`, `builder`, `delegate`, `ids`, and `Build` (whose body is `build_body`).
fn declaration(
    model: &Model,
    policy_fields: TokenStream,
    build_body: TokenStream,
    (ids_struct, ids_body): (TokenStream, TokenStream),
) -> TokenStream {
    let (vis, name, d, trait_name) = (&model.item.vis, &model.wrapper, &model.delegate, &model.item.ident);
    let p = private();
    let ids_name = ids_of(model).name();
    let struct_doc = format!(
        " [`{trait_name}`] with the resilience policies declared on it, around a delegate `{d}: {trait_name}`.\n\n \
         Generated by `#[resilient]`. Build it once with [`new`]({name}::new) (or [`builder`]({name}::builder), \
         to give it a scope) and share it (or an `Arc` of it): it is `Send + Sync` when `{d}` is."
    );
    let new_doc = format!(
        " Wraps `delegate`, resolving every policy instance of [`{trait_name}`] from `registry` (built-in defaults < \
         registry defaults < named `config` < attributes < per-instance overrides). Wrappers built this way on one \
         registry share their instances; see [`builder`]({name}::builder) for one set per backend.\n\n \
         # Errors\n\n A `RegistryError` when a configuration is unknown or invalid, or when an instance shared by \
         `name` resolves a different configuration elsewhere."
    );
    let builder_doc = format!(
        " A builder for a wrapper around `delegate`: `.scope(\"host-a\")` gives it instances of its own (derived \
         ids `host-a/<module_path>::{trait_name}::<method>`; ids set with `name` stay shared), `.build()` resolves \
         them as [`new`]({name}::new) does."
    );
    quote! {
        #[doc = #struct_doc]
        #vis struct #name<#d> {
            delegate: #d,
            __r4c_scope: ::core::option::Option<#p::Arc<str>>,
            #policy_fields
        }

        #ids_struct

        #[automatically_derived]
        impl<#d> #name<#d> {
            #[doc = #new_doc]
            pub fn new(delegate: #d, registry: &::resilience4cata::Registry) -> ::core::result::Result<Self, ::resilience4cata::RegistryError> {
                Self::builder(delegate, registry).build()
            }

            #[doc = #builder_doc]
            pub fn builder(delegate: #d, registry: &::resilience4cata::Registry) -> ::resilience4cata::WrapperBuilder<'_, Self> {
                #p::wrapper_builder(delegate, registry)
            }

            /// The wrapped implementation, for calls that should bypass the policies.
            pub fn delegate(&self) -> &#d {
                &self.delegate
            }

            /// The instance ids each protected method uses, per policy, scope included: the ids of
            /// events, snapshots and handles, without spelling them.
            pub fn ids(&self) -> #ids_name {
                #ids_body
            }
        }

        #[automatically_derived]
        impl<#d> #p::Build for #name<#d> {
            type Input = #d;

            fn build(
                delegate: #d,
                registry: &::resilience4cata::Registry,
                scope: ::core::option::Option<#p::Arc<str>>,
            ) -> ::core::result::Result<Self, ::resilience4cata::RegistryError> {
                #build_body
            }
        }
    }
}

fn debug(model: &Model) -> TokenStream {
    let (name, d) = (&model.wrapper, &model.delegate);
    let shown = name.to_string();
    quote! {
        #[automatically_derived]
        impl<#d: ::core::fmt::Debug> ::core::fmt::Debug for #name<#d> {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                f.debug_struct(#shown).field("delegate", &self.delegate).finish_non_exhaustive()
            }
        }
    }
}

/// `__private::<policy>(registry, Site { … }, <Builder>::new().<key>(<value>)…)?`
fn instance(owner: &str, method: &Method, policy: &Policy) -> TokenStream {
    let p = private();
    let spec = policy.spec;
    let runtime_fn = format_ident!("{}", spec.runtime_fn);
    let id = derived_id(owner, method);
    let name = optional_str(policy.settings.iter().find(|s| s.key.role == Role::Name));
    let config = optional_str(policy.settings.iter().find(|s| s.key.role == Role::Config));
    let is_async = method.is_async();
    let setters = policy.settings.iter().filter(|s| s.key.role == Role::Builder).map(setter);
    let attrs = (!spec.builder.is_empty()).then(|| {
        let builder = format_ident!("{}", spec.builder);
        quote!(#p::#builder::new() #(#setters)*,)
    });
    quote! {
        #p::#runtime_fn(
            registry,
            #p::Site {
                id: &#p::scoped(__r4c_scope, #id),
                name: #name,
                config: #config,
                is_async: #is_async,
            },
            #attrs
        )?
    }
}

fn optional_str(setting: Option<&Setting>) -> TokenStream {
    match setting.map(|s| &s.value) {
        Some(Value::Str(s)) => quote!(::core::option::Option::Some(#s)),
        _ => quote!(::core::option::Option::None),
    }
}

/// `.key(value)`, the value converted to the builder's type.
fn setter(setting: &Setting) -> TokenStream {
    let p = private();
    let key = format_ident!("{}", setting.key.name, span = setting.ident.span());
    let value = match (&setting.value, setting.key.kind) {
        (Value::Count(n), _) => Literal::u32_suffixed(u32::try_from(*n).unwrap_or(u32::MAX)).into_token_stream(),
        (Value::Number(n), _) => Literal::f64_suffixed(*n).into_token_stream(),
        (Value::Duration(n), _) => {
            let n = Literal::u64_suffixed(*n);
            quote!(#p::nanos(#n))
        }
        (Value::Enum(variant), ValueKind::Enum { ty, .. }) => {
            let (ty, variant) = (format_ident!("{}", ty), format_ident!("{}", variant));
            quote!(#p::#ty::#variant)
        }
        (Value::Bool(b), _) => quote!(#b),
        _ => unreachable!("only builder keys become setters"),
    };
    quote!(.#key(#value))
}
