//! The per-client limits example (`examples/per_client_limits.rs`) on 127.0.0.1:0, driven with
//! reqwest: an API key that used its quota gets `429` with `Retry-After` while another key is
//! served, and likewise per client address (a second client bound to 127.0.0.2).

use std::net::IpAddr;
use std::time::Duration;

use reqwest::StatusCode;
use resilience4cata::Registry;
use resilience4cata::testing::{self, ManualClock};
use resilience4cata_examples::per_client_limits::{API_KEY, Limits, serve_on};

/// The server on 127.0.0.1:0, its limits on the manual clock (so `Retry-After` is exact).
async fn start(clock: &ManualClock, limits: Limits) -> (String, Registry, tokio::task::JoinHandle<()>) {
    let registry = testing::registry(clock).build().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/api/hello", listener.local_addr().unwrap());
    let server = serve_on(listener, &registry, limits).unwrap();
    (url, registry, server)
}

fn client_from(ip: [u8; 4]) -> reqwest::Client {
    reqwest::Client::builder().local_address(IpAddr::from(ip)).build().unwrap()
}

async fn get(client: &reqwest::Client, url: &str, key: &str) -> (StatusCode, Option<u64>) {
    let response = client.get(url).header(API_KEY, key).send().await.unwrap();
    let retry_after = response.headers().get("retry-after").map(|v| v.to_str().unwrap().parse().unwrap());
    (response.status(), retry_after)
}

#[tokio::test]
async fn an_exhausted_api_key_gets_429_while_another_key_is_served() {
    let limits =
        Limits { per_ip: (100, Duration::from_secs(60)), per_key: (2, Duration::from_secs(60)), max_keys: 100 };
    let clock = ManualClock::new();
    let (url, registry, server) = start(&clock, limits).await;
    let client = client_from([127, 0, 0, 1]);
    for _ in 0..2 {
        assert_eq!(get(&client, &url, "key-a").await, (StatusCode::OK, None));
    }
    clock.advance(Duration::from_millis(100));
    let (status, retry_after) = get(&client, &url, "key-a").await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    // One permit every 30 s: 29.9 s away after 100 ms, rounded up.
    assert_eq!(retry_after, Some(30));
    assert_eq!(get(&client, &url, "key-b").await, (StatusCode::OK, None), "key b has its own quota");
    let keys = registry.rate_limiter("per-api-key").unwrap().snapshot().keys;
    assert_eq!(keys, 2);
    let missing = client.get(&url).send().await.unwrap();
    assert_eq!(missing.status(), StatusCode::UNAUTHORIZED);
    server.abort();
}

#[tokio::test]
async fn an_exhausted_client_address_gets_429_while_another_address_is_served() {
    let limits =
        Limits { per_ip: (3, Duration::from_secs(60)), per_key: (100, Duration::from_secs(60)), max_keys: 100 };
    let clock = ManualClock::new();
    let (url, registry, server) = start(&clock, limits).await;
    let (one, two) = (client_from([127, 0, 0, 1]), client_from([127, 0, 0, 2]));
    for key in ["a", "b", "c"] {
        assert_eq!(get(&one, &url, key).await.0, StatusCode::OK);
    }
    let (status, retry_after) = get(&one, &url, "d").await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "a fresh key does not escape its address's limit");
    assert_eq!(retry_after, Some(20), "one permit every 20 s, none used up yet by the clock");
    assert_eq!(get(&two, &url, "d").await, (StatusCode::OK, None), "127.0.0.2 has its own limit");
    let per_key = registry.rate_limiter("per-api-key").unwrap();
    assert!(per_key.key("\"d\"").unwrap().snapshot().available_permits == 99, "the refused request took no key permit");
    server.abort();
}
