//! The adaptive limit through `#[resilient]` and the registry, on the manual clock.

use std::future::Future;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use resilience4cata::adaptive_limit::{AdaptiveLimitEvent, Algorithm};
use resilience4cata::testing::{self, ManualClock};
use resilience4cata::{Registry, RegistryBuilder, Rejection, ResilienceError, resilient};

use testkit::Recorder;

const MS: Duration = Duration::from_millis(1);

#[derive(Debug, PartialEq, ResilienceError)]
pub enum ApiError {
    Overloaded,
    NotFound,
    #[rejection]
    Rejected(Rejection),
}

fn not_found(e: &ApiError) -> bool {
    *e == ApiError::NotFound
}

/// What a call does inside the limit.
pub type Work<'a> = &'a (dyn Fn() -> Result<u32, ApiError> + Sync);

#[resilient]
pub trait Api {
    #[adaptive_limit]
    fn call(&self, work: Work<'_>) -> Result<u32, ApiError>;

    #[adaptive_limit(initial_limit = 2)]
    fn small(&self, work: Work<'_>) -> Result<u32, ApiError>;

    #[adaptive_limit(min_limit = 3, initial_limit = 4, max_limit = 5)]
    fn clamped(&self, work: Work<'_>) -> Result<u32, ApiError>;

    #[adaptive_limit(ignore_on = ApiError::NotFound)]
    fn ignoring(&self, work: Work<'_>) -> Result<u32, ApiError>;

    #[adaptive_limit(drop_on = ApiError::Overloaded, ignore_on_if = not_found)]
    fn selective(&self, work: Work<'_>) -> Result<u32, ApiError>;

    #[adaptive_limit(latency_timeout = "100ms")]
    fn timed(&self, work: Work<'_>) -> Result<u32, ApiError>;

    #[adaptive_limit(initial_limit = 1)]
    #[bulkhead(max_concurrent_calls = 1)]
    fn nested(&self, work: Work<'_>) -> Result<u32, ApiError>;

    #[adaptive_limit(initial_limit = 2, max_limit = 2)]
    async fn wait(&self, hold: &tokio::sync::Notify) -> Result<u32, ApiError>;

    #[adaptive_limit(initial_limit = 1, max_limit = 1, max_wait = "10s")]
    async fn queued(&self, hold: &tokio::sync::Notify) -> Result<u32, ApiError>;

    #[adaptive_limit(initial_limit = 1, max_limit = 1, max_wait = "50ms")]
    fn held(&self, work: Work<'_>) -> Result<u32, ApiError>;

    #[adaptive_limit]
    #[timeout(duration = "10ms")]
    async fn stuck(&self) -> Result<u32, ApiError>;

    #[adaptive_limit(name = "stress", min_limit = 1, initial_limit = 3, max_limit = 4)]
    fn stress(&self, work: Work<'_>) -> Result<u32, ApiError>;

    #[adaptive_limit(enabled = false, initial_limit = 1)]
    fn off(&self, work: Work<'_>) -> Result<u32, ApiError>;
}

struct Backend;

/// Each method runs the work it is handed; the `Notify` ones wait for it, `stuck` never answers.
impl Api for Backend {
    testkit::same_body! { fn(&self, work: Work<'_>) -> Result<u32, ApiError> { work() }
    for call small clamped ignoring selective timed nested held stress off }
    testkit::same_body! { async fn(&self, hold: &tokio::sync::Notify) -> Result<u32, ApiError> {
        hold.notified().await;
        Ok(1)
    } for wait queued }
    async fn stuck(&self) -> Result<u32, ApiError> {
        std::future::pending().await
    }
}

fn id(method: &str) -> String {
    format!("{}::Api::{method}", module_path!())
}

struct Fixture {
    clock: ManualClock,
    registry: Registry,
    api: ResilientApi<Backend>,
    events: Recorder<AdaptiveLimitEvent>,
}

fn fixture_with(f: impl FnOnce(RegistryBuilder) -> RegistryBuilder) -> Fixture {
    let clock = ManualClock::new();
    let events = Recorder::default();
    let registry = f(events.on(testing::registry(&clock))).build().unwrap();
    let api = ResilientApi::new(Backend, &registry).unwrap();
    Fixture { clock, registry, api, events }
}

fn fixture() -> Fixture {
    fixture_with(|b| b)
}

impl Fixture {
    fn limit(&self, method: &str) -> u32 {
        self.registry.adaptive_limit(&id(method)).unwrap().snapshot().limit
    }

    fn changes(&self) -> Vec<(u32, u32)> {
        self.events.filter_map(|e| match e {
            AdaptiveLimitEvent::LimitChanged { from, to, .. } => Some((*from, *to)),
            _ => None,
        })
    }
}

fn fail() -> Result<u32, ApiError> {
    Err(ApiError::Overloaded)
}

fn ok() -> Result<u32, ApiError> {
    Ok(1)
}

#[test]
fn aimd_drops_from_20_give_the_spec_sequence_with_events() {
    let f = fixture();
    let mut seen = Vec::new();
    for _ in 0..15 {
        assert_eq!(f.api.call(&fail), Err(ApiError::Overloaded));
        seen.push(f.limit("call"));
    }
    assert_eq!(seen, [18, 16, 14, 12, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 1]);
    let changes = f.changes();
    assert_eq!(changes.len(), 14, "no LimitChanged for 1 → 1");
    assert_eq!(changes[0], (20, 18));
    assert_eq!(changes[13], (2, 1));
    let AdaptiveLimitEvent::LimitChanged { instance, .. } = &f.events.all()[0] else { panic!() };
    assert_eq!(&**instance, id("call"));
}

#[test]
fn growth_from_2_with_one_call_in_flight_then_stays() {
    let f = fixture();
    f.api.small(&ok).unwrap();
    assert_eq!(f.limit("small"), 3, "1 × 2 ≥ 2");
    for _ in 0..5 {
        f.api.small(&ok).unwrap();
    }
    assert_eq!(f.limit("small"), 3, "1 × 2 < 3: the limit is not in use");
    // Two in flight (a call inside a call) use it again: the inner call sees 2 × 2 ≥ 3.
    f.api.small(&|| f.api.small(&ok)).unwrap();
    assert_eq!(f.limit("small"), 4, "the inner call (2 × 2 ≥ 3) grows it; the outer (1 × 2 < 4) leaves it");
}

#[test]
fn min_and_max_clamp() {
    let f = fixture();
    f.api.clamped(&|| f.api.clamped(&|| f.api.clamped(&ok))).unwrap();
    assert_eq!(f.limit("clamped"), 5, "grew to max_limit and stopped");
    for _ in 0..5 {
        let _ = f.api.clamped(&fail);
    }
    assert_eq!(f.limit("clamped"), 3, "fell to min_limit and stopped");
}

#[test]
fn ignore_on_leaves_the_limit_and_frees_the_slot() {
    let f = fixture();
    for _ in 0..3 {
        assert_eq!(f.api.ignoring(&|| Err(ApiError::NotFound)), Err(ApiError::NotFound));
    }
    assert_eq!(f.limit("ignoring"), 20);
    let _ = f.api.ignoring(&fail);
    assert_eq!(f.limit("ignoring"), 18, "other errors are drops");
    let s = f.registry.adaptive_limit(&id("ignoring")).unwrap().snapshot();
    assert_eq!(s.in_flight, 0);
}

#[test]
fn drop_on_and_ignore_on_if_select_the_samples() {
    let f = fixture();
    let _ = f.api.selective(&|| Err(ApiError::NotFound));
    assert_eq!(f.limit("selective"), 20, "ignored");
    let _ = f.api.selective(&fail);
    assert_eq!(f.limit("selective"), 18, "a drop");
    let other = || Err(ApiError::Rejected(Rejection::CallNotPermitted { instance: "elsewhere".into() }));
    let _ = f.api.selective(&other);
    assert_eq!(f.limit("selective"), 18, "an error drop_on does not match is a success (1 × 2 < 18: no growth)");
}

#[test]
fn a_success_slower_than_latency_timeout_is_a_drop() {
    let f = fixture();
    f.api
        .timed(&|| {
            f.clock.advance(100 * MS);
            Ok(1)
        })
        .unwrap();
    assert_eq!(f.limit("timed"), 20, "exactly at the timeout: a success (not in use: no growth)");
    f.api
        .timed(&|| {
            f.clock.advance(101 * MS);
            Ok(1)
        })
        .unwrap();
    assert_eq!(f.limit("timed"), 18);
}

#[test]
fn an_inner_local_refusal_is_not_a_sample() {
    let f = fixture_with(|b| b.adaptive_limit_instance(id("nested"), |a| a.initial_limit(2)));
    // The nested call passes the limit (2) but not the bulkhead (1): BulkheadFull, not counted.
    let inner = f.api.nested(&|| match f.api.nested(&ok) {
        Err(ApiError::Rejected(Rejection::BulkheadFull { .. })) => Ok(7),
        other => panic!("expected BulkheadFull, got {other:?}"),
    });
    assert_eq!(inner, Ok(7));
    assert_eq!(f.limit("nested"), 3, "only the outer call was a sample: 1 × 2 ≥ 2");
}

#[test]
fn an_inner_timeout_is_a_drop() {
    let f = fixture();
    let r = tokio_test(f.api.stuck());
    assert!(matches!(r, Err(ApiError::Rejected(Rejection::CallTimeout { .. }))), "{r:?}");
    assert_eq!(f.limit("stuck"), 18);
    assert_eq!(f.clock.elapsed(), 10 * MS);
}

fn tokio_test<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(f)
}

#[test]
fn concurrent_async_calls_past_the_limit_are_refused() {
    let f = fixture();
    let hold = tokio::sync::Notify::new();
    let snapshot = || f.registry.adaptive_limit(&id("wait")).unwrap().snapshot();
    tokio_test(async {
        let first = f.api.wait(&hold);
        let second = f.api.wait(&hold);
        let third = async {
            tokio::task::yield_now().await; // the first two hold their slots by now
            let in_flight = snapshot().in_flight;
            let refused = f.api.wait(&hold).await;
            hold.notify_waiters();
            (in_flight, refused)
        };
        let (a, b, (in_flight, refused)) = tokio::join!(first, second, third);
        assert_eq!((a, b), (Ok(1), Ok(1)));
        assert_eq!(in_flight, 2);
        assert!(
            matches!(refused, Err(ApiError::Rejected(Rejection::LimitExceeded { ref instance })) if **instance == id("wait"))
        );
    });
    assert_eq!((snapshot().limit, snapshot().in_flight), (2, 0), "max_limit 2");
    assert!(f.events.all().contains(&AdaptiveLimitEvent::Rejected { instance: id("wait").into(), key: None }));
}

/// On the manual clock a wait for something other than the clock ends at once (the waiter's timer
/// is the only pending wait, so it moves the clock), so this one runs on the system clock; nothing
/// in it depends on how long anything takes.
#[tokio::test]
async fn an_async_waiter_gets_the_slot_a_call_frees() {
    let registry = Registry::builder().build().unwrap();
    let api = ResilientApi::new(Backend, &registry).unwrap();
    let hold = tokio::sync::Notify::new();
    let release = async {
        for _ in 0..2 {
            tokio::task::yield_now().await;
            hold.notify_one();
        }
    };
    let (a, b, ()) = tokio::join!(api.queued(&hold), api.queued(&hold), release);
    assert_eq!((a, b), (Ok(1), Ok(1)));
    let s = registry.adaptive_limit(&id("queued")).unwrap().snapshot();
    assert_eq!((s.limit, s.in_flight), (1, 0));
}

#[test]
fn an_async_waiter_is_refused_at_its_deadline() {
    let f = fixture();
    let hold = tokio::sync::Notify::new();
    tokio_test(async {
        let first = f.api.queued(&hold);
        let second = async {
            tokio::task::yield_now().await;
            let r = f.api.queued(&hold).await;
            hold.notify_one();
            r
        };
        let (a, b) = tokio::join!(first, second);
        assert_eq!(a, Ok(1));
        assert!(matches!(b, Err(ApiError::Rejected(Rejection::LimitExceeded { .. }))));
    });
    assert_eq!(f.clock.elapsed(), Duration::from_secs(10));
}

/// One thread holds `held`'s only slot until `then` has run; another waits for it (parked on the
/// manual clock, which moves to the waiter's deadline by itself once that deadline has been the
/// earliest pending one for two checks, about 2 ms of real time: SPEC §10). Returns the holder's
/// and the waiter's results. A waiter refused before this thread saw it waiting ends the wait for
/// it too (no spinning on a count that can no longer rise).
fn holder_and_waiter(f: &Fixture, then: impl FnOnce()) -> (Result<u32, ApiError>, Result<u32, ApiError>) {
    let go = AtomicU32::new(0);
    let snapshot = || f.registry.adaptive_limit(&id("held")).unwrap().snapshot();
    let results = std::thread::scope(|s| {
        let holder = s.spawn(|| {
            f.api.held(&|| {
                while go.load(Ordering::SeqCst) == 0 {
                    std::thread::yield_now();
                }
                Ok(1)
            })
        });
        while snapshot().in_flight == 0 {
            std::thread::yield_now();
        }
        let waiter = s.spawn(|| f.api.held(&ok));
        while snapshot().waiting == 0 && !waiter.is_finished() {
            std::thread::yield_now();
        }
        then();
        go.store(1, Ordering::SeqCst);
        (holder.join().unwrap(), waiter.join().unwrap())
    });
    assert_eq!((snapshot().in_flight, snapshot().waiting), (0, 0));
    results
}

/// A sync waiter on the manual clock moves the clock to its own deadline once that deadline has
/// been the earliest pending one for two checks (SPEC §10), so with nothing else pending it would
/// be refused at `max_wait` whenever the holder is slower than those two 1 ms checks (a loaded
/// machine). An earlier deadline is kept pending for the whole test: an async retry's 1 ms backoff,
/// polled once and never again (an async wait moves the clock only when it is polled), so the
/// waiter's deadline is never the earliest and the slot reaches it whenever the holder frees it.
#[test]
fn a_sync_waiter_gets_the_slot_a_call_frees() {
    let f = fixture();
    let backoff = resilience4cata::Pipeline::builder(&f.registry, "earlier-deadline")
        .retry_with(|r| r.max_attempts(2).delay(MS))
        .build::<u32, std::io::Error>()
        .unwrap();
    let mut pending = Box::pin(backoff.execute_async(|| async { Err(std::io::Error::other("once")) }));
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    assert!(pending.as_mut().poll(&mut cx).is_pending(), "the backoff's deadline is pending");
    assert_eq!(holder_and_waiter(&f, || {}), (Ok(1), Ok(1)));
    assert_eq!(f.clock.elapsed(), Duration::ZERO, "the slot came before any deadline");
    drop(pending);
}

#[test]
fn a_sync_waiter_is_refused_once_the_clock_passes_its_deadline() {
    let f = fixture();
    let (held, refused) = holder_and_waiter(&f, || {
        f.clock.advance(50 * MS);
        while f.registry.adaptive_limit(&id("held")).unwrap().snapshot().waiting > 0 {
            std::thread::yield_now(); // the waiter sees the deadline passed and leaves
        }
    });
    assert_eq!(held, Ok(1));
    assert!(matches!(refused, Err(ApiError::Rejected(Rejection::LimitExceeded { .. }))), "{refused:?}");
}

#[test]
fn the_slot_comes_back_after_a_panic_and_the_limit_stays() {
    let f = fixture();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f.api.call(&|| panic!("boom"))));
    assert!(r.is_err());
    let s = f.registry.adaptive_limit(&id("call")).unwrap().snapshot();
    assert_eq!((s.limit, s.in_flight), (20, 0));
}

#[test]
fn disabled_counts_nothing() {
    let f = fixture();
    f.api.off(&|| f.api.off(&fail).or(Ok(1))).unwrap();
    let s = f.registry.adaptive_limit(&id("off")).unwrap().snapshot();
    assert_eq!((s.limit, s.in_flight), (1, 0));
    assert!(f.changes().is_empty());
}

#[test]
fn snapshot_lists_every_instance_and_config_layers_apply() {
    let f = fixture_with(|b| {
        b.adaptive_limit_defaults(|a| a.algorithm(Algorithm::Vegas))
            .adaptive_limit_instance(id("call"), |a| a.initial_limit(7))
    });
    let all = f.registry.snapshot();
    let call = all.adaptive_limits().iter().find(|s| *s.instance == id("call")).unwrap();
    assert_eq!((call.limit, call.config.algorithm), (7, Algorithm::Vegas));
    assert!(all.adaptive_limits().iter().any(|s| *s.instance == *"stress"), "shared by name");
}

#[test]
fn invalid_resolved_values_are_reg_003() {
    let clock = ManualClock::new();
    let registry = testing::registry(&clock).adaptive_limit_defaults(|a| a.min_limit(50)).build().unwrap();
    let e = ResilientApi::new(Backend, &registry).err().unwrap();
    assert_eq!(e.code(), "R4C-REG-003");
    let registry = testing::registry(&clock).adaptive_limit_defaults(|a| a.backoff_ratio(1.0)).build().unwrap();
    assert_eq!(ResilientApi::new(Backend, &registry).err().unwrap().code(), "R4C-REG-003");
}

#[cfg(feature = "serde")]
#[test]
fn toml_section() {
    let clock = ManualClock::new();
    let text = format!(
        "[defaults.adaptive_limit]\nalgorithm = \"GRADIENT2\"\nsmoothing = 0.5\n\
         [instances.\"{}\".adaptive_limit]\ninitial_limit = 9\nmax_wait = \"20ms\"\n",
        id("call")
    );
    let registry = testing::registry(&clock).config_toml(&text).build().unwrap();
    let _api = ResilientApi::new(Backend, &registry).unwrap();
    let s = registry.adaptive_limit(&id("call")).unwrap().snapshot();
    assert_eq!(
        (s.limit, s.config.algorithm, s.config.smoothing, s.config.max_wait),
        (9, Algorithm::Gradient2, Some(0.5), 20 * MS)
    );
    let e =
        testing::registry(&clock).config_toml("[defaults.adaptive_limit]\nalgorithm = \"reno\"\n").build().unwrap_err();
    assert_eq!(e.code(), "R4C-CFG-003");
    let e =
        testing::registry(&clock).config_toml("[defaults.adaptive_limit]\nbackof_ratio = 0.5\n").build().unwrap_err();
    assert_eq!(e.code(), "R4C-CFG-002");
    // A value out of range on its own is reported by `build`, with its key path and line.
    let e = testing::registry(&clock).config_toml("[defaults.adaptive_limit]\nmin_limit = 0\n").build().unwrap_err();
    assert_eq!(e.code(), "R4C-CFG-004");
    assert!(e.to_string().contains("config:2: `defaults.adaptive_limit.min_limit`"), "{e}");
    // A rule between keys (min above the default initial 20) waits for the instance to resolve.
    let registry =
        testing::registry(&clock).config_toml("[defaults.adaptive_limit]\nmin_limit = 30\n").build().unwrap();
    assert_eq!(ResilientApi::new(Backend, &registry).err().unwrap().code(), "R4C-REG-003");
}

/// Four threads; calls take slots under a limit that moves (drops and successes), some panic.
/// The delegate checks it is never one of more than `max_limit` calls inside, every call is
/// accounted for, and no slot is left taken.
#[test]
fn stress_four_threads_with_panics() {
    let f = fixture();
    let inside = AtomicU32::new(0);
    let (passed, refused, panicked) = (AtomicU32::new(0), AtomicU32::new(0), AtomicU32::new(0));
    std::thread::scope(|s| {
        for t in 0..4u32 {
            let (f, inside, passed, refused, panicked) = (&f, &inside, &passed, &refused, &panicked);
            s.spawn(move || {
                for i in 0..2_000u32 {
                    let work = || {
                        let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                        assert!(now <= 4, "{now} calls inside a limit of at most 4");
                        for _ in 0..(i % 3) {
                            std::thread::yield_now();
                        }
                        inside.fetch_sub(1, Ordering::SeqCst);
                        match (i + t) % 7 {
                            0 => panic!("planned"),
                            1 | 2 => Err(ApiError::Overloaded),
                            _ => Ok(1),
                        }
                    };
                    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f.api.stress(&work)));
                    let counter = match r {
                        Err(_) => panicked,
                        Ok(Err(ApiError::Rejected(Rejection::LimitExceeded { .. }))) => refused,
                        Ok(_) => passed,
                    };
                    counter.fetch_add(1, Ordering::SeqCst);
                }
            });
        }
    });
    let (p, r, x) = (passed.into_inner(), refused.into_inner(), panicked.into_inner());
    assert_eq!(p + r + x, 8_000);
    assert!(p > 0 && x > 0);
    let snap = f.registry.adaptive_limit("stress").unwrap().snapshot();
    assert_eq!(snap.in_flight, 0, "no slot leaked");
    assert!((1..=4).contains(&snap.limit));
}

mod pipeline {
    use super::*;
    use resilience4cata::Pipeline;

    #[test]
    fn drops_ignores_and_the_with_overrides() {
        let clock = ManualClock::new();
        let registry = testing::registry(&clock).adaptive_limit("tight", |a| a.max_limit(30)).build().unwrap();
        let p = Pipeline::builder(&registry, "search")
            .adaptive_limit_config("tight")
            .adaptive_limit_with(|a| a.initial_limit(10))
            .build::<u32, ApiError>()
            .unwrap()
            .drop_on(|e| *e == ApiError::Overloaded)
            .ignore_on(|e| *e == ApiError::NotFound);
        let limit = || registry.adaptive_limit("search").unwrap().snapshot().limit;
        assert_eq!(registry.adaptive_limit("search").unwrap().snapshot().config.max_limit, 30);
        assert_eq!(p.execute(|| Err(ApiError::NotFound)), Err(ApiError::NotFound));
        assert_eq!(limit(), 10, "ignored");
        let _ = p.execute(|| Err(ApiError::Overloaded));
        assert_eq!(limit(), 9, "a drop");
        let nested = p.execute(|| p.execute(|| p.execute(|| Ok(3))));
        assert_eq!(nested, Ok(3));
        assert_eq!(limit(), 9, "3 in flight × 2 < 9: not in use");
    }

    #[test]
    fn over_the_limit_refused_and_timeouts_are_drops() {
        let (_, registry) = testkit::manual();
        let p = Pipeline::builder(&registry, "slow")
            .adaptive_limit_with(|a| a.initial_limit(1))
            .timeout_with(|t| t.duration(10 * MS))
            .build::<u32, ApiError>()
            .unwrap();
        let r = tokio_test(p.execute_async(|| async {
            let inner = p.execute_async(|| async { Ok(1) }).await;
            assert!(matches!(inner, Err(ApiError::Rejected(Rejection::LimitExceeded { .. }))), "{inner:?}");
            std::future::pending().await
        }));
        assert!(matches!(r, Err(ApiError::Rejected(Rejection::CallTimeout { .. }))), "{r:?}");
        let s = registry.adaptive_limit("slow").unwrap().snapshot();
        assert_eq!((s.limit, s.in_flight), (1, 0), "a drop at the floor");
    }

    #[cfg(feature = "tower")]
    #[test]
    fn the_tower_layer_samples_and_refuses() {
        use tower::{Layer, ServiceExt, service_fn};

        let (_, registry) = testkit::manual();
        let p = Pipeline::builder(&registry, "svc")
            .adaptive_limit_with(|a| a.initial_limit(5))
            .build::<u32, ApiError>()
            .unwrap();
        let svc = p
            .layer()
            .layer(service_fn(|fail: bool| async move { if fail { Err(ApiError::Overloaded) } else { Ok(1) } }));
        assert_eq!(tokio_test(svc.clone().oneshot(false)), Ok(1));
        assert_eq!(tokio_test(svc.clone().oneshot(true)), Err(ApiError::Overloaded));
        let s = registry.adaptive_limit("svc").unwrap().snapshot();
        assert_eq!((s.limit, s.in_flight), (4, 0), "⌊5 × 0.9⌋");
    }
}

#[test]
fn a_subscription_sees_adaptive_limit_events() {
    let f = fixture();
    let mut events = f.registry.subscribe(8);
    let _ = f.api.call(&fail);
    let seen = events.try_recv().expect("one event");
    let expected = AdaptiveLimitEvent::LimitChanged { instance: id("call").into(), key: None, from: 20, to: 18 };
    assert_eq!(seen, resilience4cata::events::AnyEvent::AdaptiveLimit(expected));
    assert_eq!((seen.instance(), seen.policy()), (id("call").as_str(), "adaptive_limit"));
    assert!(events.try_recv().is_none());
}
