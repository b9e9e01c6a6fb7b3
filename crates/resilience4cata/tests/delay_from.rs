//! SPEC §7.1 "Delay from the failure", on the manual clock with exact waits: a `delay_from` hook
//! (attribute and pipeline) sets the next wait from the error — after the `max_attempts` check,
//! not capped by `max_delay`, then `max_duration`, shutdown; `None` gives up `NotRetryable` — and,
//! without a hook, a rate limiter's `RateLimitExceeded` (own or nested) waits
//! `max(computed, retry_after)`.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use resilience4cata::testing::ManualClock;
use resilience4cata::{GiveUpReason, Pipeline, Registry, Rejection, ResilienceError, RetryEvent, resilient};

use testkit::Recorder;

const MS: Duration = Duration::from_millis(1);

#[derive(Clone, Debug, PartialEq, ResilienceError)]
pub enum HttpError {
    /// A 429 or 503, with the server's `Retry-After` when it sent one.
    TooBusy {
        retry_after: Option<Duration>,
    },
    Server,
    #[rejection]
    Rejected(Rejection),
}

/// The hooks record what they were asked: (attempt, computed).
static ASKED: Mutex<Vec<(u32, Duration)>> = Mutex::new(Vec::new());

/// `Retry-After` when the server sent one, the backoff otherwise; a 5xx without a hint is
/// retried after the backoff too.
fn retry_after(e: &HttpError, attempt: u32, computed: Duration) -> Option<Duration> {
    ASKED.lock().unwrap().push((attempt, computed));
    match e {
        HttpError::TooBusy { retry_after } => Some(retry_after.unwrap_or(computed)),
        _ => Some(computed),
    }
}

/// Gives up on a server error.
fn only_when_busy(e: &HttpError, _attempt: u32, computed: Duration) -> Option<Duration> {
    match e {
        HttpError::TooBusy { retry_after } => Some(retry_after.unwrap_or(computed)),
        _ => None,
    }
}

#[resilient]
pub trait Api {
    #[retry(max_attempts = 4, delay = "100ms", max_delay = "1s", delay_from = retry_after)]
    fn get(&self) -> Result<u32, HttpError>;

    #[retry(max_attempts = 3, delay = "100ms", max_duration = "5s", delay_from = retry_after)]
    fn bounded(&self) -> Result<u32, HttpError>;

    #[retry(max_attempts = 3, delay = "100ms", delay_from = only_when_busy)]
    fn picky(&self) -> Result<u32, HttpError>;

    #[retry(max_attempts = 4, delay = "100ms", max_delay = "1s", delay_from = retry_after)]
    async fn fetch(&self) -> Result<u32, HttpError>;

    #[retry(max_attempts = 3, delay = "10ms")]
    #[rate_limiter(permits = 1, period = "470ms")]
    fn limited(&self) -> Result<u32, HttpError>;

    #[retry(max_attempts = 3, delay = "10ms")]
    #[rate_limiter(permits = 1, period = "470ms")]
    async fn limited_async(&self) -> Result<u32, HttpError>;

    #[retry(max_attempts = 3, delay = "1s")]
    #[rate_limiter(permits = 1, period = "470ms")]
    fn limited_slow_backoff(&self) -> Result<u32, HttpError>;

    #[retry(max_attempts = 3, delay = "10ms", delay_from = retry_after)]
    #[rate_limiter(permits = 1, period = "470ms")]
    fn limited_hooked(&self) -> Result<u32, HttpError>;
}

/// Answers each call with the next scripted outcome (then `Ok`).
struct Script {
    outcomes: Mutex<Vec<Result<u32, HttpError>>>,
    calls: AtomicU32,
}

impl Script {
    fn new(mut outcomes: Vec<Result<u32, HttpError>>) -> Script {
        outcomes.reverse();
        Script { outcomes: Mutex::new(outcomes), calls: AtomicU32::new(0) }
    }

    fn next(&self) -> Result<u32, HttpError> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        self.outcomes.lock().unwrap().pop().unwrap_or(Ok(n))
    }
}

/// Every method answers with the script's next outcome.
impl Api for Script {
    testkit::same_body! { fn(&self) -> Result<u32, HttpError> { self.next() }
    for get bounded picky limited limited_slow_backoff limited_hooked }
    testkit::same_body! { async fn(&self) -> Result<u32, HttpError> { self.next() } for fetch limited_async }
}

fn busy(ms: u32) -> Result<u32, HttpError> {
    Err(HttpError::TooBusy { retry_after: Some(ms * MS) })
}

/// One test's world: the manual clock, a registry on it with exact waits, its retry events.
struct World {
    clock: ManualClock,
    registry: Registry,
    events: Recorder<RetryEvent>,
}

impl World {
    fn new() -> World {
        let (clock, events, registry) = testkit::recorded();
        World { clock, registry, events }
    }

