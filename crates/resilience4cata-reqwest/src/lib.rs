//! A [`reqwest_middleware`] middleware that runs every request through a resilience4cata
//! pipeline of its host: a retry that honours `Retry-After`, a circuit breaker per host, a timeout
//! per attempt and a bulkhead — configured from a [`Registry`](resilience4cata::Registry), so
//! instance ids, TOML configuration, events, snapshots and the admin work as for any pipeline.
//!
//! ```
//! use std::time::Duration;
//! use resilience4cata::Registry;
//! use resilience4cata_reqwest::ResilientMiddleware;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! # let addr = listener.local_addr()?;
//! # let app = axum::Router::new().route("/stock", axum::routing::get(|| async { "7" }));
//! # tokio::spawn(async move { axum::serve(listener, app).await });
//! let registry = Registry::builder().build()?;
//! let middleware = ResilientMiddleware::builder(&registry, "inventory")
//!     .retry_with(|r| r.max_attempts(4).max_duration(Duration::from_secs(20)))
//!     .circuit_breaker_with(|c| c.window_size(20).minimum_calls(10))
//!     .timeout_with(|t| t.duration(Duration::from_secs(2)))
//!     .bulkhead_with(|b| b.max_concurrent_calls(16).max_wait(Duration::from_millis(500)))
//!     .build()?;
//! let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new()).with(middleware).build();
//!
//! let stock = client.get(format!("http://{addr}/stock")).send().await?.text().await?;
//! assert_eq!(stock, "7");
//! // One breaker per host, named `<name>/<host>`: here the loopback server's `127.0.0.1:<port>`.
//! let breaker = format!("inventory/{addr}");
//! assert!(registry.circuit_breaker(&breaker).is_some());
//! # Ok(())
//! # }
//! ```
//!
//! # What each outcome is
//! | the attempt got | for the retry | for the breaker | the caller gets |
//! |---|---|---|---|
//! | 2xx, 3xx, a 4xx but 408 and 429 | success | success | the response |
//! | 429, 408 | retried, waiting `Retry-After` when sent | not recorded (the host is alive, and asks us to slow down) | the last response |
//! | 500, 502, 503, 504 | retried, waiting `Retry-After` when sent | failure | the last response |
//! | another 5xx (501, 505, …) | not retried | failure | the response |
//! | no response: connection refused or reset, reqwest's own timeout | retried | failure | `Error::Reqwest` |
//! | the attempt's timeout fired | retried | failure | `Error::Middleware` holding [`Rejection::CallTimeout`] |
//! | the breaker is open | never retried | counted as not permitted | `Error::Middleware` holding [`Rejection::CallNotPermitted`] |
//! | the bulkhead is full (after its `max_wait`) | not retried | not recorded (a local refusal) | `Error::Middleware` holding [`Rejection::BulkheadFull`] |
//! | a middleware further down failed, or the request could not be built | not retried | not recorded | that error |
//!
//! A failed status is never turned into an error: the caller gets the last response the server
//! sent, as reqwest without middleware would, and `error_for_status` works on it. [`rejection`]
//! finds the policy's refusal in a middleware error.
//!
//! # `Retry-After`
//! On a 408, 429 or 5xx that sends `Retry-After` — seconds (`Retry-After: 7`) or an HTTP date —
//! the wait before the next attempt is the server's, instead of the backoff's; without the
//! header, the backoff's. The retry takes it through its `delay_from` hook
//! ([`resilience4cata::Pipeline::delay_from`]), so the server's wait is not capped by
//! `max_delay` (the server knows better), and then meets the rules of every wait:
//! `max_attempts` first (no wait after the last attempt), then `max_duration` (give up with
//! [`GiveUpReason::MaxDuration`](resilience4cata::GiveUpReason::MaxDuration), returning the
//! 429 or 503, rather than wait past it: set it so a `Retry-After: 3600` does not hold a caller
//! for an hour), the retry budget, the registry's shutdown.
//!
//! # Hosts
//! The host of a request is its URL's host, with the port when the URL names one other than its
//! scheme's default (`api.example.com`, `127.0.0.1:8080`). Each host gets its own instances,
//! `<name>/<host>`, made by the registry on the host's first request (or at build, for hosts
//! listed with [`host`](ResilientMiddlewareBuilder::host)): its own breaker, so one dead host does
//! not refuse calls to another; its own bulkhead; its own retry instance (and retry budget). A
//! registry keeps every instance it makes for its whole life, so the number of hosts with
//! instances of their own is capped by [`max_hosts`](ResilientMiddlewareBuilder::max_hosts)
//! (default [`DEFAULT_MAX_HOSTS`]); requests to hosts beyond it share the instances of
//! `<name>/*`. Memory is therefore bounded by `max_hosts + 1` sets of instances per middleware,
//! whatever URLs the client is given.
//!
//! # Bodies that cannot be sent twice
//! A retry needs the request again: the middleware clones it (`Request::try_clone`) for every
//! attempt. A request with a streaming body (`Body::wrap_stream`) cannot be cloned, so it is
//! **sent once**: through the same host's breaker, timeout and bulkhead, never retried, and the
//! caller gets whatever that one attempt got. (reqwest-retry refuses such a request instead,
//! before sending it.) A request with the [`NoRetry`] extension is sent once too, whatever its
//! body.
//!
//! # Timeout: what it covers
//! The timeout bounds one attempt from the moment it has its bulkhead slot until the response's
//! head arrives (status and headers): that is when the middleware chain returns. Reading the
//! body happens after, in the caller's hands; bound it with reqwest's own timeout
//! (`ClientBuilder::timeout`) if needed.
//!
//! # Extensions
//! Every attempt starts from a copy of the request's extensions as the caller gave them; the
//! extensions the last finished attempt left are handed back. An earlier attempt's additions do
//! not leak into the next.
//!
//! # Observability
//! Nothing of its own: the pipelines are ordinary registry instances, so `RetryEvent`,
//! `CircuitBreakerEvent`, `TimeoutEvent` and `BulkheadEvent` listeners see them with their
//! `<name>/<host>` ids, and so do `registry.snapshot()`, the handles
//! (`registry.circuit_breaker("inventory/api.example.com")`), the `metrics` feature and the admin
//! endpoint. [`ResilientMiddleware::instances`] lists the ids made so far.
#![forbid(unsafe_code)]
#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]

mod builder;
mod chain;
mod hosts;
mod middleware;
mod outcome;

pub use builder::{DEFAULT_MAX_HOSTS, ResilientMiddlewareBuilder};
pub use middleware::{NoRetry, ResilientMiddleware, rejection};

#[cfg(doc)]
use resilience4cata::Rejection;
