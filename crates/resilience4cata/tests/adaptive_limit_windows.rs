//! Gradient2 and Vegas behind sample windows (Netflix's `WindowedLimit`), through a `Pipeline` on
//! the manual clock: one window reaches the algorithm as one sample (mean latency, most calls in
//! flight, any drop), a window with fewer than `window_size` samples is discarded, calls faster
//! than `min_rtt_threshold` are not samples, and four threads never exceed the limit.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use resilience4cata::adaptive_limit::{
    AdaptiveLimitConfigBuilder, AdaptiveLimitEvent, Algorithm, Gradient2, LimitAlgorithm, Vegas,
};
use resilience4cata::testing::{self, ManualClock};
use resilience4cata::{Pipeline, Registry, Rejection, ResilienceError, resilient};

const MS: Duration = Duration::from_millis(1);

type Limited = Pipeline<u32, std::io::Error>;

fn limited(
    clock: &ManualClock,
    config: impl Fn(AdaptiveLimitConfigBuilder) -> AdaptiveLimitConfigBuilder,
) -> (Registry, Limited) {
    let registry = testing::registry(clock).build().unwrap();
    let pipeline = Pipeline::builder(&registry, "downstream").adaptive_limit_with(config).build().unwrap();
    (registry, pipeline)
}

fn limit(registry: &Registry) -> u32 {
    registry.adaptive_limit("downstream").unwrap().snapshot().limit
}

/// One call that takes `rtt` on the manual clock and fails when `dropped`.
fn call(pipeline: &Limited, clock: &ManualClock, rtt: Duration, dropped: bool) {
    let _ = pipeline.execute(|| {
        clock.advance(rtt);
        if dropped { Err(std::io::Error::other("overloaded")) } else { Ok(1) }
    });
}

/// `depth` nested calls, each taking `rtt` on the manual clock after its inner one: the innermost
/// (`depth` in flight) ends first, after `rtt`, and fails when `dropped`; the outermost ends last,
/// after `depth × rtt`.
fn nested(pipeline: &Limited, clock: &ManualClock, depth: u32, rtt: Duration, dropped: bool) {
    let _ = pipeline.execute(|| {
        if depth > 1 {
            nested(pipeline, clock, depth - 1, rtt, dropped);
        }
        clock.advance(rtt);
        if dropped && depth == 1 { Err(std::io::Error::other("overloaded")) } else { Ok(1) }
    });
}

/// What Netflix's `WindowedLimit` would feed `algorithm` from the samples `(end, rtt, in_flight,
/// dropped)`, in order: a window closes at the first sample that ends after the window's end, and
/// includes it; the next one lasts `clamp(2 × the closed window's fastest call, span)`; a closed
/// window reaches the algorithm (mean latency, most calls in flight, any drop) only with at least
/// `size` samples. Returns the limit after each sample.
fn reference(
    samples: &[(Duration, Duration, u32, bool)],
    size: usize,
    span: (Duration, Duration),
    algorithm: &mut dyn LimitAlgorithm,
) -> Vec<u32> {
    let (mut next, mut window) = (Duration::ZERO, Vec::new());
    let mut limits = Vec::new();
    for &(end, rtt, in_flight, dropped) in samples {
        window.push((rtt, in_flight, dropped));
        if end > next {
            let fastest = window.iter().map(|w| w.0).min().unwrap();
            next = end + (fastest * 2).clamp(span.0, span.1);
            if window.len() >= size {
                let mean = window.iter().map(|w| w.0).sum::<Duration>() / window.len() as u32;
                let in_flight = window.iter().map(|w| w.1).max().unwrap();
                algorithm.on_sample(mean, in_flight, window.iter().any(|w| w.2));
            }
            window.clear();
        }
        limits.push(algorithm.limit());
    }
    limits
}

