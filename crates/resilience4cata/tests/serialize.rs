//! Feature `serde`: snapshots, configs and events serialize with their Rust field names, durations
//! as milliseconds, enums as variant names and events tagged with `kind` (docs/admin.md).

use std::sync::Arc;
use std::time::Duration;

use resilience4cata::circuit_breaker::{CircuitBreakerEvent, State};
use resilience4cata::rate_limiter::RateLimiterEvent;
use resilience4cata::{GiveUpReason, Pipeline, RetryEvent};
use serde_json::{Value, json};

fn to_json(value: &impl serde::Serialize) -> Value {
    serde_json::to_value(value).unwrap()
}

#[test]
fn durations_are_milliseconds_whole_or_fractional() {
    let instance: Arc<str> = Arc::from("m::A::f");
    let waited = |d| {
        to_json(&RateLimiterEvent::Permitted { instance: instance.clone(), key: None, waited: d })["waited"].clone()
    };
    assert_eq!(waited(Duration::from_secs(2)), json!(2000));
    assert_eq!(waited(Duration::ZERO), json!(0));
    assert_eq!(waited(Duration::from_micros(1500)), json!(1.5));
    assert_eq!(waited(Duration::MAX), json!(Duration::MAX.as_secs_f64() * 1000.0), "beyond u64 milliseconds: a float");
}

#[test]
fn events_are_tagged_with_their_kind() {
    let instance: Arc<str> = Arc::from("m::A::f");
    let retrying = RetryEvent::Retrying { instance: instance.clone(), attempt: 1, delay: Duration::from_millis(100) };
    assert_eq!(to_json(&retrying), json!({ "kind": "Retrying", "instance": "m::A::f", "attempt": 1, "delay": 100 }));
    let gave_up = RetryEvent::GaveUp { instance: instance.clone(), attempts: 3, reason: GiveUpReason::BudgetExhausted };
    assert_eq!(
        to_json(&gave_up),
        json!({ "kind": "GaveUp", "instance": "m::A::f", "attempts": 3, "reason": "BudgetExhausted" })
    );
    let opened = CircuitBreakerEvent::StateTransition {
        instance: instance.clone(),
        key: None,
        from: State::HalfOpen,
        to: State::ForcedOpen,
    };
    assert_eq!(
        to_json(&opened),
        json!({ "kind": "StateTransition", "instance": "m::A::f", "from": "HalfOpen", "to": "ForcedOpen" })
    );
    let applied = resilience4cata::fallback::FallbackEvent::Applied { instance, attempts: 2 };
    assert_eq!(to_json(&applied), json!({ "kind": "Applied", "instance": "m::A::f", "attempts": 2 }));
}

#[test]
fn the_registry_snapshot_lists_every_policy_with_its_config() {
    let (_, registry) = testkit::manual();
    let _calls = Pipeline::builder(&registry, "shop::Api::get")
        .retry_with(|r| r.max_attempts(4).delay(Duration::from_millis(50)).budget_percent(20.0))
        .circuit_breaker_with(|c| c.slow_call_duration(Duration::from_millis(250)))
        .build::<u32, std::io::Error>()
        .unwrap();
    let snapshot = to_json(&registry.snapshot());
    let retry = &snapshot["retries"][0];
    assert_eq!(retry["instance"], "shop::Api::get");
    assert_eq!(retry["config"]["max_attempts"], 4);
    assert_eq!(retry["config"]["delay"], 50);
    assert_eq!(retry["config"]["max_duration"], Value::Null);
    assert_eq!(retry["config"]["backoff"], "Exponential");
    let budget = retry["budget"].as_object().unwrap();
    assert_eq!(budget.keys().collect::<Vec<_>>(), ["allowed_retries", "calls", "retries"]);
    assert_eq!((&budget["calls"], &budget["retries"]), (&json!(0), &json!(0)));
    assert!(budget["allowed_retries"].is_u64());
    let breaker = &snapshot["circuit_breakers"][0];
    assert_eq!(breaker["state"], "Closed");
    assert_eq!(breaker["config"]["slow_call_duration"], 250);
    assert_eq!(breaker["config"]["wait_in_open"], 60_000);
    assert_eq!((&breaker["failure_rate"], &breaker["slow_call_rate"]), (&Value::Null, &Value::Null));
    for list in ["rate_limiters", "bulkheads", "timeouts"] {
        assert_eq!(snapshot[list], json!([]), "{list}: a list even when empty");
    }
}
