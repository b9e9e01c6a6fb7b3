//! `#[fallback]` through the public API, on the manual clock: once on the final failure, with the
//! attempt count (a refused attempt included), filtered by `apply_on` / `skip_on`, called through
//! the wrapper (so its own policies apply), sync and async, with events.
#![deny(warnings)] // the generated code must not warn
#![allow(clippy::needless_lifetimes)] // named lifetimes are the point of one test

use std::future::Future;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use resilience4cata::fallback::FallbackEvent;
use resilience4cata::testing::{self, ManualClock};
use resilience4cata::{FallbackContext, Jitter, Registry, Rejection, ResilienceError, resilient};

#[derive(Clone, Debug, PartialEq, ResilienceError)]
pub enum PriceError {
    Unavailable,
    UnknownSku,
    Stale,
    CacheMiss,
    #[rejection]
    Refused(Rejection),
}

fn stale(e: &PriceError) -> bool {
    matches!(e, PriceError::Stale)
}

/// Every context the fallbacks received, in order, as (attempts, instance, error).
type Seen = Arc<Mutex<Vec<(u32, String, PriceError)>>>;

#[resilient]
pub trait Prices {
    #[retry(max_attempts = 3, delay = "100ms")]
    #[fallback(method = cached)]
    fn retried(&self, sku: &str) -> Result<u32, PriceError>;

    #[retry(max_attempts = 4, delay = "0")]
    #[circuit_breaker(window_size = 2, minimum_calls = 2)]
    #[fallback(method = cached)]
    fn guarded(&self, sku: &str) -> Result<u32, PriceError>;

    #[fallback(method = cached, apply_on = PriceError::Unavailable | PriceError::UnknownSku, skip_on = PriceError::UnknownSku)]
    fn filtered(&self, sku: &str) -> Result<u32, PriceError>;

    #[fallback(method = cached, apply_on_if = stale, skip_on = PriceError::Stale)]
    fn skip_wins_over_predicate(&self, sku: &str) -> Result<u32, PriceError>;

    #[fallback(method = cached, skip_on_if = stale)]
    fn skipped_by_predicate(&self, sku: &str) -> Result<u32, PriceError>;

    #[fallback(method = flaky_cache)]
    fn protected_fallback(&self, sku: &str) -> Result<u32, PriceError>;

    #[fallback(method = owned_cache)]
    fn owned(&self, sku: String, units: u32) -> Result<String, PriceError>;

    fn cached(&self, sku: &str, ctx: FallbackContext<PriceError>) -> Result<u32, PriceError>;

    #[retry(max_attempts = 2, delay = "10ms")]
    fn flaky_cache(&self, sku: &str, ctx: FallbackContext<PriceError>) -> Result<u32, PriceError>;

    fn owned_cache(&self, sku: String, units: u32, ctx: FallbackContext<PriceError>) -> Result<String, PriceError>;
}

/// Fails every call with `error` (or answers `Ok(7)` when `None`); the fallback answers 99 unless
/// the sku is `"miss"`, then `CacheMiss`.
struct Backend {
    error: Mutex<Option<PriceError>>,
    calls: AtomicU32,
    cache_calls: AtomicU32,
    seen: Seen,
}

impl Backend {
    fn failing(error: Option<PriceError>) -> Self {
        Backend {
            error: Mutex::new(error),
            calls: AtomicU32::new(0),
            cache_calls: AtomicU32::new(0),
            seen: Arc::default(),
        }
    }

    fn answer(&self) -> Result<u32, PriceError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        match self.error.lock().unwrap().clone() {
            Some(e) => Err(e),
            None => Ok(7),
        }
    }

    fn record(&self, sku: &str, ctx: FallbackContext<PriceError>) -> Result<u32, PriceError> {
        self.cache_calls.fetch_add(1, Ordering::SeqCst);
        self.seen.lock().unwrap().push((ctx.attempts(), ctx.instance().to_owned(), ctx.error().clone()));
        if sku == "miss" { Err(PriceError::CacheMiss) } else { Ok(99) }
    }
}

