//! Feature `metrics` through a real Prometheus exporter: every series of every policy exists at 0
//! as soon as the wrapper is built, before any call (issue 30, "Counters appear late"), so a
//! dashboard's queries find them from the start; the first calls then move them.

use std::collections::BTreeMap;

use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusRecorder};
use resilience4cata::testing::{self, ManualClock};
use resilience4cata::{FallbackContext, Rejection, ResilienceError, resilient};

#[derive(Debug, ResilienceError)]
pub enum Error {
    Down,
    #[rejection]
    Rejected(Rejection),
}

#[resilient]
pub trait Shop {
    #[retry(max_attempts = 2, delay = "10ms")]
    #[circuit_breaker]
    #[rate_limiter(permits = 100, period = "1s")]
    #[timeout(duration = "1s")]
    #[bulkhead(max_concurrent_calls = 4)]
    #[fallback(method = cached)]
    async fn price(&self, sku: u32) -> Result<u32, Error>;

    async fn cached(&self, sku: u32, ctx: FallbackContext<Error>) -> Result<u32, Error>;

    #[hedge(delay = "50ms")]
    #[adaptive_limit(initial_limit = 7)]
    async fn search(&self, q: u32) -> Result<u32, Error>;
}

struct Flaky;

impl Shop for Flaky {
    async fn price(&self, sku: u32) -> Result<u32, Error> {
        if sku == 0 { Err(Error::Down) } else { Ok(sku) }
    }

    async fn cached(&self, _sku: u32, _ctx: FallbackContext<Error>) -> Result<u32, Error> {
        Ok(0)
    }

    async fn search(&self, q: u32) -> Result<u32, Error> {
        Ok(q)
    }
}

const PRICE: &str = "metrics_prometheus::Shop::price";
const SEARCH: &str = "metrics_prometheus::Shop::search";

/// The scrape, parsed back: `name{label="value",…}` (labels sorted) → value.
fn scrape(recorder: &PrometheusRecorder) -> BTreeMap<String, f64> {
    let text = recorder.handle().render();
    let lines = text.lines().map(|l| Ok(l.to_owned()));
    let scrape = prometheus_parse::Scrape::parse(lines).expect("the exposition parses");
    scrape
        .samples
        .into_iter()
        .map(|s| {
            let mut labels: Vec<_> = s.labels.iter().map(|(k, v)| format!("{k}=\"{v}\"")).collect();
            labels.sort();
            let value = match s.value {
                prometheus_parse::Value::Counter(v) | prometheus_parse::Value::Gauge(v) => v,
                prometheus_parse::Value::Untyped(v) => v,
                other => panic!("{} is not a counter or a gauge: {other:?}", s.metric),
            };
            (format!("{}{{{}}}", s.metric, labels.join(",")), value)
        })
        .collect()
}

fn series(name: &str, instance: &str, extra: Option<(&str, &str)>) -> String {
    let mut labels = vec![format!("instance=\"{instance}\"")];
    labels.extend(extra.map(|(k, v)| format!("{k}=\"{v}\"")));
    labels.sort();
    format!("resilience4cata_{name}{{{}}}", labels.join(","))
}

/// Every series a dashboard over the `metrics` feature queries, for the two methods above.
fn expected() -> Vec<String> {
    let mut all = vec![series("retry_retries_total", PRICE, None)];
    for reason in [
        "max_attempts",
        "max_duration",
        "not_retryable",
        "interrupted",
        "classifier_failed",
        "budget_exhausted",
        "refused",
    ] {
        all.push(series("retry_gave_up_total", PRICE, Some(("reason", reason))));
    }
    for outcome in ["success", "failure", "ignored", "not_permitted"] {
        all.push(series("circuit_breaker_calls_total", PRICE, Some(("outcome", outcome))));
    }
    all.push(series("circuit_breaker_slow_calls_total", PRICE, None));
    for to in ["closed", "open", "half_open", "forced_open", "disabled"] {
        all.push(series("circuit_breaker_transitions_total", PRICE, Some(("to", to))));
    }
    for name in ["rate_limiter_permitted_total", "rate_limiter_rejected_total", "timeout_timed_out_total"] {
        all.push(series(name, PRICE, None));
    }
    for name in ["bulkhead_permitted_total", "bulkhead_rejected_total", "bulkhead_in_flight", "fallback_applied_total"]
    {
        all.push(series(name, PRICE, None));
    }
    all.push(series("hedge_extra_attempts_total", SEARCH, None));
    for outcome in ["won_by_extra", "won_by_first", "all_failed"] {
        all.push(series("hedge_hedged_calls_total", SEARCH, Some(("outcome", outcome))));
    }
    for name in ["adaptive_limit_rejected_total", "adaptive_limit_in_flight"] {
        all.push(series(name, SEARCH, None));
    }
    all
}

