//! Every admin route over real HTTP on loopback: status codes, JSON shapes, Prometheus text
//! parsed back, SSE framing, the token rules.

use std::time::Duration;

use reqwest::StatusCode;
use resilience4cata::circuit_breaker::State;
use resilience4cata::testing::{self, ManualClock};
use resilience4cata::{Pipeline, Registry};
use resilience4cata_admin::{AdminOptions, AdminServer, DEFAULT_ADDR, serve};
use serde_json::Value;

/// A scoped-looking id: a `/` and `::` that must be percent-encoded in a path.
const BREAKER: &str = "host-a/shop::Api::get";
const TOKEN: &str = "t0ken-for-tests";

type Calls = Pipeline<u32, std::io::Error>;

/// A registry with one pipeline using a retry, a breaker, a rate limiter and a bulkhead.
fn registry() -> (Registry, Calls, ManualClock) {
    let clock = ManualClock::new();
    let registry = testing::registry(&clock).build().unwrap();
    let calls = Pipeline::builder(&registry, BREAKER)
        .retry_with(|r| r.max_attempts(2).delay(Duration::from_millis(10)))
        .circuit_breaker_with(|c| c.window_size(4).minimum_calls(4).wait_in_open(Duration::from_secs(30)))
        .rate_limiter_with(|r| r.permits(1000).period(Duration::from_secs(1)))
        .bulkhead_with(|b| b.max_concurrent_calls(3))
        .build::<u32, std::io::Error>()
        .unwrap();
    (registry, calls, clock)
}

async fn start(registry: &Registry, options: AdminOptions) -> AdminServer {
    serve("127.0.0.1:0", registry.clone(), options).await.unwrap()
}

fn url(server: &AdminServer, path: &str) -> String {
    format!("http://{}{path}", server.local_addr())
}

fn fail(calls: &Calls) {
    let _ = calls.execute(|| Err(std::io::Error::other("down")));
}