    /// The wrapper over a backend answering `outcomes` in order (then `Ok`).
    fn api(&self, outcomes: Vec<Result<u32, HttpError>>) -> ResilientApi<Script> {
        ResilientApi::new(Script::new(outcomes), &self.registry).unwrap()
    }

    /// The waits of the retries (`(attempt, delay)`), how the retry gave up and the time that passed.
    #[track_caller]
    fn assert_timeline(&self, delays: &[(u32, Duration)], gave_up: &[(u32, GiveUpReason)], elapsed: Duration) {
        assert_eq!(self.delays(), delays);
        assert_eq!(self.events.gave_up(), gave_up);
        assert_eq!(self.clock.elapsed(), elapsed);
    }

    /// `(attempt, delay)` of every retry.
    fn delays(&self) -> Vec<(u32, Duration)> {
        self.events.filter_map(|e| match e {
            RetryEvent::Retrying { attempt, delay, .. } => Some((*attempt, *delay)),
            _ => None,
        })
    }
}

/// Tests share `ASKED`; they take this lock so they do not interleave.
static SERIAL: Mutex<()> = Mutex::new(());

fn asked() -> Vec<(u32, Duration)> {
    std::mem::take(&mut *ASKED.lock().unwrap())
}

#[test]
fn retry_after_sets_each_wait_exactly_and_is_not_capped_by_max_delay() {
    let _serial = SERIAL.lock().unwrap();
    asked();
    let w = World::new();
    let api = w.api(vec![busy(3_000), Err(HttpError::Server), Err(HttpError::TooBusy { retry_after: None })]);
    assert_eq!(api.get(), Ok(4));
    // attempt 1: the server's 3 s (above max_delay = 1 s); 2: the backoff's 200 ms; 3: no hint, 400 ms.
    assert_eq!(w.delays(), [(1, 3_000 * MS), (2, 200 * MS), (3, 400 * MS)]);
    assert_eq!(w.clock.elapsed(), 3_600 * MS);
    assert_eq!(asked(), [(1, 100 * MS), (2, 200 * MS), (3, 400 * MS)], "attempt numbers from 1, computed after jitter");
}

#[test]
fn the_hook_runs_only_when_another_attempt_is_allowed() {
    let _serial = SERIAL.lock().unwrap();
    asked();
    let w = World::new();
    let api = w.api(vec![busy(10), busy(10), busy(10), busy(10)]);
    assert_eq!(api.get(), busy(10));
    assert_eq!(asked().len(), 3, "not after the 4th and last attempt");
    assert_eq!(w.events.gave_up(), [(4, GiveUpReason::MaxAttempts)]);
    assert_eq!(w.clock.elapsed(), 30 * MS);
}

#[test]
fn none_gives_up_not_retryable() {
    let _serial = SERIAL.lock().unwrap();
    let w = World::new();
    let api = w.api(vec![busy(50), Err(HttpError::Server)]);
    assert_eq!(api.picky(), Err(HttpError::Server));
    w.assert_timeline(&[(1, 50 * MS)], &[(2, GiveUpReason::NotRetryable)], 50 * MS);
}

#[test]
fn max_duration_is_checked_against_the_returned_wait() {
    let _serial = SERIAL.lock().unwrap();
    let w = World::new();
    let api = w.api(vec![busy(4_000), busy(1_500)]);
    // 4 s fits in 5 s; then 4 s elapsed + 1.5 s > 5 s: gives up instead of waiting.
    assert_eq!(api.bounded(), busy(1_500));
    w.assert_timeline(&[(1, 4_000 * MS)], &[(2, GiveUpReason::MaxDuration)], 4_000 * MS);
}

#[test]
fn shutdown_interrupts_a_wait_the_hook_set() {
    let _serial = SERIAL.lock().unwrap();
    let w = World::new();
    w.registry.shutdown();
    let api = w.api(vec![busy(3_000)]);
    assert_eq!(api.get(), busy(3_000));
    assert_eq!(w.events.gave_up(), [(1, GiveUpReason::Interrupted)]);
}

#[test]
fn the_async_form_waits_what_the_hook_says() {
    let _serial = SERIAL.lock().unwrap();
    asked();
    let w = World::new();
    let api = w.api(vec![busy(2_500), Err(HttpError::Server)]);
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    assert_eq!(runtime.block_on(api.fetch()), Ok(3));
    assert_eq!(w.delays(), [(1, 2_500 * MS), (2, 200 * MS)]);
    assert_eq!(w.clock.elapsed(), 2_700 * MS);
    assert_eq!(asked(), [(1, 100 * MS), (2, 200 * MS)]);
}

#[test]
fn a_local_rate_limit_refusal_waits_its_retry_after() {
    let w = World::new();
    let api = w.api(vec![]);
    assert_eq!(api.limited(), Ok(1)); // the burst of 1
    assert_eq!(api.limited(), Ok(2)); // refused, then retried once the limiter said: 470 ms, not 10 ms
    assert_eq!(w.delays(), [(1, 470 * MS)]);
    assert_eq!(w.clock.elapsed(), 470 * MS);
}

