//! The retry against a real axum server on loopback, on the manual clock so the waits are exact:
//! 503 and 429 wait the server's `Retry-After` (seconds or HTTP date), other 4xx are not
//! retried, the last failed response comes back as a response.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use crate::common::{Reply, client, serve};
use resilience4cata::testing::{self, ManualClock};
use resilience4cata::{GiveUpReason, Jitter, Registry, RetryEvent};
use resilience4cata_reqwest::{NoRetry, ResilientMiddleware};

/// A registry on `clock` whose retries wait exactly `delay` (no jitter), recording retry events.
fn registry(clock: &ManualClock, events: &Arc<Mutex<Vec<RetryEvent>>>) -> Registry {
    let events = Arc::clone(events);
    testing::registry(clock)
        .retry_defaults(|r| r.jitter(Jitter::None))
        .listen(move |e: &RetryEvent| events.lock().unwrap().push(e.clone()))
        .build()
        .unwrap()
}

fn middleware(registry: &Registry) -> ResilientMiddleware {
    ResilientMiddleware::builder(registry, "api")
        .retry_with(|r| r.max_attempts(3).delay(Duration::from_millis(100)))
        .circuit_breaker()
        .bulkhead()
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_503_waits_its_retry_after_then_succeeds() {
    let server = serve(|n| match n {
        0 => Reply::status(503).header("retry-after", "7"),
        _ => Reply::ok(),
    })
    .await;
    let (clock, events) = (ManualClock::new(), Arc::default());
    let client = client(middleware(&registry(&clock, &events)));

    let response = client.get(server.url("/stock")).send().await.unwrap();

    assert_eq!(response.status(), 200);
    assert_eq!(server.hits(), 2);
    // The server's 7 s, not the backoff's 100 ms.
    assert_eq!(clock.elapsed(), Duration::from_secs(7));
    let retrying: Vec<Duration> = events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            RetryEvent::Retrying { delay, .. } => Some(*delay),
            _ => None,
        })
        .collect();
    assert_eq!(retrying, [Duration::from_secs(7)]);
}

#[tokio::test]
async fn a_429_waits_its_retry_after_and_a_503_without_one_the_backoff() {
    let server = serve(|n| match n {
        0 => Reply::status(429).header("retry-after", "3"),
        1 => Reply::status(503),
        _ => Reply::ok(),
    })
    .await;
    let (clock, events) = (ManualClock::new(), Arc::default());
    let client = client(middleware(&registry(&clock, &events)));

    let response = client.get(server.url("/stock")).send().await.unwrap();

    assert_eq!(response.status(), 200);
    assert_eq!(server.hits(), 3);
    // 3 s from the 429's header, then the second retry's backoff: 100 ms × 2.
    assert_eq!(clock.elapsed(), Duration::from_millis(3_200));
}

#[tokio::test]
async fn retry_after_as_an_http_date_waits_until_that_date() {
    let server = serve(|n| match n {
        0 => Reply::status(503)
            .header("retry-after", httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(3_600))),
        _ => Reply::ok(),
    })
    .await;
    let (clock, events) = (ManualClock::new(), Arc::default());
    let client = client(middleware(&registry(&clock, &events)));

    let response = client.get(server.url("/stock")).send().await.unwrap();

    assert_eq!(response.status(), 200);
    assert_eq!(server.hits(), 2);
    // The date is an hour ahead, to the second: the wait is within the hour's last seconds.
    let waited = clock.elapsed();
    assert!(waited > Duration::from_secs(3_500) && waited <= Duration::from_secs(3_600), "{waited:?}");
}

#[tokio::test]
async fn max_duration_gives_up_on_a_long_retry_after_and_returns_the_503() {
    let server = serve(|_| Reply::status(503).header("retry-after", "3600")).await;
    let (clock, events) = (ManualClock::new(), Arc::default());
    let registry = registry(&clock, &events);
    let middleware = ResilientMiddleware::builder(&registry, "api")
        .retry_with(|r| r.max_attempts(3).max_duration(Duration::from_secs(60)))
        .build()
        .unwrap();

    let response = client(middleware).get(server.url("/stock")).send().await.unwrap();

    assert_eq!(response.status(), 503);
    assert_eq!(server.hits(), 1);
    assert_eq!(clock.elapsed(), Duration::ZERO);
    assert!(matches!(
        events.lock().unwrap().as_slice(),
        [RetryEvent::GaveUp { reason: GiveUpReason::MaxDuration, attempts: 1, .. }]
    ));
}

#[tokio::test]
async fn exhausted_retries_return_the_last_failed_response() {
    let server = serve(|n| Reply::status(if n < 2 { 503 } else { 502 })).await;
    let (clock, events) = (ManualClock::new(), Arc::default());
    let client = client(middleware(&registry(&clock, &events)));

    let response = client.get(server.url("/stock")).send().await.unwrap();

    assert_eq!(response.status(), 502);
    assert_eq!(server.hits(), 3);
    assert_eq!(clock.elapsed(), Duration::from_millis(100 + 200));
    let gave_up = events.lock().unwrap().iter().any(|e| {
        matches!(e, RetryEvent::GaveUp { instance, reason: GiveUpReason::MaxAttempts, attempts: 3 }
            if **instance == *format!("api/{}", server.host()))
    });
    assert!(gave_up, "{:?}", events.lock().unwrap());
}

