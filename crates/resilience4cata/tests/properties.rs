//! Property tests through the public API, on the manual clock: backoff and jitter bounds for any
//! retry configuration, the rate limiter against a reference GCRA, the circuit breaker's windows
//! against a reference model, and the TOML loader over random documents. Failing cases are kept in
//! `proptest-regressions/` beside this file.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use resilience4cata::circuit_breaker::{State, WindowType};
use resilience4cata::testing::{self, ManualClock};
use resilience4cata::{Backoff, Jitter, Rejection, RetryEvent, resilient};
use testkit::Down;

#[resilient]
pub trait Api {
    #[retry]
    fn retried(&self) -> Result<(), Down>;

    #[rate_limiter]
    fn limited(&self) -> Result<(), Down>;

    #[circuit_breaker]
    fn guarded(&self, fails: bool) -> Result<(), Down>;
}

struct Backend;

impl Api for Backend {
    fn retried(&self) -> Result<(), Down> {
        Err(Down::Failed)
    }
    fn limited(&self) -> Result<(), Down> {
        Ok(())
    }
    fn guarded(&self, fails: bool) -> Result<(), Down> {
        if fails { Err(Down::Failed) } else { Ok(()) }
    }
}

const RETRIED: &str = "properties::Api::retried";
const LIMITED: &str = "properties::Api::limited";
const GUARDED: &str = "properties::Api::guarded";

fn config() -> ProptestConfig {
    cases(64)
}

/// `cases` per property; failing cases are kept in the package's `proptest-regressions/`.
fn cases(cases: u32) -> ProptestConfig {
    let persistence = FileFailurePersistence::Direct("proptest-regressions/properties.txt");
    ProptestConfig { cases, failure_persistence: Some(Box::new(persistence)), ..ProptestConfig::default() }
}

// ---------------------------------------------------------------------------------------------
// Backoff and jitter

#[derive(Clone, Debug)]
struct RetryCase {
    attempts: u32,
    delay: Duration,
    max_delay: Duration,
    multiplier: f64,
    backoff: Backoff,
    jitter: Jitter,
    seed: u64,
}

fn retry_case() -> impl Strategy<Value = RetryCase> {
    let duration = prop_oneof![
        (0u64..2_000).prop_map(Duration::from_millis),
        (0u64..u64::MAX).prop_map(Duration::from_nanos),
        Just(Duration::MAX),
    ];
    (
        2u32..8,
        duration.clone(),
        duration,
        prop_oneof![1.0f64..10.0, Just(1.0), Just(f64::MAX)],
        prop_oneof![Just(Backoff::Fixed), Just(Backoff::Exponential)],
        prop_oneof![Just(Jitter::Full), Just(Jitter::Equal), Just(Jitter::None)],
        any::<u64>(),
    )
        .prop_map(|(attempts, a, b, multiplier, backoff, jitter, seed)| RetryCase {
            attempts,
            delay: a.min(b),
            max_delay: a.max(b),
            multiplier,
            backoff,
            jitter,
            seed,
        })
}

