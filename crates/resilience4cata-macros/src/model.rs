//! The model every stage reads (the ground floor): the method as `validate` checks it and `expand`
//! emits it, a policy's judged settings, the problems a policy's check reports, and the schema of
//! the policy table (`PolicySpec`, `KeySpec`, `ValueKind`), whose rows live in `policy`. Data only:
//! this module imports nothing of the crate but `diag`.

use proc_macro2::{Span, TokenStream};
use syn::{Ident, ItemTrait, LitBool, LitStr, Pat, TraitItemFn, Type};

use crate::diag;

/// Everything the expansion needs, checked.
pub(crate) struct Model {
    /// The trait as re-emitted (policy attributes stripped).
    pub(crate) item: ItemTrait,
    /// `Resilient<Trait>`.
    pub(crate) wrapper: Ident,
    /// The wrapper's type parameter, `D` unless the trait already names a `D`.
    pub(crate) delegate: Ident,
    /// One per item of the trait.
    pub(crate) members: Vec<Member>,
    /// Whether the trait's own shape lets the wrapper implement it.
    pub(crate) implementable: bool,
    /// Whether `async fn` desugars to `impl Future + Send` (the default; `false` under `?Send`).
    pub(crate) send: bool,
}

/// An item of the trait, as the wrapper's `impl` handles it.
pub(crate) enum Member {
    Method(Box<Method>),
    Const(syn::TraitItemConst),
    Type(syn::TraitItemType),
    /// Reported already (a macro invocation): nothing to generate.
    Skip,
}

/// One method: forwarded when `layers` is empty, protected otherwise.
pub(crate) struct Method {
    pub(crate) item: TraitItemFn,
    pub(crate) form: Form,
    pub(crate) receiver: Receiver,
    pub(crate) args: Vec<Arg>,
    /// The `Result` type (the return type or the future's `Output`), if any.
    pub(crate) ret: Option<Type>,
    /// The method's policies, merged, outer to inner: the table's order (`policy::POLICIES`), or
    /// the method's `#[policy_order]` (see `order`). Empty for a forwarded method.
    pub(crate) layers: Vec<Layer>,
    /// Whether the wrapper can call the delegate's method with this signature.
    pub(crate) forwardable: bool,
    /// The method `#[fallback(method = …)]` names, once checked.
    pub(crate) fallback: Option<FallbackTarget>,
}

impl Method {
    pub(crate) fn is_async(&self) -> bool {
        !matches!(self.form, Form::Sync | Form::ImplOther)
    }
}

/// How a method returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Form {
    Sync,
    AsyncFn,
    /// `fn … -> impl Future<Output = …> (+ Send)`.
    ImplFuture {
        send: bool,
    },
    /// `fn … -> impl OtherTrait`: forwardable, not protectable.
    ImplOther,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Receiver {
    Ref,
    RefMut,
    Value,
    None,
    /// `self: Box<Self>` and the like.
    Other,
}

/// A method argument, renamed when its pattern is not a plain name.
pub(crate) struct Arg {
    pub(crate) ident: Ident,
    pub(crate) ty: Type,
}

/// One policy on one method, its settings judged and merged (bundles, trait, method): one layer of
/// the method's chain.
pub(crate) struct Layer {
    pub(crate) spec: &'static PolicySpec,
    pub(crate) settings: Settings,
}

/// Where a setting was written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Origin {
    Trait,
    Method,
}

/// A judged `key = value`.
#[derive(Clone)]
pub(crate) struct Setting {
    pub(crate) key: &'static KeySpec,
    /// The key as written, for diagnostics about the setting.
    pub(crate) ident: Ident,
    pub(crate) value: Value,
    pub(crate) origin: Origin,
    /// Unique per written setting, so a trait-level mistake is reported once, not once per method.
    pub(crate) id: usize,
}

impl Setting {
    pub(crate) fn is_method_level(&self) -> bool {
        self.origin == Origin::Method
    }
}

/// A value, parsed and judged.
#[derive(Clone)]
pub(crate) enum Value {
    Count(u64),
    Number(f64),
    /// Nanoseconds.
    Duration(u64),
    Enum(&'static str),
    Bool(LitBool),
    Str(LitStr),
    Path(syn::ExprPath),
    Pattern(Pat),
    /// An expression kept as written (`key = tenant`), its tokens spanned where the user wrote
    /// them, so rustc reports a mistake in it there.
    Expr(syn::Expr),
}

/// The settings of one policy on one method, trait-level and method-level merged.
#[derive(Clone, Default)]
pub(crate) struct Settings {
    pub(crate) items: Vec<Setting>,
    /// The attribute that brought the policy (the method's own when it has one), for diagnostics
    /// about the policy as a whole.
    pub(crate) attribute: Option<Written>,
}

/// An attribute as written: its path, and a unique id so a trait-level mistake is reported once.
#[derive(Clone)]
pub(crate) struct Written {
    pub(crate) path: syn::Path,
    pub(crate) id: usize,
}

impl Settings {
    pub(crate) fn get(&self, key: &str) -> Option<&Setting> {
        self.items.iter().find(|s| s.key.name == key)
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &Setting> {
        self.items.iter()
    }

    /// `self` with `over`'s keys replacing its own (the method below, the trait above).
    pub(crate) fn overlay(&self, over: &Settings) -> Settings {
        let kept = self.items.iter().filter(|s| over.get(s.key.name).is_none()).cloned();
        let attribute = over.attribute.clone().or_else(|| self.attribute.clone());
        Settings { items: kept.chain(over.items.iter().cloned()).collect(), attribute }
    }
}

/// A combination mistake found by a policy's check.
pub(crate) struct Problem {
    pub(crate) error: syn::Error,
    /// The id of the setting or attribute it is about, so a trait-level mistake is reported once.
    pub(crate) id: usize,
}

impl Problem {
    /// A mistake about `setting`, reported on its key.
    pub(crate) fn at(setting: &Setting, code: &str, message: impl std::fmt::Display) -> Problem {
        Problem { error: diag::error(&setting.ident, code, message), id: setting.id }
    }

