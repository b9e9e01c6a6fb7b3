//! Keyed pipelines (SPEC §15, `Pipeline::builder(..).keyed::<K>()`) on the manual clock: each key
//! its own limiter, breaker and bulkhead; a key looked up once per call and held across its
//! retries; `KeysExhausted` never retried and answered by the fallback; events with the key's text.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use resilience4cata::circuit_breaker::{CircuitBreakerEvent, State};
use resilience4cata::rate_limiter::RateLimiterEvent;
use resilience4cata::testing::{self, ManualClock};
use resilience4cata::{FallbackContext, Jitter, Pipeline, Registry, Rejection, ResilienceError};

type Io = std::io::Error;

fn rejection<T>(outcome: &Result<T, Io>) -> Option<&Rejection> {
    outcome.as_ref().err().and_then(Io::rejection)
}

fn refused_for_rate<T>(outcome: &Result<T, Io>) -> bool {
    matches!(rejection(outcome), Some(Rejection::RateLimitExceeded { .. }))
}

fn exhausted<T>(outcome: &Result<T, Io>) -> bool {
    matches!(rejection(outcome), Some(Rejection::KeysExhausted { .. }))
}

fn registry(clock: &ManualClock) -> Registry {
    testing::registry(clock)
        .retry_defaults(|r| r.delay(Duration::from_millis(10)).jitter(Jitter::None))
        .build()
        .unwrap()
}

#[test]
fn two_keys_limiters_are_independent_to_the_permit() {
    let clock = ManualClock::new();
    let registry = registry(&clock);
    let api = Pipeline::builder(&registry, "api")
        .keyed::<String>()
        .rate_limiter_with(|r| r.permits(3).period(Duration::from_secs(1)).max_wait(Duration::ZERO))
        .build::<u32, Io>()
        .unwrap();
    for n in 0..3 {
        assert_eq!(api.execute_for("a", || Ok(n)).unwrap(), n, "key a's permit {n}");
    }
    assert!(refused_for_rate(&api.execute_for("a", || Ok(9))), "key a has used its 3 permits");
    for n in 0..3 {
        assert_eq!(api.execute_for(&"b".to_owned(), || Ok(n)).unwrap(), n, "key b's permit {n}: a's use is not b's");
    }
    assert!(refused_for_rate(&api.execute_for("b", || Ok(9))));
    let handle = registry.rate_limiter("api").unwrap();
    assert_eq!(handle.snapshot().keys, 2);
    assert_eq!(handle.key("\"b\"").unwrap().snapshot().available_permits, 0);
    clock.advance(Duration::from_secs(1));
    assert!(api.execute_for("a", || Ok(1)).is_ok(), "replenished");
}

#[test]
fn a_breaker_open_for_one_key_serves_another() {
    let clock = ManualClock::new();
    let registry = registry(&clock);
    let hosts = Pipeline::builder(&registry, "hosts")
        .keyed::<&'static str>()
        .retry_with(|r| r.max_attempts(2))
        .circuit_breaker_with(|c| c.window_size(2).minimum_calls(2))
        .build::<u32, Io>()
        .unwrap();
    let mut down_calls = 0;
    let failed = hosts.execute_for(&"down", || {
        down_calls += 1;
        Err(Io::other("refused"))
    });
    assert!(failed.is_err());
    assert_eq!(down_calls, 2, "both attempts ran and were recorded on key down's breaker");
    let breaker = registry.circuit_breaker("hosts").unwrap();
    assert_eq!(breaker.key("\"down\"").unwrap().state(), State::Open);
    let refused = hosts.execute_for(&"down", || Ok(1));
    assert!(matches!(rejection(&refused), Some(Rejection::CallNotPermitted { .. })));
    assert_eq!(hosts.execute_for(&"up", || Ok(5)).unwrap(), 5, "key up has its own, closed breaker");
    assert_eq!(breaker.key("\"up\"").unwrap().state(), State::Closed);
    assert_eq!(breaker.state(), State::Closed, "the instance shows its most recently used key, up");
}

