//! The registry's metrics through OpenTelemetry: one observable instrument per series the
//! snapshots give (`RegistrySnapshot::series()`: a counter for a counter, a gauge for a gauge),
//! each reading `registry.snapshot().readings()` when the SDK collects, which is the one source
//! the admin's `/metrics` renders too. No collector: the SDK's periodic reader hands each export
//! to the stdout exporter.
//!
//! ```sh
//! cargo run --example otel
//! ```
//! It runs a small workload (a breaker that opens, attempts that time out), exports once, and
//! checks its own output: the exported series are exactly the readings (names, labels, values,
//! counter or gauge), the workload shows in them, and the admin's `/metrics`, scraped over
//! loopback, serves the same samples. It exits 1 when a check fails.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use opentelemetry::KeyValue;
use opentelemetry::metrics::{Meter, MeterProvider as _, ObservableCounter, ObservableGauge};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData, ResourceMetrics};
use opentelemetry_sdk::metrics::exporter::PushMetricExporter;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider, Temporality};
use resilience4cata::readings::{PREFIX, Reading, SeriesKind};
use resilience4cata::{Pipeline, Registry, RegistryError, RegistrySnapshot};

/// Labels, sorted by key.
type Labels = Vec<(String, String)>;

/// One sample: the series' name and its labels, to its kind and value.
type Samples = BTreeMap<(String, Labels), (Kind, f64)>;

/// How a sample was exported.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Gauge,
    /// A monotonic sum: an OpenTelemetry counter.
    Counter,
    /// Anything else (a histogram, a non-monotonic sum): never expected here.
    Other,
}

/// The instruments that read the registry; dropping them stops nothing (the SDK keeps the
/// callbacks while the provider lives), they are kept for clarity.
#[derive(Default)]
struct ReadingInstruments {
    _gauges: Vec<ObservableGauge<f64>>,
    _counters: Vec<ObservableCounter<u64>>,
}

/// One observable instrument per series any snapshot may give, named and described as the
/// runtime's `Series` says. Each callback takes a fresh snapshot and observes that series'
/// readings, labelled `instance` (and the reading's own label, as the breaker's `state`).
fn register(meter: &Meter, registry: &Registry) -> ReadingInstruments {
    let mut instruments = ReadingInstruments::default();
    for series in RegistrySnapshot::series() {
        let registry = registry.clone();
        let each = move |observe: &mut dyn FnMut(f64, &[KeyValue])| {
            registry.snapshot().readings(|instance, reading| {
                // NaN is a value the snapshot does not have yet (a rate before `minimum_calls`):
                // nothing to observe.
                if reading.series == series && !reading.value.is_nan() {
                    observe(reading.value, &attributes(instance, &reading));
                }
            });
        };
        match series.kind {
            SeriesKind::Counter => instruments._counters.push(
                meter
                    .u64_observable_counter(format!("{PREFIX}{}", series.name))
                    .with_description(series.help)
                    .with_callback(move |o| each(&mut |value, labels| o.observe(value as u64, labels)))
                    .build(),
            ),
            _ => instruments._gauges.push(
                meter
                    .f64_observable_gauge(format!("{PREFIX}{}", series.name))
                    .with_description(series.help)
                    .with_callback(move |o| each(&mut |value, labels| o.observe(value, labels)))
                    .build(),
            ),
        }
    }
    instruments
}

fn attributes(instance: &str, reading: &Reading) -> Vec<KeyValue> {
    let mut labels = vec![KeyValue::new("instance", instance.to_owned())];
    labels.extend(reading.label.map(|(key, value)| KeyValue::new(key, value)));
    labels
}

/// The stdout exporter, plus a copy of the last export's samples for the checks.
#[derive(Debug)]
struct Tee {
    stdout: opentelemetry_stdout::MetricExporter,
    last: Arc<Mutex<Samples>>,
}

impl PushMetricExporter for Tee {
    async fn export(&self, metrics: &ResourceMetrics) -> OTelSdkResult {
        *self.last.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = exported(metrics);
        self.stdout.export(metrics).await
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.stdout.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.stdout.shutdown_with_timeout(timeout)
    }

