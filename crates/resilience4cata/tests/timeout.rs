//! The timeout through `#[resilient]` and the registry, on the manual clock.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use resilience4cata::testing::{self, ManualClock};
use resilience4cata::timeout::TimeoutEvent;
use resilience4cata::{Registry, Rejection, ResilienceError, RetryEvent, resilient};

const MS: Duration = Duration::from_millis(1);

#[derive(Debug, PartialEq, ResilienceError)]
pub enum FetchError {
    NotFound,
    #[rejection]
    Rejected(Rejection),
}

#[resilient]
pub trait Fetch {
    #[timeout(duration = "1s")]
    async fn quick(&self) -> Result<u32, FetchError>;

    #[timeout(duration = "1s")]
    async fn hangs(&self, dropped: &AtomicBool) -> Result<u32, FetchError>;

    #[timeout(duration = "1s")]
    fn send_form(&self) -> impl Future<Output = Result<u32, FetchError>> + Send;

    #[retry(max_attempts = 3, delay = "0")]
    #[timeout(duration = "1s")]
    async fn hangs_twice(&self, attempts: &AtomicU32) -> Result<u32, FetchError>;

    #[timeout(duration = "1s")]
    async fn io(&self) -> std::io::Result<u32>;

    #[timeout(duration = "1s", enabled = false)]
    async fn unbounded(&self) -> Result<u32, FetchError>;
}

struct Backend;

/// Sets its flag when dropped: shows the attempt's future was dropped.
struct Flag<'a>(&'a AtomicBool);

impl Drop for Flag<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

impl Fetch for Backend {
    async fn quick(&self) -> Result<u32, FetchError> {
        tokio::task::yield_now().await; // pending once: the timer exists, and never fires
        Ok(1)
    }
    async fn hangs(&self, dropped: &AtomicBool) -> Result<u32, FetchError> {
        let _flag = Flag(dropped);
        std::future::pending().await
    }
    fn send_form(&self) -> impl Future<Output = Result<u32, FetchError>> + Send {
        let value = 3;
        async move { Ok(value) }
    }
    async fn hangs_twice(&self, attempts: &AtomicU32) -> Result<u32, FetchError> {
        if attempts.fetch_add(1, Ordering::SeqCst) < 2 {
            std::future::pending::<()>().await;
        }
        Ok(4)
    }
    async fn io(&self) -> std::io::Result<u32> {
        std::future::pending().await
    }
    async fn unbounded(&self) -> Result<u32, FetchError> {
        tokio::task::yield_now().await;
        Ok(5)
    }
}

fn id(method: &str) -> String {
    format!("{}::Fetch::{method}", module_path!())
}

fn registry(clock: &ManualClock) -> Registry {
    testkit::no_jitter(clock).build().unwrap()
}

fn timed_out(registry: &Registry, method: &str) -> u64 {
    registry.snapshot().timeouts().iter().find(|t| *t.instance == id(method)).unwrap().timed_out
}

#[tokio::test]
async fn an_attempt_in_time_leaves_the_manual_clock_where_it_was() {
    let clock = ManualClock::new();
    let registry = registry(&clock);
    let fetch = ResilientFetch::new(Backend, &registry).unwrap();
    assert_eq!(fetch.quick().await, Ok(1));
    assert_eq!(clock.elapsed(), Duration::ZERO);
    assert_eq!(timed_out(&registry, "quick"), 0);
}

#[tokio::test]
async fn an_attempt_past_its_deadline_is_dropped_and_refused() {
    let clock = ManualClock::new();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    let registry =
        testing::registry(&clock).listen(move |e: &TimeoutEvent| sink.lock().unwrap().push(e.clone())).build();
    let registry = registry.unwrap();
    let fetch = ResilientFetch::new(Backend, &registry).unwrap();
    let dropped = AtomicBool::new(false);
    let outcome = fetch.hangs(&dropped).await;
    let expected = Rejection::CallTimeout { instance: id("hangs").into(), timeout: Duration::from_secs(1) };
    assert_eq!(outcome, Err(FetchError::Rejected(expected)));
    assert!(dropped.load(Ordering::SeqCst), "the attempt's future was dropped");
    assert_eq!(clock.elapsed(), Duration::from_secs(1));
    assert_eq!(timed_out(&registry, "hangs"), 1);
    let event = TimeoutEvent::TimedOut { instance: id("hangs").into(), timeout: Duration::from_secs(1) };
    assert_eq!(*seen.lock().unwrap(), [event]);
}