async fn json(server: &AdminServer, path: &str) -> Value {
    let response = reqwest::get(url(server, path)).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK, "{path}");
    assert_eq!(response.headers()["content-type"], "application/json");
    response.json().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshot_is_the_registry_snapshot_as_json() {
    let (registry, calls, _clock) = registry();
    fail(&calls);
    let server = start(&registry, AdminOptions::new()).await;
    let snapshot = json(&server, "/snapshot").await;
    let breaker = &snapshot["circuit_breakers"][0];
    assert_eq!(breaker["instance"], BREAKER);
    assert_eq!(breaker["state"], "Closed");
    assert_eq!((breaker["buffered_calls"].as_u64(), breaker["failed_calls"].as_u64()), (Some(2), Some(2)));
    assert_eq!(breaker["failure_rate"], Value::Null, "fewer than minimum_calls");
    assert_eq!(breaker["config"]["wait_in_open"], 30_000, "durations are milliseconds");
    assert_eq!(breaker["config"]["slow_call_duration"], Value::Null);
    assert_eq!(breaker["config"]["window_type"], "Count");
    let retry = &snapshot["retries"][0];
    assert_eq!((retry["config"]["delay"].as_u64(), retry["config"]["max_attempts"].as_u64()), (Some(10), Some(2)));
    assert_eq!(retry["budget"], Value::Null);
    let bulkhead = &snapshot["bulkheads"][0];
    assert_eq!(
        (bulkhead["available"].as_u64(), bulkhead["config"]["max_concurrent_calls"].as_u64()),
        (Some(3), Some(3))
    );
    assert_eq!(snapshot["rate_limiters"][0]["config"]["permits"], 1000);
    assert_eq!(snapshot["timeouts"], Value::Array(vec![]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_is_self_contained_and_never_holds_the_token() {
    let (registry, _calls, _clock) = registry();
    let server = start(&registry, AdminOptions::new().token(TOKEN)).await;
    let response = reqwest::get(url(&server, "/")).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["content-type"], "text/html; charset=utf-8");
    let page = response.text().await.unwrap();
    assert!(page.contains("<canvas") || page.contains("getContext"), "draws its own charts");
    assert!(page.contains("EventSource"), "live from /events");
    for external in ["src=\"http", "href=\"http", "src=\"//", "href=\"//", "url(http", "@import", "fetch(\"http"] {
        assert!(!page.contains(external), "the page loads nothing from elsewhere: found {external}");
    }
    assert!(!page.contains(TOKEN));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_parse_as_prometheus_text() {
    let (registry, calls, _clock) = registry();
    // The counting subscription exists once `serve` returns: every later event is counted.
    let server = start(&registry, AdminOptions::new()).await;
    for _ in 0..2 {
        fail(&calls); // two retried calls: four failed attempts open the breaker
    }
    let response = reqwest::get(url(&server, "/metrics")).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert!(response.headers()["content-type"].to_str().unwrap().starts_with("text/plain; version=0.0.4"));
    let text = response.text().await.unwrap();
    let scrape = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_owned()))).unwrap();
    let value = |metric: &str, labels: &[(&str, &str)]| {
        let sample = scrape
            .samples
            .iter()
            .find(|s| s.metric == metric && labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
            .unwrap_or_else(|| panic!("no {metric} {labels:?} in\n{text}"));
        match sample.value {
            prometheus_parse::Value::Gauge(v) | prometheus_parse::Value::Counter(v) => v,
            ref other => panic!("{metric}: {other:?}"),
        }
    };
    let id = ("instance", BREAKER);
    assert_eq!(value("resilience4cata_circuit_breaker_state", &[id, ("state", "open")]), 1.0);
    assert_eq!(value("resilience4cata_circuit_breaker_state", &[id, ("state", "closed")]), 0.0);
    assert!(value("resilience4cata_circuit_breaker_failure_rate", &[id]).is_nan(), "no rate while open");
    assert_eq!(value("resilience4cata_bulkhead_max_concurrent_calls", &[id]), 3.0);
    assert_eq!(value("resilience4cata_bulkhead_available", &[id]), 3.0);
    assert_eq!(value("resilience4cata_rate_limiter_permits", &[id]), 1000.0);
    assert!(scrape.docs.contains_key("resilience4cata_circuit_breaker_state"), "HELP lines");
    // Counted from events: two retries; the calls gave up after their two attempts.
    wait_until(|| async { value_of(&server, "/counters", &["retries", BREAKER, "retries"]).await == Some(2) }).await;
    let text = reqwest::get(url(&server, "/metrics")).await.unwrap().text().await.unwrap();
    let scrape = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_owned()))).unwrap();
    let retries = scrape.samples.iter().find(|s| s.metric == "resilience4cata_retry_retries_total").unwrap();
    assert_eq!(retries.value, prometheus_parse::Value::Counter(2.0));
    // The breaker's, the rate limiter's and the bulkhead's counters, under the `metrics` feature's
    // names: once both give-ups are counted, so is every event before them.
    let gave_up = ["retries", BREAKER, "gave_up", "MaxAttempts"];
    wait_until(|| async { value_of(&server, "/counters", &gave_up).await == Some(2) }).await;
    let text = reqwest::get(url(&server, "/metrics")).await.unwrap().text().await.unwrap();
    let counter = |metric: &str, labels: &[(&str, &str)]| sample(&text, metric, &[&[id], labels].concat());
    assert_eq!(counter("resilience4cata_retry_gave_up_total", &[("reason", "max_attempts")]), Some(2.0));
    assert_eq!(counter("resilience4cata_circuit_breaker_calls_total", &[("outcome", "failure")]), Some(4.0));
    assert_eq!(counter("resilience4cata_circuit_breaker_calls_total", &[("outcome", "success")]), Some(0.0));
    assert_eq!(counter("resilience4cata_circuit_breaker_transitions_total", &[("to", "open")]), Some(1.0));
    assert_eq!(counter("resilience4cata_rate_limiter_permitted_total", &[]), Some(4.0));
    assert_eq!(counter("resilience4cata_bulkhead_permitted_total", &[]), Some(4.0));
    assert_eq!(counter("resilience4cata_bulkhead_rejected_total", &[]), Some(0.0));
}

