//! A pipeline's inner policies (rate limiter, timeout, bulkhead) on the manual clock: the generated
//! code's order whatever the builder order, the annotated examples mirrored, sharing by name with
//! annotated methods, refusals carried in `E`, and the tower layer through them.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use resilience4cata::pipeline::AsyncOnly;
use resilience4cata::testing::ManualClock;
use resilience4cata::{
    GiveUpReason, Pipeline, Registry, RegistryBuilder, Rejection, ResilienceError, RetryEvent, resilient,
};
use testkit::{Recorder, block_on};

const MS: Duration = Duration::from_millis(1);

#[derive(Debug, Clone, PartialEq, ResilienceError)]
pub enum QuoteError {
    Down,
    #[rejection]
    Rejected(Rejection),
}

fn registry(clock: &ManualClock, events: &Recorder<RetryEvent>) -> Registry {
    registry_with(clock, events, |b| b)
}

fn registry_with(
    clock: &ManualClock,
    events: &Recorder<RetryEvent>,
    tune: impl FnOnce(RegistryBuilder) -> RegistryBuilder,
) -> Registry {
    tune(events.on(testkit::no_jitter(clock))).build().unwrap()
}

fn retry_after(outcome: Result<u32, QuoteError>) -> Duration {
    match outcome {
        Err(QuoteError::Rejected(Rejection::RateLimitExceeded { retry_after, .. })) => retry_after,
        other => panic!("expected a rate limiter refusal, got {other:?}"),
    }
}

/// The annotated example: `retry(max_attempts = 3, delay = "100ms")` around
/// `rate_limiter(permits = 1, period = "1s")`. Every attempt asks for its own permit, so attempt 2
/// is refused; the retry waits the refusal's `retry_after` (900 ms, more than its 200 ms backoff:
/// SPEC §7.1, "Delay from the failure"), so attempt 3 gets the next permit.
#[test]
fn every_retry_attempt_takes_its_own_permit_whatever_the_builder_order() {
    for limiter_first in [false, true] {
        let clock = ManualClock::new();
        let events = Recorder::default();
        let registry = registry(&clock, &events);
        let builder = Pipeline::builder(&registry, "quotes");
        let builder = if limiter_first {
            builder
                .rate_limiter_with(|l| l.permits(1).period(Duration::from_secs(1)))
                .retry_with(|r| r.max_attempts(3).delay(100 * MS))
        } else {
            builder
                .retry_with(|r| r.max_attempts(3).delay(100 * MS))
                .rate_limiter_with(|l| l.permits(1).period(Duration::from_secs(1)))
        };
        let quotes = builder.build::<u32, QuoteError>().unwrap();
        let mut calls = 0;
        let outcome = quotes.execute(|| {
            calls += 1;
            Err(QuoteError::Down)
        });
        assert_eq!(calls, 2, "attempt 2 found no permit, attempt 3 did");
        assert!(matches!(outcome, Err(QuoteError::Down)), "{outcome:?}");
        assert_eq!(clock.elapsed(), 1_000 * MS, "100 ms backoff, then the limiter's 900 ms");
        assert_eq!(events.last(), Some(testkit::gave_up("quotes", 3, GiveUpReason::MaxAttempts)));
    }
}

#[test]
fn a_sync_call_waits_for_a_permit_within_max_wait() {
    let clock = ManualClock::new();
    let registry = registry(&clock, &Arc::default());
    let patient = Pipeline::builder(&registry, "patient")
        .rate_limiter_with(|l| l.permits(1).period(100 * MS).max_wait(150 * MS))
        .build::<u32, QuoteError>()
        .unwrap();
    assert_eq!(patient.execute(|| Ok(1)), Ok(1));
    assert_eq!(patient.execute(|| Ok(2)), Ok(2));
    assert_eq!(clock.elapsed(), 100 * MS, "waited for the next permit");
}

#[test]
fn an_async_call_waits_for_a_permit_without_blocking() {
    let clock = ManualClock::new();
    let registry = registry(&clock, &Arc::default());
    let patient = Pipeline::builder(&registry, "patient")
        .rate_limiter_with(|l| l.permits(1).period(100 * MS).max_wait(100 * MS))
        .build::<u32, QuoteError>()
        .unwrap();
    block_on(async {
        assert_eq!(patient.execute_async(|| async { Ok(1) }).await, Ok(1));
        let (a, b) = tokio::join!(patient.execute_async(|| async { Ok(2) }), patient.execute_async(|| async { Ok(3) }));
        assert_eq!(a, Ok(2));
        assert_eq!(retry_after(b), 200 * MS, "the second waiter would need 200 ms, more than max_wait");
    });
    assert_eq!(clock.elapsed(), 100 * MS);
}

