//! Call and attempt durations, per method or pipeline id: fixed Prometheus-style buckets kept in
//! atomics, read back as [`DurationsSnapshot`]s by [`RegistrySnapshot::durations`].
//!
//! Opt-in: only with the cargo feature `durations` does a call read the clock (twice per call and
//! twice per attempt, the registry's exact clock) and record into its histograms. Without it the
//! timer the generated code and the pipeline hold is a zero-sized no-op, a successful call reads
//! no clock, and [`RegistrySnapshot::durations`] is empty.
//!
//! A call is timed outermost, around every policy (its retries' waits and its fallback included);
//! an attempt innermost, around the delegate (or the pipeline's closure) alone. An attempt a
//! timeout cuts short, and a call whose future is dropped, are not recorded.
//!
//! [`RegistrySnapshot::durations`]: crate::RegistrySnapshot::durations

use std::sync::Arc;

use crate::clock::Timer;
// std's, not `crate::sync`'s: counters with nothing to model, and loom's atomics have no
// `Default` for the bucket arrays.
#[cfg(feature = "durations")]
use std::sync::Mutex;
#[cfg(feature = "durations")]
use std::sync::atomic::{AtomicU64, Ordering};

/// The upper bounds of the finite buckets, in seconds (Prometheus' `le`), smallest first; a last
/// bucket, `+Inf`, holds the rest.
pub const BUCKETS: [f64; 12] = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];

/// [`BUCKETS`] in nanoseconds: an observation `d` falls in the first bucket with `d <= bound`.
#[cfg(feature = "durations")]
const BOUNDS_NANOS: [u64; 12] = [
    1_000_000,
    5_000_000,
    10_000_000,
    25_000_000,
    50_000_000,
    100_000_000,
    250_000_000,
    500_000_000,
    1_000_000_000,
    2_500_000_000,
    5_000_000_000,
    10_000_000_000,
];

/// One histogram: a counter per bucket (not cumulative; the last is `+Inf`) and the sum of the
/// observations in nanoseconds. The count is the buckets' total, so a snapshot's count always
/// agrees with its buckets.
#[cfg(feature = "durations")]
#[derive(Debug, Default)]
struct Histogram {
    buckets: [AtomicU64; 13],
    sum_nanos: AtomicU64,
}

#[cfg(feature = "durations")]
impl Histogram {
    /// Two relaxed read-modify-writes; no lock, no allocation.
    #[inline(always)]
    fn observe(&self, nanos: u64) {
        let bucket = BOUNDS_NANOS.iter().position(|&bound| nanos <= bound).unwrap_or(BOUNDS_NANOS.len());
        self.buckets[bucket].fetch_add(1, Ordering::Relaxed);
        self.sum_nanos.fetch_add(nanos, Ordering::Relaxed);
    }

    fn snapshot(&self) -> HistogramSnapshot {
        let mut cumulative = 0;
        let buckets = self
            .buckets
            .iter()
            .enumerate()
            .map(|(i, count)| {
                cumulative += count.load(Ordering::Relaxed);
                Bucket { le: BUCKETS.get(i).copied().unwrap_or(f64::INFINITY), count: cumulative }
            })
            .collect();
        HistogramSnapshot { buckets, sum_nanos: self.sum_nanos.load(Ordering::Relaxed), count: cumulative }
    }
}

/// The histograms of one id, and the clock that times them.
#[cfg(feature = "durations")]
#[derive(Debug)]
struct Durations {
    instance: Arc<str>,
    timer: Arc<Timer>,
    calls: Histogram,
    attempts: Histogram,
}

/// The registry's histograms, by id (found or made when a wrapper or pipeline is built, never
/// per call).
#[derive(Debug, Default)]
pub(crate) struct DurationStore {
    #[cfg(feature = "durations")]
    by_id: Mutex<std::collections::BTreeMap<Arc<str>, Arc<Durations>>>,
}

impl DurationStore {
    /// The timer of `id` (which every wrapper and pipeline of that id shares).
    #[cfg(feature = "durations")]
    pub(crate) fn timer(&self, timer: &Arc<Timer>, id: &str) -> CallTimer {
        let mut map = self.by_id.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(durations) = map.get(id) {
            return CallTimer { durations: Arc::clone(durations) };
        }
        let instance: Arc<str> = Arc::from(id);
        let durations = Arc::new(Durations {
            instance: Arc::clone(&instance),
            timer: Arc::clone(timer),
            calls: Histogram::default(),
            attempts: Histogram::default(),
        });
        map.insert(instance, Arc::clone(&durations));
        CallTimer { durations }
    }

