//! `#[hedge]` through `#[resilient]` and the registry, on the manual clock with exact times: the
//! scenarios of Polly's hedging tests, with each attempt passing the inner policies on its own.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Waker};
use std::time::Duration;

use resilience4cata::hedge::{HedgeEvent, HedgeSnapshot};
use resilience4cata::testing::{self, ManualClock};
use resilience4cata::timeout::TimeoutEvent;
use resilience4cata::{Registry, RegistryBuilder, Rejection, ResilienceError, resilient};

use testkit::block_on;

const MS: Duration = Duration::from_millis(1);

#[derive(Clone, Debug, PartialEq, ResilienceError)]
pub enum SearchError {
    Down(u32),
    #[rejection]
    Rejected(Rejection),
}

#[resilient]
pub trait Search {
    #[hedge(delay = "100ms")]
    async fn find(&self, query: String) -> Result<u32, SearchError>;

    #[hedge(delay = "100ms", max_hedged_attempts = 2)]
    async fn wide(&self, query: &str) -> Result<u32, SearchError>;

    #[hedge(delay = "100ms")]
    #[circuit_breaker]
    async fn guarded(&self, query: &str) -> Result<u32, SearchError>;

    #[hedge(delay = "100ms")]
    #[timeout(duration = "250ms")]
    async fn bounded(&self, query: &str) -> Result<u32, SearchError>;

    #[hedge(delay = "100ms", max_hedged_attempts = 2)]
    #[bulkhead(max_concurrent_calls = 1)]
    async fn narrow(&self, query: &str) -> Result<u32, SearchError>;

    #[hedge(delay = "100ms", name = "shared-search")]
    fn send_form(&self, query: String) -> impl Future<Output = Result<u32, SearchError>> + Send;
}

/// One scripted attempt: it takes `ms` on the manual clock, then answers.
#[derive(Clone, Copy)]
enum Step {
    Ok(u64),
    Err(u64),
    Hang,
}

/// A backend whose attempts follow a script and record when they started, what they were
/// given, and whether they were dropped before they finished.
struct Backend {
    clock: ManualClock,
    script: Mutex<VecDeque<Step>>,
    log: Arc<Log>,
}

#[derive(Default)]
struct Log {
    starts: Mutex<Vec<Duration>>,
    queries: Mutex<Vec<String>>,
    cancelled: Mutex<Vec<u32>>,
}

/// Records its attempt as cancelled when dropped before `finish`.
struct DropGuard {
    attempt: u32,
    log: Arc<Log>,
    finished: bool,
}

impl Drop for DropGuard {
    fn drop(&mut self) {
        if !self.finished {
            self.log.cancelled.lock().unwrap().push(self.attempt);
        }
    }
}

impl Backend {
    fn new(clock: &ManualClock, script: &[Step]) -> Self {
        Backend { clock: clock.clone(), script: Mutex::new(script.iter().copied().collect()), log: Arc::default() }
    }

    /// One attempt: taken from the script when it starts, sleeping on the manual clock.
    fn attempt(&self, query: &str) -> impl Future<Output = Result<u32, SearchError>> + Send + use<> {
        let step = self.script.lock().unwrap().pop_front().expect("an attempt beyond the script");
        let attempt = {
            let mut starts = self.log.starts.lock().unwrap();
            starts.push(self.clock.elapsed());
            starts.len() as u32
        };
        self.log.queries.lock().unwrap().push(query.to_owned());
        let (clock, log) = (self.clock.clone(), Arc::clone(&self.log));
        async move {
            let mut guard = DropGuard { attempt, log, finished: false };
            let outcome = match step {
                Step::Ok(ms) => {
                    clock.sleep(Duration::from_millis(ms)).await;
                    Ok(attempt)
                }
                Step::Err(ms) => {
                    clock.sleep(Duration::from_millis(ms)).await;
                    Err(SearchError::Down(attempt))
                }
                Step::Hang => std::future::pending().await,
            };
            guard.finished = true;
            outcome
        }
    }

