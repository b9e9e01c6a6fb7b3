//! The policy attributes, described as data: each policy is one [`PolicySpec`] with a table of its
//! keys (value kind, range check and the code of a bad value), its cross-key checks, the runtime
//! function that builds its instance, and the emitter of its layer.
//!
//! Adding a policy means adding one file here (its key table and checks), one layer emitter under
//! `expand/`, and one line in [`POLICIES`]; parsing, validation, merging of trait-level and
//! method-level attributes, the wrapper's fields and `new` are generic over this table.

pub(crate) mod adaptive_limit;
pub(crate) mod bulkhead;
pub(crate) mod circuit_breaker;
pub(crate) mod fallback;
pub(crate) mod hedge;
pub(crate) mod rate_limiter;
pub(crate) mod retry;
pub(crate) mod timeout;

use proc_macro2::TokenStream;

use crate::expand::Ctx;
use crate::validate::{Method, Problem, Settings};

/// Every policy attribute, outer to inner: the layers are chained in this order, whatever order
/// the attributes are written in (docs/architecture.md, "The path of one call").
pub(crate) static POLICIES: &[&PolicySpec] = &[
    &fallback::FALLBACK,
    &retry::RETRY,
    &hedge::HEDGE,
    &circuit_breaker::CIRCUIT_BREAKER,
    &rate_limiter::RATE_LIMITER,
    &adaptive_limit::ADAPTIVE_LIMIT,
    &timeout::TIMEOUT,
    &bulkhead::BULKHEAD,
];

/// Whether the policy may call the inner layers more than once per call (retry, hedge), or hands
/// the arguments to another call after them (fallback), so owned arguments are cloned for each
/// attempt.
pub(crate) fn repeats(spec: &PolicySpec) -> bool {
    matches!(spec.name, "retry" | "hedge" | "fallback")
}

/// Whether the method has a `#[fallback]`, so the attempt-making layers report their count.
pub(crate) fn has_fallback(method: &Method) -> bool {
    method.policies.iter().any(|p| std::ptr::eq(p.spec, &fallback::FALLBACK))
}

/// Whether `method` is hedged, so its attempts run side by side inside one future.
pub(crate) fn hedged(method: &crate::validate::Method) -> bool {
    method.policies.iter().any(|p| std::ptr::eq(p.spec, &hedge::HEDGE))
}

/// The bulkhead of `method` when it runs inside the method's timeout with no hedge between them
/// (SPEC §6): its acquisition then tells the timeout whether the attempt still waits for its slot
/// (`__private::SlotWatch`), so a timeout that fires during that wait ends the attempt as
/// `BulkheadFull`. Hedged attempts run side by side, so with a hedge between the two there is no
/// one attempt to speak of: the timeout stays a `CallTimeout` there.
pub(crate) fn watched_bulkhead(method: &Method) -> Option<&crate::validate::Policy> {
    let position = |spec: &PolicySpec| method.policies.iter().position(|p| std::ptr::eq(p.spec, spec));
    let (timeout, bulkhead) = (position(&timeout::TIMEOUT)?, position(&bulkhead::BULKHEAD)?);
    let between = method.policies.get(timeout + 1..bulkhead)?;
    let hedge_between = between.iter().any(|p| std::ptr::eq(p.spec, &hedge::HEDGE));
    (!hedge_between).then(|| &method.policies[bulkhead])
}

/// The policy named by an attribute path such as `retry`, if it is one of ours.
pub(crate) fn lookup(path: &syn::Path) -> Option<&'static PolicySpec> {
    let ident = path.get_ident()?;
    POLICIES.iter().copied().find(|p| ident == p.name)
}

/// The spec of a policy attribute named after its module: `name` and `runtime_fn` are the module
/// name, `builder` and `field_ty` are `<Prefix>ConfigBuilder` and `<Prefix>Policy`, `keys` is the
/// module's `KEYS` and `layer` is `expand::<module>::layer`.
macro_rules! policy_spec {
    ($module:ident, $prefix:ident, check: $check:expr, rejects: $rejects:expr $(,)?) => {
        $crate::policy::PolicySpec {
            name: stringify!($module),
            keys: KEYS,
            check: $check,
            runtime_fn: stringify!($module),
            builder: concat!(stringify!($prefix), "ConfigBuilder"),
            field_ty: concat!(stringify!($prefix), "Policy"),
            layer: $crate::expand::$module::layer,
            rejects: $rejects,
        }
    };
}
pub(super) use policy_spec;

/// One policy attribute: its keys, its checks and how the generated code builds and applies it.
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
    /// Wraps the inner expression (of type `Result<T, E>`) in this policy's layer.
    pub(crate) layer: fn(&Ctx<'_>, &Settings, TokenStream) -> TokenStream,
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

/// `u32::MAX`, the top of most counts.
pub(super) const U32_MAX: u64 = u32::MAX as u64;

/// A key of an attribute, for the attributes' key tables.
pub(super) const fn key(name: &'static str, kind: ValueKind, role: Role) -> KeySpec {
    KeySpec { name, kind, role }
}

/// `enabled`, `name` and `config`: the keys every policy attribute has (but `timeout`, which has no
/// `name`), written the same way in each.
pub(super) const ENABLED: KeySpec = key("enabled", ValueKind::Bool { code: crate::diag::ATR_ENABLED }, Role::Builder);
pub(super) const NAME: KeySpec = key("name", ValueKind::Str, Role::Name);
pub(super) const CONFIG: KeySpec = key("config", ValueKind::Str, Role::Config);

/// The `check` of an attribute whose keys are each judged on their own: nothing across keys.
pub(super) fn no_cross_checks(_settings: &Settings, _method: &Method) -> Vec<Problem> {
    Vec::new()
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
        }
    }
}
