//! Both producers of metrics held to the one table of `docs/metrics.md`: every series the runtime's
//! `metrics` feature records (through a real Prometheus recorder) and every series the admin's
//! `/metrics` serves (over real HTTP) is a row of the table, with the row's type, labels and label
//! values, and the row names that producer; and every row is given by each producer it names. So
//! the same quantity cannot drift to two names or two types, and the docs cannot fall behind.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use metrics_exporter_prometheus::PrometheusBuilder;
use resilience4cata::Pipeline;
use resilience4cata::testing::{self, ManualClock};
use resilience4cata_admin::{AdminOptions, serve};

/// One metric as a producer gives it or the table lists it: its type and its labels, each with
/// the values seen (or listed; empty when the table lists none, as for `instance`).
#[derive(Debug, PartialEq)]
struct Shape {
    kind: String,
    labels: BTreeMap<String, BTreeSet<String>>,
}

/// One row of the table: the shape and the producers (`feature`, `admin`).
#[derive(Debug)]
struct Row {
    shape: Shape,
    producers: BTreeSet<String>,
}

/// The table of `docs/metrics.md`, by metric name. A labels cell is a list of `` `label` ``, each
/// optionally followed by its values in parentheses (`` `reason` (`max_attempts`, …) ``), or
/// `none`.
fn table() -> BTreeMap<String, Row> {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/metrics.md")).unwrap();
    let mut rows = BTreeMap::new();
    for line in text.lines().filter(|l| l.starts_with("| `resilience4cata_")) {
        let cells: Vec<&str> = line.trim_matches('|').split(" | ").map(str::trim).collect();
        assert_eq!(cells.len(), 6, "metric, type, labels, unit, meaning, producer: {line}");
        let name = cells[0].trim_matches('`').to_owned();
        let shape = Shape { kind: cells[1].to_owned(), labels: labels_cell(cells[2]) };
        let producers = cells[5].split(", ").map(str::to_owned).collect();
        assert!(rows.insert(name.clone(), Row { shape, producers }).is_none(), "{name} has two rows");
    }
    assert!(rows.len() > 20, "the table was read: {rows:?}");
    rows
}

fn labels_cell(cell: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mut labels = BTreeMap::new();
    let mut rest = cell;
    while let Some(start) = rest.find('`') {
        let end = start + 1 + rest[start + 1..].find('`').unwrap();
        let label = rest[start + 1..end].to_owned();
        rest = rest[end + 1..].trim_start();
        let mut values = BTreeSet::new();
        if rest.starts_with('(') {
            let close = rest.find(')').unwrap();
            values = rest[1..close].split(", ").map(|v| v.trim_matches('`').to_owned()).collect();
            rest = &rest[close + 1..];
        }
        labels.insert(label, values);
    }
    labels
}

/// A scrape's metrics by name: the `# TYPE` line's type, and each label with its values (the
/// `instance` label's values are dropped: they are the ids of this test's instances). A histogram
/// is one metric: its `_bucket` samples (which the parser folds into one histogram value per
/// label set, `le` taken out: the shape lists `le` without values, as the table does), its `_sum`
/// and its `_count`.
fn shapes(text: &str) -> BTreeMap<String, Shape> {
    let mut shapes = BTreeMap::new();
    for line in text.lines() {
        if let Some(typed) = line.strip_prefix("# TYPE ") {
            let (name, kind) = typed.split_once(' ').unwrap();
            shapes.insert(name.to_owned(), Shape { kind: kind.to_owned(), labels: BTreeMap::new() });
        }
    }
    let scrape = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_owned()))).unwrap();
    for sample in scrape.samples {
        let histogram = |suffix| {
            let base = sample.metric.strip_suffix(suffix)?;
            shapes.get(base).is_some_and(|s| s.kind == "histogram").then(|| base.to_owned())
        };
        let name = histogram("_sum").or_else(|| histogram("_count")).unwrap_or_else(|| sample.metric.clone());
        let shape = shapes.get_mut(&name).unwrap_or_else(|| panic!("{} has no TYPE line", sample.metric));
        if let prometheus_parse::Value::Histogram(buckets) = &sample.value {
            assert!(buckets.iter().any(|b| b.less_than.is_infinite()), "{name}: no +Inf bucket");
            shape.labels.entry("le".to_owned()).or_default();
        }
        for (label, value) in sample.labels.iter() {
            let values = shape.labels.entry(label.clone()).or_default();
            if label != "instance" {
                values.insert(value.clone());
            }
        }
    }
    shapes
}

