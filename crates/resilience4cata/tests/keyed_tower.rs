//! A keyed pipeline's tower layer (`.layer().key_by(..)`, SPEC §15) around `tower::service_fn`, on
//! the manual clock: the key comes from the request, each key has its own limiter and breaker,
//! `poll_ready` is the inner service's only (no key yet), retries re-send a copy of the request.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use resilience4cata::circuit_breaker::State;
use resilience4cata::testing::{self, ManualClock};
use resilience4cata::{Jitter, Pipeline, Rejection, ResilienceError};
use tower::{Layer, Service, ServiceExt};

type Io = std::io::Error;

/// A request: the client's API key and a body.
#[derive(Clone, Debug)]
struct Request {
    api_key: String,
    body: u32,
}

fn request(api_key: &str, body: u32) -> Request {
    Request { api_key: api_key.to_owned(), body }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

fn rejection<T>(outcome: &Result<T, Io>) -> Option<&Rejection> {
    outcome.as_ref().err().and_then(Io::rejection)
}

#[test]
fn each_api_key_has_its_own_limiter_through_the_layer() {
    let clock = ManualClock::new();
    let registry = testing::registry(&clock).build().unwrap();
    let per_key = Pipeline::builder(&registry, "tower-api")
        .keyed::<String>()
        .rate_limiter_with(|r| r.permits(2).period(Duration::from_secs(1)).max_wait(Duration::ZERO))
        .build::<u32, Io>()
        .unwrap();
    let service = per_key
        .layer()
        .key_by(|req: &Request| req.api_key.clone())
        .layer(tower::service_fn(|req: Request| async move { Ok::<_, Io>(req.body) }));
    runtime().block_on(async {
        for n in 0..2 {
            assert_eq!(service.clone().oneshot(request("a", n)).await.unwrap(), n);
        }
        let refused = service.clone().oneshot(request("a", 9)).await;
        match rejection(&refused) {
            Some(Rejection::RateLimitExceeded { retry_after, .. }) => {
                assert_eq!(*retry_after, Duration::from_millis(500))
            }
            other => panic!("expected RateLimitExceeded, got {other:?}"),
        }
        assert_eq!(service.clone().oneshot(request("b", 1)).await.unwrap(), 1, "key b is served");
    });
    let keys: Vec<_> = registry.rate_limiter("tower-api").unwrap().keys(10).into_iter().map(|(k, _)| k).collect();
    assert_eq!(keys.iter().map(|k| &**k).collect::<Vec<_>>(), ["\"b\"", "\"a\""]);
}

#[test]
fn poll_ready_is_the_inner_services_and_reserves_nothing() {
    let clock = ManualClock::new();
    let registry = testing::registry(&clock).build().unwrap();
    let per_key = Pipeline::builder(&registry, "tower-ready")
        .keyed::<String>()
        .rate_limiter_with(|r| r.permits(1).period(Duration::from_secs(1)).max_wait(Duration::ZERO))
        .build::<u32, Io>()
        .unwrap();
    let mut service = per_key
        .layer()
        .key_by(|req: &Request| req.api_key.clone())
        .layer(tower::service_fn(|req: Request| async move { Ok::<_, Io>(req.body) }));
    let mut cx = Context::from_waker(Waker::noop());
    runtime().block_on(async {
        assert!(service.poll_ready(&mut cx).is_ready());
        assert_eq!(service.call(request("a", 1)).await.unwrap(), 1);
        // Key a has no permit left, but the service cannot know the next call's key: still ready.
        assert!(matches!(service.poll_ready(&mut cx), Poll::Ready(Ok(()))));
        assert!(matches!(rejection(&service.call(request("a", 2)).await), Some(Rejection::RateLimitExceeded { .. })));
    });
    assert_eq!(registry.rate_limiter("tower-ready").unwrap().snapshot().keys, 1, "poll_ready made no key");
}

#[test]
fn retries_resend_a_copy_and_the_breaker_opens_per_key() {
    let clock = ManualClock::new();
    let registry = testing::registry(&clock).build().unwrap();
    let per_host = Pipeline::builder(&registry, "tower-hosts")
        .keyed::<String>()
        .retry_with(|r| r.max_attempts(2).delay(Duration::from_millis(10)).jitter(Jitter::None))
        .circuit_breaker_with(|c| c.window_size(2).minimum_calls(2))
        .build::<u32, Io>()
        .unwrap();
    let calls = Arc::new(AtomicU32::new(0));
    let counted = Arc::clone(&calls);
    let service =
        per_host.layer().key_by(|req: &Request| req.api_key.clone()).layer(tower::service_fn(move |req: Request| {
            counted.fetch_add(1, Ordering::Relaxed);
            async move { if req.api_key == "down" { Err(Io::other("refused")) } else { Ok(req.body) } }
        }));
    runtime().block_on(async {
        assert!(service.clone().oneshot(request("down", 1)).await.is_err());
        assert_eq!(calls.load(Ordering::Relaxed), 2, "two attempts, each with its copy of the request");
        let refused = service.clone().oneshot(request("down", 1)).await;
        assert!(matches!(rejection(&refused), Some(Rejection::CallNotPermitted { .. })));
        assert_eq!(calls.load(Ordering::Relaxed), 2, "the open breaker refused without calling");
        assert_eq!(service.clone().oneshot(request("up", 3)).await.unwrap(), 3);
    });
    let breaker = registry.circuit_breaker("tower-hosts").unwrap();
    assert_eq!(breaker.key("\"down\"").unwrap().state(), State::Open);
    assert_eq!(breaker.key("\"up\"").unwrap().state(), State::Closed);
}

#[test]
fn a_full_table_refuses_a_new_key_through_the_layer() {
    let clock = ManualClock::new();
    let registry = testing::registry(&clock).build().unwrap();
    let per_tenant = Pipeline::builder(&registry, "tower-tenants")
        .keyed::<String>()
        .bulkhead_with(|b| b.max_keys(1))
        .build::<u32, Io>()
        .unwrap();
    let gate = Arc::new(tokio::sync::Notify::new());
    let waiting = Arc::clone(&gate);
    let service =
        per_tenant.layer().key_by(|req: &Request| req.api_key.clone()).layer(tower::service_fn(move |req: Request| {
            let gate = Arc::clone(&waiting);
            async move {
                if req.body == 0 {
                    gate.notified().await;
                }
                Ok::<_, Io>(req.body)
            }
        }));
    runtime().block_on(async {
        let held = service.clone().oneshot(request("t1", 0));
        let newcomer = async {
            let outcome = service.clone().oneshot(request("t2", 2)).await;
            gate.notify_waiters();
            outcome
        };
        let (held, newcomer) = tokio::join!(held, newcomer);
        assert_eq!(held.unwrap(), 0);
        assert!(matches!(rejection(&newcomer), Some(Rejection::KeysExhausted { .. })), "{newcomer:?}");
    });
}