/// A script of latencies (steady, then rising, then falling) with a few drops, 12 calls in flight
/// at the deepest: the policy's limit after every nest of calls equals the pure algorithm's, fed
/// one sample per window as Netflix's `WindowedLimit` does.
#[test]
fn each_window_reaches_the_algorithm_as_one_sample() {
    const DEPTH: u32 = 12;
    let script: Vec<(Duration, bool)> = (0..150u32)
        .map(|i| {
            let ms = match i {
                0..50 => 2 + i % 2,
                50..100 => 9 + i % 3,
                _ => 1,
            };
            (MS * ms, i % 17 == 0)
        })
        .collect();
    let mut samples = Vec::new();
    let mut now = Duration::ZERO;
    for &(rtt, dropped) in &script {
        for k in (1..=DEPTH).rev() {
            let taken = rtt * (DEPTH - k + 1);
            samples.push((now + taken, taken, k, dropped && k == DEPTH));
        }
        now += rtt * DEPTH;
    }
    for algorithm in [Algorithm::Gradient2, Algorithm::Vegas] {
        // The limit stays within [12, 24], so a nest of 12 is never refused.
        let keys = move |a: AdaptiveLimitConfigBuilder| {
            a.algorithm(algorithm)
                .min_limit(DEPTH)
                .initial_limit(16)
                .max_limit(2 * DEPTH)
                .window_size(3)
                .min_window_time(MS * 30)
                .max_window_time(MS * 80)
        };
        let mut pure: Box<dyn LimitAlgorithm> = match algorithm {
            Algorithm::Gradient2 => Box::new(Gradient2::new(keys(AdaptiveLimitConfigBuilder::new())).unwrap()),
            _ => Box::new(Vegas::new(keys(AdaptiveLimitConfigBuilder::new())).unwrap()),
        };
        let per_sample = reference(&samples, 3, (MS * 30, MS * 80), pure.as_mut());
        let expected: Vec<u32> = per_sample.chunks(DEPTH as usize).map(|nest| nest[DEPTH as usize - 1]).collect();
        let clock = ManualClock::new();
        let (registry, pipeline) = limited(&clock, keys);
        let seen: Vec<u32> = script
            .iter()
            .map(|&(rtt, dropped)| {
                nested(&pipeline, &clock, DEPTH, rtt, dropped);
                limit(&registry)
            })
            .collect();
        assert_eq!(seen, expected, "{algorithm:?}");
        let moves = expected.windows(2).filter(|w| w[0] != w[1]).count();
        assert!(moves >= 3, "{algorithm:?}: the script moves the limit ({moves} changes): {expected:?}");
    }
}

/// Vegas lowers its limit on a drop; with too few samples per window, or calls faster than
/// `min_rtt_threshold`, the windows never reach it.
#[test]
fn short_windows_and_fast_calls_leave_the_limit() {
    let vegas = |a: AdaptiveLimitConfigBuilder| {
        a.algorithm(Algorithm::Vegas).initial_limit(10).window_size(5).min_window_time(MS * 10).max_window_time(MS * 10)
    };
    let clock = ManualClock::new();
    let (registry, pipeline) = limited(&clock, vegas);
    for _ in 0..40 {
        call(&pipeline, &clock, MS * 3, true); // 4 samples per 10 ms window: below window_size
    }
    assert_eq!(limit(&registry), 10, "short windows are discarded");
    let (registry, pipeline) = limited(&clock, move |a| vegas(a).min_rtt_threshold(MS));
    for _ in 0..400 {
        call(&pipeline, &clock, MS / 2, true); // faster than the threshold: not samples
    }
    assert_eq!(limit(&registry), 10, "fast calls are not samples");
    for _ in 0..40 {
        call(&pipeline, &clock, MS * 2, true);
    }
    assert!(limit(&registry) < 10, "5 drops per window lower the limit: {}", limit(&registry));
}