    fn starts(&self) -> Vec<Duration> {
        self.log.starts.lock().unwrap().clone()
    }

    fn cancelled(&self) -> Vec<u32> {
        let mut c = self.log.cancelled.lock().unwrap().clone();
        c.sort();
        c
    }
}

impl Search for Backend {
    async fn find(&self, query: String) -> Result<u32, SearchError> {
        self.attempt(&query).await
    }
    async fn wide(&self, query: &str) -> Result<u32, SearchError> {
        self.attempt(query).await
    }
    async fn guarded(&self, query: &str) -> Result<u32, SearchError> {
        self.attempt(query).await
    }
    async fn bounded(&self, query: &str) -> Result<u32, SearchError> {
        self.attempt(query).await
    }
    async fn narrow(&self, query: &str) -> Result<u32, SearchError> {
        self.attempt(query).await
    }
    fn send_form(&self, query: String) -> impl Future<Output = Result<u32, SearchError>> + Send {
        self.attempt(&query)
    }
}

struct Fixture {
    clock: ManualClock,
    registry: Registry,
    api: ResilientSearch<Backend>,
    events: Arc<Mutex<Vec<HedgeEvent>>>,
}

fn fixture(script: &[Step]) -> Fixture {
    fixture_with(script, |b| b)
}

fn fixture_with(script: &[Step], configure: impl FnOnce(RegistryBuilder) -> RegistryBuilder) -> Fixture {
    let clock = ManualClock::new();
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&events);
    let builder = testing::registry(&clock).listen(move |e: &HedgeEvent| sink.lock().unwrap().push(e.clone()));
    let registry = configure(builder).build().unwrap();
    let api = ResilientSearch::new(Backend::new(&clock, script), &registry).unwrap();
    Fixture { clock, registry, api, events }
}

impl Fixture {
    fn backend(&self) -> &Backend {
        self.api.delegate()
    }

    /// The wrapped `find("rust")`, run to its end.
    fn find(&self) -> Result<u32, SearchError> {
        block_on(self.api.find("rust".into()))
    }

    fn events(&self) -> Vec<HedgeEvent> {
        self.events.lock().unwrap().clone()
    }

    fn snapshot(&self, method: &str) -> HedgeSnapshot {
        let snapshot = self.registry.snapshot();
        snapshot.hedges().iter().find(|s| s.instance == id(method)).cloned().expect("a hedge instance")
    }
}

fn id(method: &str) -> Arc<str> {
    format!("{}::Search::{method}", module_path!()).into()
}

fn hedged(method: &str, attempt: u32) -> HedgeEvent {
    HedgeEvent::Hedged { instance: id(method), attempt }
}

fn finished(method: &str, attempts: u32, winner: Option<u32>) -> HedgeEvent {
    HedgeEvent::Finished { instance: id(method), attempts, winner }
}

#[test]
fn an_answer_within_the_delay_is_one_attempt_and_no_event() {
    let f = fixture(&[Step::Ok(40)]);
    assert_eq!(f.find(), Ok(1));
    assert_eq!(f.backend().starts(), [Duration::ZERO]);
    assert_eq!(f.clock.elapsed(), 40 * MS);
    assert!(f.events().is_empty());
    assert_eq!((f.snapshot("find").hedged_calls, f.snapshot("find").hedge_wins), (0, 0));
}

#[test]
fn a_slow_first_attempt_is_hedged_at_100ms_and_the_hedge_wins_at_its_own_finish() {
    let f = fixture(&[Step::Ok(500), Step::Ok(200)]);
    assert_eq!(f.find(), Ok(2));
    assert_eq!(f.backend().starts(), [Duration::ZERO, 100 * MS]);
    assert_eq!(f.clock.elapsed(), 300 * MS);
    assert_eq!(f.backend().cancelled(), [1], "the first attempt was dropped when the hedge won");
    assert_eq!(f.events(), [hedged("find", 2), finished("find", 2, Some(2))]);
    let s = f.snapshot("find");
    assert_eq!((s.hedged_calls, s.hedge_wins), (1, 1));
}

