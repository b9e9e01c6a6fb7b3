//! An HTTP client made resilient, against real axum servers on loopback: statuses mapped to
//! errors, only idempotent requests retried, `Retry-After` honoured through `delay_from`, 429s
//! kept out of the breaker with `ignore_on`, a timeout per attempt under a `max_duration` for the
//! whole call, one scope per host so a dead host opens only its own breaker, and a queueing
//! bulkhead ordered outside the timeout, so 1,000 calls at once on 16 slots wait for a slot instead
//! of timing out (and never open a healthy host's breaker). Every policy event is printed as it
//! happens. The guide that walks through it: `docs/guides/http-client.md`.
//!
//! Run from the workspace root: `cargo run --example http_client` (a few seconds, no network).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::routing::{get, post};
use resilience4cata::circuit_breaker::{CircuitBreakerEvent, State as BreakerState};
use resilience4cata::timeout::TimeoutEvent;
use resilience4cata::{Registry, Rejection, ResilienceError, RetryEvent, resilient};

// ---------------------------------------------------------------------------------------------
// The client: errors, the resilient trait, and its reqwest implementation.

/// What a call to the inventory service can fail with. Statuses become variants the policies can
/// match on; the transport's failures keep their own variant; policy refusals travel in `Rejected`.
#[derive(Debug, ResilienceError)]
pub enum ApiError {
    /// 429: the server asks us to slow down, maybe saying for how long.
    TooManyRequests { retry_after: Option<Duration> },
    /// 502, 503, 504: the server (or a proxy) is unavailable right now; retrying may help.
    Unavailable { status: u16, retry_after: Option<Duration> },
    /// Any other 4xx: our request is wrong; retrying cannot help.
    Client { status: u16 },
    /// Any other 5xx, or a body we could not read.
    Server { status: u16 },
    /// The request never got an answer: connection refused or reset.
    Transport(String),
    /// A policy's refusal: open breaker, timeout, rate limit.
    #[rejection]
    Rejected(Rejection),
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ApiError::TooManyRequests { retry_after } => write!(f, "429 (Retry-After {retry_after:?})"),
            ApiError::Unavailable { status, .. } => write!(f, "{status} unavailable"),
            ApiError::Client { status } => write!(f, "{status} client error"),
            ApiError::Server { status } => write!(f, "{status} server error"),
            ApiError::Transport(e) => write!(f, "transport: {e}"),
            ApiError::Rejected(r) => write!(f, "refused: {r}"),
        }
    }
}

/// The wait a failure asks for: the server's `Retry-After` when it sent one, else the backoff's.
/// The retry calls it only when another attempt is allowed; the wait then meets `max_duration`.
fn server_retry_after(error: &ApiError, _attempt: u32, computed: Duration) -> Option<Duration> {
    match error {
        ApiError::TooManyRequests { retry_after: Some(wait) }
        | ApiError::Unavailable { retry_after: Some(wait), .. } => Some(*wait),
        _ => Some(computed),
    }
}

