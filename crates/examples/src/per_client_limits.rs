//! Per-client limits on an axum server (SPEC §15; the guide is `docs/guides/server-limits.md`):
//! one rate limiter per client IP (from `ConnectInfo<SocketAddr>`) and one per API key (the
//! `x-api-key` header), both keyed pipelines, applied by one middleware. A refusal is answered
//! `429 Too Many Requests` with `Retry-After` (whole seconds, rounded up, from the limiter's
//! `retry_after`); a flood of new clients that fills the key table while every kept key is busy is
//! answered `503 Service Unavailable` (fail closed: no client's limit is reset to make room).
//!
//! Order: the per-IP limit is outside the per-key one, so a request refused for its address takes
//! no permit of its API key (an attacker cycling through stolen keys from one address is stopped
//! by the address's limit without draining the keys' quotas).
//!
//! ```no_run
//! use resilience4cata_examples::per_client_limits::{Limits, serve};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! let (registry, _server) = serve(listener, Limits::default())?;
//! // registry.rate_limiter("per-api-key").unwrap().keys(10): the busiest keys, with their figures.
//! # let _ = registry;
//! # Ok(())
//! # }
//! ```

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use resilience4cata::pipeline::KeyedPipeline;
use resilience4cata::{Pipeline, Registry, RegistryError, Rejection, ResilienceError};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// The request header that carries the client's API key.
pub const API_KEY: &str = "x-api-key";

/// A request the limits refused: the refusal, answered by [`IntoResponse`].
#[derive(Debug, ResilienceError)]
pub enum Refused {
    /// The per-IP or per-key limiter's refusal (or `KeysExhausted`).
    #[rejection]
    Limit(Rejection),
}

impl IntoResponse for Refused {
    /// `429` + `Retry-After` for a rate limit, `503` for a full key table (and anything else).
    fn into_response(self) -> Response {
        let Refused::Limit(rejection) = self;
        match rejection {
            Rejection::RateLimitExceeded { instance, retry_after } => {
                let body = format!("rate limit of {instance} exceeded; retry in {retry_after:?}\n");
                let mut response = (StatusCode::TOO_MANY_REQUESTS, body).into_response();
                response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(retry_after_secs(retry_after)));
                response
            }
            other => (StatusCode::SERVICE_UNAVAILABLE, format!("{other}\n")).into_response(),
        }
    }
}

/// `Retry-After` in whole seconds, rounded up (a client that waits the rounded-down value would
/// be refused again), at least 1.
pub fn retry_after_secs(wait: Duration) -> u64 {
    let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    secs.max(1)
}

/// How many requests each client may make: `permits` per `period`, per IP and per API key.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Per client IP: `(permits, period)`.
    pub per_ip: (u32, Duration),
    /// Per API key: `(permits, period)`.
    pub per_key: (u32, Duration),
    /// At most this many clients kept per limiter (SPEC §15's `max_keys`).
    pub max_keys: u32,
}

impl Default for Limits {
    /// 20 requests per second per IP, 5 per second per API key, 10,000 clients each.
    fn default() -> Self {
        Limits { per_ip: (20, Duration::from_secs(1)), per_key: (5, Duration::from_secs(1)), max_keys: 10_000 }
    }
}

/// The two keyed pipelines: one rate limiter per IP, one per API key.
#[derive(Clone, Debug)]
pub struct ClientLimits {
    per_ip: KeyedPipeline<IpAddr, Response, Refused>,
    per_key: KeyedPipeline<String, Response, Refused>,
}

impl ClientLimits {
    /// Builds both pipelines in `registry`, under the ids `per-ip` and `per-api-key`. A refusal is
    /// immediate (`max_wait` zero): a server answers 429 rather than hold the connection.
    pub fn new(registry: &Registry, limits: Limits) -> Result<Self, RegistryError> {
        let ((ip_permits, ip_period), (key_permits, key_period)) = (limits.per_ip, limits.per_key);
        let per_ip = Pipeline::builder(registry, "per-ip")
            .keyed::<IpAddr>()
            .rate_limiter_with(|r| {
                r.permits(ip_permits).period(ip_period).max_wait(Duration::ZERO).max_keys(limits.max_keys)
            })
            .build()?;
        let per_key = Pipeline::builder(registry, "per-api-key")
            .keyed::<String>()
            .rate_limiter_with(|r| {
                r.permits(key_permits).period(key_period).max_wait(Duration::ZERO).max_keys(limits.max_keys)
            })
            .build()?;
        Ok(ClientLimits { per_ip, per_key })
    }
}

/// The middleware: the client's address, then its API key (`401` without one), each through its
/// keyed pipeline; the handler runs inside both, once.
async fn limit(
    State(limits): State<Arc<ClientLimits>>,
    ConnectInfo(client): ConnectInfo<SocketAddr>,
    request: Request,
    next: Next,
) -> Response {
    let Some(api_key) = request.headers().get(API_KEY).and_then(|v| v.to_str().ok()).map(str::to_owned) else {
        return (StatusCode::UNAUTHORIZED, "missing x-api-key\n").into_response();
    };
    // No retry in these pipelines: each closure runs at most once, so it takes the request. The
    // inner pipeline's future is boxed: a pipeline's future embeds its attempt's future several
    // times (one per way it can run an attempt), so two pipelines nested unboxed around a handler
    // make a future large enough to overflow a debug build's stack.
    let mut call = Some((request, next));
    let per_key = || {
        let mut call = call.take();
        Box::pin(limits.per_key.execute_async_for(api_key.as_str(), move || {
            let call = call.take();
            async move {
                match call {
                    Some((request, next)) => Ok(next.run(request).await),
                    None => Ok(StatusCode::INTERNAL_SERVER_ERROR.into_response()),
                }
            }
        }))
    };
    match limits.per_ip.execute_async_for(&client.ip(), per_key).await {
        Ok(response) => response,
        Err(refused) => refused.into_response(),
    }
}

/// `GET /api/hello`: what the limits protect.
async fn hello() -> &'static str {
    "hello\n"
}

/// The app: `/api/hello` behind the per-client limits.
pub fn app(limits: Arc<ClientLimits>) -> Router {
    Router::new().route("/api/hello", get(hello)).layer(middleware::from_fn_with_state(limits, limit))
}

/// Serves the app on `listener` (with each connection's address, for `ConnectInfo`), on a
/// registry of its own on the system clock; returns the registry (for handles and snapshots) and
/// the server's task.
pub fn serve(listener: TcpListener, limits: Limits) -> Result<(Registry, JoinHandle<()>), RegistryError> {
    let registry = Registry::builder().build()?;
    let server = serve_on(listener, &registry, limits)?;
    Ok((registry, server))
}

/// [`serve`] with the limits in `registry` (a test's, on the manual clock).
pub fn serve_on(listener: TcpListener, registry: &Registry, limits: Limits) -> Result<JoinHandle<()>, RegistryError> {
    let app = app(Arc::new(ClientLimits::new(registry, limits)?));
    Ok(tokio::spawn(async move {
        let service = app.into_make_service_with_connect_info::<SocketAddr>();
        if let Err(e) = axum::serve(listener, service).await {
            eprintln!("server stopped: {e}");
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_rounds_up_to_whole_seconds() {
        assert_eq!(retry_after_secs(Duration::from_millis(1)), 1);
        assert_eq!(retry_after_secs(Duration::from_secs(2)), 2);
        assert_eq!(retry_after_secs(Duration::from_millis(2_001)), 3);
        assert_eq!(retry_after_secs(Duration::ZERO), 1);
    }
}