#[tokio::test]
async fn each_retry_attempt_gets_its_own_timeout() {
    let clock = ManualClock::new();
    let retries = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&retries);
    let registry = testing::registry(&clock)
        .listen(move |e: &RetryEvent| {
            if let RetryEvent::Retrying { attempt, .. } = e {
                sink.lock().unwrap().push(*attempt);
            }
        })
        .build()
        .unwrap();
    let fetch = ResilientFetch::new(Backend, &registry).unwrap();
    let attempts = AtomicU32::new(0);
    assert_eq!(fetch.hangs_twice(&attempts).await, Ok(4));
    assert_eq!(attempts.load(Ordering::SeqCst), 3);
    assert_eq!(*retries.lock().unwrap(), [1, 2], "the two timeouts were retried");
    assert_eq!(clock.elapsed(), Duration::from_secs(2), "a fresh second for each attempt, none for the last");
    assert_eq!(timed_out(&registry, "hangs_twice"), 2);
}

#[tokio::test]
async fn the_send_form_stays_send_and_io_errors_time_out() {
    fn send<T: Send>(t: T) -> T {
        t
    }
    let clock = ManualClock::new();
    let fetch = ResilientFetch::new(Backend, &registry(&clock)).unwrap();
    assert_eq!(send(fetch.send_form()).await, Ok(3));
    let e = fetch.io().await.unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::TimedOut);
    assert!(matches!(e.rejection(), Some(Rejection::CallTimeout { .. })));
}

#[tokio::test]
async fn a_disabled_timeout_has_no_deadline() {
    let clock = ManualClock::new();
    let fetch = ResilientFetch::new(Backend, &registry(&clock)).unwrap();
    assert_eq!(fetch.unbounded().await, Ok(5));
}

#[tokio::test]
async fn layered_configuration() {
    let clock = ManualClock::new();
    let registry = testing::registry(&clock)
        .timeout_defaults(|t| t.duration(Duration::from_secs(9)))
        .timeout_instance(id("hangs"), |t| t.duration(250 * MS))
        .build()
        .unwrap();
    let fetch = ResilientFetch::new(Backend, &registry).unwrap();
    assert!(fetch.hangs(&AtomicBool::new(false)).await.is_err());
    assert_eq!(clock.elapsed(), 250 * MS, "the instance override wins over the attribute");

    let invalid = testing::registry(&clock).timeout_instance(id("quick"), |t| t.duration(Duration::ZERO)).build();
    let e = ResilientFetch::new(Backend, &invalid.unwrap()).err().unwrap();
    assert_eq!((e.code(), e.instance()), ("R4C-REG-003", Some(id("quick").as_str())));
}

#[resilient]
pub trait Named {
    #[timeout(config = "slow")]
    async fn call(&self) -> Result<u32, FetchError>;
}

impl Named for Backend {
    async fn call(&self) -> Result<u32, FetchError> {
        std::future::pending().await
    }
}

#[tokio::test]
async fn named_configuration() {
    let clock = ManualClock::new();
    let unknown = testing::registry(&clock).build().unwrap();
    assert_eq!(ResilientNamed::new(Backend, &unknown).err().unwrap().code(), "R4C-REG-004");
    let registry = testing::registry(&clock).timeout("slow", |t| t.duration(Duration::from_secs(5))).build().unwrap();
    let named = ResilientNamed::new(Backend, &registry).unwrap();
    assert!(named.call().await.is_err());
    assert_eq!(clock.elapsed(), Duration::from_secs(5));
}

#[cfg(feature = "serde")]
#[test]
fn configured_from_toml() {
    let clock = ManualClock::new();
    let toml = "[configs.slow.timeout]\nduration = \"3s\"\n";
    let registry = testing::registry(&clock).config_toml(toml).build().unwrap();
    assert!(ResilientNamed::new(Backend, &registry).is_ok());
    let e = testing::registry(&clock).config_toml("[defaults.timeout]\nname = \"x\"\n").build().unwrap_err();
    assert_eq!(e.code(), "R4C-CFG-002", "a timeout has no name: {e}");
}
