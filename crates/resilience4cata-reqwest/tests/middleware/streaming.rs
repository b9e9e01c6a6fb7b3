//! A request whose body is a stream cannot be cloned, so it is sent once: never retried, still
//! through the host's breaker. The same bytes in memory are retried (so the count can fail).

use std::time::Duration;

use crate::common::{Reply, client, serve};
use bytes::Bytes;
use resilience4cata::testing::{self, ManualClock};
use resilience4cata::{Jitter, Registry};
use resilience4cata_reqwest::ResilientMiddleware;

fn chunks() -> Vec<Result<Bytes, std::io::Error>> {
    (0..4).map(|i| Ok(Bytes::from(vec![i as u8; 250]))).collect()
}

fn middleware(registry: &Registry) -> ResilientMiddleware {
    ResilientMiddleware::builder(registry, "upload")
        .retry_with(|r| r.max_attempts(3).delay(Duration::from_millis(100)))
        .circuit_breaker()
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_streaming_body_is_sent_once_and_not_retried() {
    let server = serve(|_| Reply::status(503)).await;
    let clock = ManualClock::new();
    let registry = testing::registry(&clock).retry_defaults(|r| r.jitter(Jitter::None)).build().unwrap();
    let client = client(middleware(&registry));

    let body = reqwest::Body::wrap_stream(futures_util::stream::iter(chunks()));
    let response = client.put(server.url("/upload")).body(body).send().await.unwrap();

    assert_eq!(response.status(), 503);
    assert_eq!(server.bodies(), [1_000], "sent once, whole");
    assert_eq!(clock.elapsed(), Duration::ZERO, "no backoff waited");
    let id = format!("upload/{}", server.host());
    let breaker = registry.circuit_breaker(&id).unwrap().snapshot();
    assert_eq!((breaker.buffered_calls, breaker.failed_calls), (1, 1), "the breaker saw it");
    assert!(registry.snapshot().retries().iter().all(|r| *r.instance == *id));

    // The same bytes in memory: three attempts, with the backoff between them.
    let response = client.put(server.url("/upload")).body(vec![0u8; 1_000]).send().await.unwrap();
    assert_eq!(response.status(), 503);
    assert_eq!(server.bodies(), [1_000; 4]);
    assert_eq!(clock.elapsed(), Duration::from_millis(100 + 200));
}

#[tokio::test]
async fn a_streaming_body_that_succeeds_is_delivered() {
    let server = serve(|_| Reply::status(201)).await;
    let clock = ManualClock::new();
    let registry = testing::registry(&clock).build().unwrap();
    let client = client(middleware(&registry));

    let body = reqwest::Body::wrap_stream(futures_util::stream::iter(chunks()));
    let response = client.put(server.url("/upload")).body(body).send().await.unwrap();

    assert_eq!(response.status(), 201);
    assert_eq!(server.bodies(), [1_000]);
}
