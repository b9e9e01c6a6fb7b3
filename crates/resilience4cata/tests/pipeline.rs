//! The programmatic pipeline through the public API, on the manual clock: the seed's retry examples
//! mirrored with the same timelines and counts as the annotated form, configuration precedence, the
//! build-time error codes, async cancellation, and sharing across threads and tasks.

use std::future::Future;
use std::pin::pin;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use resilience4cata::testing::ManualClock;
use resilience4cata::{
    Budget, GiveUpReason, Pipeline, Registry, RegistryBuilder, Rejection, ResilienceError, RetryEvent, Verdict,
    resilient,
};
use testkit::{Recorder, block_on, ms};

type Events = Recorder<RetryEvent>;

/// A registry on `clock` without jitter, recording every retry event.
fn registry(clock: &ManualClock, tune: impl FnOnce(RegistryBuilder) -> RegistryBuilder) -> (Registry, Events) {
    let events = Events::default();
    (tune(events.on(testkit::no_jitter(clock))).build().unwrap(), events)
}

#[derive(Debug, Clone, PartialEq)]
enum InventoryError {
    Down,
}

/// The seed's pipeline: 3 attempts 100 ms apart, on `clock`, and its retry events.
fn seed_pipeline(clock: &ManualClock) -> (Pipeline<u32, InventoryError>, Events) {
    let (registry, events) = registry(clock, |b| b);
    let stock =
        Pipeline::builder(&registry, "inventory").retry_with(|r| r.max_attempts(3).delay(ms(100))).build().unwrap();
    (stock, events)
}

/// The seed's pipeline: two failures wait 100 ms, then 200 ms.
#[test]
fn seed_pipeline_example_retries_after_100_then_200_ms() {
    let clock = ManualClock::new();
    let (stock, events) = seed_pipeline(&clock);
    let mut calls = 0;
    let units = stock.execute(|| {
        calls += 1;
        if calls <= 2 { Err(InventoryError::Down) } else { Ok(7) }
    });
    assert_eq!(units, Ok(7));
    assert_eq!(calls, 3);
    assert_eq!(clock.elapsed(), ms(300));
    assert_eq!(events.all(), testkit::seed_retrying("inventory"));
}

#[test]
fn seed_pipeline_example_async_has_the_same_timeline() {
    let clock = ManualClock::new();
    let (stock, events) = seed_pipeline(&clock);
    let calls = AtomicU32::new(0);
    let units = block_on(stock.execute_async(|| async {
        if calls.fetch_add(1, Ordering::SeqCst) < 2 { Err(InventoryError::Down) } else { Ok(7) }
    }));
    assert_eq!(units, Ok(7));
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    assert_eq!(clock.elapsed(), ms(300));
    assert_eq!(events.all().len(), 2);
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum DownloadError {
    Io(std::io::ErrorKind),
    State,
}

fn download_pipeline(registry: &Registry) -> Pipeline<Vec<u8>, DownloadError> {
    Pipeline::builder(registry, "files::download")
        .retry_with(|r| {
            r.max_attempts(5).delay(ms(500)).max_delay(Duration::from_secs(2)).max_duration(Duration::from_secs(4))
        })
        .build()
        .unwrap()
        .retry_on(|e| matches!(e, DownloadError::Io(_)))
        .abort_on(|e| matches!(e, DownloadError::Io(std::io::ErrorKind::NotFound)))
}

/// Calls at 0 s, 0.5 s, 1.5 s and 3.5 s, then giving up: another 2 s wait would end past 4 s.
#[test]
fn download_timeline_gives_up_on_max_duration() {
    let clock = ManualClock::new();
    let (registry, events) = registry(&clock, |b| b);
    let download = download_pipeline(&registry);
    let mut times = Vec::new();
    let result = download.execute(|| {
        times.push(clock.elapsed());
        Err(DownloadError::Io(std::io::ErrorKind::ConnectionReset))
    });
    assert_eq!(result, Err(DownloadError::Io(std::io::ErrorKind::ConnectionReset)));
    assert_eq!(times, [0, 500, 1500, 3500].map(ms));
    assert_eq!(events.gave_up(), [(4, GiveUpReason::MaxDuration)]);
}

/// `abort_on` wins over `retry_on`; an error outside `retry_on` is not retried either.
#[test]
fn abort_on_and_errors_outside_retry_on_fail_after_one_call() {
    let clock = ManualClock::new();
    let (registry, events) = registry(&clock, |b| b);
    let download = download_pipeline(&registry);
    for error in [DownloadError::Io(std::io::ErrorKind::NotFound), DownloadError::State] {
        let mut calls = 0;
        let result = download.execute(|| {
            calls += 1;
            Err(error)
        });
        assert_eq!((result, calls), (Err(error), 1));
    }
    assert_eq!(events.gave_up(), [(1, GiveUpReason::NotRetryable), (1, GiveUpReason::NotRetryable)]);
    assert_eq!(clock.elapsed(), Duration::ZERO);
}

/// The seeds' budgeted retry as a pipeline named `catalog`: 3 attempts 100 ms apart, retries capped
/// at 20 % of the calls with a reserve of one a second.
fn catalog_pipeline(registry: &Registry) -> Pipeline<String, &'static str> {
    Pipeline::builder(registry, "catalog")
        .retry_with(|r| r.max_attempts(3).delay(ms(100)).budget_percent(20.0).budget_min_retries_per_second(1))
        .build()
        .unwrap()
}

