//! The rate limiter through `#[resilient]` and the registry, on the manual clock.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use resilience4cata::rate_limiter::RateLimiterEvent;
use resilience4cata::testing::{self, ManualClock};
use resilience4cata::{Registry, Rejection, ResilienceError, resilient};

const MS: Duration = Duration::from_millis(1);

#[derive(Debug, PartialEq, ResilienceError)]
pub enum QuoteError {
    Down,
    #[rejection]
    Rejected(Rejection),
}

#[resilient]
pub trait Quotes {
    #[rate_limiter(permits = 2, period = "1s")]
    fn quote(&self, sku: &str) -> Result<u32, QuoteError>;

    #[rate_limiter(permits = 1, period = "100ms", max_wait = "150ms")]
    fn patient(&self) -> Result<u32, QuoteError>;

    #[rate_limiter(permits = 1, period = "100ms", max_wait = "100ms")]
    async fn patient_async(&self) -> Result<u32, QuoteError>;

    #[rate_limiter(name = "partner", permits = 3)]
    fn shared_a(&self) -> Result<u32, QuoteError>;

    #[rate_limiter(name = "partner", permits = 3)]
    fn shared_b(&self) -> Result<u32, QuoteError>;

    #[rate_limiter(permits = 1, enabled = false)]
    fn unlimited(&self) -> Result<u32, QuoteError>;

    #[retry(max_attempts = 3, delay = "100ms")]
    #[rate_limiter(permits = 1, period = "1s")]
    fn retried(&self) -> Result<u32, QuoteError>;
}

#[derive(Default)]
struct Backend {
    calls: AtomicU32,
    fail: bool,
}

impl Backend {
    fn call(&self) -> Result<u32, QuoteError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if self.fail { Err(QuoteError::Down) } else { Ok(7) }
    }
}

impl Quotes for Backend {
    fn quote(&self, _sku: &str) -> Result<u32, QuoteError> {
        self.call()
    }
    testkit::same_body! { fn(&self) -> Result<u32, QuoteError> { self.call() } for patient shared_a shared_b unlimited retried }
    async fn patient_async(&self) -> Result<u32, QuoteError> {
        self.call()
    }
}

fn id(method: &str) -> String {
    format!("{}::Quotes::{method}", module_path!())
}

fn retry_after(result: Result<u32, QuoteError>) -> Duration {
    match result {
        Err(QuoteError::Rejected(Rejection::RateLimitExceeded { retry_after, .. })) => retry_after,
        other => panic!("expected a rate limiter refusal, got {other:?}"),
    }
}

fn quotes(clock: &ManualClock) -> (ResilientQuotes<Backend>, Registry) {
    let registry = testkit::no_jitter(clock).build().unwrap();
    (ResilientQuotes::new(Backend::default(), &registry).unwrap(), registry)
}

#[test]
fn burst_then_refusal_with_the_time_until_the_next_permit() {
    let clock = ManualClock::new();
    let (quotes, registry) = quotes(&clock);
    assert_eq!(quotes.quote("a"), Ok(7));
    assert_eq!(quotes.quote("b"), Ok(7));
    assert_eq!(retry_after(quotes.quote("c")), 500 * MS);
    assert_eq!(quotes.delegate().calls.load(Ordering::SeqCst), 2, "a refused call never reaches the method");
    clock.advance(500 * MS);
    assert_eq!(quotes.quote("d"), Ok(7));
    let handle = registry.rate_limiter(&id("quote")).unwrap();
    assert_eq!(handle.instance(), id("quote"));
    assert_eq!(handle.snapshot().available_permits, 0);
    clock.advance(1000 * MS);
    assert_eq!(handle.snapshot().available_permits, 2);
}

#[test]
fn sync_wait_within_max_wait_then_refusal_beyond_it() {
    let clock = ManualClock::new();
    let (quotes, _) = quotes(&clock);
    assert_eq!(quotes.patient(), Ok(7));
    assert_eq!(quotes.patient(), Ok(7));
    assert_eq!(clock.elapsed(), 100 * MS, "waited for the next permit");
    assert_eq!(quotes.patient(), Ok(7));
    assert_eq!(clock.elapsed(), 200 * MS);
}

#[tokio::test]
async fn async_wait_within_max_wait() {
    let clock = ManualClock::new();
    let (quotes, _) = quotes(&clock);
    assert_eq!(quotes.patient_async().await, Ok(7));
    let (a, b) = tokio::join!(quotes.patient_async(), quotes.patient_async());
    assert_eq!(a, Ok(7));
    assert_eq!(retry_after(b), 200 * MS, "the second waiter would need 200 ms, more than max_wait");
    assert_eq!(clock.elapsed(), 100 * MS);
}

#[test]
fn methods_sharing_a_name_share_the_permits() {
    let clock = ManualClock::new();
    let (quotes, registry) = quotes(&clock);
    assert!(quotes.shared_a().is_ok() && quotes.shared_b().is_ok() && quotes.shared_a().is_ok());
    assert!(quotes.shared_b().is_err());
    let listed: Vec<_> = registry.snapshot().rate_limiters().iter().map(|s| s.instance.to_string()).collect();
    assert!(listed.contains(&"partner".to_owned()), "{listed:?}");
    assert!(registry.rate_limiter(&id("shared_a")).is_none(), "the name is the id");
}

#[test]
fn disabled_limiter_lets_everything_through() {
    let clock = ManualClock::new();
    let (quotes, _) = quotes(&clock);
    for _ in 0..10 {
        assert_eq!(quotes.unlimited(), Ok(7));
    }
}