/// The bulkhead slot is held only while the call runs: a retry waits its backoff outside it, and
/// whatever the builder order, the rate limiter is asked before the bulkhead.
#[test]
fn a_retry_waits_its_backoff_outside_the_bulkhead() {
    let clock = ManualClock::new();
    let (registry, seen) = testkit::probe_before_backoff(&clock, |r| r.bulkhead("jobs").unwrap().snapshot().in_flight);
    let jobs = Pipeline::builder(&registry, "jobs")
        .bulkhead_with(|b| b.max_concurrent_calls(1))
        .retry_with(|r| r.max_attempts(2).delay(100 * MS))
        .build::<u32, QuoteError>()
        .unwrap();
    let mut inside = Vec::new();
    let outcome = jobs.execute(|| {
        inside.push(registry.bulkhead("jobs").unwrap().snapshot().in_flight);
        if inside.len() == 1 { Err(QuoteError::Down) } else { Ok(2) }
    });
    assert_eq!(outcome, Ok(2));
    assert_eq!(inside, [1, 1], "each attempt held the slot");
    assert_eq!(*seen.lock().unwrap(), [0], "the slot was free during the backoff");
    assert_eq!(registry.bulkhead("jobs").unwrap().snapshot().in_flight, 0);
    assert_eq!(clock.elapsed(), 100 * MS);
}

#[test]
fn a_full_bulkhead_refuses_with_a_rejection_in_e() {
    let clock = ManualClock::new();
    let registry = registry(&clock, &Arc::default());
    let jobs = Pipeline::builder(&registry, "jobs")
        .bulkhead_with(|b| b.max_concurrent_calls(1))
        .build::<u32, QuoteError>()
        .unwrap();
    let nested = jobs.execute(|| jobs.execute(|| Ok(1)));
    assert_eq!(nested, Err(QuoteError::Rejected(Rejection::BulkheadFull { instance: "jobs".into() })));
}

/// A timeout applies to each attempt: two hanging attempts are cut at 1 s each and retried, the
/// third answers; the bulkhead slot of a timed-out attempt comes back.
#[test]
fn each_retry_attempt_gets_its_own_timeout() {
    let clock = ManualClock::new();
    let events = Recorder::default();
    let registry = registry(&clock, &events);
    let fetch: Pipeline<u32, QuoteError, AsyncOnly> = Pipeline::builder(&registry, "fetch")
        .timeout_with(|t| t.duration(Duration::from_secs(1)))
        .bulkhead_with(|b| b.max_concurrent_calls(1))
        .retry_with(|r| r.max_attempts(3).delay(Duration::ZERO))
        .build()
        .unwrap();
    let attempts = AtomicU32::new(0);
    let outcome = block_on(fetch.execute_async(|| async {
        if attempts.fetch_add(1, Ordering::SeqCst) < 2 {
            std::future::pending::<()>().await;
        }
        Ok(4)
    }));
    assert_eq!(outcome, Ok(4));
    assert_eq!(attempts.load(Ordering::SeqCst), 3);
    assert_eq!(clock.elapsed(), Duration::from_secs(2), "a fresh second for each attempt, none for the last");
    let retried =
        events.filter_map(|e| if let RetryEvent::Retrying { attempt, .. } = e { Some(*attempt) } else { None });
    assert_eq!(retried, [1, 2]);
    assert_eq!(registry.bulkhead("fetch").unwrap().snapshot().in_flight, 0);
    let snapshot = registry.snapshot();
    let timeouts = &snapshot.timeouts()[0];
    assert_eq!((&*timeouts.instance, timeouts.timed_out), ("fetch", 2));
}

#[test]
fn a_timed_out_call_is_a_call_timeout_rejection() {
    let clock = ManualClock::new();
    let registry = registry(&clock, &Arc::default());
    let fetch = Pipeline::builder(&registry, "fetch").timeout().build::<u32, std::io::Error>().unwrap();
    let outcome = block_on(fetch.execute_async(std::future::pending));
    let err = outcome.unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::TimedOut);
    assert!(matches!(err.rejection(), Some(Rejection::CallTimeout { .. })));
    assert_eq!(clock.elapsed(), Duration::from_secs(1));
}

