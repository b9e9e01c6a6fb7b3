//! The admin's own Prometheus recorder, and what a scrape records into it: every policy
//! snapshot's readings (their names and values given by the runtime's snapshot types, prefixed
//! `resilience4cata_`) and the admin's event counts, under the names the runtime's `metrics`
//! feature uses for the same quantities (one table: docs/metrics.md).
//!
//! The recorder is never installed as the process's global one, so the application's own metrics
//! (and the runtime's `metrics` feature) are untouched.

use metrics::{Label, counter, gauge};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusRecorder};
use resilience4cata::RegistrySnapshot;
use resilience4cata::readings::{Reading, SeriesKind};

use crate::counters::{CALL_OUTCOMES, Counts, STATES, snake_case};

// The prefix of every series the admin exports, the runtime's `metrics` feature's too.
use resilience4cata::readings::PREFIX;

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
        let mut text = self.recorder.handle().render();
        render_durations(snapshot, &mut text);
        text
    }
}

/// The duration histograms (runtime feature `durations`): one family per kind of duration, each
/// written out here, since a recorder's histogram holds observations, not a snapshot's buckets.
pub(crate) const HISTOGRAMS: [(&str, &str); 2] = [
    ("resilience4cata_call_duration_seconds", "whole calls, around every policy, by method or pipeline id"),
    ("resilience4cata_attempt_duration_seconds", "attempts, each call of the delegate alone, by method or pipeline id"),
];

/// Appends the histograms of `snapshot.durations()` in the exposition format (`_bucket` with
/// `le`, `_sum` in seconds, `_count`); nothing when there are none (the runtime was built without
/// the feature `durations`, or nothing is timed yet).
fn render_durations(snapshot: &RegistrySnapshot, text: &mut String) {
    use std::fmt::Write as _;
    let durations = snapshot.durations();
    if durations.is_empty() {
        return;
    }
    for (i, (name, help)) in HISTOGRAMS.into_iter().enumerate() {
        let _ = writeln!(text, "# HELP {name} {help}\n# TYPE {name} histogram");
        for d in durations {
            let histogram = if i == 0 { &d.calls } else { &d.attempts };
            let instance = escape(&d.instance);
            for bucket in &histogram.buckets {
                let le = if bucket.le.is_infinite() { "+Inf".to_owned() } else { bucket.le.to_string() };
                let _ = writeln!(text, "{name}_bucket{{instance=\"{instance}\",le=\"{le}\"}} {}", bucket.count);
            }
            let _ = writeln!(text, "{name}_sum{{instance=\"{instance}\"}} {}", histogram.sum_seconds());
            let _ = writeln!(text, "{name}_count{{instance=\"{instance}\"}} {}", histogram.count);
        }
        text.push('\n');
    }
}