#[test]
fn each_attempt_gets_its_own_clone_of_an_owned_argument() {
    let f = fixture(&[Step::Ok(500), Step::Ok(200)]);
    assert_eq!(f.find(), Ok(2));
    assert_eq!(*f.backend().log.queries.lock().unwrap(), ["rust", "rust"]);
}

#[test]
fn a_first_attempt_failing_at_20ms_starts_the_second_at_20ms() {
    let f = fixture(&[Step::Err(20), Step::Ok(30)]);
    assert_eq!(f.find(), Ok(2));
    assert_eq!(f.backend().starts(), [Duration::ZERO, 20 * MS]);
    assert_eq!(f.clock.elapsed(), 50 * MS);
}

#[test]
fn when_all_fail_the_failure_that_came_last_is_returned() {
    // Attempt 2 fails at 150 ms, attempt 1 at 400 ms.
    let f = fixture(&[Step::Err(400), Step::Err(50)]);
    assert_eq!(f.find(), Err(SearchError::Down(1)));
    assert_eq!(f.clock.elapsed(), 400 * MS);
    assert_eq!(f.events(), [hedged("find", 2), finished("find", 2, None)]);
}

#[test]
fn two_hedged_attempts_start_at_0_100_and_200ms() {
    let f = fixture(&[Step::Hang, Step::Hang, Step::Ok(30)]);
    assert_eq!(block_on(f.api.wide("rust")), Ok(3));
    assert_eq!(f.backend().starts(), [Duration::ZERO, 100 * MS, 200 * MS]);
    assert_eq!(f.clock.elapsed(), 230 * MS);
    assert_eq!(f.backend().cancelled(), [1, 2]);
    assert_eq!(f.events(), [hedged("wide", 2), hedged("wide", 3), finished("wide", 3, Some(3))]);
}

#[test]
fn an_open_breaker_inside_refuses_one_attempt_and_nothing_is_hedged() {
    let f = fixture(&[]);
    let breaker = f.registry.circuit_breaker(&id("guarded")).unwrap();
    breaker.force_open();
    let err = block_on(f.api.guarded("rust")).unwrap_err();
    assert!(matches!(err.rejection(), Some(Rejection::CallNotPermitted { .. })), "{err:?}");
    assert!(f.backend().starts().is_empty(), "the refused attempt never reached the backend");
    assert_eq!(breaker.snapshot().not_permitted_calls, 1, "one attempt was refused, no second one");
    assert!(f.events().is_empty());
    assert_eq!(f.clock.elapsed(), Duration::ZERO);
}

#[test]
fn another_refusal_inside_is_a_failed_attempt_that_starts_the_next_at_once() {
    let f = fixture(&[Step::Ok(500)]);
    assert_eq!(block_on(f.api.narrow("rust")), Ok(1), "the first attempt keeps the only slot and answers");
    assert_eq!(f.backend().starts(), [Duration::ZERO], "attempts 2 and 3 were refused before the backend");
    assert_eq!(f.clock.elapsed(), 500 * MS);
    // Attempt 2 at 100 ms is refused (BulkheadFull), so attempt 3 starts at once, and is refused too.
    assert_eq!(f.events(), [hedged("narrow", 2), hedged("narrow", 3), finished("narrow", 3, Some(1))]);
}

