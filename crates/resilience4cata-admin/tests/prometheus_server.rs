//! The Grafana dashboard (`docs/grafana/resilience4cata.json`) against a real Prometheus server:
//! the server scrapes the admin's `/metrics` during a run, and every series every panel queries
//! exists there with the type `docs/metrics.md` gives it; every panel's query is valid PromQL
//! (Prometheus evaluates it without an error); names under `rate()` and `increase()` are counters.
//!
//! Needs `/usr/bin/prometheus` (Debian package `prometheus`; `PROMETHEUS` names another binary):
//! without it the test prints why and passes, unless `R4C_REQUIRE_EXTERNAL=1` (set by `.ci/test`),
//! which makes it fail instead.
//!
//! How names are taken from a query (documented in docs/metrics.md): every word that starts with
//! `resilience4cata_` is a series name (the dashboard writes no label or function so named); a
//! histogram's series (`_bucket`, `_sum`, `_count`) belong to the metric the table lists.

use std::collections::{BTreeMap, BTreeSet};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use resilience4cata::testing::{self, ManualClock};
use resilience4cata::{Jitter, Pipeline};
use resilience4cata_admin::{AdminOptions, serve};
use serde_json::Value;

const DASHBOARD: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/grafana/resilience4cata.json");
const TABLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/metrics.md");

fn dashboard() -> Value {
    serde_json::from_str(&std::fs::read_to_string(DASHBOARD).unwrap()).expect("the dashboard is JSON")
}

/// Every PromQL expression of every panel (rows hold none).
fn exprs(dashboard: &Value) -> Vec<(String, String)> {
    let mut all = Vec::new();
    for panel in dashboard["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().into_iter().flatten() {
            all.push((panel["title"].as_str().unwrap().to_owned(), target["expr"].as_str().unwrap().to_owned()));
        }
    }
    all
}

/// The metric names in a PromQL expression: every word starting with `resilience4cata_`.
fn names(expr: &str) -> BTreeSet<String> {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut names = BTreeSet::new();
    let mut rest = expr;
    while let Some(at) = rest.find("resilience4cata_") {
        let before = rest[..at].chars().next_back();
        let len = rest[at..].find(|c: char| !word(c)).unwrap_or(rest.len() - at);
        if !before.is_some_and(word) && len > "resilience4cata_".len() {
            names.insert(rest[at..at + len].to_owned());
        }
        rest = &rest[at + len..];
    }
    names
}

/// The names an expression takes the `rate()` or `increase()` of: they must be counters.
fn rated(expr: &str) -> BTreeSet<String> {
    let mut rated = BTreeSet::new();
    for function in ["rate(", "increase("] {
        for (at, _) in expr.match_indices(function) {
            let argument = expr[at + function.len()..].trim_start();
            let len = argument.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(argument.len());
            if argument[..len].starts_with("resilience4cata_") {
                rated.insert(argument[..len].to_owned());
            }
        }
    }
    rated
}

/// The documented metric a series belongs to: itself, or the histogram whose `_bucket`, `_sum`
/// or `_count` it is.
fn family<'a>(series: &'a str, documented: &BTreeMap<String, String>) -> &'a str {
    for suffix in ["_bucket", "_sum", "_count"] {
        if let Some(base) = series.strip_suffix(suffix)
            && documented.get(base).is_some_and(|kind| kind == "histogram")
        {
            return base;
        }
    }
    series
}

/// `docs/metrics.md`'s table: metric name → type.
fn documented_types() -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(TABLE).unwrap();
    text.lines()
        .filter(|l| l.starts_with("| `resilience4cata_"))
        .map(|l| {
            let cells: Vec<&str> = l.trim_matches('|').split(" | ").map(str::trim).collect();
            (cells[0].trim_matches('`').to_owned(), cells[1].to_owned())
        })
        .collect()
}