/// The retry budget's figures: 130 attempts instead of 300, 95 refusals, `Budget {100, 30, 30}`.
#[test]
fn retry_budget_limits_a_dead_dependency() {
    let clock = ManualClock::new();
    let (registry, events) = registry(&clock, |b| b);
    let catalog = catalog_pipeline(&registry);
    let mut attempts = 0;
    for _ in 0..100 {
        let result = catalog.execute(|| {
            attempts += 1;
            Err("catalog down")
        });
        assert_eq!(result, Err("catalog down"));
    }
    assert_eq!(attempts, 130);
    let exhausted = events.gave_up().iter().filter(|(_, r)| *r == GiveUpReason::BudgetExhausted).count();
    assert_eq!(exhausted, 95);
    let snapshot = registry.snapshot();
    assert_eq!(snapshot.retries()[0].budget, Some(Budget { calls: 100, retries: 30, allowed_retries: 30 }));
}

/// Pipelines with the same id share one instance, hence one budget.
#[test]
fn pipelines_with_one_id_share_one_budget() {
    let clock = ManualClock::new();
    let (registry, _) = registry(&clock, |b| b);
    let make = || {
        Pipeline::builder(&registry, "catalog")
            .retry_with(|r| r.delay(ms(100)).budget_percent(20.0).budget_min_retries_per_second(1))
            .build::<String, &'static str>()
            .unwrap()
    };
    let (a, b) = (make(), make());
    for pipeline in [&a, &b] {
        let _ = pipeline.execute(|| Ok("x".to_owned()));
    }
    assert_eq!(registry.snapshot().retries().len(), 1);
    assert_eq!(registry.snapshot().retries()[0].budget.unwrap().calls, 2);
}

