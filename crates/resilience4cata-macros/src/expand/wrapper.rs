//! The wrapper struct: `pub struct Resilient<Trait><D>`, its `new` (which builds every policy
//! instance from the registry), `delegate`, and `Debug` when `D: Debug`.

use proc_macro2::{Literal, TokenStream};
use quote::{ToTokens, format_ident, quote};

use super::{field, private};
use crate::model::{Layer, Member, Method, Model, Role, Setting, Value, ValueKind};

/// Struct, inherent impl, `Build`, the ids struct and `Debug`.
pub(crate) fn emit(model: &Model) -> TokenStream {
    let owner = model.item.ident.to_string();
    let InstanceFields { declarations, constructors, lets, inits } = instance_fields(&model.members, &owner);
    let unused = protected(&model.members).next().is_none().then(|| quote!(let _ = (registry, __r4c_scope);));
    let p = private();
    let body = quote! {
        let () = #p::version_0_1_0::CHECK;
        let __r4c_scope: ::core::option::Option<&str> = scope.as_deref();
        #unused
        #lets
        ::core::result::Result::Ok(Self { delegate, #inits __r4c_scope: scope })
    };
    let declaration = declaration(model, declarations, constructors, body, ids_body(&ids_of(model), true));
    let debug = debug(model);
    quote!(#declaration #debug)
}

/// The instance fields of the protected methods (one per policy instance), and how `build` makes
/// them: shared by the wrapper and `<Type>Policies`.
#[derive(Default)]
pub(crate) struct InstanceFields {
    /// `__r4c_<policy>_<method>: __private::<Policy>,` per policy instance.
    pub(crate) declarations: TokenStream,
    /// One constructor per protected method, an associated function of the generated type:
    /// `#[inline(never)] fn __r4c_new_<method>(registry, scope) -> Result<(<Policy>, …), _>`.
    pub(crate) constructors: TokenStream,
    /// In `build` (where `registry` and `__r4c_scope` are in scope): `let (<fields>) =
    /// Self::__r4c_new_<method>(registry, __r4c_scope)?;` per protected method.
    pub(crate) lets: TokenStream,
    /// The fields, in the struct expression of `build`: `<field>,` per policy instance.
    pub(crate) inits: TokenStream,
}

/// The instance fields of the protected methods among `members` (one per policy instance), ids
/// derived as `<module_path>::<owner>::<method>`.
///
/// Each method's instances are built by a constructor of its own, kept out of line, and `build`
/// only calls them in turn. Built inline in one function, the constructions (an id, a builder
/// and its setters, a registry call and an error arm per instance) made a function that grew
/// with the methods, on which the optimizer's cost grew far faster than linearly: a user's
/// release build of 60 methods under three policies took two minutes (issue 30). Out of line,
/// each constructor is small and of one size whatever the number of methods, and `build` is a
/// call and an error arm per method: the build time is linear in the methods
/// (`crates/bench/buildtime/`, `.ci/buildtime`). Construction runs once per wrapper, so the
/// calls cost nothing that matters; the methods' success paths are untouched.
pub(crate) fn instance_fields(members: &[Member], owner: &str) -> InstanceFields {
    let p = private();
    let mut out = InstanceFields::default();
    for method in protected(members) {
        let cfg = cfgs(&method.item.attrs);
        // The policies' instances, then the method's call timer (`__private::CallTimer`, zero-sized
        // without the runtime's feature `durations`), under the method's scoped derived id.
        let mut names: Vec<_> = method.layers.iter().map(|layer| field(layer.spec, method)).collect();
        names.push(timer_field(method));
        let mut types: Vec<_> = method.layers.iter().map(field_ty).collect();
        types.push(quote!(#p::CallTimer));
        let mut instances: Vec<_> = method.layers.iter().map(|layer| instance(owner, method, layer)).collect();
        let id = derived_id(owner, method);
        instances.push(quote!(#p::call_timer(registry, &#p::scoped(__r4c_scope, #id))));
        // With chaos (the runtime's feature `chaos`), the method's injection point, last.
        if super::chaos::on() {
            names.push(super::chaos::field(method));
            types.push(super::chaos::field_ty());
            instances.push(super::chaos::instance(method, id.clone()));
        }
        let constructor = constructor(method);
        out.declarations.extend(names.iter().zip(&types).map(|(name, ty)| quote!(#(#cfg)* #name: #ty,)));
        out.constructors.extend(quote! {
            #(#cfg)*
            #[doc(hidden)]
            #[inline(never)]
            #[allow(clippy::type_complexity)]
            fn #constructor(
                registry: &::resilience4cata::Registry,
                __r4c_scope: ::core::option::Option<&str>,
            ) -> ::core::result::Result<(#(#types,)*), #p::RegistryError> {
                ::core::result::Result::Ok((#(#instances,)*))
            }
        });
        out.lets.extend(quote!(#(#cfg)* let (#(#names,)*) = Self::#constructor(registry, __r4c_scope)?;));
        out.inits.extend(names.iter().map(|name| quote!(#(#cfg)* #name,)));
    }
    out
}

/// `__r4c_durations_<method>`: the field of the method's call timer.
pub(crate) fn timer_field(method: &Method) -> syn::Ident {
    format_ident!("__r4c_durations_{}", syn::ext::IdentExt::unraw(&method.item.sig.ident))
}

/// `__r4c_new_<method>`: the out-of-line constructor of one method's instances.
fn constructor(method: &Method) -> syn::Ident {
    format_ident!("__r4c_new_{}", syn::ext::IdentExt::unraw(&method.item.sig.ident))
}

/// The stub beside errors: the struct with its delegate only, `new`, `builder`, `delegate`, `ids`.
pub(crate) fn emit_stub(model: &Model) -> TokenStream {
    let body = quote!(let _ = registry; ::core::result::Result::Ok(Self { delegate, __r4c_scope: scope }));
    declaration(model, TokenStream::new(), TokenStream::new(), body, ids_body(&ids_of(model), false))
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

/// The ids struct with its constructors `unscoped()` and `scoped(scope)` (the ids without
/// building anything), and the body of `ids()` (which reads `self.__r4c_scope`); the stub's ids
/// are empty.
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
        let ids = m.layers.iter().map(|layer| {
            let spec = layer.spec.name;
            let name = optional_str(layer.settings.iter().find(|s| s.key.role == Role::Name));
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
    let (vis, name, of) = (ids.vis, ids.name(), ids.of);
    let doc = format!(
        " The instance ids of each protected method of `{owner}`, scope included, as events, snapshots, \
         handles and per-instance configuration know them: one field per method, so a misspelt method \
         does not compile. Returned by [`{of}::ids`]; [`unscoped`]({name}::unscoped) and \
         [`scoped`]({name}::scoped) give them before anything is built, to configure the instances.",
        owner = ids.owner
    );
    let unscoped_doc = format!(
        " The ids a `{of}` built without a scope (`{of}::new`) uses, without building one: the ids to \
         configure its instances by (`circuit_breaker_instance(id, …)`, `[instances.\"<id>\"]`)."
    );
    let scoped_doc = format!(
        " The ids a `{of}` built with `.scope(scope)` uses, without building one: derived ids become \
         `<scope>/<derived id>`, ids set with `name` stay as named. (`builder(…).scope(\"\")` is \
         refused, so an empty `scope` gives ids no `{of}` uses.)"
    );
    let declaration = quote! {
        #[doc = #doc]
        #[derive(Clone, Debug, PartialEq, Eq)]
        #[non_exhaustive]
        #vis struct #name { #(#fields)* }

        #[automatically_derived]
        impl #name {
            #[doc = #unscoped_doc]
            pub fn unscoped() -> Self {
                Self::__r4c_in(::core::option::Option::None)
            }

            #[doc = #scoped_doc]
            pub fn scoped(scope: &str) -> Self {
                Self::__r4c_in(::core::option::Option::Some(scope))
            }

            #[doc(hidden)]
            fn __r4c_in(__r4c_scope: ::core::option::Option<&str>) -> Self {
                let _ = __r4c_scope;
                #name { #(#values)* }
            }
        }
    };
    let body = quote!(#name::__r4c_in(self.__r4c_scope.as_deref()));
    (declaration, body)
}

fn protected(members: &[Member]) -> impl Iterator<Item = &Method> {
    members.iter().filter_map(|m| match m {
        Member::Method(method) if !method.layers.is_empty() => Some(&**method),
        _ => None,
    })
}

/// `concat!(module_path!(), "::<owner>::method")`.
fn derived_id(owner: &str, method: &Method) -> TokenStream {
    let suffix = format!("::{owner}::{}", syn::ext::IdentExt::unraw(&method.item.sig.ident));
    quote!(::core::concat!(::core::module_path!(), #suffix))
}

/// The `#[cfg]` attributes of an item, repeated on everything generated for it.
pub(crate) fn cfgs(attrs: &[syn::Attribute]) -> Vec<syn::Attribute> {
    attrs.iter().filter(|a| a.path().is_ident("cfg")).cloned().collect()
}

/// The field's type: the policy's facade, or its keyed facade (`KeyedRateLimiterPolicy`) when the
/// layer has a `key`.
fn field_ty(layer: &Layer) -> TokenStream {
    let p = private();
    let keyed = if crate::policy::key_of(layer).is_some() { "Keyed" } else { "" };
    let ty = format_ident!("{keyed}{}", layer.spec.field_ty);
    quote!(#p::#ty)
}

/// The struct, `new`, `builder`, `delegate`, `ids`, the per-method constructors, and `Build`
/// (whose body is `build_body`).
fn declaration(
    model: &Model,
    instance_fields: TokenStream,
    constructors: TokenStream,
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
            #instance_fields
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

            #constructors
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
fn instance(owner: &str, method: &Method, layer: &Layer) -> TokenStream {
    let p = private();
    let spec = layer.spec;
    let keyed = if crate::policy::key_of(layer).is_some() { "keyed_" } else { "" };
    let runtime_fn = format_ident!("{keyed}{}", spec.runtime_fn);
    let id = derived_id(owner, method);
    let name = optional_str(layer.settings.iter().find(|s| s.key.role == Role::Name));
    let config = optional_str(layer.settings.iter().find(|s| s.key.role == Role::Config));
    let is_async = method.is_async();
    let setters = layer.settings.iter().filter(|s| s.key.role == Role::Builder).map(setter);
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
