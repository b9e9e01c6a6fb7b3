//! `#[bulkhead(…)]`: its keys are the fields of `resilience4cata::bulkhead::BulkheadConfig`,
//! documented there.

use super::{CONFIG, ENABLED, KEY, KEY_METRICS, MAX_KEYS, NAME, U32_MAX, key, policy_spec};
use crate::diag::ATR_MAX_CONCURRENT_CALLS;
use crate::model::{KeySpec, PolicySpec, Role, ValueKind};

/// The bulkhead attribute.
pub(crate) static BULKHEAD: PolicySpec = policy_spec!(bulkhead, Bulkhead, check: super::no_cross_checks, rejects: true);

static KEYS: &[KeySpec] = &[
    key(
        "max_concurrent_calls",
        ValueKind::Count { min: 1, max: U32_MAX, code: ATR_MAX_CONCURRENT_CALLS },
        Role::Builder,
    ),
    key("max_wait", ValueKind::Duration { nonzero: None }, Role::Builder),
    ENABLED,
    NAME,
    CONFIG,
    KEY,
    MAX_KEYS,
    KEY_METRICS,
];