/// Dropping the future during the wait cancels it: no further attempt, no event, no clock move.
#[test]
fn dropping_the_async_call_during_the_wait_cancels_it() {
    let clock = ManualClock::new();
    let (registry, events) = registry(&clock, |b| b);
    let stock = Pipeline::builder(&registry, "inventory")
        .retry_with(|r| r.max_attempts(3).delay(Duration::from_secs(1)))
        .build::<u32, InventoryError>()
        .unwrap();
    let calls = AtomicU32::new(0);
    {
        let mut call = pin!(stock.execute_async(|| async {
            calls.fetch_add(1, Ordering::SeqCst);
            Err(InventoryError::Down)
        }));
        let mut cx = Context::from_waker(Waker::noop());
        assert!(call.as_mut().poll(&mut cx).is_pending(), "the first attempt failed and the wait started");
    }
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(clock.elapsed(), Duration::ZERO);
    assert_eq!(events.all().len(), 1, "only the Retrying event before the wait: {:?}", events.all());
    clock.advance(Duration::from_secs(5));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

/// The first attempt runs when the future is first polled, not when it is made.
#[test]
fn the_first_async_attempt_runs_at_the_first_poll() {
    let clock = ManualClock::new();
    let (registry, _) = registry(&clock, |b| b);
    let pipeline = Pipeline::builder(&registry, "lazy").retry().build::<u32, InventoryError>().unwrap();
    let calls = AtomicU32::new(0);
    let future = pipeline.execute_async(|| async {
        calls.fetch_add(1, Ordering::SeqCst);
        Ok(1)
    });
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    assert_eq!(block_on(future), Ok(1));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

/// built-in < registry defaults < named config < `_with` overrides < `retry_instance`, whatever
/// order the builder calls come in.
#[test]
fn config_with_and_instance_overrides_rank_as_attributes_do() {
    let clock = ManualClock::new();
    let (registry, _) = registry(&clock, |b| {
        b.retry_defaults(|r| r.delay(ms(50)))
            .retry("patient", |r| r.max_attempts(6).multiplier(3.0).max_delay(Duration::from_secs(30)))
            .retry_instance("pinned", |r| r.max_attempts(2))
    });
    Pipeline::builder(&registry, "loose")
        .retry_with(|r| r.max_attempts(4))
        .retry_config("patient")
        .build::<u32, InventoryError>()
        .unwrap();
    Pipeline::builder(&registry, "pinned")
        .retry_config("patient")
        .retry_with(|r| r.max_attempts(4).delay(ms(70)))
        .build::<u32, InventoryError>()
        .unwrap();
    let snapshot = registry.snapshot();
    let [loose, pinned] = snapshot.retries() else { panic!("two instances: {snapshot:?}") };
    let key = |s: &resilience4cata::RetrySnapshot| (s.config.max_attempts, s.config.delay, s.config.multiplier);
    assert_eq!(&*loose.instance, "loose");
    assert_eq!(key(loose), (4, ms(50), 3.0), "_with over named over defaults");
    assert_eq!(key(pinned), (2, ms(70), 3.0), "the instance override wins");
    assert_eq!(loose.config.max_delay, Duration::from_secs(30));
}

/// `_with` called twice chains: a key set twice keeps the later value.
#[test]
fn with_closures_chain() {
    let clock = ManualClock::new();
    let (registry, _) = registry(&clock, |b| b);
    Pipeline::builder(&registry, "twice")
        .retry_with(|r| r.max_attempts(4).delay(ms(10)))
        .retry_with(|r| r.max_attempts(5))
        .build::<u32, InventoryError>()
        .unwrap();
    let snapshot = registry.snapshot();
    let config = &snapshot.retries()[0].config;
    assert_eq!((config.max_attempts, config.delay), (5, ms(10)));
}

#[test]
fn unknown_named_config_is_reg_004_at_build() {
    let clock = ManualClock::new();
    let (registry, _) = registry(&clock, |b| b.retry("known", |r| r));
    let err = Pipeline::builder(&registry, "x").retry_config("external").build::<u32, InventoryError>().unwrap_err();
    assert_eq!(err.code(), "R4C-REG-004");
    assert!(err.to_string().starts_with("[R4C-REG-004] x:"), "{err}");
    assert!(err.message().contains("known"), "{err}");
    assert!(registry.snapshot().retries().is_empty(), "nothing was built");
}

#[test]
fn invalid_resolved_value_is_reg_003() {
    let clock = ManualClock::new();
    let (registry, _) = registry(&clock, |b| b);
    let err = Pipeline::builder(&registry, "slow")
        .retry_with(|r| r.delay(Duration::from_secs(20)).backoff(resilience4cata::Backoff::Fixed))
        .build::<u32, InventoryError>()
        .unwrap_err();
    assert_eq!(err.code(), "R4C-REG-003");
    assert_eq!(err.instance(), Some("slow"));
}

#[test]
fn one_id_two_configurations_is_reg_008() {
    let clock = ManualClock::new();
    let (registry, _) = registry(&clock, |b| b);
    Pipeline::builder(&registry, "prices").retry_with(|r| r.max_attempts(3)).build::<u32, InventoryError>().unwrap();
    let err = Pipeline::builder(&registry, "prices")
        .retry_with(|r| r.max_attempts(4))
        .build::<u32, InventoryError>()
        .unwrap_err();
    assert_eq!(err.code(), "R4C-REG-008");
    assert_eq!(err.instance(), Some("prices"));
}

fn open_breaker() -> std::io::Error {
    std::io::Error::from_rejection(Rejection::CallNotPermitted { instance: "inner".into() })
}

/// With `detect_rejections`, a nested open breaker's refusal is never retried, not even if
/// `retry_on` accepts it or a classifier says `Retry`.
#[test]
fn detected_nested_call_not_permitted_is_never_retried() {
    let clock = ManualClock::new();
    let (registry, events) = registry(&clock, |b| b);
    let patterns = Pipeline::builder(&registry, "outer")
        .retry()
        .build::<u32, std::io::Error>()
        .unwrap()
        .detect_rejections()
        .retry_on(|_| true);
    let classified = patterns.clone().classifier(|_| Verdict::Retry);
    for pipeline in [patterns, classified] {
        let mut calls = 0;
        let result = pipeline.execute(|| {
            calls += 1;
            Err(open_breaker())
        });
        assert!(result.unwrap_err().rejection().is_some_and(Rejection::is_call_not_permitted));
        assert_eq!(calls, 1);
    }
    assert_eq!(events.gave_up(), [(1, GiveUpReason::Refused), (1, GiveUpReason::Refused)]);
}

/// Without it, a retry-only pipeline accepts any `E` and cannot look inside: documented behaviour.
#[test]
fn undetected_nested_call_not_permitted_is_an_ordinary_error() {
    let clock = ManualClock::new();
    let (registry, events) = registry(&clock, |b| b);
    let pipeline = Pipeline::builder(&registry, "outer").retry().build::<u32, std::io::Error>().unwrap();
    let mut calls = 0;
    let _ = pipeline.execute(|| {
        calls += 1;
        Err(open_breaker())
    });
    assert_eq!(calls, 3);
    assert_eq!(events.gave_up(), [(3, GiveUpReason::MaxAttempts)]);
}

#[test]
fn classifier_retries_ok_values_and_maps_the_exhausted_one() {
    let clock = ManualClock::new();
    let (registry, events) = registry(&clock, |b| b.retry_defaults(|r| r.delay(ms(10))));
    let poll = Pipeline::builder(&registry, "poll")
        .retry()
        .build::<u32, String>()
        .unwrap()
        .classifier(|r| match r {
            Ok(0) => Verdict::Retry,
            Ok(_) => Verdict::Success,
            Err(_) => Verdict::Fail,
        })
        .on_exhausted_result(|n| Err(format!("still {n}")));
    let mut calls = 0;
    assert_eq!(
        poll.execute(|| {
            calls += 1;
            Ok(0)
        }),
        Err("still 0".to_owned())
    );
    assert_eq!(calls, 3);
    assert_eq!(poll.execute(|| Err("bad".to_owned())), Err("bad".to_owned()));
    assert_eq!(events.gave_up(), [(3, GiveUpReason::MaxAttempts), (1, GiveUpReason::ClassifierFailed)]);
}

/// A later `retry_on` replaces a classifier: the two cannot be combined.
#[test]
fn patterns_replace_a_classifier() {
    let clock = ManualClock::new();
    let (registry, _) = registry(&clock, |b| b.retry_defaults(|r| r.delay(Duration::ZERO)));
    let pipeline = Pipeline::builder(&registry, "p")
        .retry()
        .build::<u32, String>()
        .unwrap()
        .classifier(|_| Verdict::Retry)
        .retry_on(|e| e == "transient");
    let mut calls = 0;
    assert_eq!(
        pipeline.execute(|| {
            calls += 1;
            Ok(calls)
        }),
        Ok(1),
        "an Ok is accepted again"
    );
}

#[test]
fn disabled_retry_is_one_plain_attempt_without_events() {
    let clock = ManualClock::new();
    let (registry, events) = registry(&clock, |b| b);
    let pipeline =
        Pipeline::builder(&registry, "off").retry_with(|r| r.enabled(false)).build::<u32, InventoryError>().unwrap();
    let mut calls = 0;
    let _ = pipeline.execute(|| {
        calls += 1;
        Err(InventoryError::Down)
    });
    assert_eq!(calls, 1);
    assert!(events.all().is_empty());
}

#[test]
fn a_pipeline_without_policies_just_calls() {
    let clock = ManualClock::new();
    let (registry, _) = registry(&clock, |b| b);
    let plain = Pipeline::builder(&registry, "plain").build::<u32, InventoryError>().unwrap();
    assert_eq!(plain.execute(|| Err(InventoryError::Down)), Err(InventoryError::Down));
    assert_eq!(block_on(plain.execute_async(|| async { Ok(3) })), Ok(3));
    assert!(registry.snapshot().retries().is_empty());
}

#[test]
fn shutdown_interrupts_the_wait() {
    let clock = ManualClock::new();
    let (registry, events) = registry(&clock, |b| b);
    let pipeline = Pipeline::builder(&registry, "stop").retry().build::<u32, InventoryError>().unwrap();
    registry.shutdown();
    assert_eq!(pipeline.execute(|| Err(InventoryError::Down)), Err(InventoryError::Down));
    assert_eq!(block_on(pipeline.execute_async(|| async { Err(InventoryError::Down) })), Err(InventoryError::Down));
    assert_eq!(events.gave_up(), [(1, GiveUpReason::Interrupted), (1, GiveUpReason::Interrupted)]);
}

fn assert_send_sync_clone<P: Send + Sync + Clone + 'static>(_: &P) {}

/// `Send + Sync + Clone` for every `T` and `E`, even non-`Send` ones.
#[test]
fn a_pipeline_is_send_sync_and_clone_for_any_types() {
    let clock = ManualClock::new();
    let (registry, _) = registry(&clock, |b| b);
    let pipeline = Pipeline::builder(&registry, "rc").retry().build::<Rc<u8>, Rc<String>>().unwrap();
    assert_send_sync_clone(&pipeline);
    assert_eq!(*pipeline.execute(|| Ok(Rc::new(1))).unwrap(), 1);
}

/// One pipeline, many threads and tasks at once, sharing one budget.
#[test]
fn one_pipeline_serves_many_threads_and_tasks() {
    let clock = ManualClock::new();
    let (registry, _) = registry(&clock, |b| b);
    let pipeline = Pipeline::builder(&registry, "shared")
        .retry_with(|r| r.delay(Duration::ZERO).budget_percent(50.0))
        .build::<u32, InventoryError>()
        .unwrap();
    let attempts = Arc::new(AtomicU32::new(0));
    std::thread::scope(|s| {
        for _ in 0..4 {
            let (pipeline, attempts) = (pipeline.clone(), Arc::clone(&attempts));
            s.spawn(move || {
                for i in 0..500u32 {
                    let mut first = true;
                    let result = pipeline.execute(|| {
                        attempts.fetch_add(1, Ordering::Relaxed);
                        if std::mem::take(&mut first) { Err(InventoryError::Down) } else { Ok(i) }
                    });
                    assert!(result == Ok(i) || result == Err(InventoryError::Down));
                }
            });
        }
    });
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).build().unwrap();
    let tasks: Vec<_> = (0..64u32)
        .map(|i| {
            let pipeline = pipeline.clone();
            runtime.spawn(async move { pipeline.execute_async(|| async move { Ok::<_, InventoryError>(i) }).await })
        })
        .collect();
    for (i, task) in tasks.into_iter().enumerate() {
        assert_eq!(runtime.block_on(task).unwrap(), Ok(i as u32));
    }
    let budget = registry.snapshot().retries()[0].budget.unwrap();
    assert!(budget.calls <= 2064 && budget.calls > 0, "{budget:?}");
    assert!(attempts.load(Ordering::Relaxed) >= 2000);
}

/// Polling a cancelled-then-restarted call pattern: a second call after a drop starts afresh.
#[test]
fn a_new_call_after_a_cancelled_one_starts_from_the_first_attempt() {
    let clock = ManualClock::new();
    let (registry, events) = registry(&clock, |b| b);
    let pipeline =
        Pipeline::builder(&registry, "again").retry_with(|r| r.delay(ms(100))).build::<u32, InventoryError>().unwrap();
    {
        let mut call = pin!(pipeline.execute_async(|| async { Err(InventoryError::Down) }));
        assert!(matches!(call.as_mut().poll(&mut Context::from_waker(Waker::noop())), Poll::Pending));
    }
    assert_eq!(block_on(pipeline.execute_async(|| async { Err(InventoryError::Down) })), Err(InventoryError::Down));
    assert_eq!(events.gave_up(), [(3, GiveUpReason::MaxAttempts)]);
    assert_eq!(clock.elapsed(), ms(300));
}

#[resilient]
pub trait CatalogApi {
    #[bundle(testkit::bundles::seed_budget)]
    #[retry(name = "catalog")]
    fn product(&self, id: &str) -> Result<String, &'static str>;
}

struct DeadCatalog(AtomicU32);

impl CatalogApi for DeadCatalog {
    fn product(&self, _: &str) -> Result<String, &'static str> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Err("catalog down")
    }
}