/// Checks that need no server: the file imports into Grafana (a Prometheus data-source variable
/// every panel and query uses, an `instance` variable, unique panel ids) and every name its
/// queries use is a documented metric, with `rate()`/`increase()` only over counters.
#[test]
fn the_dashboard_is_importable_and_queries_documented_metrics() {
    let dashboard = dashboard();
    assert_eq!(dashboard["uid"], "resilience4cata");
    assert!(dashboard["schemaVersion"].as_u64().unwrap() >= 30);
    let variables = dashboard["templating"]["list"].as_array().unwrap();
    let datasource = variables.iter().find(|v| v["type"] == "datasource").expect("a data-source variable");
    assert_eq!((datasource["name"].as_str(), datasource["query"].as_str()), (Some("datasource"), Some("prometheus")));
    assert!(variables.iter().any(|v| v["name"] == "instance" && v["type"] == "query"));
    let mut ids = BTreeSet::new();
    for panel in dashboard["panels"].as_array().unwrap() {
        assert!(ids.insert(panel["id"].as_u64().unwrap()), "panel ids are unique");
        assert!(panel["gridPos"]["w"].as_u64().unwrap() <= 24);
        if panel["type"] == "row" {
            continue;
        }
        assert_eq!(panel["datasource"]["uid"], "${datasource}", "{}", panel["title"]);
        let targets = panel["targets"].as_array().unwrap();
        assert!(!targets.is_empty(), "{} queries something", panel["title"]);
        for target in targets {
            assert_eq!(target["datasource"]["uid"], "${datasource}");
        }
    }
    let documented = documented_types();
    let mut used = BTreeSet::new();
    for (title, expr) in exprs(&dashboard) {
        let names = names(&expr);
        assert!(!names.is_empty(), "{title}: {expr}");
        for name in &names {
            assert!(documented.contains_key(family(name, &documented)), "{title}: {name} is not in docs/metrics.md");
        }
        for name in rated(&expr) {
            // A counter, or a histogram's buckets (the argument of `histogram_quantile`).
            let counted = documented[family(&name, &documented)] == "counter"
                || (name.ends_with("_bucket") && family(&name, &documented) != name);
            assert!(counted, "{title}: rate/increase of {name}");
        }
        used.extend(names.iter().map(|n| family(n, &documented).to_owned()));
    }
    // The dashboard covers what the admin serves: every documented metric but one (the
    // breaker's `not_permitted_calls` gauge duplicates `calls_total{outcome="not_permitted"}`).
    let unused: Vec<_> = documented.keys().filter(|n| !used.contains(*n)).collect();
    assert_eq!(unused, ["resilience4cata_circuit_breaker_not_permitted_calls"]);
}

#[test]
fn names_are_taken_from_queries() {
    let expr = r#"sum by (instance) (rate(resilience4cata_a_total{x="resilience4cata_no"}[1m])) / resilience4cata_b"#;
    // A label value in quotes is a word too; the dashboard has none, and the check below keeps it so.
    assert_eq!(
        names(expr),
        ["resilience4cata_a_total", "resilience4cata_b", "resilience4cata_no"].map(String::from).into()
    );
    assert_eq!(rated(expr), ["resilience4cata_a_total".to_owned()].into());
    for (title, expr) in exprs(&dashboard()) {
        assert!(!expr.contains("\"resilience4cata_"), "{title}: a quoted name");
    }
}

/// A Prometheus server of the test's own, killed when dropped.
struct Prometheus {
    child: Child,
    base: String,
    _dir: tempfile::TempDir,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The binary, or why the test cannot run.
fn binary() -> Result<PathBuf, String> {
    let path = PathBuf::from(std::env::var("PROMETHEUS").unwrap_or_else(|_| "/usr/bin/prometheus".into()));
    if path.is_file() { Ok(path) } else { Err(format!("no Prometheus server at {}", path.display())) }
}

fn start_prometheus(binary: &PathBuf, target: &str) -> Prometheus {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: resilience4cata\n    \
             honor_labels: true\n    metrics_path: /metrics\n    static_configs:\n      - targets: ['{target}']\n"
        ),
    )
    .unwrap();
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let child = Command::new(binary)
        .arg(format!("--config.file={}", config.display()))
        .arg(format!("--storage.tsdb.path={}", dir.path().join("data").display()))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .arg("--log.level=warn")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    Prometheus { child, base: format!("http://127.0.0.1:{port}"), _dir: dir }
}