#[tokio::test]
async fn client_errors_other_than_429_are_not_retried() {
    for status in [400, 401, 404, 409, 422] {
        let server = serve(move |_| Reply::status(status)).await;
        let (clock, events) = (ManualClock::new(), Arc::default());
        let client = client(middleware(&registry(&clock, &events)));

        let response = client.get(server.url("/stock")).send().await.unwrap();

        assert_eq!(response.status(), status);
        assert_eq!(server.hits(), 1, "status {status}");
        assert_eq!(clock.elapsed(), Duration::ZERO);
        assert!(events.lock().unwrap().is_empty(), "a success publishes no retry event: {status}");
    }
}

#[tokio::test]
async fn a_501_is_not_retried_but_a_408_is() {
    let not_implemented = serve(|_| Reply::status(501)).await;
    let timed_out = serve(|n| Reply::status(if n == 0 { 408 } else { 200 })).await;
    let (clock, events) = (ManualClock::new(), Arc::default());
    let client = client(middleware(&registry(&clock, &events)));

    assert_eq!(client.get(not_implemented.url("/")).send().await.unwrap().status(), 501);
    assert_eq!(client.get(timed_out.url("/")).send().await.unwrap().status(), 200);

    assert_eq!((not_implemented.hits(), timed_out.hits()), (1, 2));
}

#[tokio::test]
async fn a_request_with_a_body_in_memory_is_retried_whole() {
    let server = serve(|n| Reply::status(if n == 0 { 503 } else { 201 })).await;
    let (clock, events) = (ManualClock::new(), Arc::default());
    let client = client(middleware(&registry(&clock, &events)));

    let response = client.put(server.url("/orders/7")).body(vec![7u8; 1_000]).send().await.unwrap();

    assert_eq!(response.status(), 201);
    assert_eq!(server.bodies(), [1_000, 1_000]);
}

#[tokio::test]
async fn no_retry_sends_an_idempotent_request_once() {
    let server = serve(|n| Reply::status(if n == 0 { 503 } else { 201 })).await;
    let (clock, events) = (ManualClock::new(), Arc::default());
    let client = client(middleware(&registry(&clock, &events)));

    let response = client.put(server.url("/documents/7")).body("{}").with_extension(NoRetry).send().await.unwrap();

    assert_eq!(response.status(), 503);
    assert_eq!(server.hits(), 1);
    assert!(events.lock().unwrap().is_empty(), "no retry ran: {:?}", events.lock().unwrap());
}

#[tokio::test]
async fn a_post_is_sent_once_unless_every_method_is_retried() {
    let server = serve(|n| Reply::status(if n == 0 || n == 1 { 503 } else { 201 })).await;
    let (clock, events) = (ManualClock::new(), Arc::default());
    let registry = registry(&clock, &events);

    let once = client(middleware(&registry)).post(server.url("/orders")).body("{}").send().await.unwrap();
    assert_eq!(once.status(), 503);
    assert_eq!(server.hits(), 1);

    let every = ResilientMiddleware::builder(&registry, "api")
        .retry_with(|r| r.max_attempts(3).delay(Duration::from_millis(100)))
        .circuit_breaker()
        .bulkhead()
        .retry_every_method()
        .build()
        .unwrap();
    let retried = client(every).post(server.url("/orders")).body("{}").send().await.unwrap();
    assert_eq!(retried.status(), 201);
    assert_eq!(server.hits(), 3);
    assert_eq!(server.bodies(), [2, 2, 2]);
}

/// A request extension the caller sets, which the middleware after ours bumps on every attempt.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Counter(u32);

/// Records what each attempt saw of `Counter`, then bumps it.
struct Bump(Arc<Mutex<Vec<Option<Counter>>>>);

#[async_trait::async_trait]
impl reqwest_middleware::Middleware for Bump {
    async fn handle(
        &self,
        req: reqwest::Request,
        ext: &mut http::Extensions,
        next: reqwest_middleware::Next<'_>,
    ) -> reqwest_middleware::Result<reqwest::Response> {
        let seen = ext.get::<Counter>().copied();
        self.0.lock().unwrap().push(seen);
        ext.insert(Counter(seen.map_or(0, |c| c.0) + 1));
        next.run(req, ext).await
    }
}

/// Records what the caller's extensions hold once the middleware is done.
struct After(Arc<Mutex<Vec<Option<Counter>>>>);

#[async_trait::async_trait]
impl reqwest_middleware::Middleware for After {
    async fn handle(
        &self,
        req: reqwest::Request,
        ext: &mut http::Extensions,
        next: reqwest_middleware::Next<'_>,
    ) -> reqwest_middleware::Result<reqwest::Response> {
        let response = next.run(req, ext).await;
        self.0.lock().unwrap().push(ext.get::<Counter>().copied());
        response
    }
}

#[tokio::test]
async fn every_attempt_starts_from_the_callers_extensions_and_the_last_ones_come_back() {
    let server = serve(|n| Reply::status(if n < 2 { 503 } else { 200 })).await;
    let (clock, events) = (ManualClock::new(), Arc::default());
    let (attempts, after) = (Arc::new(Mutex::new(Vec::new())), Arc::new(Mutex::new(Vec::new())));
    let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(After(Arc::clone(&after)))
        .with(middleware(&registry(&clock, &events)))
        .with(Bump(Arc::clone(&attempts)))
        .build();

    let response = client.get(server.url("/")).with_extension(Counter(10)).send().await.unwrap();

    assert_eq!(response.status(), 200);
    assert_eq!(*attempts.lock().unwrap(), [Some(Counter(10)); 3], "no attempt sees an earlier one's changes");
    assert_eq!(*after.lock().unwrap(), [Some(Counter(11))], "the last attempt's extensions come back");
}
