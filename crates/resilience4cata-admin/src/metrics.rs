//! `GET /metrics`: Prometheus text exposition, through a recorder of the admin's own.
//!
//! The recorder is never installed as the process's global one, so the application's own metrics
//! (and the runtime's `metrics` feature) are untouched. Every scrape sets the gauges from a fresh
//! snapshot and the counters from the admin's event counts, then renders. Every registered
//! instance has its series from the first scrape, at 0 until something is counted.

use std::sync::Arc;

use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use metrics::{counter, gauge};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusRecorder};
use resilience4cata::RegistrySnapshot;
use resilience4cata::circuit_breaker::{CircuitBreakerSnapshot, State as BreakerState};

use crate::counters::Counts;
use crate::state::AdminState;

/// Breaker states and the label each gets in `r4c_circuit_breaker_state`.
const STATES: [(BreakerState, &str); 5] = [
    (BreakerState::Closed, "closed"),
    (BreakerState::Open, "open"),
    (BreakerState::HalfOpen, "half_open"),
    (BreakerState::ForcedOpen, "forced_open"),
    (BreakerState::Disabled, "disabled"),
];

/// The admin's own Prometheus recorder.
pub(crate) struct Exporter {
    recorder: PrometheusRecorder,
}

impl std::fmt::Debug for Exporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Exporter").finish_non_exhaustive()
    }
}

impl Exporter {
    pub(crate) fn new() -> Self {
        Exporter { recorder: PrometheusBuilder::new().build_recorder() }
    }

    /// Records `snapshot` and `counts` into the recorder and renders the exposition text.
    pub(crate) fn render(&self, snapshot: &RegistrySnapshot, counts: &Counts) -> String {
        metrics::with_local_recorder(&self.recorder, || {
            describe();
            record_snapshot(snapshot);
            record_counts(counts);
        });
        self.recorder.handle().render()
    }
}

/// The scrape handler.
pub(crate) async fn metrics(State(state): State<Arc<AdminState>>) -> impl IntoResponse {
    let snapshot = state.registry.snapshot();
    let text = state.exporter.render(&snapshot, &state.counts(&snapshot));
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], text)
}

/// The gauges set from each scrape's snapshot, and their help text.
const GAUGES: [(&str, &str); 15] = [
    ("r4c_circuit_breaker_state", "1 for the breaker's current state, 0 for the others"),
    ("r4c_circuit_breaker_failure_rate", "failure rate in percent, NaN until minimum_calls are recorded"),
    ("r4c_circuit_breaker_slow_call_rate", "slow-call rate in percent, NaN until minimum_calls are recorded"),
    ("r4c_circuit_breaker_not_permitted_calls", "calls refused since the breaker was built or reset"),
    ("r4c_rate_limiter_available_permits", "calls that could pass right now"),
    ("r4c_rate_limiter_permits", "permits per period (the limit)"),
    ("r4c_bulkhead_in_flight", "slots taken"),
    ("r4c_bulkhead_available", "slots free"),
    ("r4c_bulkhead_waiting", "calls waiting for a slot"),
    ("r4c_bulkhead_max_concurrent_calls", "slots in all (the limit)"),
    ("r4c_retry_budget_allowed_retries", "retries the budget's current window allows"),
    ("r4c_retry_budget_retries", "retries granted in the budget's current window"),
    ("r4c_adaptive_limit_limit", "the adaptive limit's current concurrency limit"),
    ("r4c_adaptive_limit_in_flight", "calls holding a slot of the adaptive limit"),
    ("r4c_adaptive_limit_waiting", "calls waiting for a slot of the adaptive limit"),
];

/// The counters set from the admin's event counts, and their help text.
const COUNTERS: [(&str, &str); 9] = [
    ("r4c_timeout_timed_out_total", "attempts cut off at their deadline"),
    ("r4c_retry_retries_total", "retries since the admin started"),
    ("r4c_retry_gave_up_total", "retried calls that gave up since the admin started, by reason"),
    (
        "r4c_hedge_hedged_calls_total",
        "calls that started an extra attempt and ended since the admin started, by outcome",
    ),
    ("r4c_hedge_extra_attempts_total", "extra attempts started since the admin started"),
    ("r4c_fallback_applied_total", "calls answered by the fallback since the admin started"),
    ("r4c_adaptive_limit_changes_total", "moves of the adaptive limit since the admin started, by direction"),
    ("r4c_adaptive_limit_rejected_total", "calls the adaptive limit refused since the admin started"),
    ("r4c_admin_events_lost_total", "events the admin's counting subscription missed"),
];