/// A pipeline and an annotated method with the same name share one instance, hence one retry
/// budget: half the calls through each still give the seed's 130 attempts and `Budget {100, 30, 30}`.
#[test]
fn a_pipeline_and_an_annotated_method_share_a_retry_budget_by_name() {
    let clock = ManualClock::new();
    let (registry, events) = registry(&clock, |b| b);
    let catalog = ResilientCatalogApi::new(DeadCatalog(AtomicU32::new(0)), &registry).unwrap();
    let pipeline = catalog_pipeline(&registry);
    let mut pipeline_attempts = 0;
    for i in 0..100 {
        let result = if i % 2 == 0 {
            catalog.product("p-1")
        } else {
            pipeline.execute(|| catalog.delegate().product("p-1").inspect_err(|_| pipeline_attempts += 1))
        };
        assert_eq!(result, Err("catalog down"));
    }
    assert_eq!(catalog.delegate().0.load(Ordering::SeqCst), 130);
    assert!(pipeline_attempts >= 50, "the pipeline made its own calls: {pipeline_attempts}");
    let snapshot = registry.snapshot();
    assert_eq!(snapshot.retries().len(), 1, "one instance: {snapshot:?}");
    assert_eq!(snapshot.retries()[0].budget, Some(Budget { calls: 100, retries: 30, allowed_retries: 30 }));
    let exhausted = events.gave_up().iter().filter(|(_, r)| *r == GiveUpReason::BudgetExhausted).count();
    assert_eq!(exhausted, 95);
}

