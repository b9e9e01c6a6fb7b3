//! The class style with async methods (`async fn` and `fn … -> impl Future`) on the manual clock:
//! the seeds' timelines, timeouts, hedges, adaptive limits, `Send`-ness kept both ways, and a
//! trait impl of a `#[resilient]` trait whose futures must be `Send`.

use std::cell::Cell;
use std::future::Future;
use std::marker::PhantomData;
use std::rc::Rc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use resilience4cata::testing::ManualClock;
use resilience4cata::{Registry, Rejection, ResilienceError, resilient};
use testkit::block_on;

const MS: Duration = Duration::from_millis(1);

#[derive(Debug, PartialEq, ResilienceError)]
pub enum FetchError {
    Unavailable,
    #[rejection]
    Rejected(Rejection),
}

/// Whether the type of an expression is `Send`, decided where the type is concrete: the
/// inherent method (for `Send` types) wins over the trait's.
struct SendCheck<T>(PhantomData<T>);
trait NotSend {
    fn is_send(&self) -> bool {
        false
    }
}
impl<T> NotSend for SendCheck<T> {}
impl<T: Send> SendCheck<T> {
    fn is_send(&self) -> bool {
        true
    }
}
fn check_of<T>(_: &T) -> SendCheck<T> {
    SendCheck(PhantomData)
}

fn assert_send<T: Send>(value: T) -> T {
    value
}

struct Client {
    clock: ManualClock,
    calls: AtomicU32,
    starts: Mutex<Vec<Duration>>,
    policies: ClientPolicies,
}

#[resilient(policies = policies)]
impl Client {
    fn new(registry: &Registry, clock: &ManualClock) -> Self {
        let policies = ClientPolicies::new(registry).unwrap();
        Client { clock: clock.clone(), calls: AtomicU32::new(0), starts: Mutex::new(Vec::new()), policies }
    }

    /// Fails twice, then answers: 100 + 200 ms of backoff.
    #[retry(max_attempts = 3, delay = "100ms")]
    async fn stock(&self, sku: &str) -> Result<u32, FetchError> {
        tokio::task::yield_now().await;
        match self.calls.fetch_add(1, Ordering::SeqCst) {
            0 | 1 => Err(FetchError::Unavailable),
            _ => Ok(sku.len() as u32),
        }
    }

    /// The same in the `impl Future` form (edition 2024 captures `&self`).
    #[retry(max_attempts = 3, delay = "100ms")]
    fn stock_future(&self, sku: &str) -> impl Future<Output = Result<u32, FetchError>> + Send {
        let len = sku.len() as u32;
        async move {
            match self.calls.fetch_add(1, Ordering::SeqCst) {
                0 | 1 => Err(FetchError::Unavailable),
                _ => Ok(len),
            }
        }
    }

    /// Each attempt takes 2 s; the timeout bounds each to 1 s.
    #[retry(max_attempts = 2, delay = "500ms")]
    #[timeout(duration = "1s")]
    async fn slow(&self) -> Result<u32, FetchError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.clock.sleep(Duration::from_secs(2)).await;
        Ok(1)
    }

    /// Attempt 1 takes 500 ms, attempt 2 takes 50 ms: the hedge started at 100 ms wins at 150 ms.
    #[hedge(delay = "100ms")]
    async fn search(&self, query: String) -> Result<String, FetchError> {
        let n = {
            let mut starts = self.starts.lock().unwrap();
            starts.push(self.clock.elapsed());
            starts.len()
        };
        self.clock.sleep(if n == 1 { 500 * MS } else { 50 * MS }).await;
        Ok(format!("{query}#{n}"))
    }

    /// Calls `stock` (its own retry) inside its own breaker.
    #[circuit_breaker(minimum_calls = 100)]
    async fn reserve(&self, sku: &str) -> Result<u32, FetchError> {
        self.stock(sku).await
    }

    #[adaptive_limit(initial_limit = 1, max_limit = 1)]
    async fn limited(&self) -> Result<u32, FetchError> {
        self.clock.sleep(10 * MS).await;
        Ok(1)
    }
}

fn client() -> (ManualClock, Registry, Client) {
    let clock = ManualClock::new();
    let registry = testkit::no_jitter(&clock).build().unwrap();
    let client = Client::new(&registry, &clock);
    (clock, registry, client)
}

#[test]
fn async_fn_and_impl_future_both_wait_100_then_200_ms_before_the_third_attempt() {
    let (clock, _, first) = client();
    assert_eq!(block_on(first.stock("abc")), Ok(3));
    let (later, _, second) = client();
    assert_eq!(block_on(second.stock_future("abcd")), Ok(4));
    for (clock, client) in [(clock, first), (later, second)] {
        assert_eq!(client.calls.load(Ordering::SeqCst), 3);
        assert_eq!(clock.elapsed(), 300 * MS);
    }
}

#[test]
fn each_attempt_gets_its_own_timeout() {
    let (clock, _, client) = client();
    let err = block_on(client.slow()).unwrap_err();
    assert!(matches!(err, FetchError::Rejected(Rejection::CallTimeout { .. })), "{err:?}");
    assert_eq!(client.calls.load(Ordering::SeqCst), 2);
    assert_eq!(clock.elapsed(), 2500 * MS, "1 s, 500 ms of backoff, 1 s");
}