    fn temporality(&self) -> Temporality {
        self.stdout.temporality()
    }
}

/// The samples of one export.
fn exported(metrics: &ResourceMetrics) -> Samples {
    let mut samples = Samples::new();
    for metric in metrics.scope_metrics().flat_map(|scope| scope.metrics()) {
        let mut add = |labels: &mut dyn Iterator<Item = &KeyValue>, kind, value| {
            let mut labels: Labels =
                labels.map(|kv| (kv.key.as_str().to_owned(), kv.value.as_str().into_owned())).collect();
            labels.sort();
            samples.insert((metric.name().to_owned(), labels), (kind, value));
        };
        match metric.data() {
            AggregatedMetrics::F64(MetricData::Gauge(gauge)) => {
                gauge.data_points().for_each(|p| add(&mut p.attributes(), Kind::Gauge, p.value()));
            }
            AggregatedMetrics::U64(MetricData::Sum(sum)) => {
                let kind = if sum.is_monotonic() { Kind::Counter } else { Kind::Other };
                sum.data_points().for_each(|p| add(&mut p.attributes(), kind, p.value() as f64));
            }
            _ => add(&mut std::iter::empty(), Kind::Other, f64::NAN),
        }
    }
    samples
}

/// The same samples, straight from the readings (a NaN is not observed: not one).
fn read(snapshot: &RegistrySnapshot) -> Samples {
    let mut samples = Samples::new();
    snapshot.readings(|instance, reading| {
        if reading.value.is_nan() {
            return;
        }
        let mut labels = vec![("instance".to_owned(), instance.to_owned())];
        labels.extend(reading.label.map(|(k, v)| (k.to_owned(), v.to_owned())));
        labels.sort();
        let (kind, value) = match reading.series.kind {
            SeriesKind::Counter => (Kind::Counter, (reading.value as u64) as f64),
            _ => (Kind::Gauge, reading.value),
        };
        samples.insert((format!("{PREFIX}{}", reading.series.name), labels), (kind, value));
    });
    samples
}

const STOCK: &str = "shop::Inventory::stock";
/// The rate limiter's period: the workload waits one after its last call, so the limiter is full
/// again and its available permits do not move between the export and the checks.
const RATE_PERIOD: Duration = Duration::from_millis(100);
const CHARGE: &str = "shop::Payments::charge";