async fn api(prometheus: &Prometheus, path: &str, query: &[(&str, &str)]) -> Option<Value> {
    let response = reqwest::Client::new().get(format!("{}{path}", prometheus.base)).query(query).send().await.ok()?;
    let body: Value = response.json().await.ok()?;
    Some(body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prometheus_server_scraping_the_admin_has_every_series_the_dashboard_queries() {
    let binary = match binary() {
        Ok(binary) => binary,
        Err(reason) if std::env::var("R4C_REQUIRE_EXTERNAL").is_ok_and(|v| v == "1") => {
            panic!("R4C_REQUIRE_EXTERNAL=1 and {reason}")
        }
        Err(reason) => {
            eprintln!("skipped: {reason} (install the Debian package `prometheus`)");
            return;
        }
    };
    let started = Instant::now();

    // One instance of every policy, and calls that move them: successes, and a failing call the
    // retry gives up on and the fallback answers (a fallback's series appear with its first use).
    let clock = ManualClock::new();
    let registry = testing::registry(&clock).build().unwrap();
    let calls = Pipeline::builder(&registry, "grafana::Api::get")
        .retry_with(|r| r.max_attempts(2).delay(Duration::from_millis(10)).jitter(Jitter::None).budget_percent(20.0))
        .circuit_breaker()
        .rate_limiter()
        .adaptive_limit()
        .timeout()
        .bulkhead()
        .build::<u32, std::io::Error>()
        .unwrap()
        .fallback(|_| Ok(0));
    let _search = Pipeline::builder(&registry, "grafana::Api::search").hedge().build::<u32, std::io::Error>().unwrap();
    let admin = serve("127.0.0.1:0", registry.clone(), AdminOptions::new()).await.unwrap();
    for n in 1..=5 {
        assert_eq!(calls.execute_async(|| async move { Ok(n) }).await.unwrap(), n);
    }
    assert_eq!(calls.execute_async(|| async { Err(std::io::Error::other("down")) }).await.unwrap(), 0);
    // The fallback's `Applied` is the run's last event: once the admin counted it, it counted all.
    let counters = format!("http://{}/counters", admin.local_addr());
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let body: Value = reqwest::get(&counters).await.unwrap().json().await.unwrap();
        if body["fallbacks"]["grafana::Api::get"]["applied"] == 1 {
            break;
        }
        assert!(Instant::now() < deadline, "the admin never counted the fallback: {body}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    let prometheus = start_prometheus(&binary, &admin.local_addr().to_string());
    let dashboard = dashboard();
    let wanted: BTreeSet<String> = exprs(&dashboard).iter().flat_map(|(_, e)| names(e)).collect();
    let documented = documented_types();

    // Wait (bounded) until a scrape has stored every wanted series.
    let selector = r#"{__name__=~"resilience4cata_.+"}"#;
    let mut stored = BTreeSet::new();
    let deadline = Instant::now() + Duration::from_secs(40);
    while Instant::now() < deadline {
        if let Some(body) = api(&prometheus, "/api/v1/series", &[("match[]", selector)]).await {
            stored = body["data"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|s| s["__name__"].as_str().map(str::to_owned))
                .collect();
            if wanted.is_subset(&stored) {
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let missing: Vec<_> = wanted.difference(&stored).collect();
    assert!(missing.is_empty(), "series the dashboard queries that Prometheus does not have: {missing:?}");

    // Each series' instance label is the policy's, not the scrape target's (honor_labels).
    let body = api(&prometheus, "/api/v1/series", &[("match[]", "resilience4cata_bulkhead_in_flight")]).await.unwrap();
    assert_eq!(body["data"][0]["instance"], "grafana::Api::get", "{body}");

    // Types, as Prometheus read them from the exposition's TYPE lines.
    let metadata = api(&prometheus, "/api/v1/metadata", &[]).await.unwrap();
    for name in &wanted {
        let name = family(name, &documented);
        let kind = metadata["data"][name][0]["type"].as_str();
        assert_eq!(kind, Some(documented[name].as_str()), "{name}'s type in Prometheus");
    }

    // Every query is valid PromQL for this server: evaluated with the variables a dashboard gives.
    for (title, expr) in exprs(&dashboard) {
        let expr = expr.replace("$instance", ".*").replace("$__rate_interval", "1m");
        let body = api(&prometheus, "/api/v1/query", &[("query", &expr)]).await.unwrap();
        assert_eq!(body["status"], "success", "{title}: {expr}\n{body}");
    }
    // One query's value, to show the scraped numbers are the run's: five successes, then two
    // failed attempts.
    let query = r#"resilience4cata_circuit_breaker_calls_total{instance="grafana::Api::get"}"#;
    let body = api(&prometheus, "/api/v1/query", &[("query", query)]).await.unwrap();
    let by_outcome: BTreeMap<String, String> = body["data"]["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["metric"]["outcome"].as_str().unwrap().to_owned(), r["value"][1].as_str().unwrap().to_owned()))
        .collect();
    assert_eq!(by_outcome.get("success").map(String::as_str), Some("5"), "{body}");
    assert_eq!(by_outcome.get("failure").map(String::as_str), Some("2"), "{body}");
    // And the durations (runtime feature `durations`), exact on the manual clock: six calls, seven
    // attempts (the failing call tried twice), every attempt instant; the failing call spans the
    // retry's 10 ms wait (no jitter), so it is above the first bucket (1 ms) and within the 25 ms one.
    let get = r#"instance="grafana::Api::get""#;
    for (query, value) in [
        (format!("resilience4cata_call_duration_seconds_count{{{get}}}"), "6"),
        (format!(r#"resilience4cata_call_duration_seconds_bucket{{{get},le="0.001"}}"#), "5"),
        (format!(r#"resilience4cata_call_duration_seconds_bucket{{{get},le="0.025"}}"#), "6"),
        (format!("resilience4cata_call_duration_seconds_sum{{{get}}}"), "0.01"),
        (format!("resilience4cata_attempt_duration_seconds_count{{{get}}}"), "7"),
        (format!(r#"resilience4cata_attempt_duration_seconds_bucket{{{get},le="0.001"}}"#), "7"),
        (format!("resilience4cata_attempt_duration_seconds_sum{{{get}}}"), "0"),
    ] {
        let body = api(&prometheus, "/api/v1/query", &[("query", &query)]).await.unwrap();
        assert_eq!(body["data"]["result"][0]["value"][1], value, "{query}: {body}");
    }
    eprintln!("prometheus_server: {:.1} s", started.elapsed().as_secs_f64());
}