#[test]
fn a_slow_first_attempt_is_hedged_at_100ms_and_the_hedge_wins_at_150ms() {
    let (clock, registry, client) = client();
    assert_eq!(block_on(client.search("rust".into())), Ok("rust#2".to_owned()));
    assert_eq!(*client.starts.lock().unwrap(), [Duration::ZERO, 100 * MS]);
    assert_eq!(clock.elapsed(), 150 * MS);
    let hedges = registry.snapshot();
    let hedge = hedges.hedges().iter().find(|h| h.instance.ends_with("::Client::search")).unwrap();
    assert_eq!((hedge.hedged_calls, hedge.hedge_wins), (1, 1));
}

#[test]
fn an_async_self_call_goes_through_both_sets_of_policies() {
    let (clock, registry, client) = client();
    assert_eq!(block_on(client.reserve("ab")), Ok(2));
    assert_eq!(client.calls.load(Ordering::SeqCst), 3, "`stock`'s retry ran inside `reserve`'s breaker");
    assert_eq!(clock.elapsed(), 300 * MS);
    let breaker = registry.circuit_breaker(&format!("{}::Client::reserve", module_path!())).unwrap().snapshot();
    assert_eq!((breaker.buffered_calls, breaker.failed_calls), (1, 0));
}

#[test]
fn the_adaptive_limit_refuses_a_second_call_in_flight() {
    let (_, _, client) = client();
    let (a, b) = block_on(async { futures_join(client.limited(), client.limited()).await });
    assert_eq!(a, Ok(1));
    assert!(matches!(b, Err(FetchError::Rejected(Rejection::LimitExceeded { .. }))), "{b:?}");
}

/// Polls both futures to completion, side by side, in one task.
async fn futures_join<A: Future, B: Future>(a: A, b: B) -> (A::Output, B::Output) {
    tokio::join!(a, b)
}

#[test]
fn an_async_method_is_send_when_its_body_is() {
    let (clock, _, client) = client();
    let future = assert_send(client.stock("abc")); // compile-time: `Send`
    assert_eq!(block_on(future), Ok(3));
    assert!(check_of(&client.stock_future("a")).is_send());
    assert_eq!(clock.elapsed(), 300 * MS);
}

// --- A body that is not `Send` (an `Rc` across an await): the method's future is not either,
// and still runs (the `?Send` of the trait style needs no flag here). ---

struct Local {
    hits: Rc<Cell<u32>>,
    policies: LocalPolicies,
}

#[resilient(policies = policies, vis = pub(crate))]
impl Local {
    #[retry(max_attempts = 2, delay = "0")]
    async fn hit(&self) -> Result<u32, FetchError> {
        let hits = Rc::clone(&self.hits);
        tokio::task::yield_now().await;
        hits.set(hits.get() + 1);
        if hits.get() < 2 { Err(FetchError::Unavailable) } else { Ok(hits.get()) }
    }
}

#[test]
fn an_async_method_whose_body_is_not_send_gives_a_future_that_is_not_send() {
    let registry = Registry::builder().build().unwrap();
    let local = Local { hits: Rc::new(Cell::new(0)), policies: LocalPolicies::new(&registry).unwrap() };
    let future = local.hit();
    assert!(!check_of(&future).is_send());
    assert_eq!(block_on(future), Ok(2));
    assert!(check_of(&client().2.stock("a")).is_send(), "the check tells the two apart");
}

// --- A trait impl of a `#[resilient]` trait, whose async fns are `Send` futures. ---

#[resilient]
pub trait Store {
    async fn load(&self, key: &str) -> Result<String, FetchError>;
}

struct Db {
    calls: AtomicU32,
    policies: DbStorePolicies,
}

#[resilient(policies = policies)]
impl Store for Db {
    #[retry(max_attempts = 2, delay = "250ms")]
    async fn load(&self, key: &str) -> Result<String, FetchError> {
        tokio::task::yield_now().await;
        if self.calls.fetch_add(1, Ordering::SeqCst) == 0 { Err(FetchError::Unavailable) } else { Ok(key.into()) }
    }
}

/// Knows only the trait: its futures are `Send`, so a generic caller can spawn them.
async fn spawn_load(store: std::sync::Arc<impl Store + Send + Sync + 'static>) -> Result<String, FetchError> {
    tokio::spawn(async move { store.load("k").await }).await.expect("the task ran")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trait_impl_keeps_the_traits_send_futures_and_protects_them() {
    let clock = ManualClock::new();
    let registry = testkit::no_jitter(&clock).build().unwrap();
    let db = std::sync::Arc::new(Db { calls: AtomicU32::new(0), policies: DbStorePolicies::new(&registry).unwrap() });
    assert_eq!(spawn_load(std::sync::Arc::clone(&db)).await, Ok("k".to_owned()));
    assert_eq!(db.calls.load(Ordering::SeqCst), 2);
    assert_eq!(clock.elapsed(), 250 * MS);
    assert_eq!(db.policies.ids().load.retry(), Some(format!("{}::Db::Store::load", module_path!()).as_str()));
}
