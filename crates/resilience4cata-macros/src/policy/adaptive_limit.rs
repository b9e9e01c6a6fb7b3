//! `#[adaptive_limit(…)]`: keys of SPEC §7.4, with the limits' order (`R4C-ATR-050`) and the
//! algorithms' ranges (`R4C-ATR-051`) checked at compile time.

use super::{CONFIG, ENABLED, KEY, KEY_METRICS, MAX_KEYS, NAME, U32_MAX, key, policy_spec};
use crate::diag::{ATR_LIMIT_ORDER, ATR_LIMIT_PARAMETER};
use crate::model::{KeySpec, Method, PolicySpec, Problem, Role, Setting, Settings, Value, ValueKind};

/// The adaptive limit attribute.
pub(crate) static ADAPTIVE_LIMIT: PolicySpec = policy_spec!(adaptive_limit, AdaptiveLimit, check: check, rejects: true);

const LIMIT: ValueKind = ValueKind::Count { min: 1, max: U32_MAX, code: ATR_LIMIT_ORDER };
const fn count(min: u64) -> ValueKind {
    ValueKind::Count { min, max: U32_MAX, code: ATR_LIMIT_PARAMETER }
}
const fn number(min: f64, max: f64) -> ValueKind {
    ValueKind::Number { min, max, code: ATR_LIMIT_PARAMETER }
}

static KEYS: &[KeySpec] = &[
    key("algorithm", ValueKind::Enum { ty: "Algorithm", variants: &["Aimd", "Gradient2", "Vegas"] }, Role::Builder),
    key("initial_limit", LIMIT, Role::Builder),
    key("min_limit", LIMIT, Role::Builder),
    key("max_limit", LIMIT, Role::Builder),
    key("max_wait", ValueKind::Duration { nonzero: None }, Role::Builder),
    key("backoff_ratio", number(0.0, 1.0), Role::Builder),
    key("latency_timeout", ValueKind::Duration { nonzero: Some(ATR_LIMIT_PARAMETER) }, Role::Builder),
    key("smoothing", number(0.0, 1.0), Role::Builder),
    key("long_window", count(1), Role::Builder),
    key("rtt_tolerance", number(1.0, f64::MAX), Role::Builder),
    key("queue_size", count(0), Role::Builder),
    key("alpha", count(0), Role::Builder),
    key("beta", count(0), Role::Builder),
    key("min_window_time", ValueKind::Duration { nonzero: None }, Role::Builder),
    key("max_window_time", ValueKind::Duration { nonzero: Some(ATR_LIMIT_PARAMETER) }, Role::Builder),
    key("window_size", count(1), Role::Builder),
    key("min_rtt_threshold", ValueKind::Duration { nonzero: None }, Role::Builder),
    ENABLED,
    key("drop_on", ValueKind::Pattern, Role::Code),
    key("ignore_on", ValueKind::Pattern, Role::Code),
    key("drop_on_if", ValueKind::FnPath, Role::Code),
    key("ignore_on_if", ValueKind::FnPath, Role::Code),
    NAME,
    CONFIG,
    KEY,
    MAX_KEYS,
    KEY_METRICS,
];

/// `min_limit ≤ initial_limit ≤ max_limit` among the limits written (unwritten ones come from the
/// registry, checked when the wrapper is built); the open ends of `backoff_ratio` (0, 1) and
/// `smoothing` (0, 1], which the inclusive range check admits; `alpha ≤ beta`; `min_window_time ≤
/// max_window_time`.
fn check(settings: &Settings, _method: &Method) -> Vec<Problem> {
    let count = |key| settings.get(key).and_then(|s| matches!(s.value, Value::Count(_)).then_some(s));
    let mut problems = Vec::new();
    let limits = ["min_limit", "initial_limit", "max_limit"].map(count);
    for (low, high) in [(0, 1), (1, 2), (0, 2)] {
        if let (Some(a), Some(b)) = (limits[low], limits[high])
            && value(a) > value(b)
        {
            let (an, bn) = (a.key.name, b.key.name);
            let message = format!(
                "`{an}` ({}) must not exceed `{bn}` ({}): the limits need 1 ≤ min_limit ≤ initial_limit ≤ max_limit",
                value(a),
                value(b)
            );
            problems.push(Problem::at(b, ATR_LIMIT_ORDER, message));
            break;
        }
    }
    for (key, forbidden) in [("backoff_ratio", [0.0, 1.0]), ("smoothing", [0.0, 0.0])] {
        let Some(setting) = settings.get(key) else { continue };
        if matches!(setting.value, Value::Number(n) if forbidden.contains(&n)) {
            let range = if key == "smoothing" { "above 0 and at most 1" } else { "strictly between 0 and 1" };
            problems.push(Problem::at(setting, ATR_LIMIT_PARAMETER, format!("`{key}` must be {range}")));
        }
    }
    if let (Some(alpha), Some(beta)) = (count("alpha"), count("beta"))
        && value(alpha) > value(beta)
    {
        problems.push(Problem::at(beta, ATR_LIMIT_PARAMETER, "`alpha` must not exceed `beta`"));
    }
    let duration = |key| settings.get(key).and_then(|s| matches!(s.value, Value::Duration(_)).then_some(s));
    if let (Some(min), Some(max)) = (duration("min_window_time"), duration("max_window_time"))
        && let (Value::Duration(low), Value::Duration(high)) = (&min.value, &max.value)
        && low > high
    {
        let (low, high) = (std::time::Duration::from_nanos(*low), std::time::Duration::from_nanos(*high));
        let message = format!("`min_window_time` ({low:?}) must not exceed `max_window_time` ({high:?})");
        problems.push(Problem::at(max, ATR_LIMIT_PARAMETER, message));
    }
    problems
}

fn value(setting: &Setting) -> u64 {
    match setting.value {
        Value::Count(n) => n,
        _ => unreachable!("limits are counts"),
    }
}
