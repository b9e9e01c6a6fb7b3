//! `#[circuit_breaker(…)]`: its keys are the fields of
//! `resilience4cata::circuit_breaker::CircuitBreakerConfig`, and the ranges the runtime would refuse
//! with `R4C-REG-003`, caught at compile time instead.

use super::{CONFIG, ENABLED, KEY, KEY_METRICS, MAX_KEYS, NAME, U32_MAX, key, policy_spec};
use crate::diag::{ATR_CB_COUNT, ATR_CB_RATE, ATR_CB_SLOW_ZERO};
use crate::model::{KeySpec, Method, PolicySpec, Problem, Role, Setting, Settings, Value, ValueKind};

/// `circuit_breaker::MAX_COUNT_WINDOW`, `MAX_TIME_WINDOW` and `MAX_HALF_OPEN_CALLS` of the runtime.
const MAX_COUNT_WINDOW: u64 = 1_000_000;
const MAX_TIME_WINDOW: u64 = 86_400;
const MAX_HALF_OPEN_CALLS: u64 = 4_095;

/// The circuit breaker attribute.
pub(crate) static CIRCUIT_BREAKER: PolicySpec =
    policy_spec!(circuit_breaker, CircuitBreaker, check: check, rejects: true);

const fn count(min: u64, max: u64) -> ValueKind {
    ValueKind::Count { min, max, code: ATR_CB_COUNT }
}

const RATE: ValueKind = ValueKind::Number { min: 0.0, max: 100.0, code: ATR_CB_RATE };

static KEYS: &[KeySpec] = &[
    key("window_type", ValueKind::Enum { ty: "WindowType", variants: &["Count", "Time"] }, Role::Builder),
    key("window_size", count(1, MAX_COUNT_WINDOW), Role::Builder),
    key("minimum_calls", count(1, U32_MAX), Role::Builder),
    key("failure_rate_threshold", RATE, Role::Builder),
    key("slow_call_duration", ValueKind::Duration { nonzero: Some(ATR_CB_SLOW_ZERO) }, Role::Builder),
    key("slow_call_rate_threshold", RATE, Role::Builder),
    key("wait_in_open", ValueKind::Duration { nonzero: None }, Role::Builder),
    key("permitted_calls_in_half_open", count(1, MAX_HALF_OPEN_CALLS), Role::Builder),
    ENABLED,
    key("record_on", ValueKind::Pattern, Role::Code),
    key("ignore_on", ValueKind::Pattern, Role::Code),
    key("record_on_if", ValueKind::FnPath, Role::Code),
    key("ignore_on_if", ValueKind::FnPath, Role::Code),
    NAME,
    CONFIG,
    KEY,
    MAX_KEYS,
    KEY_METRICS,
];

/// A threshold of 0 % would open a healthy breaker (the range check admits it, being inclusive);
/// a time window is at most a day.
fn check(settings: &Settings, _method: &Method) -> Vec<Problem> {
    let mut problems = Vec::new();
    for key in ["failure_rate_threshold", "slow_call_rate_threshold"] {
        let Some(setting) = settings.get(key) else { continue };
        if matches!(setting.value, Value::Number(n) if n == 0.0) {
            let message = format!("`{key}` must be above 0 (a 0 % threshold opens a breaker that saw no failure)");
            problems.push(Problem::at(setting, ATR_CB_RATE, message));
        }
    }
    let time = matches!(settings.get("window_type").map(|s| &s.value), Some(Value::Enum("Time")));
    let window = settings.get("window_size").filter(|_| time);
    if let Some(setting @ Setting { value: Value::Count(n @ (MAX_TIME_WINDOW..)), .. }) = window
        && *n > MAX_TIME_WINDOW
    {
        let message =
            format!("`window_size` of a time window counts seconds and must be at most {MAX_TIME_WINDOW}, got {n}");
        problems.push(Problem::at(setting, ATR_CB_COUNT, message));
    }
    problems
}
