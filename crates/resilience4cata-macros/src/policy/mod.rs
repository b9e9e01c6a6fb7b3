//! The policy table, as data: each policy is one [`PolicySpec`] (its schema is in `crate::model`)
//! with a table of its keys (value kind, range check and the code of a bad value), its cross-key
//! checks and the runtime function that builds its instance. Its layer's emitter is
//! `expand::<name>::layer`, found through `for_each_policy!`: this table knows nothing of the
//! expansion.
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

use crate::model::{KeySpec, Layer, Method, PolicySpec, Problem, Role, Settings, ValueKind};

/// Declares [`POLICIES`] and `for_each_policy!` from the one list written below it. The list
/// stays a plain `static` as written (the runtime's test
/// `the_macro_and_the_runtime_list_the_same_policies_in_the_same_order` reads it), and
/// `for_each_policy!($callback)` calls `$callback! { module SPEC, … }` with the same entries, outer
/// to inner: the module of the policy's table here (and of its layer emitter under `expand/`) and
/// its spec's name there. `$d` is a `$` token, for the inner macro's own metavariable.
macro_rules! policy_list {
    ($d:tt $(#[$doc:meta])* static $name:ident: $ty:ty = &[$(&$module:ident::$spec:ident,)*];) => {
        $(#[$doc])*
        pub(crate) static $name: $ty = &[$(&$module::$spec),*];

        macro_rules! for_each_policy {
            ($d callback:ident) => {
                $d callback! { $($module $spec,)* }
            };
        }
        pub(crate) use for_each_policy;
    };
}

policy_list! { $
    /// Every policy attribute, outer to inner: the layers are chained in this order, whatever order
    /// the attributes are written in (docs/architecture.md, "The path of one call").
    static POLICIES: &[&PolicySpec] = &[
        &fallback::FALLBACK,
        &retry::RETRY,
        &hedge::HEDGE,
        &circuit_breaker::CIRCUIT_BREAKER,
        &rate_limiter::RATE_LIMITER,
        &adaptive_limit::ADAPTIVE_LIMIT,
        &timeout::TIMEOUT,
        &bulkhead::BULKHEAD,
    ];
}

/// Whether the policy may call the inner layers more than once per call (retry, hedge), or hands
/// the arguments to another call after them (fallback), so owned arguments are cloned for each
/// attempt.
pub(crate) fn repeats(spec: &PolicySpec) -> bool {
    matches!(spec.name, "retry" | "hedge" | "fallback")
}

/// Whether the method has a `#[fallback]`, so the attempt-making layers report their count.
pub(crate) fn has_fallback(method: &Method) -> bool {
    method.layers.iter().any(|p| std::ptr::eq(p.spec, &fallback::FALLBACK))
}

/// Whether `method` is hedged, so its attempts run side by side inside one future.
pub(crate) fn hedged(method: &Method) -> bool {
    method.layers.iter().any(|p| std::ptr::eq(p.spec, &hedge::HEDGE))
}

/// The bulkhead of `method` when it runs inside the method's timeout with no hedge between them
/// (SPEC §6): its acquisition then tells the timeout whether the attempt still waits for its slot
/// (`__private::SlotWatch`), so a timeout that fires during that wait ends the attempt as
/// `BulkheadFull`. Hedged attempts run side by side, so with a hedge between the two there is no
/// one attempt to speak of: the timeout stays a `CallTimeout` there.
pub(crate) fn watched_bulkhead(method: &Method) -> Option<&Layer> {
    let position = |spec: &PolicySpec| method.layers.iter().position(|p| std::ptr::eq(p.spec, spec));
    let (timeout, bulkhead) = (position(&timeout::TIMEOUT)?, position(&bulkhead::BULKHEAD)?);
    let between = method.layers.get(timeout + 1..bulkhead)?;
    let hedge_between = between.iter().any(|p| std::ptr::eq(p.spec, &hedge::HEDGE));
    (!hedge_between).then(|| &method.layers[bulkhead])
}

/// The policy named by an attribute path such as `retry`, if it is one of ours.
pub(crate) fn lookup(path: &syn::Path) -> Option<&'static PolicySpec> {
    let ident = path.get_ident()?;
    POLICIES.iter().copied().find(|p| ident == p.name)
}

/// The spec of a policy attribute named after its module: `name` and `runtime_fn` are the module
/// name, `builder` and `field_ty` are `<Prefix>ConfigBuilder` and `<Prefix>Policy`, and `keys` is
/// the module's `KEYS`.
macro_rules! policy_spec {
    ($module:ident, $prefix:ident, check: $check:expr, rejects: $rejects:expr $(,)?) => {
        $crate::model::PolicySpec {
            name: stringify!($module),
            keys: KEYS,
            check: $check,
            runtime_fn: stringify!($module),
            builder: concat!(stringify!($prefix), "ConfigBuilder"),
            field_ty: concat!(stringify!($prefix), "Policy"),
            rejects: $rejects,
        }
    };
}
pub(super) use policy_spec;

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

/// `key`, `max_keys` and `key_metrics`: the keys of the four keyable attributes (SPEC §15). `key`
/// is read by the expansion (`expand::keys`), the two others are builder setters.
pub(super) const KEY: KeySpec = key("key", ValueKind::Expr, Role::Code);
pub(super) const MAX_KEYS: KeySpec =
    key("max_keys", ValueKind::Count { min: 1, max: U32_MAX, code: crate::diag::ATR_MAX_KEYS }, Role::Builder);
pub(super) const KEY_METRICS: KeySpec =
    key("key_metrics", ValueKind::Bool { code: crate::diag::ATR_VALUE_KIND }, Role::Builder);

/// The key expression of a layer, when it is keyed.
pub(crate) fn key_of(layer: &Layer) -> Option<&syn::Expr> {
    match &layer.settings.get(KEY.name)?.value {
        crate::model::Value::Expr(expr) => Some(expr),
        _ => None,
    }
}

/// The `check` of an attribute whose keys are each judged on their own: nothing across keys.
pub(super) fn no_cross_checks(_settings: &Settings, _method: &Method) -> Vec<Problem> {
    Vec::new()
}