#[resilient]
pub trait Partner {
    #[rate_limiter(name = "partner", permits = 3)]
    fn quote(&self) -> Result<u32, QuoteError>;
}

struct PartnerBackend;

impl Partner for PartnerBackend {
    fn quote(&self) -> Result<u32, QuoteError> {
        Ok(7)
    }
}

/// A pipeline and an annotated method with the same name share one rate limiter: three permits
/// between them.
#[test]
fn a_pipeline_and_an_annotated_method_share_a_rate_limiter_by_name() {
    let clock = ManualClock::new();
    let registry = registry(&clock, &Arc::default());
    let partner = ResilientPartner::new(PartnerBackend, &registry).unwrap();
    let pipeline =
        Pipeline::builder(&registry, "partner").rate_limiter_with(|l| l.permits(3)).build::<u32, QuoteError>().unwrap();
    assert_eq!(partner.quote(), Ok(7));
    assert_eq!(pipeline.execute(|| Ok(1)), Ok(1));
    assert_eq!(partner.quote(), Ok(7));
    assert!(pipeline.execute(|| Ok(1)).is_err(), "the fourth call, through either, finds no permit");
    assert!(partner.quote().is_err());
    assert_eq!(registry.snapshot().rate_limiters().len(), 1);
    let err = Pipeline::builder(&registry, "partner")
        .rate_limiter_with(|l| l.permits(4))
        .build::<u32, QuoteError>()
        .unwrap_err();
    assert_eq!(err.code(), "R4C-REG-008");
}

#[test]
fn named_configs_instance_overrides_and_errors_rank_as_for_methods() {
    let clock = ManualClock::new();
    let registry = registry_with(&clock, &Arc::default(), |b| {
        b.rate_limiter("slow", |l| l.permits(5).period(Duration::from_secs(2)))
            .rate_limiter_instance("pinned", |l| l.permits(9))
            .bulkhead("narrow", |b| b.max_concurrent_calls(2))
    });
    Pipeline::builder(&registry, "loose")
        .rate_limiter_with(|l| l.permits(6))
        .rate_limiter_config("slow")
        .build::<u32, QuoteError>()
        .unwrap();
    Pipeline::builder(&registry, "pinned")
        .rate_limiter_config("slow")
        .rate_limiter_with(|l| l.permits(6))
        .build::<u32, QuoteError>()
        .unwrap();
    let snapshot = registry.snapshot();
    let [loose, pinned] = snapshot.rate_limiters() else { panic!("{snapshot:?}") };
    assert_eq!((loose.config.permits, loose.config.period), (6, Duration::from_secs(2)));
    assert_eq!((pinned.config.permits, pinned.config.period), (9, Duration::from_secs(2)));
    let unknown = Pipeline::builder(&registry, "x").bulkhead_config("wide").build::<u32, QuoteError>().unwrap_err();
    assert_eq!(unknown.code(), "R4C-REG-004");
    let invalid = Pipeline::builder(&registry, "y")
        .bulkhead_with(|b| b.max_concurrent_calls(0))
        .build::<u32, QuoteError>()
        .unwrap_err();
    assert_eq!(invalid.code(), "R4C-REG-003");
}

/// A rejecting pipeline finds a nested open breaker's refusal without `detect_rejections`.
#[test]
fn a_rejecting_pipeline_never_retries_a_nested_open_breaker() {
    let clock = ManualClock::new();
    let events = Recorder::default();
    let registry = registry(&clock, &events);
    let pipeline = Pipeline::builder(&registry, "outer").retry().rate_limiter().build::<u32, QuoteError>().unwrap();
    let mut calls = 0;
    let _ = pipeline.execute(|| {
        calls += 1;
        Err(QuoteError::from_rejection(Rejection::CallNotPermitted { instance: "inner".into() }))
    });
    assert_eq!(calls, 1);
    assert_eq!(events.all(), [testkit::gave_up("outer", 1, GiveUpReason::Refused)]);
}

#[resilient]
pub trait Desk {
    #[retry(max_attempts = 3, delay = "100ms")]
    #[rate_limiter(permits = 2, period = "1s")]
    #[bulkhead(max_concurrent_calls = 1)]
    fn quote(&self, n: u32) -> Result<u32, QuoteError>;