#[test]
fn a_timeout_inside_cuts_each_attempt_on_its_own() {
    let timeouts = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&timeouts);
    let f = fixture_with(&[Step::Hang, Step::Hang], |b| {
        b.listen(move |e: &TimeoutEvent| sink.lock().unwrap().push(e.clone()))
    });
    let clock = f.clock.clone();
    let err = block_on(f.api.bounded("rust")).unwrap_err();
    assert!(matches!(err.rejection(), Some(Rejection::CallTimeout { .. })), "{err:?}");
    assert_eq!(f.backend().starts(), [Duration::ZERO, 100 * MS]);
    // Attempt 1 times out at 250 ms, attempt 2 at 350 ms: the last failure is the call's.
    assert_eq!(clock.elapsed(), 350 * MS);
    assert_eq!(timeouts.lock().unwrap().len(), 2);
    assert_eq!(f.backend().cancelled(), [1, 2], "each timed-out attempt was dropped");
}

#[test]
fn dropping_the_call_drops_every_attempt() {
    let f = fixture(&[Step::Hang, Step::Hang, Step::Hang]);
    {
        let mut call = pin!(f.api.wide("rust"));
        let mut cx = Context::from_waker(Waker::noop());
        while f.backend().starts().len() < 3 {
            assert!(call.as_mut().poll(&mut cx).is_pending());
        }
    }
    assert_eq!(f.backend().cancelled(), [1, 2, 3]);
    assert_eq!(f.events(), [hedged("wide", 2), hedged("wide", 3)], "no Finished for a dropped call");
    assert_eq!(f.clock.elapsed(), 200 * MS);
}

#[test]
fn a_send_method_stays_send_and_a_named_hedge_is_shared_by_name() {
    fn send<F: Future + Send>(f: F) -> F {
        f
    }
    let f = fixture(&[Step::Ok(500), Step::Ok(10)]);
    assert_eq!(block_on(send(f.api.send_form("rust".into()))), Ok(2));
    let snapshot = f.registry.snapshot();
    let shared = snapshot.hedges().iter().find(|s| &*s.instance == "shared-search").unwrap();
    assert_eq!((shared.hedged_calls, shared.hedge_wins), (1, 1));
}

#[test]
fn an_instance_override_reaches_the_hedge() {
    let f = fixture_with(&[Step::Hang, Step::Ok(10)], |b| {
        b.hedge_instance(id("find").to_string(), |h| h.delay(Duration::from_millis(30)))
    });
    assert_eq!(f.find(), Ok(2));
    assert_eq!(f.backend().starts(), [Duration::ZERO, 30 * MS]);
    assert_eq!(f.snapshot("find").config.delay, 30 * MS);
}

#[cfg(feature = "serde")]
#[test]
fn a_config_file_reaches_the_hedge_and_its_range_is_checked() {
    let clock = ManualClock::new();
    let toml = format!("[instances.\"{}\".hedge]\nmax_hedged_attempts = 9\n", id("find"));
    // The range is checked as the file is read (R4C-CFG-004, with the key's line), before any wrapper.
    let err = testing::registry(&clock).config_toml(&toml).build().unwrap_err();
    assert_eq!(err.code(), "R4C-CFG-004");
    assert!(err.to_string().contains("config:2:") && err.to_string().contains("max_hedged_attempts"), "{err}");
    let err = testing::registry(&clock).config_toml("[defaults.hedge]\ndelays = \"1s\"\n").build().unwrap_err();
    assert_eq!(err.code(), "R4C-CFG-002");
}

#[test]
fn a_subscriber_sees_hedge_events_as_any_event() {
    use resilience4cata::events::AnyEvent;
    let f = fixture(&[Step::Ok(500), Step::Ok(200)]);
    let mut events = f.registry.subscribe(8);
    assert_eq!(f.find(), Ok(2));
    let first = events.try_recv().expect("the Hedged event");
    assert_eq!(first, AnyEvent::Hedge(hedged("find", 2)));
    assert_eq!((first.policy(), first.instance()), ("hedge", &*id("find")));
    assert_eq!(events.try_recv(), Some(AnyEvent::Hedge(finished("find", 2, Some(2)))));
    assert_eq!(events.try_recv(), None);
}
