//! The timeout per attempt and the bulkhead, against a real axum server on loopback, on the
//! system clock (a timeout racing real I/O needs real time; nothing here measures it).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common::{Reply, client, serve};
use resilience4cata::bulkhead::BulkheadEvent;
use resilience4cata::timeout::TimeoutEvent;
use resilience4cata::{GiveUpReason, Registry, Rejection, RetryEvent};
use resilience4cata_reqwest::{ResilientMiddleware, rejection};
use tokio::sync::Notify;

#[derive(Default)]
struct Seen {
    timeouts: Mutex<Vec<String>>,
    bulkhead_rejections: Mutex<Vec<String>>,
    retries: Mutex<Vec<RetryEvent>>,
}

fn registry(seen: &Arc<Seen>) -> Registry {
    let (a, b, c) = (Arc::clone(seen), Arc::clone(seen), Arc::clone(seen));
    Registry::builder()
        .listen(move |e: &TimeoutEvent| {
            if let TimeoutEvent::TimedOut { instance, .. } = e {
                a.timeouts.lock().unwrap().push(instance.to_string());
            }
        })
        .listen(move |e: &BulkheadEvent| {
            if let BulkheadEvent::Rejected { instance, .. } = e {
                b.bulkhead_rejections.lock().unwrap().push(instance.to_string());
            }
        })
        .listen(move |e: &RetryEvent| c.retries.lock().unwrap().push(e.clone()))
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_hanging_attempt_is_cut_and_the_next_one_answers() {
    let server = serve(|n| Reply { delay: (n == 0).then_some(Duration::from_secs(30)), ..Reply::ok() }).await;
    let seen = Arc::default();
    let registry = registry(&seen);
    let middleware = ResilientMiddleware::builder(&registry, "api")
        .retry_with(|r| r.max_attempts(2).delay(Duration::ZERO))
        .circuit_breaker()
        .timeout_with(|t| t.duration(Duration::from_millis(200)))
        .build()
        .unwrap();

    let response = client(middleware).get(server.url("/slow")).send().await.unwrap();

    assert_eq!(response.status(), 200);
    assert_eq!(server.hits(), 2);
    let id = format!("api/{}", server.host());
    assert_eq!(*seen.timeouts.lock().unwrap(), [id.as_str()]);
    let breaker = registry.circuit_breaker(&id).unwrap().snapshot();
    assert_eq!((breaker.buffered_calls, breaker.failed_calls), (2, 1), "the cut attempt is a failure");
}

#[tokio::test]
async fn without_retry_a_timed_out_request_returns_the_rejection() {
    let server = serve(|_| Reply { delay: Some(Duration::from_secs(30)), ..Reply::ok() }).await;
    let seen = Arc::default();
    let registry = registry(&seen);
    let middleware = ResilientMiddleware::builder(&registry, "api")
        .timeout_with(|t| t.duration(Duration::from_millis(100)))
        .build()
        .unwrap();

    let error = client(middleware).get(server.url("/slow")).send().await.unwrap_err();

    let id = format!("api/{}", server.host());
    assert_eq!(
        rejection(&error),
        Some(&Rejection::CallTimeout { instance: id.as_str().into(), timeout: Duration::from_millis(100) })
    );
    assert_eq!(server.hits(), 1);
}

#[tokio::test]
async fn a_full_bulkhead_refuses_without_a_request_and_is_not_retried() {
    let release = Arc::new(Notify::new());
    let hold = Arc::clone(&release);
    let server = serve(move |_| Reply { hold: Some(Arc::clone(&hold)), ..Reply::ok() }).await;
    let seen: Arc<Seen> = Arc::default();
    let registry = registry(&seen);
    let middleware = ResilientMiddleware::builder(&registry, "api")
        .retry_with(|r| r.max_attempts(3).delay(Duration::ZERO))
        .bulkhead_with(|b| b.max_concurrent_calls(1))
        .build()
        .unwrap();
    let client = client(middleware);

    let first = tokio::spawn({
        let (client, url) = (client.clone(), server.url("/held"));
        async move { client.get(url).send().await.map(|r| r.status()) }
    });
    server.wait_for_hits(1).await;
    let refused = client.get(server.url("/other")).send().await.unwrap_err();

    let id = format!("api/{}", server.host());
    assert_eq!(rejection(&refused), Some(&Rejection::BulkheadFull { instance: id.as_str().into() }));
    assert_eq!(server.hits(), 1, "the refused request never reached the server");
    let slots = registry.bulkhead(&id).unwrap().snapshot();
    assert_eq!((slots.in_flight, slots.available), (1, 0));
    assert_eq!(*seen.bulkhead_rejections.lock().unwrap(), [id.as_str()]);
    assert!(
        matches!(
            seen.retries.lock().unwrap().as_slice(),
            [RetryEvent::GaveUp { attempts: 1, reason: GiveUpReason::Refused, .. }]
        ),
        "{:?}",
        seen.retries.lock().unwrap()
    );

    release.notify_one();
    assert_eq!(first.await.unwrap().unwrap(), 200);
    let slots = registry.bulkhead(&id).unwrap().snapshot();
    assert_eq!((slots.in_flight, slots.available), (0, 1));
}