async fn value_of(server: &AdminServer, path: &str, keys: &[&str]) -> Option<u64> {
    let mut value = json(server, path).await;
    for key in keys {
        value = value.get(*key)?.clone();
    }
    value.as_u64()
}

/// Polls `done` until it holds (the counting task runs beside the test); gives up after ~10 s.
async fn wait_until<F: std::future::Future<Output = bool>>(mut done: impl FnMut() -> F) {
    for _ in 0..1000 {
        if done().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("condition never held");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counters_count_retries_and_give_ups_since_start() {
    let (registry, calls, _clock) = registry();
    fail(&calls); // before the admin: not counted
    let server = start(&registry, AdminOptions::new()).await;
    fail(&calls);
    wait_until(|| async {
        value_of(&server, "/counters", &["retries", BREAKER, "gave_up", "MaxAttempts"]).await == Some(1)
    })
    .await;
    assert_eq!(value_of(&server, "/counters", &["retries", BREAKER, "retries"]).await, Some(1));
    assert_eq!(value_of(&server, "/counters", &["events_lost"]).await, Some(0));
}

/// Reads a sample of a Prometheus text scrape by metric and labels; `None` when it is absent.
fn sample(text: &str, metric: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let scrape = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_owned()))).unwrap();
    let sample = scrape
        .samples
        .into_iter()
        .find(|s| s.metric == metric && labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))?;
    match sample.value {
        prometheus_parse::Value::Gauge(v) | prometheus_parse::Value::Counter(v) => Some(v),
        other => panic!("{metric}: {other:?}"),
    }
}

async fn scrape(server: &AdminServer) -> String {
    reqwest::get(url(server, "/metrics")).await.unwrap().text().await.unwrap()
}

