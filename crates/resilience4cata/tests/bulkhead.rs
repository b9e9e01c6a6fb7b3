//! The bulkhead through `#[resilient]` and the registry, on the manual clock.

use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Waker};
use std::time::Duration;

use resilience4cata::bulkhead::BulkheadEvent;
use resilience4cata::testing::{self, ManualClock};
use resilience4cata::{Registry, Rejection, ResilienceError, resilient};

const MS: Duration = Duration::from_millis(1);

#[derive(Debug, PartialEq, ResilienceError)]
pub enum JobError {
    Failed,
    #[rejection]
    Rejected(Rejection),
}

/// What a job does inside the bulkhead.
pub type Work<'a> = &'a (dyn Fn() -> Result<u32, JobError> + Sync);

#[resilient]
pub trait Jobs {
    #[bulkhead(max_concurrent_calls = 2)]
    fn run(&self, work: Work<'_>) -> Result<u32, JobError>;

    #[bulkhead(max_concurrent_calls = 1)]
    fn panicky(&self) -> Result<u32, JobError>;

    #[bulkhead(max_concurrent_calls = 1, max_wait = "10s")]
    async fn queued(&self, name: &'static str, hold: &tokio::sync::Notify) -> Result<&'static str, JobError>;

    #[retry(max_attempts = 2, delay = "100ms")]
    #[bulkhead(max_concurrent_calls = 1)]
    fn retried(&self, attempts: &AtomicU32) -> Result<u32, JobError>;

    #[timeout(duration = "1s")]
    #[bulkhead(max_concurrent_calls = 1)]
    async fn stuck(&self) -> Result<u32, JobError>;

    #[bulkhead(name = "shared", max_concurrent_calls = 1)]
    fn shared(&self) -> Result<u32, JobError>;
}

struct Backend {
    order: Mutex<Vec<&'static str>>,
}

impl Jobs for Backend {
    fn run(&self, work: Work<'_>) -> Result<u32, JobError> {
        work()
    }
    fn panicky(&self) -> Result<u32, JobError> {
        panic!("the job panicked")
    }
    async fn queued(&self, name: &'static str, hold: &tokio::sync::Notify) -> Result<&'static str, JobError> {
        self.order.lock().unwrap().push(name);
        hold.notified().await;
        Ok(name)
    }
    fn retried(&self, attempts: &AtomicU32) -> Result<u32, JobError> {
        if attempts.fetch_add(1, Ordering::SeqCst) == 0 { Err(JobError::Failed) } else { Ok(2) }
    }
    async fn stuck(&self) -> Result<u32, JobError> {
        std::future::pending().await
    }
    fn shared(&self) -> Result<u32, JobError> {
        Ok(3)
    }
}

fn id(method: &str) -> String {
    format!("{}::Jobs::{method}", module_path!())
}

fn jobs(registry: &Registry) -> ResilientJobs<Backend> {
    ResilientJobs::new(Backend { order: Mutex::new(Vec::new()) }, registry).unwrap()
}

fn is_full<T: std::fmt::Debug>(result: Result<T, JobError>) -> bool {
    matches!(result, Err(JobError::Rejected(Rejection::BulkheadFull { .. })))
}

fn in_flight(registry: &Registry, method: &str) -> (u32, u32, u32) {
    let s = registry.bulkhead(&id(method)).unwrap().snapshot();
    (s.in_flight, s.available, s.waiting)
}

#[test]
fn at_most_max_concurrent_calls_inside() {
    let registry = testing::registry(&ManualClock::new()).build().unwrap();
    let jobs = jobs(&registry);
    let third = || jobs.run(&|| Ok(3));
    let second = || {
        assert_eq!(in_flight(&registry, "run"), (2, 0, 0));
        assert!(is_full(third()));
        Ok(2)
    };
    assert_eq!(jobs.run(&|| jobs.run(&second)), Ok(2));
    assert_eq!(in_flight(&registry, "run"), (0, 2, 0));
    assert_eq!(jobs.run(&|| Err(JobError::Failed)), Err(JobError::Failed));
    assert_eq!(in_flight(&registry, "run"), (0, 2, 0), "an error gives the slot back too");
}

#[test]
fn the_slot_comes_back_when_the_method_panics() {
    let registry = testing::registry(&ManualClock::new()).build().unwrap();
    let jobs = jobs(&registry);
    assert!(std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| jobs.panicky())).is_err());
    assert_eq!(in_flight(&registry, "panicky"), (0, 1, 0));
}

/// On the manual clock a wait for something other than the clock ends at once (the waiters'
/// timers are the only pending waits, so they move the clock), so this one runs on the system
/// clock; nothing in it depends on how long anything takes.
#[tokio::test]
async fn async_waiters_enter_in_arrival_order() {
    let registry = Registry::builder().build().unwrap();
    let jobs = jobs(&registry);
    let hold = tokio::sync::Notify::new();
    let release = async {
        for _ in 0..3 {
            tokio::task::yield_now().await;
            hold.notify_one();
        }
    };
    let (a, b, c, ()) =
        tokio::join!(jobs.queued("a", &hold), jobs.queued("b", &hold), jobs.queued("c", &hold), release);
    assert_eq!((a, b, c), (Ok("a"), Ok("b"), Ok("c")));
    assert_eq!(*jobs.delegate().order.lock().unwrap(), ["a", "b", "c"]);
    assert_eq!(in_flight(&registry, "queued"), (0, 1, 0));
}

#[tokio::test]
async fn a_waiter_is_refused_at_its_max_wait() {
    let (clock, registry) = testkit::manual();
    let jobs = jobs(&registry);
    let hold = tokio::sync::Notify::new();
    let (first, second) = tokio::join!(jobs.queued("a", &hold), async {
        let refused = jobs.queued("b", &hold).await;
        hold.notify_one();
        refused
    });
    assert_eq!(first, Ok("a"));
    assert!(is_full(second));
    assert_eq!(clock.elapsed(), Duration::from_secs(10));
}

#[test]
fn dropping_a_call_inside_the_bulkhead_gives_the_slot_back() {
    let registry = testing::registry(&ManualClock::new()).build().unwrap();
    let jobs = jobs(&registry);
    let hold = tokio::sync::Notify::new();
    {
        let mut call = pin!(jobs.queued("a", &hold));
        assert!(call.as_mut().poll(&mut Context::from_waker(Waker::noop())).is_pending());
        assert_eq!(in_flight(&registry, "queued"), (1, 0, 0));
    }
    assert_eq!(in_flight(&registry, "queued"), (0, 1, 0));
}

#[test]
fn a_retry_waits_its_backoff_outside_the_bulkhead() {
    let clock = ManualClock::new();
    // Published just before the backoff: the slot must be free already.
    let (registry, seen) = testkit::probe_before_backoff(&clock, |r| in_flight(r, "retried"));
    let jobs = jobs(&registry);
    assert_eq!(jobs.retried(&AtomicU32::new(0)), Ok(2));
    assert_eq!(*seen.lock().unwrap(), [(0, 1, 0)]);
    assert_eq!(clock.elapsed(), 100 * MS);
}

#[tokio::test]
async fn a_timed_out_attempt_gives_its_slot_back() {
    let (clock, registry) = testkit::manual();
    let jobs = jobs(&registry);
    let outcome = jobs.stuck().await;
    assert!(matches!(outcome, Err(JobError::Rejected(Rejection::CallTimeout { .. }))), "{outcome:?}");
    assert_eq!(in_flight(&registry, "stuck"), (0, 1, 0));
    assert_eq!(clock.elapsed(), Duration::from_secs(1));
}

#[test]
fn shared_by_name_and_listed_with_events() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    let registry = testing::registry(&ManualClock::new())
        .listen(move |e: &BulkheadEvent| sink.lock().unwrap().push(e.clone()))
        .build()
        .unwrap();
    let jobs = jobs(&registry);
    let again = ResilientJobs::new(Backend { order: Mutex::new(Vec::new()) }, &registry).unwrap();
    assert_eq!(jobs.shared(), Ok(3));
    assert_eq!(again.shared(), Ok(3));
    let shared = registry.bulkhead("shared").unwrap();
    assert_eq!((shared.instance(), shared.snapshot().config.max_concurrent_calls), ("shared", 1));
    let instance: Arc<str> = "shared".into();
    let events: Vec<_> = seen.lock().unwrap().iter().filter(|e| e.instance() == "shared").cloned().collect();
    let one_call = [
        BulkheadEvent::Permitted { instance: instance.clone(), key: None },
        BulkheadEvent::Finished { instance, key: None },
    ];
    assert_eq!(events, [one_call.clone(), one_call].concat());
    let listed: Vec<_> = registry.snapshot().bulkheads().iter().map(|s| s.instance.to_string()).collect();
    assert_eq!(listed.len(), 6, "{listed:?}");

