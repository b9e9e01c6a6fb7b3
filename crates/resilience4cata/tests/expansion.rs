//! The mechanics of the code `#[resilient]` generates, run on the manual clock: the retry loop,
//! patterns and predicates, the classifier, the built-in refusal to retry an open breaker, trait-level
//! attributes under method overrides, instance ids, and the sync, `async fn` and `impl Future` forms.

use std::collections::VecDeque;
use std::future::Future;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use resilience4cata::testing::{self, ManualClock};
use resilience4cata::{GiveUpReason, Registry, Rejection, ResilienceError, RetryEvent, Verdict, resilient};
use testkit::{Recorder, poll_once};

#[derive(Clone, Debug, PartialEq, ResilienceError)]
pub enum StockError {
    Unavailable,
    Invalid,
    Io(u16),
    #[rejection]
    Rejected(Rejection),
}

fn is_invalid(e: &StockError) -> bool {
    matches!(e, StockError::Invalid)
}

fn is_io(e: &StockError) -> bool {
    matches!(e, StockError::Io(_))
}

/// Units below 10 are "not yet restocked": retried, and reported as `Unavailable` at the end.
fn restocked(result: &Result<u32, StockError>) -> Verdict {
    match result {
        Ok(units) if *units < 10 => Verdict::Retry,
        Ok(_) => Verdict::Success,
        Err(StockError::Invalid) => Verdict::Fail,
        Err(_) => Verdict::Retry,
    }
}

fn still_empty(_units: u32) -> Result<u32, StockError> {
    Err(StockError::Unavailable)
}

#[resilient]
#[retry(max_attempts = 2, delay = "100ms", backoff = Fixed)]
pub trait Inventory {
    /// Trait-level retry with the method's override of `max_attempts` and `backoff`.
    #[retry(max_attempts = 4, backoff = Exponential)]
    fn stock(&self, sku: &str) -> Result<u32, StockError>;

    /// Trait-level retry as is.
    fn reserve(&self, sku: &str, units: u32) -> Result<(), StockError>;

    #[retry(max_attempts = 5, retry_on = StockError::Unavailable | StockError::Io(_), abort_on = StockError::Io(500))]
    fn patterns(&self) -> Result<u32, StockError>;

    #[retry(max_attempts = 5, retry_on_if = is_io, abort_on_if = is_invalid)]
    fn predicates(&self) -> Result<u32, StockError>;

    #[retry(max_attempts = 3, classifier = restocked)]
    fn classified(&self) -> Result<u32, StockError>;

    #[retry(max_attempts = 3, classifier = restocked, on_exhausted_result = still_empty)]
    fn classified_mapped(&self) -> Result<u32, StockError>;

    #[retry(enabled = false)]
    fn disabled(&self) -> Result<u32, StockError>;

    #[retry(name = "shared-stock")]
    fn named(&self, order: String) -> Result<String, StockError>;
}

/// A backend that plays back scripted results and counts calls.
#[derive(Default)]
struct Scripted {
    calls: AtomicU32,
    script: Mutex<VecDeque<Result<u32, StockError>>>,
    orders: Mutex<Vec<String>>,
}

impl Scripted {
    fn new(script: impl IntoIterator<Item = Result<u32, StockError>>) -> Self {
        Scripted { script: Mutex::new(script.into_iter().collect()), ..Scripted::default() }
    }

    fn next(&self) -> Result<u32, StockError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.script.lock().unwrap().pop_front().expect("script exhausted")
    }

    fn calls(&self) -> u32 {
        self.calls.load(Ordering::SeqCst)
    }
}

impl Inventory for Scripted {
    fn stock(&self, _sku: &str) -> Result<u32, StockError> {
        self.next()
    }
    fn reserve(&self, _sku: &str, _units: u32) -> Result<(), StockError> {
        self.next().map(drop)
    }
    testkit::same_body! { fn(&self) -> Result<u32, StockError> { self.next() }
    for patterns predicates classified classified_mapped disabled }
    fn named(&self, order: String) -> Result<String, StockError> {
        self.orders.lock().unwrap().push(order.clone());
        self.next().map(|_| order)
    }
}

/// A registry on a manual clock without jitter, recording every retry event.
fn registry(clock: &ManualClock) -> (Registry, Recorder<RetryEvent>) {
    let events = Recorder::default();
    (events.on(testkit::no_jitter(clock)).build().unwrap(), events)
}

