//! The comparison of `docs/guides/server-limits.md`, measured: the same axum server limited per
//! API key by tower_governor 0.8 and by a keyed pipeline (`examples/per_client_limits.rs`), on
//! 127.0.0.1:0 with reqwest. What it shows: governor rounds `Retry-After` down (a wait under a
//! second is `0`) where ours rounds up; governor keeps every key it has seen until
//! `retain_recent()` is called (a flood of new keys grows its map) where ours keeps at most
//! `max_keys` and refuses a new key (`503`) rather than forget a key whose limit still binds.

use std::net::SocketAddr;
use std::time::Duration;

use axum::Router;
use axum::http::Request;
use axum::routing::get;
use reqwest::StatusCode;
use resilience4cata::testing::{self, ManualClock};
use resilience4cata_examples::per_client_limits::{API_KEY, Limits, serve_on};
use tower_governor::GovernorError;
use tower_governor::GovernorLayer;
use tower_governor::governor::GovernorConfigBuilder;
use tower_governor::key_extractor::KeyExtractor;

/// tower_governor's way to key by API key: a `KeyExtractor` (a missing header is its error, a 500
/// unless an error handler maps it).
#[derive(Clone, Debug)]
struct ApiKey;

impl KeyExtractor for ApiKey {
    type Key = String;

    fn extract<T>(&self, req: &Request<T>) -> Result<String, GovernorError> {
        let key = req.headers().get(API_KEY).and_then(|v| v.to_str().ok());
        key.map(str::to_owned).ok_or(GovernorError::UnableToExtractKey)
    }
}

async fn get_with_key(url: &str, key: &str) -> (StatusCode, Option<String>) {
    let response = reqwest::Client::new().get(url).header(API_KEY, key).send().await.unwrap();
    let retry_after = response.headers().get("retry-after").map(|v| v.to_str().unwrap().to_owned());
    (response.status(), retry_after)
}

#[tokio::test]
async fn governor_floors_retry_after_and_keeps_every_key_until_retain_recent() {
    // One request per minute per API key, no burst.
    let config =
        GovernorConfigBuilder::default().period(Duration::from_secs(60)).burst_size(1).key_extractor(ApiKey).finish();
    let config = config.expect("a non-zero period and burst");
    let limiter = config.limiter().clone();
    let app = Router::new().route("/api/hello", get(|| async { "hello\n" })).layer(GovernorLayer::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/api/hello", listener.local_addr().unwrap());
    let server = tokio::spawn(async move {
        axum::serve(listener, app.into_make_service_with_connect_info::<SocketAddr>()).await.unwrap();
    });
    assert_eq!(get_with_key(&url, "a").await.0, StatusCode::OK);
    let (status, retry_after) = get_with_key(&url, "a").await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    // The permit is (60 s less the moments since the first request) away: floored, 59 or less.
    let retry_after: u64 = retry_after.expect("governor sends retry-after").parse().unwrap();
    assert!(retry_after < 60, "floored: {retry_after}");
    for n in 0..50 {
        assert_eq!(get_with_key(&url, &format!("flood-{n}")).await.0, StatusCode::OK);
    }
    assert_eq!(limiter.len(), 51, "every key seen is kept: the map grows until retain_recent runs");
    server.abort();
}

#[tokio::test]
async fn ours_rounds_retry_after_up_and_fails_closed_at_max_keys() {
    let clock = ManualClock::new();
    let registry = testing::registry(&clock).build().unwrap();
    let limits =
        Limits { per_ip: (1_000, Duration::from_secs(1)), per_key: (1, Duration::from_secs(60)), max_keys: 20 };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/api/hello", listener.local_addr().unwrap());
    let server = serve_on(listener, &registry, limits).unwrap();
    assert_eq!(get_with_key(&url, "a").await.0, StatusCode::OK);
    clock.advance(Duration::from_millis(500));
    let (status, retry_after) = get_with_key(&url, "a").await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(retry_after.as_deref(), Some("60"), "59.5 s rounded up: a client that waits this long finds its permit");
    let mut refused = 0;
    for n in 0..50 {
        match get_with_key(&url, &format!("flood-{n}")).await.0 {
            StatusCode::OK => {}
            StatusCode::SERVICE_UNAVAILABLE => refused += 1,
            other => panic!("unexpected {other}"),
        }
    }
    // Every key used its one permit a minute: none is at rest, so none can be forgotten. Key a and
    // 19 newcomers fill the table; the other 31 are refused instead of resetting anyone's limit.
    let snapshot = registry.rate_limiter("per-api-key").unwrap().snapshot();
    assert_eq!((snapshot.keys, snapshot.keys_exhausted, refused), (20, 31, 31));
    server.abort();
}