    /// A mistake about the policy as a whole, reported on its attribute's path (`timeout` in
    /// `#[timeout]`): the method's own attribute, else the trait's (then reported once).
    pub(crate) fn on_attribute(settings: &Settings, code: &str, message: impl std::fmt::Display) -> Problem {
        match &settings.attribute {
            Some(written) => Problem { error: diag::error(&written.path, code, message), id: written.id },
            None => Problem { error: syn::Error::new(Span::call_site(), format!("[{code}] {message}")), id: 0 },
        }
    }
}

/// The fallback method a protected method calls, as the expansion needs it.
pub(crate) struct FallbackTarget {
    /// What the method is called on: `<Self as Trait>` in the wrapper and a trait impl, `Self` in
    /// an inherent impl (`<owner>::method(self, …)`).
    pub(crate) owner: TokenStream,
    pub(crate) ident: Ident,
    /// The fallback's parameter types before the context, lifetimes erased to `'_`.
    pub(crate) params: Vec<Type>,
    /// The fallback's last parameter type, lifetimes erased.
    pub(crate) context: Type,
    /// The fallback's `Result` type (its return type or its future's output), lifetimes erased.
    pub(crate) ret: Type,
}

/// One policy, as the table of `policy` describes it: its attribute, its keys, its checks and how
/// the generated code builds its instance (its layer's emitter is `expand::<name>::layer`).
pub(crate) struct PolicySpec {
    /// The attribute name, e.g. `retry`.
    pub(crate) name: &'static str,
    /// Every key the attribute accepts.
    pub(crate) keys: &'static [KeySpec],
    /// Checks across keys of a method's merged settings, knowing its signature (e.g. `R4C-CLF-001`).
    pub(crate) check: fn(&Settings, &Method) -> Vec<Problem>,
    /// `__private::<runtime_fn>(registry, site, <builder>::new()…)` builds the instance …
    pub(crate) runtime_fn: &'static str,
    /// … from this config builder of the runtime (re-exported by `__private`; empty for a policy
    /// without configuration, whose function takes no builder) …
    pub(crate) builder: &'static str,
    /// … and returns this field type (re-exported by `__private`).
    pub(crate) field_ty: &'static str,
    /// Whether the policy can refuse calls, so the method's `E` must implement `ResilienceError`.
    pub(crate) rejects: bool,
}

impl PolicySpec {
    /// The key spec named `name`.
    pub(crate) fn key(&self, name: &str) -> Option<&'static KeySpec> {
        self.keys.iter().find(|k| k.name == name)
    }

    /// The valid key names, for the unknown-key message.
    pub(crate) fn key_names(&self) -> impl Iterator<Item = &'static str> {
        self.keys.iter().map(|k| k.name)
    }
}

/// One key of a policy attribute.
#[derive(Debug)]
pub(crate) struct KeySpec {
    pub(crate) name: &'static str,
    pub(crate) kind: ValueKind,
    pub(crate) role: Role,
}

/// Where a key's value goes in the generated code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    /// A setter of the policy's config builder, named after the key: `.max_attempts(3)`.
    Builder,
    /// `Site::name`: the instance id, shared by every user of the name.
    Name,
    /// `Site::config`: a named configuration of the registry.
    Config,
    /// Used by the layer emitter itself (patterns, predicates, classifiers).
    Code,
}

/// The kind of value a key takes, with its range and the code of an out-of-range value.
#[derive(Clone, Copy, Debug)]
pub(crate) enum ValueKind {
    /// An integer within `min..=max`, set as `u32`.
    Count { min: u64, max: u64, code: &'static str },
    /// A number (float or integer) within `min..=max`, set as `f64`.
    Number { min: f64, max: f64, code: &'static str },
    /// A duration string; `nonzero` is the code of a zero duration, when zero is invalid.
    Duration { nonzero: Option<&'static str> },
    /// A fieldless enum of the runtime (`__private::<ty>`), written as a path or identifier,
    /// case-insensitive.
    Enum { ty: &'static str, variants: &'static [&'static str] },
    /// `true` or `false`; `code` for anything else.
    Bool { code: &'static str },
    /// A string literal.
    Str,
    /// A Rust pattern over the error type.
    Pattern,
    /// A path to a function.
    FnPath,
    /// Any expression, emitted as written (`key = req.host()`).
    Expr,
}

impl ValueKind {
    /// What the value should look like, for messages.
    pub(crate) fn expected(&self) -> String {
        match self {
            ValueKind::Count { min, max, .. } => format!("an integer from {min} to {max}"),
            ValueKind::Number { .. } => "a number".to_owned(),
            ValueKind::Duration { .. } => "a duration string such as \"100ms\"".to_owned(),
            ValueKind::Enum { variants, .. } => format!("one of {}", variants.join(", ")),
            ValueKind::Bool { .. } => "`true` or `false`".to_owned(),
            ValueKind::Str => "a string literal".to_owned(),
            ValueKind::Pattern => "a pattern".to_owned(),
            ValueKind::FnPath => "a path to a function".to_owned(),
            ValueKind::Expr => "an expression over the method's parameters".to_owned(),
        }
    }
}