fn wrap(
    script: impl IntoIterator<Item = Result<u32, StockError>>,
) -> (ResilientInventory<Scripted>, ManualClock, Recorder<RetryEvent>) {
    let clock = ManualClock::new();
    let (registry, events) = registry(&clock);
    (ResilientInventory::new(Scripted::new(script), &registry).unwrap(), clock, events)
}

use StockError::*;

#[test]
fn the_loop_retries_until_success_and_the_method_override_wins_key_by_key() {
    let (inventory, clock, events) = wrap([Err(Unavailable), Err(Unavailable), Err(Unavailable), Ok(7)]);
    assert_eq!(inventory.stock("sku-1"), Ok(7));
    assert_eq!(inventory.delegate().calls(), 4, "method-level max_attempts = 4 beats the trait's 2");
    // Exponential (method) from the trait's 100 ms delay: 100 + 200 + 400.
    assert_eq!(clock.elapsed(), Duration::from_millis(700));
    assert!(events.gave_up().is_empty());
}

#[test]
fn trait_level_attribute_applies_to_unannotated_methods() {
    let (inventory, clock, events) = wrap([Err(Unavailable), Err(Invalid)]);
    assert_eq!(inventory.reserve("sku-1", 2), Err(Invalid), "the last error comes back unchanged");
    assert_eq!(inventory.delegate().calls(), 2);
    assert_eq!(clock.elapsed(), Duration::from_millis(100), "trait-level Fixed backoff");
    assert_eq!(events.gave_up(), vec![(2, GiveUpReason::MaxAttempts)]);
}

#[test]
fn retry_on_pattern_limits_what_is_retried_and_abort_on_wins() {
    let (inventory, _, events) = wrap([Err(Io(503)), Err(Unavailable), Err(Invalid)]);
    assert_eq!(inventory.patterns(), Err(Invalid), "outside retry_on: not retried");
    assert_eq!(inventory.delegate().calls(), 3);

    let (inventory, _, _) = wrap([Err(Io(503)), Err(Io(500))]);
    assert_eq!(inventory.patterns(), Err(Io(500)), "in retry_on and in abort_on: abort_on wins");
    assert_eq!(inventory.delegate().calls(), 2);
    assert_eq!(events.gave_up(), vec![(3, GiveUpReason::NotRetryable)]);
}

#[test]
fn predicates_decide_like_patterns() {
    let (inventory, _, _) = wrap([Err(Io(1)), Err(Io(2)), Ok(3)]);
    assert_eq!(inventory.predicates(), Ok(3));
    assert_eq!(inventory.delegate().calls(), 3);

    let (inventory, _, _) = wrap([Err(Io(1)), Err(Unavailable)]);
    assert_eq!(inventory.predicates(), Err(Unavailable), "retry_on_if says no");
    assert_eq!(inventory.delegate().calls(), 2);

    let (inventory, _, _) = wrap([Err(Invalid)]);
    assert_eq!(inventory.predicates(), Err(Invalid), "abort_on_if says stop");
    assert_eq!(inventory.delegate().calls(), 1);
}

/// A local refusal the patterns leave out is not retried either, and gives up as refused, not as
/// a failure; a timed-out attempt the patterns leave out is a failure (`NotRetryable`).
#[test]
fn a_refusal_outside_retry_on_gives_up_as_refused() {
    let full = || Rejected(Rejection::BulkheadFull { instance: "inner".into() });
    let (inventory, _, events) = wrap([Err(full())]);
    assert_eq!(inventory.patterns(), Err(full()), "outside retry_on");
    assert_eq!(events.gave_up(), vec![(1, GiveUpReason::Refused)]);

    let timed_out = || Rejected(Rejection::CallTimeout { instance: "inner".into(), timeout: Duration::from_secs(1) });
    let (inventory, _, events) = wrap([Err(timed_out())]);
    assert_eq!(inventory.patterns(), Err(timed_out()));
    assert_eq!(events.gave_up(), vec![(1, GiveUpReason::NotRetryable)]);
}

#[test]
fn an_open_breaker_nested_in_the_error_is_never_retried() {
    let refused = || Rejected(Rejection::CallNotPermitted { instance: "inner".into() });
    let (inventory, _, events) = wrap([Err(refused())]);
    assert_eq!(inventory.stock("sku-1"), Err(refused()));
    assert_eq!(inventory.delegate().calls(), 1, "retry_on matches everything, yet CallNotPermitted stops it");
    assert_eq!(events.gave_up(), vec![(1, GiveUpReason::Refused)]);

    let full = || Rejected(Rejection::BulkheadFull { instance: "inner".into() });
    let (inventory, _, _) = wrap([Err(full()), Ok(1)]);
    assert_eq!(inventory.stock("sku-1"), Ok(1), "other rejections are retried");
}