#[test]
fn the_longer_of_backoff_and_retry_after_wins() {
    let w = World::new();
    let api = w.api(vec![]);
    assert_eq!(api.limited_slow_backoff(), Ok(1));
    assert_eq!(api.limited_slow_backoff(), Ok(2));
    assert_eq!(w.delays(), [(1, 1_000 * MS)]); // max(1 s computed, 470 ms)
}

#[tokio::test]
async fn the_async_form_waits_the_limiters_retry_after() {
    let w = World::new();
    let api = w.api(vec![]);
    assert_eq!(api.limited_async().await, Ok(1));
    assert_eq!(api.limited_async().await, Ok(2));
    assert_eq!(w.delays(), [(1, 470 * MS)]);
    assert_eq!(w.clock.elapsed(), 470 * MS);
}

#[test]
fn with_a_hook_the_hook_alone_decides() {
    let _serial = SERIAL.lock().unwrap();
    asked();
    let w = World::new();
    let api = w.api(vec![]);
    assert_eq!(api.limited_hooked(), Ok(1));
    // The hook returns `computed` for a rejection: 10 ms, then 20 ms; the limiter frees a permit
    // only after 470 ms, so all three attempts are refused.
    let refused = api.limited_hooked().unwrap_err();
    assert!(matches!(refused.rejection(), Some(Rejection::RateLimitExceeded { .. })));
    assert_eq!(w.delays(), [(1, 10 * MS), (2, 20 * MS)]);
    assert_eq!(asked(), [(1, 10 * MS), (2, 20 * MS)]);
}

/// A retry-only wrapper around a delegate that is itself a rate-limited wrapper: the nested
/// refusal is found in `E` and waited out.
#[resilient]
pub trait Outer {
    #[retry(max_attempts = 2, delay = "10ms")]
    fn call(&self) -> Result<u32, HttpError>;
}

#[resilient]
pub trait Inner {
    #[rate_limiter(permits = 1, period = "300ms")]
    fn call(&self) -> Result<u32, HttpError>;
}

struct Leaf;
impl Inner for Leaf {
    fn call(&self) -> Result<u32, HttpError> {
        Ok(9)
    }
}

struct Nested(ResilientInner<Leaf>);
impl Outer for Nested {
    fn call(&self) -> Result<u32, HttpError> {
        Inner::call(&self.0)
    }
}

#[test]
fn a_nested_rate_limit_refusal_waits_its_retry_after() {
    let w = World::new();
    let outer = ResilientOuter::new(Nested(ResilientInner::new(Leaf, &w.registry).unwrap()), &w.registry).unwrap();
    assert_eq!(outer.call(), Ok(9));
    assert_eq!(outer.call(), Ok(9));
    assert_eq!(w.delays(), [(1, 300 * MS)]);
    assert_eq!(w.clock.elapsed(), 300 * MS);
}

#[test]
fn the_pipeline_takes_a_delay_from_closure() {
    let w = World::new();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&seen);
    let pipeline = Pipeline::builder(&w.registry, "http")
        .retry_with(|r| r.max_attempts(3).delay(100 * MS).max_delay(MS * 150))
        .build::<u32, HttpError>()
        .unwrap()
        .delay_from(move |e, attempt, computed| {
            record.lock().unwrap().push((attempt, computed));
            match e {
                HttpError::TooBusy { retry_after } => *retry_after,
                _ => None,
            }
        });
    let script = Script::new(vec![busy(2_000), busy(30)]);
    assert_eq!(pipeline.execute(|| script.next()), Ok(3));
    assert_eq!(w.delays(), [(1, 2_000 * MS), (2, 30 * MS)]);
    assert_eq!(*seen.lock().unwrap(), [(1, 100 * MS), (2, 150 * MS)]);
    assert_eq!(w.clock.elapsed(), 2_030 * MS);

    let script = Script::new(vec![Err(HttpError::Server)]);
    assert_eq!(pipeline.execute(|| script.next()), Err(HttpError::Server));
    assert_eq!(w.events.gave_up(), [(1, GiveUpReason::NotRetryable)]);
}

#[tokio::test]
async fn the_pipeline_waits_a_limiters_retry_after_async() {
    let w = World::new();
    let pipeline = Pipeline::builder(&w.registry, "limited")
        .retry_with(|r| r.max_attempts(3).delay(10 * MS))
        .rate_limiter_with(|l| l.permits(1).period(470 * MS))
        .build::<u32, HttpError>()
        .unwrap();
    assert_eq!(pipeline.execute_async(|| async { Ok(1) }).await, Ok(1));
    assert_eq!(pipeline.execute_async(|| async { Ok(2) }).await, Ok(2));
    assert_eq!(w.delays(), [(1, 470 * MS)]);
    assert_eq!(w.clock.elapsed(), 470 * MS);
}