#[resilient]
pub trait Inventory {
    /// `GET /stock/{sku}`: idempotent, so retried on what may pass next time (503, 429, a reset
    /// connection, a timed-out attempt), never on a 4xx. Each attempt gets 300 ms; the whole call,
    /// waits included, gives up rather than run past 3 s. A 429 says nothing about the server's
    /// health: the breaker ignores it.
    ///
    /// At most 16 requests in flight per host; more calls queue for a slot up to 5 s. The queue
    /// sits outside the timeout (`policy_order`): the 300 ms bound starts once a call holds its
    /// slot, so a burst larger than the bulkhead waits its turn instead of being cut off while it
    /// queues. (In the default order, timeout outside bulkhead, a call still waiting at 300 ms would
    /// be refused `BulkheadFull`: `max_wait` capped by the timeout.)
    #[policy_order(Retry, CircuitBreaker, Bulkhead, Timeout)]
    #[retry(
        max_attempts = 4,
        delay = "50ms",
        max_duration = "3s",
        retry_on = ApiError::Unavailable { .. } | ApiError::TooManyRequests { .. } | ApiError::Transport(_)
            | ApiError::Rejected(Rejection::CallTimeout { .. }),
        delay_from = server_retry_after
    )]
    #[circuit_breaker(
        window_size = 4,
        minimum_calls = 4,
        failure_rate_threshold = 75,
        wait_in_open = "30s",
        ignore_on = ApiError::TooManyRequests { .. } | ApiError::Client { .. }
    )]
    #[timeout(duration = "300ms")]
    #[bulkhead(max_concurrent_calls = 16, max_wait = "5s")]
    async fn stock(&self, sku: &str) -> Result<u32, ApiError>;

    /// `POST /reservations/{sku}`: not idempotent — a retry after a lost response could reserve
    /// twice — so no retry; the breaker and a timeout still protect it.
    #[circuit_breaker(window_size = 4, minimum_calls = 4, wait_in_open = "30s")]
    #[timeout(duration = "1s")]
    async fn reserve(&self, sku: &str) -> Result<(), ApiError>;
}

/// The plain client: one reqwest request per call, statuses mapped to `ApiError`.
struct HttpInventory {
    http: reqwest::Client,
    base: String,
}

impl HttpInventory {
    async fn send(&self, request: reqwest::RequestBuilder) -> Result<String, ApiError> {
        let response = request.send().await.map_err(|e| ApiError::Transport(e.to_string()))?;
        let status = response.status().as_u16();
        let retry_after = retry_after_header(response.headers());
        match status {
            200..=299 => response.text().await.map_err(|_| ApiError::Server { status }),
            429 => Err(ApiError::TooManyRequests { retry_after }),
            502..=504 => Err(ApiError::Unavailable { status, retry_after }),
            400..=499 => Err(ApiError::Client { status }),
            _ => Err(ApiError::Server { status }),
        }
    }
}

/// `Retry-After` in its seconds form (the HTTP-date form is left to a real client).
fn retry_after_header(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let seconds = headers.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?.trim().parse::<u64>().ok()?;
    Some(Duration::from_secs(seconds))
}

impl Inventory for HttpInventory {
    async fn stock(&self, sku: &str) -> Result<u32, ApiError> {
        let body = self.send(self.http.get(format!("{}/stock/{sku}", self.base))).await?;
        body.trim().parse().map_err(|_| ApiError::Server { status: 200 })
    }

    async fn reserve(&self, sku: &str) -> Result<(), ApiError> {
        self.send(self.http.post(format!("{}/reservations/{sku}", self.base))).await.map(drop)
    }
}

// ---------------------------------------------------------------------------------------------
// The servers: one axum app per host, counting the requests it answers.

#[derive(Default)]
struct Host {
    /// Every host answers 503 to everything while `down` (host B, here).
    down: bool,
    hits: Mutex<HashMap<String, u32>>,
    answered: AtomicU32,
}

impl Host {
    /// Counts a request to `key`; returns how many came before it.
    fn hit(&self, key: &str) -> u32 {
        self.answered.fetch_add(1, Ordering::SeqCst);
        let mut hits = self.hits.lock().unwrap();
        let n = hits.entry(key.to_owned()).or_default();
        *n += 1;
        *n - 1
    }
}

/// `flaky`: one 503, then 200. `busy`: one 429 with `Retry-After: 1`, then 200. `slow`: the first
/// request hangs for 2 s. `steady`: 200 after 20 ms, every time. `missing`: 404. Anything else:
/// 200 with a stock of 7.
async fn stock(State(host): State<Arc<Host>>, Path(sku): Path<String>) -> (StatusCode, HeaderMap, String) {
    let before = host.hit(&sku);
    let mut headers = HeaderMap::new();
    if host.down {
        return (StatusCode::SERVICE_UNAVAILABLE, headers, String::new());
    }
    match (sku.as_str(), before) {
        ("flaky", 0) => (StatusCode::SERVICE_UNAVAILABLE, headers, String::new()),
        ("busy", 0) => {
            headers.insert(header::RETRY_AFTER, "1".parse().unwrap());
            (StatusCode::TOO_MANY_REQUESTS, headers, String::new())
        }
        ("slow", 0) => {
            tokio::time::sleep(Duration::from_secs(2)).await;
            (StatusCode::OK, headers, "1".into())
        }
        ("steady", _) => {
            tokio::time::sleep(Duration::from_millis(20)).await;
            (StatusCode::OK, headers, "7".into())
        }
        ("missing", _) => (StatusCode::NOT_FOUND, headers, String::new()),
        _ => (StatusCode::OK, headers, "7".into()),
    }
}

