//! `#[bulkhead(…)]`: its keys are the fields of `resilience4cata::bulkhead::BulkheadConfig`,
//! documented there.

use super::{KeySpec, PolicySpec, Role, ValueKind};
use crate::diag::{ATR_ENABLED, ATR_MAX_CONCURRENT_CALLS};
use crate::validate::{Method, Problem, Settings};

/// The bulkhead attribute.
pub(crate) static BULKHEAD: PolicySpec = PolicySpec {
    name: "bulkhead",
    keys: KEYS,
    check,
    runtime_fn: "bulkhead",
    builder: "BulkheadConfigBuilder",
    field_ty: "BulkheadPolicy",
    layer: crate::expand::bulkhead::layer,
    rejects: true,
};

static KEYS: &[KeySpec] = &[
    KeySpec {
        name: "max_concurrent_calls",
        kind: ValueKind::Count { min: 1, max: u32::MAX as u64, code: ATR_MAX_CONCURRENT_CALLS },
        role: Role::Builder,
    },
    KeySpec { name: "max_wait", kind: ValueKind::Duration { nonzero: None }, role: Role::Builder },
    KeySpec { name: "enabled", kind: ValueKind::Bool { code: ATR_ENABLED }, role: Role::Builder },
    KeySpec { name: "name", kind: ValueKind::Str, role: Role::Name },
    KeySpec { name: "config", kind: ValueKind::Str, role: Role::Config },
];

/// Every key is judged on its own; nothing to check across keys.
fn check(_settings: &Settings, _method: &Method) -> Vec<Problem> {
    Vec::new()
}
