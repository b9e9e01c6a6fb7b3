//! `#[rate_limiter(…)]`: its keys are the fields of
//! `resilience4cata::rate_limiter::RateLimiterConfig`, documented there.

use super::{KeySpec, PolicySpec, Role, ValueKind};
use crate::diag::{ATR_ENABLED, ATR_PERIOD, ATR_PERMITS};
use crate::validate::{Method, Problem, Settings};

/// The rate limiter attribute.
pub(crate) static RATE_LIMITER: PolicySpec = PolicySpec {
    name: "rate_limiter",
    keys: KEYS,
    check,
    runtime_fn: "rate_limiter",
    builder: "RateLimiterConfigBuilder",
    field_ty: "RateLimiterPolicy",
    layer: crate::expand::rate_limiter::layer,
    rejects: true,
};

static KEYS: &[KeySpec] = &[
    KeySpec {
        name: "permits",
        kind: ValueKind::Count { min: 1, max: u32::MAX as u64, code: ATR_PERMITS },
        role: Role::Builder,
    },
    KeySpec { name: "period", kind: ValueKind::Duration { nonzero: Some(ATR_PERIOD) }, role: Role::Builder },
    KeySpec { name: "max_wait", kind: ValueKind::Duration { nonzero: None }, role: Role::Builder },
    KeySpec { name: "enabled", kind: ValueKind::Bool { code: ATR_ENABLED }, role: Role::Builder },
    KeySpec { name: "name", kind: ValueKind::Str, role: Role::Name },
    KeySpec { name: "config", kind: ValueKind::Str, role: Role::Config },
];

/// Every key is judged on its own; nothing to check across keys.
fn check(_settings: &Settings, _method: &Method) -> Vec<Problem> {
    Vec::new()
}