    let conflicting = testing::registry(&ManualClock::new()).bulkhead_instance("shared", |b| b.max_concurrent_calls(0));
    let e = ResilientJobs::new(Backend { order: Mutex::new(Vec::new()) }, &conflicting.build().unwrap()).err().unwrap();
    assert_eq!((e.code(), e.instance()), ("R4C-REG-003", Some("shared")));
}

/// SPEC §10, sync waits under the manual clock: a call nested on one thread that waits for its
/// own caller's bulkhead slot is refused at `max_wait` (the clock moves to its deadline once that
/// deadline has been the earliest pending one twice), where it used to hang: nothing else would
/// ever move the clock or free the slot.
#[test]
fn a_nested_call_waiting_for_its_own_callers_slot_is_refused_at_max_wait() {
    let clock = ManualClock::new();
    let registry = testing::registry(&clock).build().unwrap();
    let bulkhead = resilience4cata::Pipeline::builder(&registry, "nested")
        .bulkhead_with(|b| b.max_concurrent_calls(1).max_wait(250 * MS))
        .build::<u32, std::io::Error>()
        .unwrap();
    let inner = Mutex::new(None);
    let outer = bulkhead.execute(|| {
        let nested = bulkhead.execute(|| Ok(1));
        *inner.lock().unwrap() = Some(nested.map_err(|e| e.rejection().cloned()));
        Ok(2)
    });
    assert_eq!(outer.unwrap(), 2);
    let nested = inner.lock().unwrap().take().expect("the nested call returned");
    assert!(matches!(nested, Err(Some(Rejection::BulkheadFull { .. }))), "{nested:?}");
    assert_eq!(clock.elapsed(), 250 * MS, "refused at max_wait on the manual clock");
}