#[test]
fn every_series_exists_at_zero_before_the_first_call() {
    let recorder = PrometheusBuilder::new().build_recorder();
    let clock = ManualClock::new();
    let shop = metrics::with_local_recorder(&recorder, || {
        let registry = testing::registry(&clock).build().unwrap();
        ResilientShop::new(Flaky, &registry).unwrap()
    });

    let before = scrape(&recorder);
    let missing: Vec<_> = expected().into_iter().filter(|s| before.get(s) != Some(&0.0)).collect();
    assert!(missing.is_empty(), "absent or not 0 before any call: {missing:#?}\nscrape: {before:#?}");
    // A gauge with a meaning at rest has its value at once: the adaptive limit's starting limit.
    assert_eq!(before.get(&series("adaptive_limit_limit", SEARCH, None)), Some(&7.0));

    // The handles registered with the wrapper are the ones the calls move.
    assert_eq!(testkit::block_on(shop.price(0)).unwrap(), 0, "the fallback answered");
    let after = scrape(&recorder);
    assert_eq!(after[&series("retry_retries_total", PRICE, None)], 1.0);
    assert_eq!(after[&series("retry_gave_up_total", PRICE, Some(("reason", "max_attempts")))], 1.0);
    assert_eq!(after[&series("circuit_breaker_calls_total", PRICE, Some(("outcome", "failure")))], 2.0);
    assert_eq!(after[&series("fallback_applied_total", PRICE, None)], 1.0);
    assert_eq!(after[&series("retry_gave_up_total", PRICE, Some(("reason", "refused")))], 0.0);
}

/// SPEC §15: a keyed instance's metrics get a `key` label only with `key_metrics = true`. Off (the
/// default), its keys record into the instance's series, so their figures add up there; on, each
/// key has series of its own, labelled with its text.
#[test]
fn a_keyed_instance_has_a_key_label_only_with_key_metrics() {
    use resilience4cata::__private::{self as p, Site};
    use resilience4cata::rate_limiter::RateLimiterConfigBuilder;

    let recorder = PrometheusBuilder::new().build_recorder();
    let clock = ManualClock::new();
    let limiter = |registry: &resilience4cata::Registry, id: &'static str, key_metrics: bool| {
        let b = RateLimiterConfigBuilder::new().permits(1).key_metrics(key_metrics);
        p::keyed_rate_limiter(registry, Site { id, name: None, config: None, is_async: false }, b).unwrap()
    };
    let (off, on) = metrics::with_local_recorder(&recorder, || {
        let registry = testing::registry(&clock).build().unwrap();
        (limiter(&registry, "keys-off", false), limiter(&registry, "keys-on", true))
    });
    metrics::with_local_recorder(&recorder, || {
        for keyed in [&off, &on] {
            keyed.for_key(&1u32).unwrap().acquire().unwrap();
            keyed.for_key(&2u32).unwrap().acquire().unwrap();
            assert!(keyed.for_key(&1u32).unwrap().acquire().is_err());
        }
    });
    let after = scrape(&recorder);
    assert_eq!(after[&series("rate_limiter_permitted_total", "keys-off", None)], 2.0, "summed over keys");
    assert_eq!(after[&series("rate_limiter_rejected_total", "keys-off", None)], 1.0);
    let keyed = |name: &str, key: &str| series(name, "keys-on", Some(("key", key)));
    assert_eq!(after[&keyed("rate_limiter_permitted_total", "1")], 1.0);
    assert_eq!(after[&keyed("rate_limiter_permitted_total", "2")], 1.0);
    assert_eq!(after[&keyed("rate_limiter_rejected_total", "1")], 1.0);
    assert_eq!(after.get(&keyed("rate_limiter_rejected_total", "2")), Some(&0.0));
    let off_keys: Vec<_> = after.keys().filter(|s| s.contains("keys-off") && s.contains("key=")).collect();
    assert!(off_keys.is_empty(), "no per-key series by default: {off_keys:?}");
}