/// Answers the first reservation with 503, to show that a POST is not retried.
async fn reserve(State(host): State<Arc<Host>>, Path(sku): Path<String>) -> StatusCode {
    match host.hit(&format!("POST {sku}")) {
        0 => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::CREATED,
    }
}

async fn serve(host: Arc<Host>) -> SocketAddr {
    let app =
        Router::new().route("/stock/{sku}", get(stock)).route("/reservations/{sku}", post(reserve)).with_state(host);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a loopback port");
    let addr = listener.local_addr().expect("bound");
    tokio::spawn(async move { axum::serve(listener, app).await.expect("the server runs") });
    addr
}

// ---------------------------------------------------------------------------------------------
// The run.

/// Prints every event with the time since start: what a service should log (at `warn` for
/// `GaveUp`, state transitions and timeouts; at `debug` for `Retrying`).
fn registry(start: Instant) -> Registry {
    let at = move || format!("{:>5} ms", start.elapsed().as_millis());
    let (a, b, c) = (at, at, at);
    Registry::builder()
        .listen(move |e: &RetryEvent| match e {
            RetryEvent::Retrying { instance, attempt, delay, .. } => {
                println!("{}  retry    {instance}: attempt {attempt} failed, next in {delay:?}", a())
            }
            RetryEvent::GaveUp { instance, attempts, reason, .. } => {
                println!("{}  retry    {instance}: gave up after {attempts} attempt(s): {reason:?}", a())
            }
            _ => {}
        })
        .listen(move |e: &CircuitBreakerEvent| {
            if let CircuitBreakerEvent::StateTransition { instance, from, to, .. } = e {
                println!("{}  breaker  {instance}: {from:?} -> {to:?}", b())
            }
        })
        .listen(move |e: &TimeoutEvent| {
            if let TimeoutEvent::TimedOut { instance, timeout, .. } = e {
                println!("{}  timeout  {instance}: attempt cut at {timeout:?}", c())
            }
        })
        .build()
        .expect("a valid registry")
}

fn client(base: SocketAddr) -> HttpInventory {
    HttpInventory { http: reqwest::Client::new(), base: format!("http://{base}") }
}

/// How many calls the burst makes at once: far more than the bulkhead's 16 slots.
const BURST: u32 = 1_000;

/// `n` concurrent `stock("steady")` calls, each on its own task: how many answered, and the
/// errors of those that did not (distinct errors, with their counts).
async fn burst_of_calls(client: &Arc<ResilientInventory<HttpInventory>>, n: u32) -> (u32, Vec<(String, u32)>) {
    let mut calls = tokio::task::JoinSet::new();
    for _ in 0..n {
        let client = Arc::clone(client);
        calls.spawn(async move { client.stock("steady").await });
    }
    let (mut ok, mut failures) = (0, HashMap::<String, u32>::new());
    while let Some(outcome) = calls.join_next().await {
        match outcome.expect("a call task finished") {
            Ok(_) => ok += 1,
            Err(e) => *failures.entry(e.to_string()).or_default() += 1,
        }
    }
    (ok, failures.into_iter().collect())
}

