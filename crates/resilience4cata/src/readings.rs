//! A policy snapshot as numbers: the gauges (and the running totals) an exporter reads from
//! `registry.snapshot()`, each policy's given by its snapshot type, so an exporter (the admin's
//! `/metrics`) needs no code per policy.
//!
//! An exporter adds a prefix: the admin's `/metrics` exports `bulkhead_in_flight` as
//! `resilience4cata_bulkhead_in_flight`, the name the `metrics` feature gives the same gauge.
//! Every metric of both, one table: `docs/metrics.md`.
//!
//! ```
//! use resilience4cata::readings::SeriesKind;
//!
//! let registry = resilience4cata::Registry::builder().build()?;
//! let _calls = resilience4cata::Pipeline::builder(&registry, "shop::Api::get")
//!     .bulkhead_with(|b| b.max_concurrent_calls(3))
//!     .build::<u32, std::io::Error>()?;
//! let mut available = None;
//! registry.snapshot().readings(|instance, reading| {
//!     if reading.series.name == "bulkhead_available" {
//!         available = Some((instance.to_owned(), reading.value));
//!     }
//! });
//! assert_eq!(available, Some(("shop::Api::get".to_owned(), 3.0)));
//! let totals: Vec<_> = resilience4cata::RegistrySnapshot::series()
//!     .filter(|s| s.kind == SeriesKind::Counter && !s.name.starts_with("chaos_")) // feature `chaos` adds two
//!     .map(|s| s.name)
//!     .collect();
//! assert_eq!(totals, ["timeout_timed_out_total"]); // the timeout's attempts cut off
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

/// The prefix an exporter puts before a [`Series::name`]: the admin's `/metrics` exports
/// `bulkhead_in_flight` as `resilience4cata_bulkhead_in_flight`, the name the `metrics` feature
/// gives the same gauge (one naming scheme: `docs/metrics.md`).
///
/// ```
/// use resilience4cata::readings::PREFIX;
///
/// assert_eq!(format!("{PREFIX}{}", "bulkhead_in_flight"), "resilience4cata_bulkhead_in_flight");
/// ```
pub const PREFIX: &str = "resilience4cata_";

/// What a series measures: a level that goes up and down, or a running total.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SeriesKind {
    /// A level read at the moment of the snapshot (slots taken, the current limit).
    Gauge,
    /// A total that only grows while the instance lives (attempts cut off since it was built).
    Counter,
}

/// One series a kind of snapshot gives: its name (without an exporter's prefix: an exporter adds
/// its own), its help text and its kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Series {
    /// The name, `<policy>_<what>` (`"bulkhead_in_flight"`).
    pub name: &'static str,
    /// One line saying what the value is.
    pub help: &'static str,
    /// Gauge or counter.
    pub kind: SeriesKind,
}

impl Series {
    /// A gauge.
    pub const fn gauge(name: &'static str, help: &'static str) -> Self {
        Series { name, help, kind: SeriesKind::Gauge }
    }

    /// A counter.
    pub const fn counter(name: &'static str, help: &'static str) -> Self {
        Series { name, help, kind: SeriesKind::Counter }
    }
}

/// One value of one series of one instance.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct Reading {
    /// The series, one of the snapshot type's [`Readings::SERIES`]: its name and kind.
    pub series: &'static Series,
    /// A label besides the instance's (`("state", "open")` for the breaker's state), if any.
    pub label: Option<(&'static str, &'static str)>,
    /// The value (`NaN` where the snapshot has none yet, as a rate before `minimum_calls`).
    pub value: f64,
}

impl Reading {
    /// A value of `series`, labelled with the instance only.
    pub const fn new(series: &'static Series, value: f64) -> Self {
        Reading { series, label: None, value }
    }

    /// A value of `series` with one more label.
    pub const fn labelled(series: &'static Series, label: (&'static str, &'static str), value: f64) -> Self {
        Reading { series, label: Some(label), value }
    }
}

/// A policy's snapshot as numbers: implemented by every snapshot type `registry.snapshot()` lists
/// (a policy with nothing to measure lists no series), so
/// [`RegistrySnapshot::readings`](crate::RegistrySnapshot::readings) covers every policy.
pub trait Readings {
    /// Every series this snapshot type may give (whether or not one instance gives it now).
    const SERIES: &'static [Series];

    /// The instance id the readings are labelled with.
    fn instance(&self) -> &str;

    /// Hands each current value to `out`, in the order of [`SERIES`](Self::SERIES).
    fn read(&self, out: &mut dyn FnMut(Reading));
}