    /// Without the feature: the zero-sized timer, and nothing stored.
    #[cfg(not(feature = "durations"))]
    pub(crate) fn timer(&self, timer: &Arc<Timer>, id: &str) -> CallTimer {
        let _ = (timer, id);
        CallTimer {}
    }

    /// Every id's histograms, ordered by id (empty without the feature).
    pub(crate) fn snapshots(&self) -> Vec<DurationsSnapshot> {
        #[cfg(feature = "durations")]
        {
            let map = self.by_id.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            map.values()
                .map(|d| DurationsSnapshot {
                    instance: Arc::clone(&d.instance),
                    calls: d.calls.snapshot(),
                    attempts: d.attempts.snapshot(),
                })
                .collect()
        }
        #[cfg(not(feature = "durations"))]
        Vec::new()
    }
}

#[doc(hidden)]
/// What generated code and the pipeline hold per method or pipeline to time its calls and
/// attempts: zero-sized, and every method a no-op, without the feature `durations`.
#[derive(Clone, Debug)]
pub struct CallTimer {
    #[cfg(feature = "durations")]
    durations: Arc<Durations>,
}

#[doc(hidden)]
/// When a call or attempt started: the exact clock's reading (nothing without the feature).
#[derive(Clone, Copy, Debug)]
pub struct Started {
    #[cfg(feature = "durations")]
    at: u64,
}

impl CallTimer {
    /// Reads the clock (with the feature).
    #[inline(always)]
    pub fn start(&self) -> Started {
        Started {
            #[cfg(feature = "durations")]
            at: self.durations.timer.measure(),
        }
    }

    /// Records the call that began at `started`.
    #[inline(always)]
    pub fn finish_call(&self, started: Started) {
        #[cfg(feature = "durations")]
        self.durations.calls.observe(self.durations.timer.measure().saturating_sub(started.at));
        let _ = started;
    }

    /// Records the attempt that began at `started`.
    #[inline(always)]
    pub fn finish_attempt(&self, started: Started) {
        #[cfg(feature = "durations")]
        self.durations.attempts.observe(self.durations.timer.measure().saturating_sub(started.at));
        let _ = started;
    }
}

#[cfg(feature = "durations")]
impl CallTimer {
    /// The pipeline's call: recorded when the guard drops (the call returned, panicked, or its
    /// future was dropped).
    #[inline(always)]
    pub(crate) fn call(&self) -> CallGuard<'_> {
        CallGuard { timer: self, started: self.start() }
    }

    /// The pipeline's attempt `f`, timed.
    #[inline(always)]
    pub(crate) fn attempt<R>(&self, f: impl FnOnce() -> R) -> R {
        let started = self.start();
        let outcome = f();
        self.finish_attempt(started);
        outcome
    }

    /// The pipeline's async attempt, timed from its first poll to its output. A hand-written
    /// future rather than an `async fn`: in a debug build each `async fn` layer adds its own copy
    /// of the attempt's state to the poll's stack frame, and a reordered chain is deep enough for
    /// that to exceed a test thread's 2 MiB.
    #[inline(always)]
    pub(crate) fn attempt_async<F: std::future::Future>(&self, attempt: F) -> TimedAttempt<'_, F> {
        TimedAttempt { timer: self, started: None, attempt }
    }
}

#[cfg(feature = "durations")]
pin_project_lite::pin_project! {
    /// An attempt's future, timed by [`CallTimer::attempt_async`].
    pub(crate) struct TimedAttempt<'a, F> {
        timer: &'a CallTimer,
        started: Option<Started>,
        #[pin]
        attempt: F,
    }
}

#[cfg(feature = "durations")]
impl<F: std::future::Future> std::future::Future for TimedAttempt<'_, F> {
    type Output = F::Output;

    fn poll(self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<F::Output> {
        let this = self.project();
        let timer = *this.timer;
        let started = *this.started.get_or_insert_with(|| timer.start());
        let outcome = std::task::ready!(this.attempt.poll(cx));
        timer.finish_attempt(started);
        std::task::Poll::Ready(outcome)
    }
}

/// A pipeline call under way: records it when dropped.
#[cfg(feature = "durations")]
pub(crate) struct CallGuard<'a> {
    timer: &'a CallTimer,
    started: Started,
}