impl Prices for Backend {
    testkit::same_body! { fn(&self, _sku: &str) -> Result<u32, PriceError> { self.answer() }
    for retried guarded filtered skip_wins_over_predicate skipped_by_predicate protected_fallback }
    fn owned(&self, _sku: String, _units: u32) -> Result<String, PriceError> {
        self.answer().map(|n| n.to_string())
    }
    fn cached(&self, sku: &str, ctx: FallbackContext<PriceError>) -> Result<u32, PriceError> {
        self.record(sku, ctx)
    }
    fn flaky_cache(&self, sku: &str, ctx: FallbackContext<PriceError>) -> Result<u32, PriceError> {
        // Fails on its first call, succeeds on its retry.
        if self.cache_calls.load(Ordering::SeqCst) == 0 {
            self.cache_calls.fetch_add(1, Ordering::SeqCst);
            return Err(PriceError::CacheMiss);
        }
        self.record(sku, ctx)
    }
    fn owned_cache(&self, sku: String, units: u32, ctx: FallbackContext<PriceError>) -> Result<String, PriceError> {
        self.record(&sku, ctx).map(|n| format!("{sku}:{units}:{n}"))
    }
}

fn wrap(error: Option<PriceError>) -> (ResilientPrices<Backend>, ManualClock, Registry) {
    let clock = ManualClock::new();
    let registry = testing::registry(&clock).retry_defaults(|r| r.jitter(Jitter::None)).build().unwrap();
    (ResilientPrices::new(Backend::failing(error), &registry).unwrap(), clock, registry)
}

fn seen(prices: &ResilientPrices<Backend>) -> Vec<(u32, String, PriceError)> {
    prices.delegate().seen.lock().unwrap().clone()
}

#[test]
fn after_the_retries_run_out_it_runs_once_with_max_attempts() {
    let (prices, clock, _registry) = wrap(Some(PriceError::Unavailable));
    assert_eq!(prices.retried("sku-1"), Ok(99));
    assert_eq!(prices.delegate().calls.load(Ordering::SeqCst), 3);
    assert_eq!(clock.elapsed(), Duration::from_millis(300)); // 100 ms, then 200 ms, then the fallback at once
    assert_eq!(seen(&prices), [(3, "fallback::Prices::retried".to_owned(), PriceError::Unavailable)]);
}

#[test]
fn an_ok_never_reaches_it() {
    let (prices, clock, _registry) = wrap(None);
    for _ in 0..3 {
        assert_eq!(prices.retried("sku-1"), Ok(7));
    }
    assert_eq!(prices.delegate().cache_calls.load(Ordering::SeqCst), 0);
    assert_eq!(clock.elapsed(), Duration::ZERO);
}

#[test]
fn a_forced_open_breaker_hands_it_the_refusal_after_one_attempt() {
    let (prices, _clock, registry) = wrap(Some(PriceError::Unavailable));
    registry.circuit_breaker("fallback::Prices::guarded").unwrap().force_open();
    assert_eq!(prices.guarded("sku-1"), Ok(99));
    assert_eq!(prices.delegate().calls.load(Ordering::SeqCst), 0, "the breaker refused the only attempt");
    let refused = PriceError::Refused(Rejection::CallNotPermitted { instance: "fallback::Prices::guarded".into() });
    assert_eq!(seen(&prices), [(1, "fallback::Prices::guarded".to_owned(), refused)]);
}

#[test]
fn a_breaker_that_opens_mid_call_counts_the_refused_attempt() {
    let (prices, _clock, _registry) = wrap(Some(PriceError::Unavailable));
    // Attempts 1 and 2 fail and open the breaker (2 of 2 calls failed); attempt 3 is refused,
    // which the retry never retries, so the call ends at 3 of its 4 attempts.
    assert_eq!(prices.guarded("sku-1"), Ok(99));
    assert_eq!(prices.delegate().calls.load(Ordering::SeqCst), 2);
    let seen = seen(&prices);
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].0, 3);
    assert!(seen[0].2.rejection().is_some_and(Rejection::is_call_not_permitted), "{seen:?}");
}

#[test]
fn skip_on_wins_over_apply_on() {
    let (prices, _clock, _registry) = wrap(Some(PriceError::Unavailable));
    assert_eq!(prices.filtered("sku-1"), Ok(99)); // in apply_on, not in skip_on
    *prices.delegate().error.lock().unwrap() = Some(PriceError::UnknownSku);
    assert_eq!(prices.filtered("sku-1"), Err(PriceError::UnknownSku)); // in both: skipped
    *prices.delegate().error.lock().unwrap() = Some(PriceError::Stale);
    assert_eq!(prices.filtered("sku-1"), Err(PriceError::Stale)); // outside apply_on
    assert_eq!(prices.delegate().cache_calls.load(Ordering::SeqCst), 1);
}