/// The name shared with an annotated method must resolve the same configuration.
#[test]
fn a_pipeline_that_disagrees_with_an_annotated_method_is_reg_008() {
    let clock = ManualClock::new();
    let (registry, _) = registry(&clock, |b| b);
    let _catalog = ResilientCatalogApi::new(DeadCatalog(AtomicU32::new(0)), &registry).unwrap();
    let err = Pipeline::builder(&registry, "catalog")
        .retry_with(|r| r.max_attempts(3).delay(ms(100)))
        .build::<String, &'static str>()
        .unwrap_err();
    assert_eq!((err.code(), err.instance()), ("R4C-REG-008", Some("catalog")));
}

/// What an event says, without the instance id (annotated and pipeline ids differ).
fn shape(events: &Events) -> Vec<(bool, u32, Option<Duration>, Option<GiveUpReason>)> {
    events
        .all()
        .into_iter()
        .map(|e| match e {
            RetryEvent::Retrying { attempt, delay, .. } => (true, attempt, Some(delay), None),
            RetryEvent::GaveUp { attempts, reason, .. } => (false, attempts, None, Some(reason)),
            other => panic!("unexpected {other:?}"),
        })
        .collect()
}

fn unready(r: &Result<u32, DownloadError>) -> Verdict {
    match r {
        Ok(0) => Verdict::Retry,
        Ok(_) => Verdict::Success,
        Err(DownloadError::State) => Verdict::Fail,
        Err(_) => Verdict::Retry,
    }
}