#[cfg(feature = "durations")]
impl Drop for CallGuard<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        self.timer.finish_call(self.started);
    }
}

/// `timed_call!(timer, expr)`: what generated code writes around a protected method's whole call,
/// and `timed_attempt!(timer, expr)` around one attempt. Macros, not functions, so that without
/// the feature `durations` the generated code is exactly what it was before durations existed:
/// `expr` alone, the timer's tokens dropped (even zero-sized no-op calls moved LLVM's choices on
/// one benchmark row by a few instructions).
#[cfg(feature = "durations")]
#[doc(hidden)]
#[macro_export]
macro_rules! __r4c_timed_call {
    ($timer:expr, $call:expr) => {{
        let __r4c_started = $timer.start();
        let __r4c_outcome = $call;
        $timer.finish_call(__r4c_started);
        __r4c_outcome
    }};
}

#[cfg(feature = "durations")]
#[doc(hidden)]
#[macro_export]
macro_rules! __r4c_timed_attempt {
    ($timer:expr, $attempt:expr) => {{
        let __r4c_started = $timer.start();
        let __r4c_outcome = $attempt;
        $timer.finish_attempt(__r4c_started);
        __r4c_outcome
    }};
}

#[cfg(not(feature = "durations"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __r4c_timed_call {
    ($timer:expr, $call:expr) => {
        $call
    };
}

#[cfg(not(feature = "durations"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __r4c_timed_attempt {
    ($timer:expr, $attempt:expr) => {
        $attempt
    };
}

/// The call and attempt durations of one method's derived id (scoped like any id) or one
/// pipeline's id, as [`RegistrySnapshot::durations`](crate::RegistrySnapshot::durations) lists
/// them (feature `durations`).
///
/// ```
/// use resilience4cata::durations::DurationsSnapshot;
///
/// fn p_le_100ms(d: &DurationsSnapshot) -> Option<f64> {
///     let within = d.calls.buckets.iter().find(|b| b.le == 0.1)?.count;
///     (d.calls.count > 0).then(|| within as f64 / d.calls.count as f64)
/// }
/// let registry = resilience4cata::Registry::builder().build()?;
/// assert!(registry.snapshot().durations().iter().all(|d| p_le_100ms(d).is_none()));
/// # Ok::<(), resilience4cata::RegistryError>(())
/// ```
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct DurationsSnapshot {
    /// The method's derived id (`[<scope>/]<module_path>::<Trait>::<method>`) or the pipeline's id.
    pub instance: Arc<str>,
    /// Whole calls: from the call's start to its result, around every policy.
    pub calls: HistogramSnapshot,
    /// Attempts: each call of the delegate (or the pipeline's closure) alone.
    pub attempts: HistogramSnapshot,
}

/// One histogram at one moment, as Prometheus reads one: cumulative buckets, sum and count.
///
/// ```
/// use resilience4cata::durations::{BUCKETS, HistogramSnapshot};
///
/// let empty = HistogramSnapshot::default();
/// assert_eq!((empty.count, empty.sum_seconds()), (0, 0.0));
/// assert_eq!(empty.buckets.len(), BUCKETS.len() + 1); // the finite bounds, then +Inf
/// ```
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct HistogramSnapshot {
    /// One per bound of [`BUCKETS`], then `+Inf`: the observations at most `le` seconds (cumulative).
    pub buckets: Vec<Bucket>,
    /// The sum of the observations, in nanoseconds (exact).
    pub sum_nanos: u64,
    /// The number of observations (the `+Inf` bucket's count).
    pub count: u64,
}

impl Default for HistogramSnapshot {
    fn default() -> Self {
        let buckets = BUCKETS.iter().chain(&[f64::INFINITY]).map(|&le| Bucket { le, count: 0 }).collect();
        HistogramSnapshot { buckets, sum_nanos: 0, count: 0 }
    }
}

impl HistogramSnapshot {
    /// The sum in seconds, as Prometheus' `_sum` series gives it.
    pub fn sum_seconds(&self) -> f64 {
        self.sum_nanos as f64 / 1e9
    }
}

/// One cumulative bucket of a [`HistogramSnapshot`].
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct Bucket {
    /// The upper bound in seconds (`f64::INFINITY` for the last, which JSON writes `null`).
    pub le: f64,
    /// The observations at most `le`.
    pub count: u64,
}
