//! `#[retry(…)]`: its keys are the fields of `resilience4cata::retry::RetryConfig`
//! (documented there), plus the error patterns and the classifier rules.

use super::{CONFIG, ENABLED, NAME, U32_MAX, key, policy_spec};
use crate::diag::{ATR_BUDGET, ATR_MAX_ATTEMPTS, ATR_MULTIPLIER, CLF_EXHAUSTED_WITHOUT_CLASSIFIER, CLF_WITH_PATTERNS};
use crate::model::{KeySpec, Method, PolicySpec, Problem, Role, Settings, ValueKind};

/// The retry attribute.
pub(crate) static RETRY: PolicySpec = policy_spec!(retry, Retry, check: check, rejects: false);

static KEYS: &[KeySpec] = &[
    key("max_attempts", ValueKind::Count { min: 1, max: U32_MAX, code: ATR_MAX_ATTEMPTS }, Role::Builder),
    key("delay", ValueKind::Duration { nonzero: None }, Role::Builder),
    key("backoff", ValueKind::Enum { ty: "Backoff", variants: &["Fixed", "Exponential"] }, Role::Builder),
    key("multiplier", ValueKind::Number { min: 1.0, max: f64::MAX, code: ATR_MULTIPLIER }, Role::Builder),
    key("max_delay", ValueKind::Duration { nonzero: None }, Role::Builder),
    key("jitter", ValueKind::Enum { ty: "Jitter", variants: &["Full", "Equal", "None"] }, Role::Builder),
    key("max_duration", ValueKind::Duration { nonzero: None }, Role::Builder),
    key("budget_percent", ValueKind::Number { min: 0.0, max: 1000.0, code: ATR_BUDGET }, Role::Builder),
    key("budget_min_retries_per_second", ValueKind::Count { min: 0, max: U32_MAX, code: ATR_BUDGET }, Role::Builder),
    key("budget_window", ValueKind::Duration { nonzero: Some(ATR_BUDGET) }, Role::Builder),
    ENABLED,
    key("retry_on", ValueKind::Pattern, Role::Code),
    key("abort_on", ValueKind::Pattern, Role::Code),
    key("retry_on_if", ValueKind::FnPath, Role::Code),
    key("abort_on_if", ValueKind::FnPath, Role::Code),
    key("classifier", ValueKind::FnPath, Role::Code),
    key("on_exhausted_result", ValueKind::FnPath, Role::Code),
    key("delay_from", ValueKind::FnPath, Role::Code),
    NAME,
    CONFIG,
];

/// Keys a classifier replaces: it decides for `Ok` and `Err` alike.
const PATTERN_KEYS: &[&str] = &["retry_on", "abort_on", "retry_on_if", "abort_on_if"];

fn check(settings: &Settings, _method: &Method) -> Vec<Problem> {
    let mut problems = Vec::new();
    let classifier = settings.get("classifier");
    if let Some(classifier) = classifier {
        let patterns: Vec<_> = PATTERN_KEYS.iter().filter_map(|k| settings.get(k)).collect();
        if let Some(first) = patterns.first() {
            // Point at whichever side the method wrote, so a trait-level conflict is reported once.
            let at = if classifier.is_method_level() { classifier } else { first };
            let names: Vec<_> = patterns.iter().map(|s| format!("`{}`", s.key.name)).collect();
            problems.push(Problem::at(
                at,
                CLF_WITH_PATTERNS,
                format!(
                    "`classifier` cannot be combined with {}: the classifier decides for `Ok` and `Err` alike; \
                     match the errors inside the classifier or remove it",
                    names.join(", ")
                ),
            ));
        }
    }
    if let (Some(exhausted), None) = (settings.get("on_exhausted_result"), classifier) {
        problems.push(Problem::at(
            exhausted,
            CLF_EXHAUSTED_WITHOUT_CLASSIFIER,
            "`on_exhausted_result` needs a `classifier`: without one an `Ok` is never retried, so there is no \
             exhausted `Ok` to map; add `classifier = path::to::fn` or remove `on_exhausted_result`",
        ));
    }
    problems
}