    #[retry(max_attempts = 3, delay = "100ms")]
    #[timeout(duration = "250ms")]
    #[rate_limiter(permits = 2, period = "1s")]
    async fn quote_async(&self, n: u32) -> Result<u32, QuoteError>;
}

/// Answers the scripted outcome of each call (`None` hangs), the last one repeating.
struct Script(Vec<Option<Result<u32, QuoteError>>>, AtomicU32);

impl Script {
    fn next(&self) -> Option<Result<u32, QuoteError>> {
        let i = self.1.fetch_add(1, Ordering::SeqCst) as usize;
        self.0[i.min(self.0.len() - 1)].clone()
    }
}

impl Desk for Script {
    fn quote(&self, _: u32) -> Result<u32, QuoteError> {
        self.next().expect("sync scripts do not hang")
    }
    async fn quote_async(&self, _: u32) -> Result<u32, QuoteError> {
        match self.next() {
            Some(outcome) => outcome,
            None => std::future::pending().await,
        }
    }
}

/// The same scripts through `#[resilient]` and through pipelines with the same policies (built in
/// another order) give the same results, retry events and manual-clock times, sync and async.
#[test]
fn pipelines_and_the_generated_code_behave_alike() {
    let down = || Some(Err(QuoteError::Down));
    let scripts = vec![
        vec![Some(Ok(1))],
        vec![down(), Some(Ok(2))],
        vec![down()],
        vec![None, Some(Ok(3))],
        vec![None],
        vec![down(), None, Some(Ok(4))],
    ];
    for script in scripts {
        let run = |pipeline: bool| {
            let clock = ManualClock::new();
            let events = Recorder::default();
            let registry = registry(&clock, &events);
            let backend = Script(script.clone(), AtomicU32::new(0));
            let mut results = Vec::new();
            if pipeline {
                let sync = Pipeline::builder(&registry, "desk::quote")
                    .bulkhead_with(|b| b.max_concurrent_calls(1))
                    .rate_limiter_with(|l| l.permits(2).period(Duration::from_secs(1)))
                    .retry_with(|r| r.max_attempts(3).delay(100 * MS))
                    .build::<u32, QuoteError>()
                    .unwrap();
                let asynchronous = Pipeline::builder(&registry, "desk::quote_async")
                    .rate_limiter_with(|l| l.permits(2).period(Duration::from_secs(1)))
                    .timeout_with(|t| t.duration(250 * MS))
                    .retry_with(|r| r.max_attempts(3).delay(100 * MS))
                    .build::<u32, QuoteError>()
                    .unwrap();
                if script.iter().all(Option::is_some) {
                    results.push(sync.execute(|| backend.quote(0)));
                    backend.1.store(0, Ordering::SeqCst);
                }
                results.push(block_on(asynchronous.execute_async(|| backend.quote_async(0))));
            } else {
                let desk = ResilientDesk::new(backend, &registry).unwrap();
                if script.iter().all(Option::is_some) {
                    results.push(desk.quote(0));
                    desk.delegate().1.store(0, Ordering::SeqCst);
                }
                results.push(block_on(desk.quote_async(0)));
            }
            let events: Vec<_> = events
                .all()
                .iter()
                .map(|e| match e {
                    RetryEvent::Retrying { attempt, delay, .. } => (*attempt, Some(*delay), None),
                    RetryEvent::GaveUp { attempts, reason, .. } => (*attempts, None, Some(*reason)),
                    other => panic!("{other:?}"),
                })
                .collect();
            let results: Vec<_> = results.into_iter().map(|r| r.map_err(|e| strip(&e))).collect();
            (results, events, clock.elapsed())
        };
        assert_eq!(run(true), run(false), "script {script:?}");
    }
}

/// An error without the instance id, which differs between the two forms.
fn strip(e: &QuoteError) -> String {
    match e {
        QuoteError::Down => "down".to_owned(),
        QuoteError::Rejected(Rejection::RateLimitExceeded { retry_after, .. }) => format!("rate {retry_after:?}"),
        QuoteError::Rejected(Rejection::CallTimeout { timeout, .. }) => format!("timeout {timeout:?}"),
        QuoteError::Rejected(r) => format!("{r:?}"),
    }
}