#[test]
fn predicate_forms_filter_the_same_way() {
    let (prices, _clock, _registry) = wrap(Some(PriceError::Stale));
    assert_eq!(prices.skip_wins_over_predicate("sku-1"), Err(PriceError::Stale)); // apply_on_if and skip_on
    assert_eq!(prices.skipped_by_predicate("sku-1"), Err(PriceError::Stale));
    *prices.delegate().error.lock().unwrap() = Some(PriceError::Unavailable);
    assert_eq!(prices.skip_wins_over_predicate("sku-1"), Err(PriceError::Unavailable)); // outside apply_on_if
    assert_eq!(prices.skipped_by_predicate("sku-1"), Ok(99));
    assert_eq!(prices.delegate().cache_calls.load(Ordering::SeqCst), 1);
}

#[test]
fn a_failing_fallback_returns_its_own_error() {
    let (prices, _clock, _registry) = wrap(Some(PriceError::Unavailable));
    assert_eq!(prices.retried("miss"), Err(PriceError::CacheMiss));
    assert_eq!(prices.delegate().cache_calls.load(Ordering::SeqCst), 1, "a failed fallback is not retried");
}

#[test]
fn the_fallback_methods_own_policies_apply() {
    let (prices, clock, _registry) = wrap(Some(PriceError::Unavailable));
    assert_eq!(prices.protected_fallback("sku-1"), Ok(99));
    assert_eq!(prices.delegate().calls.load(Ordering::SeqCst), 1);
    // flaky_cache failed once and was retried by its own #[retry] after 10 ms.
    assert_eq!(prices.delegate().cache_calls.load(Ordering::SeqCst), 2);
    assert_eq!(clock.elapsed(), Duration::from_millis(10));
    assert_eq!(seen(&prices), [(1, "fallback::Prices::protected_fallback".to_owned(), PriceError::Unavailable)]);
}

#[test]
fn owned_arguments_reach_the_fallback() {
    let (prices, _clock, _registry) = wrap(Some(PriceError::Unavailable));
    assert_eq!(prices.owned("sku-9".to_owned(), 4), Ok("sku-9:4:99".to_owned()));
}

#[test]
fn applied_events_name_the_method_and_the_attempts_and_only_when_it_runs() {
    let events = testkit::Recorder::<FallbackEvent>::default();
    let registry = events.on(testing::registry(&ManualClock::new())).build().unwrap();
    let prices = ResilientPrices::new(Backend::failing(Some(PriceError::Unavailable)), &registry).unwrap();
    assert_eq!(prices.retried("sku-1"), Ok(99));
    assert_eq!(prices.filtered("sku-1"), Ok(99));
    *prices.delegate().error.lock().unwrap() = Some(PriceError::UnknownSku);
    assert!(prices.filtered("sku-1").is_err()); // skipped: no event
    *prices.delegate().error.lock().unwrap() = None;
    assert!(prices.retried("sku-1").is_ok()); // success: no event
    assert_eq!(
        events.all(),
        [
            FallbackEvent::Applied { instance: "fallback::Prices::retried".into(), attempts: 3 },
            FallbackEvent::Applied { instance: "fallback::Prices::filtered".into(), attempts: 1 },
        ]
    );
}

/// The async forms: `async fn` and `fn -> impl Future + Send`, each with an async fallback.
#[resilient]
pub trait AsyncPrices {
    #[retry(max_attempts = 3, delay = "100ms")]
    #[fallback(method = cached, skip_on = PriceError::UnknownSku)]
    async fn price(&self, sku: &str) -> Result<u32, PriceError>;

    #[retry(max_attempts = 2, delay = "1s")]
    #[fallback(method = cached_send)]
    fn price_send(&self, sku: &str) -> impl Future<Output = Result<u32, PriceError>> + Send;

    async fn cached(&self, sku: &str, ctx: FallbackContext<PriceError>) -> Result<u32, PriceError>;

    fn cached_send(
        &self,
        sku: &str,
        ctx: FallbackContext<PriceError>,
    ) -> impl Future<Output = Result<u32, PriceError>> + Send;
}