fn still_empty(_: u32) -> Result<u32, DownloadError> {
    Err(DownloadError::State)
}

#[resilient]
pub trait Files {
    #[retry(
        max_attempts = 5,
        delay = "500ms",
        max_delay = "2s",
        max_duration = "4s",
        retry_on = DownloadError::Io(_),
        abort_on = DownloadError::Io(std::io::ErrorKind::NotFound)
    )]
    fn download(&self, n: u32) -> Result<Vec<u8>, DownloadError>;

    #[retry(max_attempts = 4, delay = "10ms", classifier = unready, on_exhausted_result = still_empty)]
    fn ready(&self, n: u32) -> Result<u32, DownloadError>;
}

/// Answers the `n`-th scripted outcome per call: `script[call]`, the last one repeating.
struct Script(Vec<Result<u32, DownloadError>>, AtomicU32);

impl Script {
    fn next(&self) -> Result<u32, DownloadError> {
        let i = self.1.fetch_add(1, Ordering::SeqCst) as usize;
        self.0[i.min(self.0.len() - 1)]
    }
}

impl Files for Script {
    fn download(&self, _: u32) -> Result<Vec<u8>, DownloadError> {
        self.next().map(|n| vec![n as u8])
    }
    fn ready(&self, _: u32) -> Result<u32, DownloadError> {
        self.next()
    }
}

