//! `#[bulkhead(…)]`: its keys are the fields of `resilience4cata::bulkhead::BulkheadConfig`,
//! documented there.

use super::{KeySpec, Kind, PolicySpec, Role};
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
        kind: Kind::Count { min: 1, max: u32::MAX as u64, code: ATR_MAX_CONCURRENT_CALLS },
        role: Role::Builder,
    },
    KeySpec { name: "max_wait", kind: Kind::Duration { nonzero: None }, role: Role::Builder },
    KeySpec { name: "enabled", kind: Kind::Bool { code: ATR_ENABLED }, role: Role::Builder },
    KeySpec { name: "name", kind: Kind::Str, role: Role::Name },
    KeySpec { name: "config", kind: Kind::Str, role: Role::Config },
];

/// Every key is judged on its own; nothing to check across keys.
fn check(_settings: &Settings, _method: &Method) -> Vec<Problem> {
    Vec::new()
}