const HEDGE: &str = "shop::Api::search";
const LIMITED: &str = "shop::Api::price";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hedges_fallbacks_and_adaptive_limits_are_counted_and_exported() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};

    let clock = ManualClock::new();
    let registry = testing::registry(&clock).build().unwrap();
    let search = Pipeline::builder(&registry, HEDGE)
        .hedge_with(|h| h.max_hedged_attempts(1))
        .build::<u32, std::io::Error>()
        .unwrap();
    let price = Pipeline::builder(&registry, LIMITED)
        .adaptive_limit_with(|a| a.initial_limit(10))
        .build::<u32, std::io::Error>()
        .unwrap()
        .fallback(|_| Ok(0));
    let server = start(&registry, AdminOptions::new()).await;

    // The first attempt fails, so the hedge starts the second at once: won by the extra attempt.
    let attempts = Arc::new(AtomicU32::new(0));
    let answer = search
        .execute_async(|| {
            let n = attempts.fetch_add(1, Ordering::SeqCst) + 1;
            async move { if n == 1 { Err(std::io::Error::other("slow shard")) } else { Ok(n) } }
        })
        .await;
    assert_eq!(answer.unwrap(), 2);
    // Both attempts fail.
    assert!(search.execute_async(|| async { Err::<u32, _>(std::io::Error::other("down")) }).await.is_err());
    // A drop moves the limit 10 → 9 (×0.9), and the fallback answers the call.
    assert_eq!(price.execute(|| Err(std::io::Error::other("overloaded"))).unwrap(), 0);

    wait_until(|| async { value_of(&server, "/counters", &["hedges", HEDGE, "hedged_calls"]).await == Some(2) }).await;
    wait_until(|| async {
        value_of(&server, "/counters", &["adaptive_limits", LIMITED, "decreases"]).await == Some(1)
    })
    .await;
    let counters = json(&server, "/counters").await;
    assert_eq!(
        counters["hedges"][HEDGE],
        serde_json::json!({ "hedged_calls": 2, "extra_attempts": 2, "won_by_extra": 1, "won_by_first": 0, "all_failed": 1 })
    );
    assert_eq!(counters["fallbacks"][LIMITED], serde_json::json!({ "applied": 1 }));
    assert_eq!(
        counters["adaptive_limits"][LIMITED],
        serde_json::json!({ "increases": 0, "decreases": 1, "rejected": 0 })
    );

    let snapshot = json(&server, "/snapshot").await;
    let limit = &snapshot["adaptive_limits"][0];
    assert_eq!((limit["instance"].as_str(), limit["limit"].as_u64()), (Some(LIMITED), Some(9)));
    assert_eq!(snapshot["hedges"][0]["instance"], HEDGE);

    let text = scrape(&server).await;
    let id = ("instance", HEDGE);
    assert_eq!(
        sample(&text, "resilience4cata_hedge_hedged_calls_total", &[id, ("outcome", "won_by_extra")]),
        Some(1.0)
    );
    assert_eq!(sample(&text, "resilience4cata_hedge_hedged_calls_total", &[id, ("outcome", "all_failed")]), Some(1.0));
    assert_eq!(
        sample(&text, "resilience4cata_hedge_hedged_calls_total", &[id, ("outcome", "won_by_first")]),
        Some(0.0)
    );
    assert_eq!(sample(&text, "resilience4cata_hedge_extra_attempts_total", &[id]), Some(2.0));
    let id = ("instance", LIMITED);
    assert_eq!(sample(&text, "resilience4cata_fallback_applied_total", &[id]), Some(1.0));
    assert_eq!(sample(&text, "resilience4cata_adaptive_limit_limit", &[id]), Some(9.0));
    assert_eq!(sample(&text, "resilience4cata_adaptive_limit_in_flight", &[id]), Some(0.0));
    assert_eq!(sample(&text, "resilience4cata_adaptive_limit_waiting", &[id]), Some(0.0));
    assert_eq!(
        sample(&text, "resilience4cata_adaptive_limit_changes_total", &[id, ("direction", "decrease")]),
        Some(1.0)
    );
    assert_eq!(sample(&text, "resilience4cata_adaptive_limit_rejected_total", &[id]), Some(0.0));

    // A call holding a slot shows in the in-flight gauge while it runs.
    let during = price
        .execute_async(|| async {
            let text = scrape(&server).await;
            Ok(sample(&text, "resilience4cata_adaptive_limit_in_flight", &[("instance", LIMITED)]).unwrap() as u32)
        })
        .await;
    assert_eq!(during.unwrap(), 1);
}

fn control_url(server: &AdminServer, id: &str, action: &str) -> String {
    let encoded: String = id
        .bytes()
        .map(|b| if b.is_ascii_alphanumeric() || b == b'-' { (b as char).to_string() } else { format!("%{b:02X}") })
        .collect();
    url(server, &format!("/circuit-breakers/{encoded}/{action}"))
}