#[test]
fn every_retry_attempt_takes_its_own_permit() {
    let clock = ManualClock::new();
    let registry = testkit::no_jitter(&clock).build().unwrap();
    let quotes = ResilientQuotes::new(Backend { fail: true, ..Backend::default() }, &registry).unwrap();
    let outcome = quotes.retried();
    // Attempt 1 (0 ms) takes the permit and fails; attempt 2 (after the 100 ms backoff) is refused
    // with `retry_after` = 900 ms, which the retry waits instead of its 200 ms backoff (SPEC §7.1,
    // "Delay from the failure"), so attempt 3 (1 s) finds the next permit and reaches the method.
    assert_eq!(quotes.delegate().calls.load(Ordering::SeqCst), 2, "attempt 2 found no permit, attempt 3 did");
    assert!(outcome.is_err_and(|e| e.rejection().is_none()), "the method's own failure");
    assert_eq!(clock.elapsed(), 1_000 * MS);
}

#[test]
fn layered_configuration_and_registry_errors() {
    let clock = ManualClock::new();
    let registry = testing::registry(&clock)
        .rate_limiter_defaults(|r| r.max_wait(10 * MS).period(Duration::from_secs(10)))
        .rate_limiter_instance(id("quote"), |r| r.permits(1))
        .build()
        .unwrap();
    let quotes = ResilientQuotes::new(Backend::default(), &registry).unwrap();
    let config = registry.rate_limiter(&id("quote")).unwrap().snapshot().config;
    let resolved = (config.permits, config.period, config.max_wait);
    assert_eq!(resolved, (1, Duration::from_secs(1), 10 * MS), "instance > attribute > registry defaults");
    assert!(quotes.quote("a").is_ok());
    assert_eq!(retry_after(quotes.quote("b")), Duration::from_secs(1));

    let invalid = testing::registry(&clock).rate_limiter_instance(id("quote"), |r| r.permits(0)).build().unwrap();
    let e = ResilientQuotes::new(Backend::default(), &invalid).err().unwrap();
    assert_eq!((e.code(), e.instance()), ("R4C-REG-003", Some(id("quote").as_str())));

    let conflicting = testing::registry(&clock).rate_limiter_instance("partner", |r| r.permits(5)).build().unwrap();
    assert!(ResilientQuotes::new(Backend::default(), &conflicting).is_ok(), "an override applies to every user");
}

#[resilient]
pub trait Partner {
    #[rate_limiter(config = "partner-quota")]
    fn call(&self) -> Result<u32, QuoteError>;

    #[rate_limiter(name = "shared", permits = 4)]
    fn one(&self) -> Result<u32, QuoteError>;
}

#[resilient]
pub trait Other {
    #[rate_limiter(name = "shared", permits = 5)]
    fn two(&self) -> Result<u32, QuoteError>;
}

struct Plain;

impl Partner for Plain {
    fn call(&self) -> Result<u32, QuoteError> {
        Ok(1)
    }
    fn one(&self) -> Result<u32, QuoteError> {
        Ok(1)
    }
}

impl Other for Plain {
    fn two(&self) -> Result<u32, QuoteError> {
        Ok(2)
    }
}

#[test]
fn named_configs_unknown_configs_and_conflicting_shares() {
    let clock = ManualClock::new();
    let unknown = testing::registry(&clock).build().unwrap();
    assert_eq!(ResilientPartner::new(Plain, &unknown).err().unwrap().code(), "R4C-REG-004");

    let registry = testing::registry(&clock).rate_limiter("partner-quota", |r| r.permits(9)).build().unwrap();
    let _partner = ResilientPartner::new(Plain, &registry).unwrap();
    let id = format!("{}::Partner::call", module_path!());
    assert_eq!(registry.rate_limiter(&id).unwrap().snapshot().available_permits, 9);
    let e = ResilientOther::new(Plain, &registry).err().unwrap();
    assert_eq!((e.code(), e.instance()), ("R4C-REG-008", Some("shared")));
}

#[test]
fn events_when_listened() {
    let seen = testkit::Recorder::<RateLimiterEvent>::default();
    let registry = seen.on(testing::registry(&ManualClock::new())).build().unwrap();
    let quotes = ResilientQuotes::new(Backend::default(), &registry).unwrap();
    let _ = (quotes.quote("a"), quotes.quote("b"), quotes.quote("c"));
    let instance: Arc<str> = id("quote").into();
    assert_eq!(
        seen.all(),
        [
            RateLimiterEvent::Permitted { instance: instance.clone(), key: None, waited: Duration::ZERO },
            RateLimiterEvent::Permitted { instance: instance.clone(), key: None, waited: Duration::ZERO },
            RateLimiterEvent::Rejected { instance, key: None, retry_after: 500 * MS },
        ]
    );
}

#[cfg(feature = "serde")]
#[test]
fn configured_from_toml() {
    let clock = ManualClock::new();
    let toml = format!(
        "[defaults.rate_limiter]\nmax_wait = \"5ms\"\n[instances.\"{}\".rate_limiter]\npermits = 1\n",
        id("quote")
    );
    let registry = testing::registry(&clock).config_toml(&toml).build().unwrap();
    let _quotes = ResilientQuotes::new(Backend::default(), &registry).unwrap();
    let config = registry.rate_limiter(&id("quote")).unwrap().snapshot().config;
    assert_eq!((config.permits, config.max_wait), (1, 5 * MS));
    let e = testing::registry(&clock).config_toml("[defaults.rate_limiter]\npermit = 3\n").build().unwrap_err();
    assert_eq!(e.code(), "R4C-CFG-002");
}