impl AsyncPrices for Backend {
    async fn price(&self, _sku: &str) -> Result<u32, PriceError> {
        tokio::task::yield_now().await;
        self.answer()
    }
    fn price_send(&self, _sku: &str) -> impl Future<Output = Result<u32, PriceError>> + Send {
        let answer = self.answer();
        async move { answer }
    }
    async fn cached(&self, sku: &str, ctx: FallbackContext<PriceError>) -> Result<u32, PriceError> {
        tokio::task::yield_now().await;
        self.record(sku, ctx)
    }
    fn cached_send(
        &self,
        sku: &str,
        ctx: FallbackContext<PriceError>,
    ) -> impl Future<Output = Result<u32, PriceError>> + Send {
        let answer = self.record(sku, ctx);
        async move { answer }
    }
}

use testkit::block_on;

fn is_send<T: Send>(t: T) -> T {
    t
}

#[test]
fn async_methods_fall_back_after_async_retries() {
    let clock = ManualClock::new();
    let registry = testing::registry(&clock).retry_defaults(|r| r.jitter(Jitter::None)).build().unwrap();
    let prices = ResilientAsyncPrices::new(Backend::failing(Some(PriceError::Unavailable)), &registry).unwrap();
    assert_eq!(block_on(prices.price("sku-1")), Ok(99));
    assert_eq!(clock.elapsed(), Duration::from_millis(300));
    assert_eq!(block_on(is_send(prices.price_send("sku-1"))), Ok(99));
    assert_eq!(clock.elapsed(), Duration::from_millis(1300));
    *prices.delegate().error.lock().unwrap() = Some(PriceError::UnknownSku);
    assert_eq!(block_on(prices.price("sku-1")), Err(PriceError::UnknownSku));
    let seen = prices.delegate().seen.lock().unwrap().clone();
    assert_eq!(
        seen,
        [
            (3, "fallback::AsyncPrices::price".to_owned(), PriceError::Unavailable),
            (2, "fallback::AsyncPrices::price_send".to_owned(), PriceError::Unavailable),
        ]
    );
}

fn final_is_accepted(r: &Result<u32, PriceError>) -> resilience4cata::Verdict {
    match r {
        Err(PriceError::Stale) | Ok(_) => resilience4cata::Verdict::Success,
        Err(_) => resilience4cata::Verdict::Retry,
    }
}

#[resilient]
pub trait Classified {
    #[retry(max_attempts = 5, delay = "0", classifier = final_is_accepted)]
    #[fallback(method = cached)]
    fn price(&self, sku: &str) -> Result<u32, PriceError>;

    fn cached(&self, sku: &str, ctx: FallbackContext<PriceError>) -> Result<u32, PriceError>;
}

impl Classified for Backend {
    fn price(&self, _sku: &str) -> Result<u32, PriceError> {
        // Unavailable once, then Stale, which the classifier accepts as it is.
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        if n == 0 { Err(PriceError::Unavailable) } else { Err(PriceError::Stale) }
    }
    fn cached(&self, sku: &str, ctx: FallbackContext<PriceError>) -> Result<u32, PriceError> {
        self.record(sku, ctx)
    }
}

#[test]
fn an_err_the_classifier_accepts_reaches_it_with_that_attempt_counted() {
    let (_, registry) = testkit::manual();
    let prices = ResilientClassified::new(Backend::failing(None), &registry).unwrap();
    assert_eq!(prices.price("sku-1"), Ok(99));
    let seen = prices.delegate().seen.lock().unwrap().clone();
    assert_eq!(seen, [(2, "fallback::Classified::price".to_owned(), PriceError::Stale)]);
}

#[test]
fn subscribers_receive_it_as_any_event_fallback() {
    use resilience4cata::events::AnyEvent;
    let (prices, _clock, registry) = wrap(Some(PriceError::Unavailable));
    let mut subscription = registry.subscribe(16);
    assert_eq!(prices.filtered("sku-1"), Ok(99));
    let event = subscription.try_recv().expect("published while subscribed");
    assert_eq!(
        event,
        AnyEvent::Fallback(FallbackEvent::Applied { instance: "fallback::Prices::filtered".into(), attempts: 1 })
    );
    assert_eq!((event.policy(), event.instance()), ("fallback", "fallback::Prices::filtered"));
    assert!(subscription.try_recv().is_none());
}