async fn post(url: String, token: Option<&str>) -> StatusCode {
    let mut request = reqwest::Client::new().post(url);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    request.send().await.unwrap().status()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn control_routes_do_not_exist_without_a_token() {
    let (registry, _calls, _clock) = registry();
    let server = start(&registry, AdminOptions::new()).await;
    for action in ["force-open", "disable", "reset"] {
        assert_eq!(post(control_url(&server, BREAKER, action), Some(TOKEN)).await, StatusCode::NOT_FOUND);
    }
    assert_eq!(registry.circuit_breaker(BREAKER).unwrap().state(), State::Closed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn control_routes_need_the_token_and_a_known_id() {
    let (registry, _calls, _clock) = registry();
    let server = start(&registry, AdminOptions::new().token(TOKEN)).await;
    let breaker = registry.circuit_breaker(BREAKER).unwrap();
    let force_open = control_url(&server, BREAKER, "force-open");
    assert_eq!(post(force_open.clone(), None).await, StatusCode::UNAUTHORIZED);
    assert_eq!(post(force_open.clone(), Some("t0ken-for-test")).await, StatusCode::UNAUTHORIZED);
    assert_eq!(breaker.state(), State::Closed, "refused requests change nothing");
    assert_eq!(post(control_url(&server, "no::Such::breaker", "reset"), Some(TOKEN)).await, StatusCode::NOT_FOUND);
    assert_eq!(post(control_url(&server, BREAKER, "explode"), Some(TOKEN)).await, StatusCode::NOT_FOUND);

    let response = reqwest::Client::new().post(force_open).bearer_auth(TOKEN).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.json::<Value>().await.unwrap()["state"], "ForcedOpen", "answers with the new snapshot");
    assert_eq!(breaker.state(), State::ForcedOpen);
    assert_eq!(post(control_url(&server, BREAKER, "disable"), Some(TOKEN)).await, StatusCode::OK);
    assert_eq!(breaker.state(), State::Disabled);
    assert_eq!(post(control_url(&server, BREAKER, "reset"), Some(TOKEN)).await, StatusCode::OK);
    assert_eq!(breaker.state(), State::Closed);
    // Reads stay open unless asked otherwise.
    assert_eq!(reqwest::get(url(&server, "/snapshot")).await.unwrap().status(), StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cross_origin_control_requests_are_refused() {
    let (registry, _calls, _clock) = registry();
    let server = start(&registry, AdminOptions::new().token(TOKEN)).await;
    let request = |origin: &str| {
        reqwest::Client::new().post(control_url(&server, BREAKER, "force-open")).header("origin", origin.to_owned())
    };
    let status = request("http://evil.example").send().await.unwrap().status();
    assert_eq!(status, StatusCode::FORBIDDEN, "without the token");
    let status = request("http://evil.example").bearer_auth(TOKEN).send().await.unwrap().status();
    assert_eq!(status, StatusCode::FORBIDDEN, "even with it");
    assert_eq!(registry.circuit_breaker(BREAKER).unwrap().state(), State::Closed);
    let same = format!("http://{}", server.local_addr());
    assert_eq!(request(&same).bearer_auth(TOKEN).send().await.unwrap().status(), StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_can_be_put_behind_the_token() {
    let (registry, _calls, _clock) = registry();
    let server = start(&registry, AdminOptions::new().token(TOKEN).protect_reads(true)).await;
    for path in ["/", "/snapshot", "/counters", "/metrics", "/events"] {
        assert_eq!(reqwest::get(url(&server, path)).await.unwrap().status(), StatusCode::UNAUTHORIZED, "{path}");
    }
    let authorized = reqwest::Client::new().get(url(&server, "/snapshot")).bearer_auth(TOKEN).send().await.unwrap();
    assert_eq!(authorized.status(), StatusCode::OK);

    let locked = start(&registry, AdminOptions::new().protect_reads(true)).await;
    let status = reqwest::get(url(&locked, "/snapshot")).await.unwrap().status();
    assert_eq!(status, StatusCode::UNAUTHORIZED, "protected reads without a token fail closed");
}

#[test]
fn the_default_address_is_loopback() {
    let addr: std::net::SocketAddr = DEFAULT_ADDR.parse().unwrap();
    assert!(addr.ip().is_loopback());
}

/// Issue 30, "Counters appear late": right after the registry's instances are built, before any
/// call, the first scrape already has every series a dashboard queries, at 0 (and `/counters`
/// lists every retry, hedge and adaptive limit).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_series_is_there_at_zero_before_any_call() {
    let (registry, _calls, _clock) = registry();
    let _searches = Pipeline::builder(&registry, "shop::Api::search")
        .hedge_with(|h| h.delay(Duration::from_millis(50)))
        .adaptive_limit()
        .timeout()
        .build::<u32, std::io::Error>()
        .unwrap();
    let server = start(&registry, AdminOptions::new()).await;
    let text = reqwest::get(url(&server, "/metrics")).await.unwrap().text().await.unwrap();
    let scrape = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_owned()))).unwrap();
    let value = |metric: &str, labels: &[(&str, &str)]| {
        let sample = scrape
            .samples
            .iter()
            .find(|s| s.metric == metric && labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)));
        match sample.map(|s| &s.value) {
            Some(prometheus_parse::Value::Counter(v) | prometheus_parse::Value::Gauge(v)) => Some(*v),
            _ => None,
        }
    };
    let (calls, search) = (("instance", BREAKER), ("instance", "shop::Api::search"));
    let mut zeros: Vec<(&str, Vec<(&str, &str)>)> = vec![("resilience4cata_retry_retries_total", vec![calls])];
    for reason in [
        "max_attempts",
        "max_duration",
        "not_retryable",
        "interrupted",
        "classifier_failed",
        "budget_exhausted",
        "refused",
    ] {
        zeros.push(("resilience4cata_retry_gave_up_total", vec![calls, ("reason", reason)]));
    }
    for outcome in ["won_by_extra", "won_by_first", "all_failed"] {
        zeros.push(("resilience4cata_hedge_hedged_calls_total", vec![search, ("outcome", outcome)]));
    }
    zeros.push(("resilience4cata_hedge_extra_attempts_total", vec![search]));
    for direction in ["increase", "decrease"] {
        zeros.push(("resilience4cata_adaptive_limit_changes_total", vec![search, ("direction", direction)]));
    }
    zeros.push(("resilience4cata_adaptive_limit_rejected_total", vec![search]));
    zeros.push(("resilience4cata_adaptive_limit_in_flight", vec![search]));
    zeros.push(("resilience4cata_timeout_timed_out_total", vec![search]));
    zeros.push(("resilience4cata_circuit_breaker_not_permitted_calls", vec![calls]));
    zeros.push(("resilience4cata_bulkhead_in_flight", vec![calls]));
    for outcome in ["success", "failure", "ignored", "not_permitted"] {
        zeros.push(("resilience4cata_circuit_breaker_calls_total", vec![calls, ("outcome", outcome)]));
    }
    for to in ["closed", "open", "half_open", "forced_open", "disabled"] {
        zeros.push(("resilience4cata_circuit_breaker_transitions_total", vec![calls, ("to", to)]));
    }
    for name in [
        "resilience4cata_circuit_breaker_slow_calls_total",
        "resilience4cata_rate_limiter_permitted_total",
        "resilience4cata_rate_limiter_rejected_total",
        "resilience4cata_bulkhead_permitted_total",
        "resilience4cata_bulkhead_rejected_total",
    ] {
        zeros.push((name, vec![calls]));
    }
    zeros.push(("resilience4cata_admin_events_lost_total", vec![]));
    let missing: Vec<_> = zeros.iter().filter(|(m, labels)| value(m, labels) != Some(0.0)).collect();
    assert!(missing.is_empty(), "absent or not 0 before any call: {missing:?}\n{text}");
    assert_eq!(value("resilience4cata_circuit_breaker_state", &[calls, ("state", "closed")]), Some(1.0));
    assert_eq!(value_of(&server, "/counters", &["retries", BREAKER, "gave_up", "Refused"]).await, Some(0));
    assert_eq!(value_of(&server, "/counters", &["hedges", "shop::Api::search", "hedged_calls"]).await, Some(0));
}

/// The page is served with the snapshot and counts of that moment in it, so it paints them before
/// its first request; and it says whether the breaker controls exist (only with a token).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_carries_the_first_snapshot_and_whether_controls_exist() {
    let (registry, _calls, _clock) = registry();
    for (options, controls) in [(AdminOptions::new(), false), (AdminOptions::new().token(TOKEN), true)] {
        let server = start(&registry, options).await;
        let page = reqwest::get(url(&server, "/")).await.unwrap().text().await.unwrap();
        let block = &page[page.find(r#"<script id="initial" type="application/json">"#).unwrap()..];
        let json = &block[block.find('>').unwrap() + 1..block.find("</script>").unwrap()];
        let initial: Value = serde_json::from_str(json).unwrap();
        assert_eq!(initial["controls"], controls);
        assert_eq!(initial["snapshot"]["circuit_breakers"][0]["instance"], BREAKER);
        assert_eq!(initial["counters"]["retries"][BREAKER]["retries"], 0);
    }
}