/// Two instances at work: one with every policy that has readings, where one call in five takes
/// longer than its timeout; one whose dependency is down, so its breaker opens.
async fn workload(registry: &Registry) -> Result<(), RegistryError> {
    let stock = Pipeline::builder(registry, STOCK)
        .retry_with(|r| r.max_attempts(2).delay(Duration::from_millis(1)).budget_percent(20.0))
        .circuit_breaker()
        .rate_limiter_with(|r| r.permits(50).period(RATE_PERIOD))
        .adaptive_limit_with(|a| a.initial_limit(10))
        .timeout_with(|t| t.duration(Duration::from_millis(30)))
        .bulkhead_with(|b| b.max_concurrent_calls(4))
        .build::<u32, std::io::Error>()?;
    let charge = Pipeline::builder(registry, CHARGE)
        .circuit_breaker_with(|c| c.window_size(4).minimum_calls(4).wait_in_open(Duration::from_secs(600)))
        .bulkhead()
        .build::<u32, std::io::Error>()?;
    for n in 0..20u32 {
        let _ = stock
            .execute_async(|| async move {
                if n % 5 == 0 {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                Ok(n)
            })
            .await;
        let _ = charge.execute(|| Err(std::io::Error::other("payments are down")));
    }
    tokio::time::sleep(RATE_PERIOD * 2).await;
    Ok(())
}

/// What went wrong, if anything: the export against the readings and the workload's marks.
fn check_export(exported: &Samples, read: &Samples) -> Vec<String> {
    let mut problems = Vec::new();
    for (key, (kind, value)) in read {
        match exported.get(key) {
            None => problems.push(format!("not exported: {key:?}")),
            Some((k, v)) if k != kind || !same(*v, *value) => {
                problems.push(format!("{key:?}: exported {k:?} {v}, read {kind:?} {value}"))
            }
            Some(_) => {}
        }
    }
    problems.extend(
        exported.keys().filter(|key| !read.contains_key(*key)).map(|key| format!("exported, not read: {key:?}")),
    );
    let counted = |instance: &str| {
        read.iter().any(|((_, labels), (kind, value))| {
            *kind == Kind::Counter && *value > 0.0 && labels.contains(&("instance".into(), instance.into()))
        })
    };
    if !counted(STOCK) {
        problems.push(format!("{STOCK}: no counter above 0 (its timeout cut attempts off)"));
    }
    let open = read.iter().any(|((_, labels), (_, value))| {
        *value == 1.0
            && labels.contains(&("instance".into(), CHARGE.into()))
            && labels.contains(&("state".into(), "open".into()))
    });
    if !open {
        problems.push(format!("{CHARGE}: its breaker is not exported open"));
    }
    problems
}

fn same(a: f64, b: f64) -> bool {
    a == b || (a.is_nan() && b.is_nan())
}

/// The admin's `/metrics`, scraped over loopback: every exported sample must be there, under the
/// same name (one prefix, `readings::PREFIX`, in every producer), with the same labels and value.
async fn check_admin(registry: &Registry, exported: &Samples) -> Result<Vec<String>, Box<dyn std::error::Error>> {
    let admin = resilience4cata_admin::serve("127.0.0.1:0", registry.clone(), Default::default()).await?;
    let text = reqwest::get(format!("http://{}/metrics", admin.local_addr())).await?.error_for_status()?.text().await?;
    let scraped: Vec<(String, Labels, f64)> = text.lines().filter_map(prometheus_sample).collect();
    let problems = exported
        .iter()
        .filter(|((name, labels), (_, value))| {
            !scraped.iter().any(|(n, l, v)| n == name && l == labels && same(*v, *value))
        })
        .map(|(key, value)| format!("not in the admin's /metrics: {key:?} = {value:?}"))
        .collect();
    Ok(problems)
}

/// One sample line of the Prometheus text format, `name{k="v",…} value`, labels sorted.
fn prometheus_sample(line: &str) -> Option<(String, Labels, f64)> {
    if line.starts_with('#') || line.trim().is_empty() {
        return None;
    }
    let (series, value) = line.rsplit_once(' ')?;
    let (name, labels) = match series.split_once('{') {
        Some((name, rest)) => (name, rest.strip_suffix('}')?),
        None => (series, ""),
    };
    let mut labels: Labels = labels
        .split("\",")
        .filter(|l| !l.is_empty())
        .filter_map(|l| l.split_once("=\"").map(|(k, v)| (k.to_owned(), v.trim_end_matches('"').to_owned())))
        .collect();
    labels.sort();
    Some((name.to_owned(), labels, value.parse().ok()?))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let registry = Registry::builder().build()?;
    let last = Arc::new(Mutex::new(Samples::new()));
    let exporter = Tee { stdout: opentelemetry_stdout::MetricExporter::default(), last: Arc::clone(&last) };
    // One export every minute (or OTEL_METRIC_EXPORT_INTERVAL); shutting down exports once more.
    let provider = SdkMeterProvider::builder().with_reader(PeriodicReader::builder(exporter).build()).build();
    let _instruments = register(&provider.meter("resilience4cata"), &registry);

    workload(&registry).await?;
    println!("== the export (stdout exporter)");
    provider.shutdown()?;
    let exported = std::mem::take(&mut *last.lock().unwrap_or_else(|poisoned| poisoned.into_inner()));

    let mut problems = check_export(&exported, &read(&registry.snapshot()));
    problems.extend(check_admin(&registry, &exported).await?);
    println!("== checks");
    if exported.is_empty() {
        problems.push("nothing was exported".into());
    }
    for problem in &problems {
        println!("FAIL {problem}");
    }
    if !problems.is_empty() {
        std::process::exit(1);
    }
    let names: std::collections::BTreeSet<&str> = exported.keys().map(|(name, _)| name.as_str()).collect();
    println!(
        "ok: {} samples of {} series exported, equal to the readings and to the admin's /metrics",
        exported.len(),
        names.len()
    );
    Ok(())
}