#[test]
fn classifier_retries_rejected_ok_and_fail_gives_up_at_once() {
    let (inventory, _, _) = wrap([Ok(1), Err(Unavailable), Ok(12)]);
    assert_eq!(inventory.classified(), Ok(12));
    assert_eq!(inventory.delegate().calls(), 3);

    let (inventory, _, events) = wrap([Ok(1), Ok(2), Ok(3)]);
    assert_eq!(inventory.classified(), Ok(3), "without on_exhausted_result the last Ok is returned as is");
    assert_eq!(events.gave_up(), vec![(3, GiveUpReason::MaxAttempts)]);

    let (inventory, _, events) = wrap([Ok(1), Err(Invalid)]);
    assert_eq!(inventory.classified(), Err(Invalid));
    assert_eq!(events.gave_up(), vec![(2, GiveUpReason::ClassifierFailed)]);

    let refused = Rejected(Rejection::CallNotPermitted { instance: "inner".into() });
    let (inventory, _, events) = wrap([Err(refused.clone())]);
    assert_eq!(inventory.classified(), Err(refused), "a classifier's Retry does not retry an open breaker");
    assert_eq!(events.gave_up(), vec![(1, GiveUpReason::Refused)]);
}

#[test]
fn on_exhausted_result_maps_the_last_rejected_ok() {
    let (inventory, _, _) = wrap([Ok(1), Ok(2), Ok(3)]);
    assert_eq!(inventory.classified_mapped(), Err(Unavailable));
    assert_eq!(inventory.delegate().calls(), 3);

    let (inventory, _, _) = wrap([Ok(1), Ok(20)]);
    assert_eq!(inventory.classified_mapped(), Ok(20), "an accepted Ok is not mapped");
}

#[test]
fn enabled_false_makes_one_plain_attempt() {
    let (inventory, clock, events) = wrap([Err(Unavailable)]);
    assert_eq!(inventory.disabled(), Err(Unavailable));
    assert_eq!(inventory.delegate().calls(), 1);
    assert_eq!(clock.elapsed(), Duration::ZERO);
    assert!(events.is_empty());
}

#[test]
fn owned_arguments_are_cloned_for_each_attempt() {
    let (inventory, _, _) = wrap([Err(Unavailable), Ok(0)]);
    assert_eq!(inventory.named("order-1".to_owned()), Ok("order-1".to_owned()));
    assert_eq!(*inventory.delegate().orders.lock().unwrap(), ["order-1", "order-1"]);
}

#[test]
fn instance_ids_are_module_trait_method_or_the_name() {
    let (_, _, _) = wrap([]);
    let clock = ManualClock::new();
    let (registry, _) = registry(&clock);
    let _inventory = ResilientInventory::new(Scripted::default(), &registry).unwrap();
    let ids: Vec<String> = registry.snapshot().retries().iter().map(|s| s.instance.to_string()).collect();
    for method in ["stock", "reserve", "patterns", "predicates", "classified", "classified_mapped", "disabled"] {
        assert!(ids.contains(&format!("expansion::Inventory::{method}")), "{method} missing from {ids:?}");
    }
    assert!(ids.contains(&"shared-stock".to_owned()));
    let stock =
        registry.snapshot().retries().iter().find(|s| &*s.instance == "expansion::Inventory::stock").cloned().unwrap();
    assert_eq!((stock.config.max_attempts, stock.config.delay), (4, Duration::from_millis(100)));
}

#[test]
fn wrapping_twice_on_one_registry_shares_the_instances() {
    let clock = ManualClock::new();
    let (registry, _) = registry(&clock);
    let _a = ResilientInventory::new(Scripted::default(), &registry).unwrap();
    let _b = ResilientInventory::new(Scripted::default(), &registry).unwrap();
    assert_eq!(registry.snapshot().retries().len(), 8);
}

