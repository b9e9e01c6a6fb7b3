//! `#[rate_limiter(…)]`: its keys are the fields of
//! `resilience4cata::rate_limiter::RateLimiterConfig`, documented there.

use super::{CONFIG, ENABLED, KEY, KEY_METRICS, MAX_KEYS, NAME, U32_MAX, key, policy_spec};
use crate::diag::{ATR_PERIOD, ATR_PERMITS};
use crate::model::{KeySpec, PolicySpec, Role, ValueKind};

/// The rate limiter attribute.
pub(crate) static RATE_LIMITER: PolicySpec =
    policy_spec!(rate_limiter, RateLimiter, check: super::no_cross_checks, rejects: true);

static KEYS: &[KeySpec] = &[
    key("permits", ValueKind::Count { min: 1, max: U32_MAX, code: ATR_PERMITS }, Role::Builder),
    key("period", ValueKind::Duration { nonzero: Some(ATR_PERIOD) }, Role::Builder),
    key("max_wait", ValueKind::Duration { nonzero: None }, Role::Builder),
    ENABLED,
    NAME,
    CONFIG,
    KEY,
    MAX_KEYS,
    KEY_METRICS,
];