/// Holds one producer's scrape to the table, both ways.
fn check(producer: &str, scraped: &BTreeMap<String, Shape>, table: &BTreeMap<String, Row>, text: &str) {
    for (name, shape) in scraped {
        let row = table.get(name).unwrap_or_else(|| panic!("{producer} gives {name}, not in docs/metrics.md"));
        assert!(row.producers.contains(producer), "{name}: the table does not say {producer} gives it");
        assert_eq!(shape, &row.shape, "{producer}'s {name} (left) against its row (right)");
    }
    for (name, _) in table.iter().filter(|(_, row)| row.producers.contains(producer)) {
        assert!(scraped.contains_key(name), "{name}: the table says {producer} gives it; it does not:\n{text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_producers_give_what_the_table_says() {
    let table = table();
    for (name, row) in &table {
        assert!(name.starts_with("resilience4cata_"), "{name}");
        assert!(matches!(row.shape.kind.as_str(), "counter" | "gauge" | "histogram"), "{name}: {}", row.shape.kind);
        assert_eq!(
            row.shape.kind == "histogram",
            row.shape.labels.contains_key("le"),
            "{name}: histograms and only they have `le`"
        );
        if row.shape.kind == "histogram" {
            assert!(name.ends_with("_seconds"), "{name}: the histograms are durations, in seconds");
        }
        assert_eq!(
            name.ends_with("_total"),
            row.shape.kind == "counter",
            "{name}: counters and only they end in _total"
        );
        assert!(!row.shape.labels.contains_key("key"), "{name}: no per-key label by default");
        assert!(row.producers.iter().all(|p| p == "feature" || p == "admin"), "{name}: {:?}", row.producers);
    }

    // One instance of every policy, its handles registered with the feature's recorder; the
    // fallback's too (its handles are registered when it is set).
    let recorder = PrometheusBuilder::new().build_recorder();
    let clock = ManualClock::new();
    let registry = testing::registry(&clock).build().unwrap();
    let (calls, _search) = metrics::with_local_recorder(&recorder, || {
        let calls = Pipeline::builder(&registry, "table::Api::get")
            .retry_with(|r| r.max_attempts(2).delay(Duration::from_millis(10)).budget_percent(20.0))
            .circuit_breaker()
            .rate_limiter()
            .adaptive_limit()
            .timeout()
            .bulkhead()
            .build::<u32, std::io::Error>()
            .unwrap()
            .fallback(|_| Ok(0));
        let search = Pipeline::builder(&registry, "table::Api::search").hedge().build::<u32, std::io::Error>().unwrap();
        (calls, search)
    });
    let server = serve("127.0.0.1:0", registry.clone(), AdminOptions::new()).await.unwrap();
    // A call the fallback answers, so the admin has the fallback's series too.
    assert_eq!(calls.execute_async(|| async { Err(std::io::Error::other("down")) }).await.unwrap(), 0);
    let metrics = format!("http://{}/metrics", server.local_addr());
    let mut admin = String::new();
    for _ in 0..1000 {
        admin = reqwest::get(&metrics).await.unwrap().text().await.unwrap();
        if admin.contains("resilience4cata_fallback_applied_total{") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let feature = recorder.handle().render();

    check("feature", &shapes(&feature), &table, &feature);
    check("admin", &shapes(&admin), &table, &admin);
}