/// The other half of the rule: a waiter still gets a slot that a holder with an earlier deadline
/// frees. The holder's sync retry backoff (100 ms) is pending before the waiter's `max_wait`
/// (250 ms), so the clock moves to the backoff first, the holder finishes, and the slot reaches
/// the waiter then, not a refusal at 250 ms.
#[test]
fn a_waiter_gets_the_slot_a_holder_with_an_earlier_deadline_frees() {
    let clock = ManualClock::new();
    let registry = testing::registry(&clock).build().unwrap();
    let bulkhead = resilience4cata::Pipeline::builder(&registry, "shared-slot")
        .bulkhead_with(|b| b.max_concurrent_calls(1).max_wait(250 * MS))
        .build::<u32, std::io::Error>()
        .unwrap();
    let retry = resilience4cata::Pipeline::builder(&registry, "backoff")
        .retry_with(|r| r.max_attempts(2).delay(100 * MS))
        .build::<u32, std::io::Error>()
        .unwrap();
    let (holding, attempts) = (std::sync::Barrier::new(2), AtomicU32::new(0));
    std::thread::scope(|s| {
        let holder = s.spawn(|| {
            bulkhead.execute(|| {
                retry
                    .execute(|| {
                        if attempts.fetch_add(1, Ordering::SeqCst) == 0 {
                            holding.wait(); // the slot is held; the backoff starts next
                            return Err(std::io::Error::other("once"));
                        }
                        Ok(7)
                    })
                    .map_err(|e| std::io::Error::other(e.to_string()))
            })
        });
        holding.wait();
        let waited = bulkhead.execute(|| Ok(clock.elapsed().as_millis() as u32));
        assert_eq!(holder.join().unwrap().unwrap(), 7);
        // The backoff is 100 ms with the testing registry's fixed jitter: before the 250 ms.
        let at = waited.expect("the slot reached the waiter before its max_wait");
        assert!((50..250).contains(&at), "the slot came when the holder's backoff ended: {at} ms");
    });
}