/// The un-jittered wait before retry `n` (from 1), in exact arithmetic.
fn base_wait(c: &RetryCase, n: u32) -> Duration {
    match c.backoff {
        Backoff::Fixed => c.delay,
        Backoff::Exponential => {
            let grown = c.delay.as_secs_f64() * c.multiplier.powi(n as i32 - 1);
            Duration::try_from_secs_f64(grown).map_or(c.max_delay, |d| d.min(c.max_delay))
        }
        other => panic!("no reference for {other:?}"),
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn every_wait_is_within_its_jitter_bounds(c in retry_case()) {
        let clock = ManualClock::new();
        let waits = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&waits);
        let case = c.clone();
        let registry = testing::registry(&clock)
            .jitter_seed(c.seed)
            .retry_instance(RETRIED, move |r| {
                r.max_attempts(case.attempts)
                    .delay(case.delay)
                    .max_delay(case.max_delay)
                    .multiplier(case.multiplier)
                    .backoff(case.backoff)
                    .jitter(case.jitter)
            })
            .listen(move |e: &RetryEvent| {
                if let RetryEvent::Retrying { attempt, delay, .. } = e {
                    sink.lock().unwrap().push((*attempt, *delay));
                }
            })
            .build()
            .unwrap();
        let api = ResilientApi::new(Backend, &registry).unwrap();
        prop_assert_eq!(api.retried(), Err(Down::Failed));
        let waits = waits.lock().unwrap().clone();
        prop_assert_eq!(waits.len() as u32, c.attempts - 1);
        for (attempt, wait) in waits {
            let base = base_wait(&c, attempt);
            // Jitter draws nanoseconds: a jittered wait saturates at u64::MAX of them (584 years).
            let drawn = base.min(Duration::from_nanos(u64::MAX));
            // The float growth may round either way of the exact value: by a nanosecond, or by a few
            // units in the last place of an `f64` (microseconds once a wait reaches ~10^10 s).
            let slack = Duration::from_nanos(1).max(base.mul_f64(4.0 * f64::EPSILON));
            let (low, high) = match c.jitter {
                Jitter::Full => (Duration::ZERO, drawn),
                Jitter::Equal => (drawn / 2, drawn),
                Jitter::None => (base, base),
                other => panic!("no reference for {other:?}"),
            };
            prop_assert!(
                wait.saturating_add(slack) >= low && wait <= high.saturating_add(slack) && wait <= c.max_delay,
                "attempt {attempt}: {wait:?} outside [{low:?}, {high:?}]"
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// GCRA

/// The reference: GCRA's virtual scheduling with exact integers.
struct Gcra {
    interval: u128,
    tolerance: u128,
    tat: u128,
}

impl Gcra {
    fn new(permits: u32, period: Duration) -> Self {
        let interval = period.as_nanos().div_ceil(u128::from(permits)).max(1);
        Gcra { interval, tolerance: interval * u128::from(permits), tat: 0 }
    }

    /// `Ok` or the wait until a permit.
    fn call(&mut self, now: u128) -> Result<(), u128> {
        let next = self.tat.max(now) + self.interval;
        if next - now <= self.tolerance {
            self.tat = next;
            Ok(())
        } else {
            Err(next - self.tolerance - now)
        }
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn the_rate_limiter_is_gcra(
        permits in 1u32..20,
        period_ms in 1u64..2_000,
        steps in proptest::collection::vec((0u64..300, 1usize..4), 1..40),
    ) {
        let clock = ManualClock::new();
        let period = Duration::from_millis(period_ms);
        let registry = testing::registry(&clock)
            .rate_limiter_instance(LIMITED, |r| r.permits(permits).period(period))
            .build()
            .unwrap();
        let api = ResilientApi::new(Backend, &registry).unwrap();
        let mut model = Gcra::new(permits, period);
        for (advance_ms, calls) in steps {
            clock.advance(Duration::from_millis(advance_ms));
            for _ in 0..calls {
                let expected = model.call(clock.elapsed().as_nanos());
                let actual = match api.limited() {
                    Ok(()) => Ok(()),
                    Err(Down::Rejected(Rejection::RateLimitExceeded { retry_after, .. })) => Err(retry_after.as_nanos()),
                    Err(other) => panic!("unexpected {other:?}"),
                };
                prop_assert_eq!(actual, expected, "at {:?}", clock.elapsed());
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Circuit breaker windows

#[derive(Clone, Copy, Debug)]
enum Step {
    Call { fails: bool },
    Advance(Duration),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => any::<bool>().prop_map(|fails| Step::Call { fails }),
        1 => (0u64..3_000).prop_map(|ms| Step::Advance(Duration::from_millis(ms))),
    ]
}

/// The reference breaker: a plain list of recorded outcomes, judged after every record.
struct Breaker {
    window: WindowType,
    size: u64,
    min_calls: u64,
    threshold: u64,
    probes: u64,
    wait: Duration,
    state: State,
    /// (second it was recorded in, failed) in the closed state; outcomes of probes when half-open.
    recorded: Vec<(u64, bool)>,
    opened_at: Duration,
}

impl Breaker {
    fn live(&self, now: Duration) -> Vec<bool> {
        let second = now.as_secs();
        match self.window {
            WindowType::Count => {
                let skip = self.recorded.len().saturating_sub(self.size as usize);
                self.recorded[skip..].iter().map(|&(_, f)| f).collect()
            }
            WindowType::Time => {
                self.recorded.iter().filter(|&&(s, _)| s + self.size > second).map(|&(_, f)| f).collect()
            }
            other => panic!("no reference for {other:?}"),
        }
    }

    fn exceeds(&self, outcomes: &[bool]) -> bool {
        let failed = outcomes.iter().filter(|&&f| f).count() as u64;
        !outcomes.is_empty() && failed * 100 >= self.threshold * outcomes.len() as u64
    }

    fn open(&mut self, now: Duration) {
        self.state = State::Open;
        self.opened_at = now;
        self.recorded.clear();
    }

    /// Whether the call is admitted.
    fn call(&mut self, fails: bool, now: Duration) -> bool {
        if self.state == State::Open && now >= self.opened_at + self.wait {
            self.state = State::HalfOpen;
        }
        match self.state {
            State::Closed => {
                self.recorded.push((now.as_secs(), fails));
                let live = self.live(now);
                let min = match self.window {
                    WindowType::Count => self.min_calls.min(self.size),
                    _ => self.min_calls,
                };
                if live.len() as u64 >= min && self.exceeds(&live) {
                    self.open(now);
                }
                true
            }
            State::HalfOpen if (self.recorded.len() as u64) < self.probes => {
                self.recorded.push((0, fails));
                if self.recorded.len() as u64 == self.probes {
                    let outcomes: Vec<bool> = self.recorded.iter().map(|&(_, f)| f).collect();
                    if self.exceeds(&outcomes) {
                        self.open(now);
                    } else {
                        self.state = State::Closed;
                        self.recorded.clear();
                    }
                }
                true
            }
            _ => false,
        }
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn the_breaker_follows_the_reference_model(
        time_window in any::<bool>(),
        size in 1u32..6,
        min_calls in 1u32..6,
        threshold in 1u64..=100,
        probes in 1u32..4,
        steps in proptest::collection::vec(step(), 1..60),
    ) {
        let clock = ManualClock::new();
        let window = if time_window { WindowType::Time } else { WindowType::Count };
        let wait = Duration::from_secs(2);
        let registry = testing::registry(&clock)
            .circuit_breaker_instance(GUARDED, |c| {
                c.window_type(window)
                    .window_size(size)
                    .minimum_calls(min_calls)
                    .failure_rate_threshold(threshold as f64)
                    .permitted_calls_in_half_open(probes)
                    .wait_in_open(wait)
            })
            .build()
            .unwrap();
        let api = ResilientApi::new(Backend, &registry).unwrap();
        let handle = registry.circuit_breaker(GUARDED).unwrap();
        let mut model = Breaker {
            window,
            size: u64::from(size),
            min_calls: u64::from(min_calls),
            threshold,
            probes: u64::from(probes),
            wait,
            state: State::Closed,
            recorded: Vec::new(),
            opened_at: Duration::ZERO,
        };
        for step in steps {
            match step {
                Step::Advance(by) => clock.advance(by),
                Step::Call { fails } => {
                    let admitted = model.call(fails, clock.elapsed());
                    let result = api.guarded(fails);
                    let refused = matches!(result, Err(Down::Rejected(Rejection::CallNotPermitted { .. })));
                    prop_assert_eq!(!refused, admitted, "{:?} at {:?}", step, clock.elapsed());
                }
            }
            let snapshot = handle.snapshot();
            prop_assert_eq!(snapshot.state, model.state, "after {:?} at {:?}", step, clock.elapsed());
            if model.state == State::Closed {
                let live = model.live(clock.elapsed());
                let failed = live.iter().filter(|&&f| f).count() as u64;
                prop_assert_eq!((snapshot.buffered_calls, snapshot.failed_calls), (live.len() as u64, failed));
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The TOML loader (feature `serde`)

#[cfg(feature = "serde")]
fn toml_value() -> impl Strategy<Value = String> {
    prop_oneof![
        (-5i64..2_000).prop_map(|n| n.to_string()),
        (-1.0f64..200.0).prop_map(|f| format!("{f:?}")),
        Just("true".to_owned()),
        Just("\"fixed\"".to_owned()),
        Just("\"TIME\"".to_owned()),
        Just("\"sometimes\"".to_owned()),
        "\"[0-9]{0,4}(ns|us|ms|s|m|h|µs|€)?\"",
        "\"PT[0-9]{0,3}(\\.[0-9]{0,10})?S\"",
        Just("{ a = 1 }".to_owned()),
        Just("[1, 2]".to_owned()),
    ]
}

#[cfg(feature = "serde")]
fn toml_key() -> impl Strategy<Value = &'static str> {
    proptest::sample::select(vec![
        "enabled",
        "max_attempts",
        "delay",
        "backoff",
        "multiplier",
        "max_delay",
        "jitter",
        "max_duration",
        "budget_percent",
        "budget_min_retries_per_second",
        "budget_window",
        "window_type",
        "window_size",
        "minimum_calls",
        "failure_rate_threshold",
        "slow_call_duration",
        "wait_in_open",
        "permitted_calls_in_half_open",
        "permits",
        "period",
        "max_wait",
        "max_concurrent_calls",
        "duration",
        "max_attemps",
    ])
}

#[cfg(feature = "serde")]
fn toml_section() -> impl Strategy<Value = String> {
    let level = prop_oneof![
        Just("defaults".to_owned()),
        "configs\\.[a-z]{1,5}",
        "instances\\.\"[a-z:]{1,12}\"",
        Just("nonsense".to_owned()),
    ];
    let policy =
        proptest::sample::select(vec!["retry", "circuit_breaker", "rate_limiter", "bulkhead", "timeout", "retri"]);
    let keys = proptest::collection::vec((toml_key(), toml_value()), 0..5);
    (level, policy, keys).prop_map(|(level, policy, keys)| {
        let body: String = keys.into_iter().map(|(k, v)| format!("{k} = {v}\n")).collect();
        format!("[{level}.{policy}]\n{body}")
    })
}

#[cfg(feature = "serde")]
fn check_loader(text: &str) -> Result<(), TestCaseError> {
    match resilience4cata::Registry::builder().config_toml(text).build() {
        Ok(_) => Ok(()),
        Err(e) => {
            prop_assert!(e.code().starts_with("R4C-CFG-00"), "{e}");
            prop_assert!(e.to_string().starts_with(&format!("[{}] config", e.code())), "{e}");
            Ok(())
        }
    }
}

#[cfg(feature = "serde")]
proptest! {
    #![proptest_config(cases(256))]

    #[test]
    fn the_toml_loader_codes_every_error(sections in proptest::collection::vec(toml_section(), 0..4)) {
        check_loader(&sections.concat())?;
    }

    #[test]
    fn the_toml_loader_survives_any_text(text in any::<String>()) {
        check_loader(&text)?;
    }
}