#[test]
fn a_full_table_of_busy_keys_refuses_a_new_key_without_retrying_it() {
    let clock = ManualClock::new();
    let registry = registry(&clock);
    let tenants = Pipeline::builder(&registry, "tenants")
        .keyed::<u32>()
        .retry_with(|r| r.max_attempts(3))
        .bulkhead_with(|b| b.max_concurrent_calls(1).max_keys(1))
        .build::<u32, Io>()
        .unwrap();
    let mut inner_calls = 0;
    let outer = tenants.execute_for(&1, || {
        // Tenant 1 holds the only key (its slot in flight): tenant 2 cannot be made.
        let refused = tenants.execute_for(&2, || {
            inner_calls += 1;
            Ok(0)
        });
        assert!(exhausted(&refused), "{refused:?}");
        Ok(1)
    });
    assert_eq!(outer.unwrap(), 1);
    assert_eq!(inner_calls, 0, "a refused key never calls");
    assert_eq!(clock.elapsed(), Duration::ZERO, "KeysExhausted is not retried (no backoff waited)");
    let s = registry.bulkhead("tenants").unwrap().snapshot();
    assert_eq!((s.keys, s.keys_exhausted), (1, 1));
    assert_eq!(tenants.execute_for(&2, || Ok(2)).unwrap(), 2, "tenant 1 at rest now: evicted for tenant 2");
}

#[test]
fn a_key_is_held_across_the_retries_of_its_call() {
    let clock = ManualClock::new();
    let registry = registry(&clock);
    let limited = Pipeline::builder(&registry, "held")
        .keyed::<String>()
        .retry_with(|r| r.max_attempts(2))
        .rate_limiter_with(|r| r.permits(10).max_keys(1))
        .build::<u32, Io>()
        .unwrap();
    let mut attempts = 0;
    let outcome = limited.execute_for("a", || {
        attempts += 1;
        if attempts == 1 {
            return Err(Io::other("first attempt fails"));
        }
        // The second attempt: key a is still held (the lookup was once, before the retry).
        assert!(exhausted(&limited.execute_for("b", || Ok(0))));
        Ok(2)
    });
    assert_eq!((outcome.unwrap(), attempts), (2, 2));
}

#[test]
fn keys_exhausted_reaches_the_fallback() {
    let clock = ManualClock::new();
    let registry = registry(&clock);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    let tenants = Pipeline::builder(&registry, "fallback")
        .keyed::<u32>()
        .retry()
        .bulkhead_with(|b| b.max_keys(1))
        .build::<u32, Io>()
        .unwrap()
        .rules(move |p| {
            p.fallback(move |context: FallbackContext<Io>| {
                sink.lock().unwrap().push((context.error().rejection().cloned(), context.attempts()));
                Ok(0)
            })
        });
    let outer = tenants.execute_for(&1, || tenants.execute_for(&2, || Ok(2)));
    assert_eq!(outer.unwrap(), 0, "the inner call's refusal answered by the fallback");
    let seen = seen.lock().unwrap();
    assert!(matches!(seen[..], [(Some(Rejection::KeysExhausted { .. }), 1)]), "{seen:?}");
}

#[test]
fn events_carry_the_key_text() {
    let clock = ManualClock::new();
    let limiter_keys = Arc::new(Mutex::new(Vec::new()));
    let breaker_keys = Arc::new(Mutex::new(Vec::new()));
    let (l, b) = (Arc::clone(&limiter_keys), Arc::clone(&breaker_keys));
    let registry = testing::registry(&clock)
        .listen(move |e: &RateLimiterEvent| {
            if let RateLimiterEvent::Permitted { key, .. } = e {
                l.lock().unwrap().push(key.as_deref().map(str::to_owned));
            }
        })
        .listen(move |e: &CircuitBreakerEvent| {
            if let CircuitBreakerEvent::StateTransition { key, to: State::Open, .. } = e {
                b.lock().unwrap().push(key.as_deref().map(str::to_owned));
            }
        })
        .build()
        .unwrap();
    let api = Pipeline::builder(&registry, "events")
        .keyed::<(u32, String)>()
        .circuit_breaker_with(|c| c.window_size(1).minimum_calls(1))
        .rate_limiter()
        .build::<u32, Io>()
        .unwrap();
    api.execute_for(&(7, "eu".to_owned()), || Ok(1)).unwrap();
    let _ = api.execute_for(&(8, "us".to_owned()), || Err(Io::other("down")));
    assert_eq!(*limiter_keys.lock().unwrap(), [Some("(7, \"eu\")".to_owned()), Some("(8, \"us\")".to_owned())]);
    assert_eq!(*breaker_keys.lock().unwrap(), [Some("(8, \"us\")".to_owned())]);
}