#[test]
fn the_context_is_send_sync_and_clone_when_its_error_is() {
    fn send_sync_clone<T: Send + Sync + Clone>(t: &T) -> T {
        t.clone()
    }
    let ctx = FallbackContext::new(PriceError::Unavailable, 2, "fallback::Prices::retried");
    let copy = send_sync_clone(&ctx);
    assert_eq!(copy, ctx);
    assert_eq!((copy.attempts(), copy.instance(), copy.rejection()), (2, "fallback::Prices::retried", None));
    assert_eq!(copy.into_error(), PriceError::Unavailable);
}

#[test]
fn a_shut_down_registry_ends_the_retry_and_the_fallback_gets_the_attempts_made() {
    let (prices, clock, registry) = wrap(Some(PriceError::Unavailable));
    registry.shutdown(); // the first wait between attempts is interrupted
    assert_eq!(prices.retried("sku-1"), Ok(99));
    assert_eq!(clock.elapsed(), Duration::ZERO);
    assert_eq!(seen(&prices), [(1, "fallback::Prices::retried".to_owned(), PriceError::Unavailable)]);
}

/// Borrowed arguments, `&mut` included, reach the fallback after the call is done with them.
#[resilient]
pub trait Buffers {
    #[retry(max_attempts = 2, delay = "0")]
    #[fallback(method = fill_from_cache)]
    fn fill(&self, key: &str, buf: &mut Vec<u8>) -> Result<usize, PriceError>;

    fn fill_from_cache(
        &self,
        key: &str,
        buf: &mut Vec<u8>,
        ctx: FallbackContext<PriceError>,
    ) -> Result<usize, PriceError>;
}

impl Buffers for Backend {
    fn fill(&self, _key: &str, buf: &mut Vec<u8>) -> Result<usize, PriceError> {
        buf.push(0); // each attempt writes, then fails
        self.answer().map(|_| buf.len())
    }
    fn fill_from_cache(
        &self,
        key: &str,
        buf: &mut Vec<u8>,
        ctx: FallbackContext<PriceError>,
    ) -> Result<usize, PriceError> {
        buf.extend_from_slice(key.as_bytes());
        Ok(buf.len() + ctx.attempts() as usize * 100)
    }
}

#[test]
fn mutable_borrows_reach_the_fallback() {
    let (_, registry) = testkit::manual();
    let buffers = ResilientBuffers::new(Backend::failing(Some(PriceError::Unavailable)), &registry).unwrap();
    let mut buf = Vec::new();
    assert_eq!(buffers.fill("ab", &mut buf), Ok(204));
    assert_eq!(buf, [0, 0, b'a', b'b']);
}

/// Types are compared as types: an alias on one side and its expansion on the other match, and
/// lifetimes may be named differently.
#[resilient]
pub trait Files {
    #[fallback(method = read_cached)]
    fn read<'a>(&self, path: &'a str) -> std::io::Result<u32>;

    fn read_cached<'b>(&self, path: &'b str, ctx: FallbackContext<std::io::Error>) -> Result<u32, std::io::Error>;
}

struct Disk;

impl Files for Disk {
    fn read(&self, _path: &str) -> std::io::Result<u32> {
        Err(std::io::Error::other("disk gone"))
    }
    fn read_cached(&self, path: &str, ctx: FallbackContext<std::io::Error>) -> Result<u32, std::io::Error> {
        assert_eq!(ctx.error().to_string(), "disk gone");
        Ok(path.len() as u32)
    }
}

#[test]
fn an_alias_and_its_expansion_are_the_same_signature() {
    let registry = Registry::builder().build().unwrap();
    let files = ResilientFiles::new(Disk, &registry).unwrap();
    assert_eq!(files.read("/etc/hosts").unwrap(), 10);
}

#[test]
fn a_scoped_wrapper_hands_the_scoped_instance_id() {
    let (_, registry) = testkit::manual();
    let eu = ResilientPrices::builder(Backend::failing(Some(PriceError::Unavailable)), &registry)
        .scope("eu")
        .build()
        .unwrap();
    assert_eq!(eu.filtered("sku-1"), Ok(99));
    assert_eq!(seen(&eu), [(1, "eu/fallback::Prices::filtered".to_owned(), PriceError::Unavailable)]);
}