/// Four threads, calls of varying length on the manual clock and some drops, under a Vegas limit
/// that folds a window every few calls: never more than the limit's highest value inside,
/// every call accounted for, the limit within bounds and moved by concurrent folds, no slot left.
#[test]
fn stress_four_threads_under_a_windowed_limit() {
    const MAX: u32 = 4;
    let clock = ManualClock::new();
    let changes = Arc::new(Mutex::new(0u32));
    let sink = Arc::clone(&changes);
    let registry = testing::registry(&clock)
        .listen(move |e: &AdaptiveLimitEvent| {
            if matches!(e, AdaptiveLimitEvent::LimitChanged { .. }) {
                *sink.lock().unwrap() += 1;
            }
        })
        .build()
        .unwrap();
    let pipeline: Limited = Pipeline::builder(&registry, "downstream")
        .adaptive_limit_with(|a| {
            a.algorithm(Algorithm::Vegas)
                .min_limit(1)
                .initial_limit(3)
                .max_limit(MAX)
                .window_size(1)
                .min_window_time(MS)
                .max_window_time(MS * 2)
        })
        .build()
        .unwrap();
    let inside = AtomicU32::new(0);
    let (passed, refused) = (AtomicU32::new(0), AtomicU32::new(0));
    std::thread::scope(|s| {
        for t in 0..4u32 {
            let (pipeline, clock, inside, passed, refused) = (&pipeline, &clock, &inside, &passed, &refused);
            s.spawn(move || {
                for i in 0..2_000u32 {
                    let r = pipeline.execute(|| {
                        assert!(inside.fetch_add(1, Ordering::SeqCst) < MAX, "more than {MAX} inside");
                        clock.advance(Duration::from_micros(u64::from((i * 7 + t) % 4) * 300));
                        inside.fetch_sub(1, Ordering::SeqCst);
                        if (i + t) % 9 == 0 { Err(std::io::Error::other("overloaded")) } else { Ok(1) }
                    });
                    match r {
                        Err(e) if matches!(e.rejection(), Some(Rejection::LimitExceeded { .. })) => {
                            refused.fetch_add(1, Ordering::Relaxed)
                        }
                        _ => passed.fetch_add(1, Ordering::Relaxed),
                    };
                }
            });
        }
    });
    assert_eq!(passed.load(Ordering::Relaxed) + refused.load(Ordering::Relaxed), 8_000);
    let s = registry.adaptive_limit("downstream").unwrap().snapshot();
    assert_eq!(s.in_flight, 0, "no slot left taken");
    assert!((1..=MAX).contains(&s.limit));
    assert!(*changes.lock().unwrap() > 0, "folds moved the limit");
}

#[resilient]
pub trait Windowed {
    #[adaptive_limit(
        algorithm = Vegas,
        min_window_time = "50ms",
        max_window_time = "2s",
        window_size = 20,
        min_rtt_threshold = "1ms"
    )]
    fn get(&self) -> std::io::Result<u32>;
}

struct Backend;

impl Windowed for Backend {
    fn get(&self) -> std::io::Result<u32> {
        Ok(1)
    }
}

/// The window keys from the attribute, and from a config file, where they override it.
#[test]
fn window_keys_from_the_attribute_and_from_files() {
    let clock = ManualClock::new();
    let id = concat!(module_path!(), "::Windowed::get");
    let config = |registry: &Registry| registry.adaptive_limit(id).unwrap().snapshot().config;
    let registry = testing::registry(&clock).build().unwrap();
    let _api = ResilientWindowed::new(Backend, &registry).unwrap();
    let c = config(&registry);
    assert_eq!(
        (c.min_window_time, c.max_window_time, c.window_size, c.min_rtt_threshold),
        (MS * 50, MS * 2000, 20, MS)
    );
    #[cfg(feature = "serde")]
    {
        let text = format!(
            "[instances.\"{id}\".adaptive_limit]\nmin_window_time = \"10ms\"\nmax_window_time = \"20ms\"\n\
             window_size = 3\nmin_rtt_threshold = \"0\"\n"
        );
        let registry = testing::registry(&clock).config_toml(&text).build().unwrap();
        let _api = ResilientWindowed::new(Backend, &registry).unwrap();
        let c = config(&registry);
        assert_eq!(
            (c.min_window_time, c.max_window_time, c.window_size, c.min_rtt_threshold),
            (MS * 10, MS * 20, 3, Duration::ZERO)
        );
        let bad = testing::registry(&clock).config_toml("[defaults.adaptive_limit]\nwindow_size = 0\n").build();
        assert_eq!(bad.unwrap_err().code(), "R4C-CFG-004");
        // Between keys: checked when the instance resolves.
        let text = format!("[instances.\"{id}\".adaptive_limit]\nmin_window_time = \"3s\"\n");
        let registry = testing::registry(&clock).config_toml(&text).build().unwrap();
        assert_eq!(ResilientWindowed::new(Backend, &registry).err().unwrap().code(), "R4C-REG-003");
    }
}