fn describe() {
    for (name, help) in GAUGES {
        metrics::describe_gauge!(name, help);
    }
    for (name, help) in COUNTERS {
        metrics::describe_counter!(name, help);
    }
}

fn record_snapshot(snapshot: &RegistrySnapshot) {
    snapshot.circuit_breakers().iter().for_each(record_breaker);
    for r in snapshot.rate_limiters() {
        set_gauges(
            &r.instance,
            [
                ("r4c_rate_limiter_available_permits", f64::from(r.available_permits)),
                ("r4c_rate_limiter_permits", f64::from(r.config.permits)),
            ],
        );
    }
    for b in snapshot.bulkheads() {
        set_gauges(
            &b.instance,
            [
                ("r4c_bulkhead_in_flight", f64::from(b.in_flight)),
                ("r4c_bulkhead_available", f64::from(b.available)),
                ("r4c_bulkhead_waiting", f64::from(b.waiting)),
                ("r4c_bulkhead_max_concurrent_calls", f64::from(b.config.max_concurrent_calls)),
            ],
        );
    }
    for a in snapshot.adaptive_limits() {
        set_gauges(
            &a.instance,
            [
                ("r4c_adaptive_limit_limit", f64::from(a.limit)),
                ("r4c_adaptive_limit_in_flight", f64::from(a.in_flight)),
                ("r4c_adaptive_limit_waiting", f64::from(a.waiting)),
            ],
        );
    }
    for t in snapshot.timeouts() {
        counter!("r4c_timeout_timed_out_total", "instance" => t.instance.to_string()).absolute(t.timed_out);
    }
    for r in snapshot.retries() {
        let Some(budget) = r.budget else { continue };
        set_gauges(
            &r.instance,
            [
                ("r4c_retry_budget_allowed_retries", budget.allowed_retries as f64),
                ("r4c_retry_budget_retries", budget.retries as f64),
            ],
        );
    }
}

/// Sets one instance's gauges, each to its value.
fn set_gauges<const N: usize>(instance: &str, values: [(&'static str, f64); N]) {
    for (name, value) in values {
        gauge!(name, "instance" => instance.to_string()).set(value);
    }
}

fn record_breaker(b: &CircuitBreakerSnapshot) {
    let id = b.instance.to_string();
    for (state, label) in STATES {
        let on = if b.state == state { 1.0 } else { 0.0 };
        gauge!("r4c_circuit_breaker_state", "instance" => id.clone(), "state" => label).set(on);
    }
    let rate = |r: Option<f32>| r.map_or(f64::NAN, f64::from);
    gauge!("r4c_circuit_breaker_failure_rate", "instance" => id.clone()).set(rate(b.failure_rate));
    gauge!("r4c_circuit_breaker_slow_call_rate", "instance" => id.clone()).set(rate(b.slow_call_rate));
    gauge!("r4c_circuit_breaker_not_permitted_calls", "instance" => id).set(b.not_permitted_calls as f64);
}

fn record_counts(counts: &Counts) {
    for (id, c) in &counts.retries {
        counter!("r4c_retry_retries_total", "instance" => id.clone()).absolute(c.retries);
        for (reason, n) in &c.gave_up {
            counter!("r4c_retry_gave_up_total", "instance" => id.clone(), "reason" => reason.clone()).absolute(*n);
        }
    }
    for (id, h) in &counts.hedges {
        for (outcome, n) in
            [("won_by_extra", h.won_by_extra), ("won_by_first", h.won_by_first), ("all_failed", h.all_failed)]
        {
            counter!("r4c_hedge_hedged_calls_total", "instance" => id.clone(), "outcome" => outcome).absolute(n);
        }
        counter!("r4c_hedge_extra_attempts_total", "instance" => id.clone()).absolute(h.extra_attempts);
    }
    for (id, f) in &counts.fallbacks {
        counter!("r4c_fallback_applied_total", "instance" => id.clone()).absolute(f.applied);
    }
    for (id, a) in &counts.adaptive_limits {
        for (direction, n) in [("increase", a.increases), ("decrease", a.decreases)] {
            counter!("r4c_adaptive_limit_changes_total", "instance" => id.clone(), "direction" => direction)
                .absolute(n);
        }
        counter!("r4c_adaptive_limit_rejected_total", "instance" => id.clone()).absolute(a.rejected);
    }
    counter!("r4c_admin_events_lost_total").absolute(counts.events_lost);
}