/// The same scripts through `#[resilient]` and through a pipeline configured the same way publish
/// the same events, at the same manual-clock times, and return the same results.
#[test]
fn a_pipeline_and_the_generated_code_behave_alike() {
    use std::io::ErrorKind::{ConnectionReset, NotFound};
    let io = DownloadError::Io;
    let scripts: Vec<Vec<Result<u32, DownloadError>>> = vec![
        vec![Err(io(ConnectionReset))],
        vec![Err(io(ConnectionReset)), Ok(1)],
        vec![Err(io(NotFound))],
        vec![Err(DownloadError::State)],
        vec![Ok(0), Ok(0), Ok(2)],
        vec![Ok(0)],
        vec![Ok(0), Err(DownloadError::State)],
        vec![Err(io(ConnectionReset)), Ok(0), Ok(5)],
    ];
    for script in scripts {
        let run = |pipeline: bool| {
            let clock = ManualClock::new();
            let (registry, events) = registry(&clock, |b| b);
            let backend = Script(script.clone(), AtomicU32::new(0));
            let results = if pipeline {
                let download = download_pipeline(&registry);
                let ready = Pipeline::builder(&registry, "files::ready")
                    .retry_with(|r| r.max_attempts(4).delay(ms(10)))
                    .build()
                    .unwrap()
                    .classifier(unready)
                    .on_exhausted_result(still_empty);
                let d = download.execute(|| backend.download(0));
                backend.1.store(0, Ordering::SeqCst);
                (d, ready.execute(|| backend.ready(0)))
            } else {
                let files = ResilientFiles::new(backend, &registry).unwrap();
                let d = files.download(0);
                files.delegate().1.store(0, Ordering::SeqCst);
                (d, files.ready(0))
            };
            (results, shape(&events), clock.elapsed())
        };
        assert_eq!(run(true), run(false), "script {script:?}");
    }
}