#[test]
fn an_unknown_named_config_fails_when_wrapping() {
    #[resilient]
    #[allow(dead_code)] // only wrapped, never called
    trait Named {
        #[retry(config = "missing")]
        fn get(&self) -> Result<u32, StockError>;
    }
    #[derive(Debug)]
    struct Backend;
    impl Named for Backend {
        fn get(&self) -> Result<u32, StockError> {
            Ok(1)
        }
    }
    let err = ResilientNamed::new(Backend, &Registry::builder().build().unwrap()).unwrap_err();
    assert_eq!(err.code(), "R4C-REG-004");
}

/// A plain error type (no `ResilienceError`) works with a retry-only method.
#[resilient]
trait Plain {
    #[retry(max_attempts = 3, delay = "0")]
    fn get(&self) -> Result<u32, String>;

    #[retry(max_attempts = 3, delay = "0")]
    fn read(&self) -> std::io::Result<u32>;
}

struct PlainBackend(AtomicU32);

impl Plain for PlainBackend {
    fn get(&self) -> Result<u32, String> {
        match self.0.fetch_add(1, Ordering::SeqCst) {
            0 | 1 => Err("busy".to_owned()),
            n => Ok(n),
        }
    }
    fn read(&self) -> std::io::Result<u32> {
        match self.0.fetch_add(1, Ordering::SeqCst) {
            0 => Err(std::io::Error::from_rejection(Rejection::CallNotPermitted { instance: "inner".into() })),
            n => Ok(n),
        }
    }
}

#[test]
fn a_plain_error_type_is_retried_and_io_results_find_nested_rejections() {
    let registry = testing::registry(&ManualClock::new()).build().unwrap();
    let plain = ResilientPlain::new(PlainBackend(AtomicU32::new(0)), &registry).unwrap();
    assert_eq!(plain.get(), Ok(2));

    let plain = ResilientPlain::new(PlainBackend(AtomicU32::new(0)), &registry).unwrap();
    let err = plain.read().unwrap_err();
    assert!(
        err.rejection().is_some_and(Rejection::is_call_not_permitted),
        "io::Error carries the refusal, not retried"
    );
    assert_eq!(plain.delegate().0.load(Ordering::SeqCst), 1);
}

#[resilient]
pub trait AsyncInventory {
    #[retry(max_attempts = 3, delay = "50ms", backoff = Fixed)]
    async fn stock(&self, sku: &str) -> Result<u32, StockError>;

    #[retry(max_attempts = 3, delay = "50ms", backoff = Fixed, retry_on = StockError::Unavailable)]
    fn reserve(&self, sku: &str, units: u32) -> impl Future<Output = Result<u32, StockError>> + Send;
}

impl AsyncInventory for Scripted {
    async fn stock(&self, _sku: &str) -> Result<u32, StockError> {
        self.next()
    }
    fn reserve(&self, _sku: &str, units: u32) -> impl Future<Output = Result<u32, StockError>> + Send {
        let result = self.next().map(|n| n + units);
        async move { result }
    }
}

fn assert_send<T: Send>(t: T) -> T {
    t
}

#[tokio::test(flavor = "current_thread")]
async fn async_forms_retry_on_the_manual_clock() {
    let clock = ManualClock::new();
    let (registry, events) = registry(&clock);
    let inventory =
        ResilientAsyncInventory::new(Scripted::new([Err(Unavailable), Err(Unavailable), Ok(5)]), &registry).unwrap();
    assert_eq!(inventory.stock("sku-1").await, Ok(5));
    assert_eq!(clock.elapsed(), Duration::from_millis(100));

    let inventory = ResilientAsyncInventory::new(Scripted::new([Err(Unavailable), Err(Invalid)]), &registry).unwrap();
    assert_eq!(assert_send(inventory.reserve("sku-1", 2)).await, Err(Invalid));
    assert_eq!(inventory.delegate().calls(), 2);
    assert_eq!(events.gave_up(), vec![(2, GiveUpReason::NotRetryable)]);
}

#[tokio::test(flavor = "current_thread")]
async fn a_dropped_future_starts_no_further_attempt() {
    let clock = ManualClock::new();
    let (registry, _) = registry(&clock);
    let inventory = ResilientAsyncInventory::new(Scripted::new([Err(Unavailable), Ok(1)]), &registry).unwrap();
    let mut call = Box::pin(inventory.stock("sku-1"));
    // Poll once: the first attempt runs, then the retry waits; dropping the future ends the call.
    assert!(poll_once(call.as_mut()).is_none());
    drop(call);
    assert_eq!(inventory.delegate().calls(), 1);
}