fn show<T: std::fmt::Debug>(what: &str, result: &Result<T, ApiError>) {
    match result {
        Ok(v) => println!("        => {what}: Ok({v:?})"),
        Err(e) => println!("        => {what}: Err({e})"),
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let start = Instant::now();
    let host_a = Arc::new(Host::default());
    let host_b = Arc::new(Host { down: true, ..Host::default() });
    let (addr_a, addr_b) = (serve(Arc::clone(&host_a)).await, serve(Arc::clone(&host_b)).await);
    let registry = registry(start);

    // One scope per host: each gets its own breaker; without scopes both would share one.
    let a = ResilientInventory::builder(client(addr_a), &registry).scope("host-a").build()?;
    let b = ResilientInventory::builder(client(addr_b), &registry).scope("host-b").build()?;
    println!("host A {addr_a}, breaker {}", a.ids().stock.circuit_breaker().unwrap_or("-"));
    println!("host B {addr_b}, breaker {}\n", b.ids().stock.circuit_breaker().unwrap_or("-"));

    println!("1. A 503 is retried after the backoff");
    show("stock(flaky)", &a.stock("flaky").await);
    println!("2. A 429 waits the server's Retry-After (1 s), and the breaker ignores it");
    show("stock(busy)", &a.stock("busy").await);
    println!("3. A hanging attempt is cut at 300 ms and retried; the 2 s answer is never awaited");
    show("stock(slow)", &a.stock("slow").await);
    println!("4. A 404 is not retried");
    show("stock(missing)", &a.stock("missing").await);
    println!("5. A POST is not retried: the 503 comes back to the caller");
    show("reserve(sku-1)", &a.reserve("sku-1").await);
    show("reserve(sku-1) again", &a.reserve("sku-1").await);
    println!("6. Host B is down: its breaker opens and then refuses without a request");
    for _ in 0..2 {
        show("B stock(sku-1)", &b.stock("sku-1").await);
    }
    println!("7. Host A is unaffected by host B's breaker");
    show("A stock(sku-1)", &a.stock("sku-1").await);
    println!("8. {BURST} calls at once to host A (20 ms each) on 16 slots: they queue outside the timeout");
    let a = Arc::new(a);
    let burst = Instant::now();
    let (ok, failures) = burst_of_calls(&a, BURST).await;
    let failed: u32 = failures.iter().map(|(_, n)| n).sum();
    println!("        => {ok} Ok, {failed} Err, in {:.1?}", burst.elapsed());

    let snapshot = registry.snapshot();
    println!("\nbreakers:");
    for breaker in snapshot.circuit_breakers() {
        println!("  {:<50} {:?}", breaker.instance, breaker.state);
    }
    let state = |id: Option<&str>| registry.circuit_breaker(id.unwrap_or_default()).map(|h| h.snapshot().state);
    let (a_state, b_state) = (state(a.ids().stock.circuit_breaker()), state(b.ids().stock.circuit_breaker()));
    let a_slots = registry.bulkhead(a.ids().stock.bulkhead().unwrap_or_default()).map(|h| h.snapshot());
    let answered = (host_a.answered.load(Ordering::SeqCst), host_b.answered.load(Ordering::SeqCst));
    println!("requests answered: host A {}, host B {}", answered.0, answered.1);
    println!("done in {:.1?}", start.elapsed());

    // The run checks itself, so CI notices when the behaviour it shows changes.
    assert!(failures.is_empty(), "every call of the burst to a healthy host succeeds; failed: {failures:?}");
    assert_eq!(ok, BURST, "every call of the burst answered");
    assert_eq!(a_state, Some(BreakerState::Closed), "host A's breaker stays closed, the burst included");
    assert_eq!(a_slots.map(|s| (s.in_flight, s.waiting)), Some((0, 0)), "host A's slots all came back");
    assert_eq!(b_state, Some(BreakerState::Open), "host B's breaker opened");
    // A: flaky 2 + busy 2 + slow 2 + missing 1 + two reservations + sku-1 1 + the burst.
    // B: the first call's 4 attempts fill the window (4 failures), the breaker opens; the second
    // call is refused without a request.
    assert_eq!(answered, (10 + BURST, 4), "requests that reached each server");
    Ok(())
}