/// A label value as the exposition format quotes it.
fn escape(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// The counters set from the admin's event counts, and their help text.
pub(crate) const COUNTERS: [(&str, &str); 14] = [
    ("resilience4cata_retry_retries_total", "retries since the admin started"),
    ("resilience4cata_retry_gave_up_total", "retried calls that gave up since the admin started, by reason"),
    (
        "resilience4cata_hedge_hedged_calls_total",
        "calls that started an extra attempt and ended since the admin started, by outcome",
    ),
    ("resilience4cata_hedge_extra_attempts_total", "extra attempts started since the admin started"),
    ("resilience4cata_fallback_applied_total", "calls answered by the fallback since the admin started"),
    (
        "resilience4cata_adaptive_limit_changes_total",
        "moves of the adaptive limit since the admin started, by direction",
    ),
    ("resilience4cata_adaptive_limit_rejected_total", "calls the adaptive limit refused since the admin started"),
    ("resilience4cata_circuit_breaker_calls_total", "calls the breaker saw since the admin started, by outcome"),
    ("resilience4cata_circuit_breaker_slow_calls_total", "calls the breaker recorded as slow since the admin started"),
    (
        "resilience4cata_circuit_breaker_transitions_total",
        "state transitions since the admin started, by the state entered",
    ),
    ("resilience4cata_rate_limiter_permitted_total", "calls the rate limiter let through since the admin started"),
    ("resilience4cata_rate_limiter_rejected_total", "calls the rate limiter refused since the admin started"),
    ("resilience4cata_bulkhead_permitted_total", "calls that got a bulkhead slot since the admin started"),
    ("resilience4cata_bulkhead_rejected_total", "calls the bulkhead refused since the admin started"),
];

/// The counter of events the admin's counting subscription missed (no `instance` label).
const EVENTS_LOST: (&str, &str) =
    ("resilience4cata_admin_events_lost_total", "events the admin's counting subscription missed");

/// HELP lines: every series a snapshot may give, then the admin's own counters.
fn describe() {
    for series in RegistrySnapshot::series() {
        let name = format!("{PREFIX}{}", series.name);
        match series.kind {
            SeriesKind::Counter => metrics::describe_counter!(name, series.help),
            _ => metrics::describe_gauge!(name, series.help),
        }
    }
    for (name, help) in COUNTERS.into_iter().chain([EVENTS_LOST]) {
        metrics::describe_counter!(name, help);
    }
}

/// Each snapshot's readings: gauges set, counters set to the snapshot's total.
fn record_snapshot(snapshot: &RegistrySnapshot) {
    snapshot.readings(|instance, reading| {
        let Reading { series, label, value, .. } = reading;
        let mut labels = vec![Label::new("instance", instance.to_owned())];
        labels.extend(label.map(|(key, value)| Label::new(key, value)));
        let name = format!("{PREFIX}{}", series.name);
        match series.kind {
            SeriesKind::Counter => counter!(name, labels).absolute(value as u64),
            _ => gauge!(name, labels).set(value),
        }
    });
}

fn record_counts(counts: &Counts) {
    for (id, c) in &counts.retries {
        counter!("resilience4cata_retry_retries_total", "instance" => id.clone()).absolute(c.retries);
        for (reason, n) in &c.gave_up {
            // `/counters` keys reasons by their `Debug` name; the metric's label is the runtime's.
            let reason = snake_case(reason);
            counter!("resilience4cata_retry_gave_up_total", "instance" => id.clone(), "reason" => reason).absolute(*n);
        }
    }
    for (id, h) in &counts.hedges {
        for (outcome, n) in
            [("won_by_extra", h.won_by_extra), ("won_by_first", h.won_by_first), ("all_failed", h.all_failed)]
        {
            counter!("resilience4cata_hedge_hedged_calls_total", "instance" => id.clone(), "outcome" => outcome)
                .absolute(n);
        }
        counter!("resilience4cata_hedge_extra_attempts_total", "instance" => id.clone()).absolute(h.extra_attempts);
    }
    for (id, f) in &counts.fallbacks {
        counter!("resilience4cata_fallback_applied_total", "instance" => id.clone()).absolute(f.applied);
    }
    for (id, a) in &counts.adaptive_limits {
        for (direction, n) in [("increase", a.increases), ("decrease", a.decreases)] {
            counter!("resilience4cata_adaptive_limit_changes_total", "instance" => id.clone(), "direction" => direction)
                .absolute(n);
        }
        counter!("resilience4cata_adaptive_limit_rejected_total", "instance" => id.clone()).absolute(a.rejected);
    }
    for (id, c) in &counts.circuit_breakers {
        for (outcome, n) in CALL_OUTCOMES.into_iter().zip(c.calls) {
            counter!("resilience4cata_circuit_breaker_calls_total", "instance" => id.clone(), "outcome" => outcome)
                .absolute(n);
        }
        counter!("resilience4cata_circuit_breaker_slow_calls_total", "instance" => id.clone()).absolute(c.slow);
        for (to, n) in STATES.into_iter().zip(c.transitions) {
            counter!("resilience4cata_circuit_breaker_transitions_total", "instance" => id.clone(), "to" => to)
                .absolute(n);
        }
    }
    for (id, r) in &counts.rate_limiters {
        counter!("resilience4cata_rate_limiter_permitted_total", "instance" => id.clone()).absolute(r.permitted);
        counter!("resilience4cata_rate_limiter_rejected_total", "instance" => id.clone()).absolute(r.rejected);
    }
    for (id, b) in &counts.bulkheads {
        counter!("resilience4cata_bulkhead_permitted_total", "instance" => id.clone()).absolute(b.permitted);
        counter!("resilience4cata_bulkhead_rejected_total", "instance" => id.clone()).absolute(b.rejected);
    }
    counter!(EVENTS_LOST.0).absolute(counts.events_lost);
}

#[cfg(test)]
mod tests {
    use resilience4cata::{Pipeline, Registry};

    use super::*;

    /// One series of each policy kind that has any, as a scrape sees it: its `# TYPE` line (a
    /// counter for the timeout's total, gauges for the rest) and its value.
    #[test]
    fn a_series_of_each_policy_kind_is_rendered_with_its_type() {
        let registry = Registry::builder().build().unwrap();
        let _calls = Pipeline::builder(&registry, "a")
            .retry_with(|r| r.budget_percent(20.0))
            .circuit_breaker()
            .rate_limiter_with(|r| r.permits(7))
            .adaptive_limit_with(|a| a.initial_limit(10))
            .timeout()
            .bulkhead_with(|b| b.max_concurrent_calls(3))
            .build::<u32, std::io::Error>()
            .unwrap();
        let text = Exporter::new().render(&registry.snapshot(), &Counts::default());
        for (name, kind, sample) in [
            (
                "resilience4cata_retry_budget_retries",
                "gauge",
                r#"resilience4cata_retry_budget_retries{instance="a"} 0"#,
            ),
            (
                "resilience4cata_circuit_breaker_state",
                "gauge",
                r#"resilience4cata_circuit_breaker_state{instance="a",state="closed"} 1"#,
            ),
            (
                "resilience4cata_rate_limiter_permits",
                "gauge",
                r#"resilience4cata_rate_limiter_permits{instance="a"} 7"#,
            ),
            (
                "resilience4cata_adaptive_limit_limit",
                "gauge",
                r#"resilience4cata_adaptive_limit_limit{instance="a"} 10"#,
            ),
            (
                "resilience4cata_timeout_timed_out_total",
                "counter",
                r#"resilience4cata_timeout_timed_out_total{instance="a"} 0"#,
            ),
            ("resilience4cata_bulkhead_available", "gauge", r#"resilience4cata_bulkhead_available{instance="a"} 3"#),
        ] {
            assert!(text.contains(&format!("# TYPE {name} {kind}\n")), "{name} {kind}:\n{text}");
            assert!(text.contains(&format!("# HELP {name} ")), "{name} help:\n{text}");
            assert!(text.lines().any(|line| line == sample), "{sample}:\n{text}");
        }
    }

    /// The duration histograms (the tests build the runtime with the feature `durations`), an id
    /// that needs escaping, on the manual clock: the exposition's TYPE, buckets, sum and count.
    #[test]
    fn durations_are_rendered_as_histograms() {
        let clock = resilience4cata::testing::ManualClock::new();
        let registry = resilience4cata::testing::registry(&clock).build().unwrap();
        let pipeline = Pipeline::builder(&registry, "say \"hi\"\\").build::<u32, std::io::Error>().unwrap();
        let outcome = pipeline.execute(|| {
            clock.advance(std::time::Duration::from_millis(30));
            Ok(1)
        });
        assert_eq!(outcome.unwrap(), 1);
        let text = Exporter::new().render(&registry.snapshot(), &Counts::default());
        for (name, _) in HISTOGRAMS {
            assert!(text.contains(&format!("# TYPE {name} histogram\n")), "{name}:\n{text}");
            for (sample, value) in [("_bucket", r#",le="0.025""#), ("_bucket", r#",le="0.05""#), ("_count", "")] {
                let count = if value.contains("0.025") { 0 } else { 1 };
                let line = format!(r#"{name}{sample}{{instance="say \"hi\"\\"{value}}} {count}"#);
                assert!(text.lines().any(|l| l == line), "{line}:\n{text}");
            }
            let sum = format!(r#"{name}_sum{{instance="say \"hi\"\\"}} 0.03"#);
            assert!(text.lines().any(|l| l == sum), "{sum}:\n{text}");
        }
        let scrape = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_owned()))).unwrap();
        assert!(scrape.samples.iter().any(|s| s.metric == "resilience4cata_call_duration_seconds"));
    }
}
