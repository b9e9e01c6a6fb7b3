//! Per-client limits on an axum server: one rate limiter per client IP and one per API key
//! (keyed pipelines, SPEC §15), refusals answered `429 Too Many Requests` with `Retry-After`.
//! The program starts the server on loopback, plays three clients against it with reqwest and
//! prints every answer, then the busiest keys of each limiter. The guide that walks through it,
//! beside the same server on `tower_governor`: `docs/guides/server-limits.md`.
//!
//! Run from the workspace root: `cargo run --example per_client_limits` (no network; Linux routes
//! all of 127.0.0.0/8 to loopback, which the second client's address needs).

use std::net::IpAddr;
use std::time::Duration;

use resilience4cata_examples::per_client_limits::{API_KEY, Limits, serve};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let limits =
        Limits { per_ip: (8, Duration::from_secs(60)), per_key: (3, Duration::from_secs(30)), max_keys: 1_000 };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/api/hello", listener.local_addr()?);
    let (registry, server) = serve(listener, limits)?;
    println!("serving {url}: 8 requests/min per client IP, 3 per 30 s per API key ({API_KEY})\n");

    let from_one = reqwest::Client::builder().local_address(IpAddr::from([127, 0, 0, 1])).build()?;
    let from_two = reqwest::Client::builder().local_address(IpAddr::from([127, 0, 0, 2])).build()?;
    let ask = |client: &reqwest::Client, key: Option<&'static str>| {
        let mut request = client.get(&url);
        if let Some(key) = key {
            request = request.header(API_KEY, key);
        }
        request.send()
    };
    println!("alice, from 127.0.0.1, four times: her key's fourth request is refused");
    for _ in 0..4 {
        show("127.0.0.1", "alice", ask(&from_one, Some("alice")).await?).await;
    }
    println!("bob, from the same address: his own key's quota");
    show("127.0.0.1", "bob", ask(&from_one, Some("bob")).await?).await;
    println!("carol, from the same address, three times: the address has now used its 8 permits");
    for _ in 0..3 {
        show("127.0.0.1", "carol", ask(&from_one, Some("carol")).await?).await;
    }
    println!("erin, from the same address: a fresh key, but the address's limit refuses her");
    show("127.0.0.1", "erin", ask(&from_one, Some("erin")).await?).await;
    println!("dave, from 127.0.0.2: another address, its own limit");
    show("127.0.0.2", "dave", ask(&from_two, Some("dave")).await?).await;
    println!("no API key: 401");
    show("127.0.0.2", "-", ask(&from_two, None).await?).await;

    for id in ["per-ip", "per-api-key"] {
        let handle = registry.rate_limiter(id).expect("built by serve");
        println!("\n{id}: {} keys", handle.snapshot().keys);
        for (key, snapshot) in handle.keys(5) {
            println!("  {key:<14} {} permits left", snapshot.available_permits);
        }
    }
    server.abort();
    Ok(())
}

/// Prints one answer: its status, `Retry-After` if any, and the body of a refusal (which names the
/// limiter that refused).
async fn show(from: &str, key: &str, response: reqwest::Response) {
    let status = response.status();
    let retry_after = response.headers().get("retry-after").and_then(|v| v.to_str().ok()).map(str::to_owned);
    let body = response.text().await.unwrap_or_default();
    match retry_after {
        Some(secs) => println!("  {from} {key:<6} -> {status}, Retry-After: {secs} s: {}", body.trim_end()),
        None if status.is_success() => println!("  {from} {key:<6} -> {status}"),
        None => println!("  {from} {key:<6} -> {status}: {}", body.trim_end()),
    }
}
