//! `#[fallback(…)]`: keys of SPEC §7.8. No `name`, `config` or `enabled` (a fallback has no
//! configuration), so those are unknown keys. The rules that need the whole trait (the method
//! exists, has the right signature, is not the method itself) are in `validate/fallback.rs`.

use crate::diag::ATR_SYNTAX;
use crate::model::{KeySpec, Method, PolicySpec, Problem, Role, Settings, ValueKind};

/// The fallback attribute: the outermost layer.
pub(crate) static FALLBACK: PolicySpec = PolicySpec {
    name: "fallback",
    keys: KEYS,
    check,
    runtime_fn: "fallback",
    builder: "",
    field_ty: "FallbackPolicy",
    rejects: false,
};

static KEYS: &[KeySpec] = &[
    KeySpec { name: "method", kind: ValueKind::FnPath, role: Role::Code },
    KeySpec { name: "apply_on", kind: ValueKind::Pattern, role: Role::Code },
    KeySpec { name: "skip_on", kind: ValueKind::Pattern, role: Role::Code },
    KeySpec { name: "apply_on_if", kind: ValueKind::FnPath, role: Role::Code },
    KeySpec { name: "skip_on_if", kind: ValueKind::FnPath, role: Role::Code },
];

/// `method` is required: a fallback without one has nothing to call.
fn check(settings: &Settings, _method: &Method) -> Vec<Problem> {
    if settings.get("method").is_some() {
        return Vec::new();
    }
    vec![Problem::on_attribute(
        settings,
        ATR_SYNTAX,
        "`#[fallback]` needs the method to call: write `#[fallback(method = name)]`, naming a method of this trait \
         with the same parameters plus a last `FallbackContext<E>`",
    )]
}