#[test]
fn one_id_keyed_here_and_unkeyed_elsewhere_is_refused() {
    let clock = ManualClock::new();
    let registry = registry(&clock);
    Pipeline::builder(&registry, "shared").keyed::<u32>().rate_limiter().build::<u32, Io>().unwrap();
    let unkeyed = Pipeline::builder(&registry, "shared").rate_limiter().build::<u32, Io>().unwrap_err();
    assert_eq!(unkeyed.code(), "R4C-REG-008");
    assert!(unkeyed.to_string().contains("unkeyed here but keyed"), "{unkeyed}");
    Pipeline::builder(&registry, "plain").bulkhead().build::<u32, Io>().unwrap();
    let keyed = Pipeline::builder(&registry, "plain").keyed::<u32>().bulkhead().build::<u32, Io>().unwrap_err();
    assert_eq!(keyed.code(), "R4C-REG-008");
    let again = Pipeline::builder(&registry, "shared").keyed::<u32>().rate_limiter().build::<u32, Io>();
    assert!(again.is_ok(), "the same keyed instance, shared by id");
}

#[test]
fn only_the_keyable_policies_are_keyed() {
    let clock = ManualClock::new();
    let registry = registry(&clock);
    let _mixed = Pipeline::builder(&registry, "mixed")
        .keyed::<u32>()
        .retry()
        .timeout_with(|t| t.duration(Duration::from_secs(1)))
        .adaptive_limit()
        .build::<u32, Io>()
        .unwrap();
    let snapshot = registry.snapshot();
    assert_eq!(snapshot.retries().len(), 1);
    assert_eq!(snapshot.timeouts().len(), 1);
    let err = Pipeline::builder(&registry, "nothing").keyed::<u32>().retry().build::<u32, Io>().unwrap_err();
    assert_eq!(err.code(), "R4C-REG-001");
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

#[test]
fn async_two_keys_limiters_are_independent_to_the_permit() {
    let clock = ManualClock::new();
    let registry = registry(&clock);
    let api = Pipeline::builder(&registry, "async-api")
        .keyed::<String>()
        .timeout_with(|t| t.duration(Duration::from_secs(1)))
        .rate_limiter_with(|r| r.permits(2).period(Duration::from_secs(1)).max_wait(Duration::ZERO))
        .build::<u32, Io>()
        .unwrap();
    runtime().block_on(async {
        for key in ["a", "b"] {
            for n in 0..2 {
                assert_eq!(api.execute_async_for(key, || async move { Ok(n) }).await.unwrap(), n);
            }
            assert!(refused_for_rate(&api.execute_async_for(key, || async { Ok(9) }).await), "key {key}");
        }
    });
}

#[test]
fn async_a_breaker_open_for_one_key_serves_another() {
    let clock = ManualClock::new();
    let registry = registry(&clock);
    let hosts = Pipeline::builder(&registry, "async-hosts")
        .keyed::<String>()
        .circuit_breaker_with(|c| c.window_size(1).minimum_calls(1))
        .build::<u32, Io>()
        .unwrap();
    runtime().block_on(async {
        let _ = hosts.execute_async_for("down", || async { Err(Io::other("refused")) }).await;
        let refused = hosts.execute_async_for("down", || async { Ok(1) }).await;
        assert!(matches!(rejection(&refused), Some(Rejection::CallNotPermitted { .. })));
        assert_eq!(hosts.execute_async_for("up", || async { Ok(5) }).await.unwrap(), 5);
    });
}

#[test]
fn async_keys_exhausted_while_the_bulkhead_holds_every_key() {
    let clock = ManualClock::new();
    let registry = registry(&clock);
    let tenants = Pipeline::builder(&registry, "async-tenants")
        .keyed::<u32>()
        .retry()
        .bulkhead_with(|b| b.max_concurrent_calls(1).max_keys(2))
        .build::<u32, Io>()
        .unwrap();
    let gate = Arc::new(tokio::sync::Notify::new());
    let held = |n: u32| {
        let gate = Arc::clone(&gate);
        move || {
            let gate = Arc::clone(&gate);
            async move {
                gate.notified().await;
                Ok(n)
            }
        }
    };
    runtime().block_on(async {
        let third = async {
            // Tenants 1 and 2 each hold their slot (waiting at the gate): no key is at rest.
            let third = tenants.execute_async_for(&3, || async { Ok(3) }).await;
            gate.notify_waiters();
            third
        };
        let (one, two, third) =
            tokio::join!(tenants.execute_async_for(&1, held(1)), tenants.execute_async_for(&2, held(2)), third);
        assert_eq!((one.unwrap(), two.unwrap()), (1, 2));
        assert!(exhausted(&third), "{third:?}");
    });
    assert_eq!(clock.elapsed(), Duration::ZERO, "not retried");
    assert_eq!(registry.bulkhead("async-tenants").unwrap().snapshot().keys_exhausted, 1);
}
