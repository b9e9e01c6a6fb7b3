//! The demo's client: a `#[resilient]` trait implemented with reqwest, so every call to the
//! downstream service goes through a fallback, a retry (with a budget), a breaker, an adaptive
//! concurrency limit, a timeout and a bulkhead.

use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use resilience4cata::{FallbackContext, Rejection, ResilienceError, resilient};

/// Why a price could not be had.
#[derive(Debug, ResilienceError)]
pub enum PriceError {
    /// The service answered with an error status.
    Status(u16),
    /// No answer: connection refused or reset, or an unreadable body.
    Transport(String),
    /// The shard is unavailable: the fault the demo's chaos phase injects by name
    /// (`fault = "Unavailable"`), never returned by the service itself.
    Unavailable,
    /// A policy refused the call: the breaker while open, the timeout, a full bulkhead, the
    /// adaptive limit.
    #[rejection]
    Rejected(Rejection),
}

/// A price, and where it came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Quote {
    /// The price in cents.
    pub cents: u32,
    /// `true` when the service was not asked: the breaker refused the call and the fallback
    /// answered with the last price the service gave for that sku.
    pub cached: bool,
}

/// The downstream price service as the demo's callers see it.
#[resilient]
pub trait Prices {
    /// One price. Up to three attempts while the retry budget allows (20 % of calls, at least 5
    /// retries a second); every attempt passes the breaker, then the adaptive limit (which lowers
    /// its concurrency limit when attempts fail or take over 500 ms, and raises it again while
    /// they are fast), is cut off after 1 s and holds one of 8 bulkhead slots while it runs. When
    /// the open breaker refuses the call, the last price seen for the sku answers instead.
    #[retry(max_attempts = 3, delay = "100ms", budget_percent = 20, budget_min_retries_per_second = 5)]
    #[circuit_breaker(
        window_size = 20,
        minimum_calls = 10,
        failure_rate_threshold = 50,
        slow_call_duration = "500ms",
        wait_in_open = "5s",
        permitted_calls_in_half_open = 3
    )]
    #[adaptive_limit(initial_limit = 8, min_limit = 2, max_limit = 16, latency_timeout = "500ms")]
    #[timeout(duration = "1s")]
    #[bulkhead(max_concurrent_calls = 8)]
    #[fallback(method = cached_price, apply_on = PriceError::Rejected(Rejection::CallNotPermitted { .. }))]
    fn price(&self, sku: &str) -> impl Future<Output = Result<Quote, PriceError>> + Send;

    /// The fallback of [`price`](Prices::price): the last price the service gave for `sku`, or
    /// the refusal when it never gave one.
    fn cached_price(
        &self,
        sku: &str,
        ctx: FallbackContext<PriceError>,
    ) -> impl Future<Output = Result<Quote, PriceError>> + Send;
}

/// The instance id every policy of `Prices::price` derives (no `name =`); a tenant's wrapper is
/// scoped, so its instances are `<tenant>/` followed by this ([`price_id`]).
pub const PRICE_ID: &str = concat!(module_path!(), "::Prices::price");

/// The id of `tenant`'s instances of `Prices::price` (SPEC §5 scopes).
pub fn price_id(tenant: &str) -> String {
    format!("{tenant}/{PRICE_ID}")
}

/// Calls one tenant's prices over HTTP and remembers the last price of each sku.
#[derive(Debug, Clone)]
pub struct HttpPrices {
    client: reqwest::Client,
    base: String,
    cache: Arc<Mutex<HashMap<String, u32>>>,
}

impl HttpPrices {
    /// A client of `tenant`'s prices at the service at `addr`.
    pub fn new(addr: SocketAddr, tenant: &str) -> Self {
        HttpPrices { client: reqwest::Client::new(), base: format!("http://{addr}/{tenant}"), cache: Arc::default() }
    }

    fn recall(&self, sku: &str) -> Option<u32> {
        self.cache.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).get(sku).copied()
    }
}

impl Prices for HttpPrices {
    fn price(&self, sku: &str) -> impl Future<Output = Result<Quote, PriceError>> + Send {
        let request = self.client.get(format!("{}/price/{sku}", self.base));
        let (cache, sku) = (Arc::clone(&self.cache), sku.to_owned());
        async move {
            let response = request.send().await.map_err(|e| PriceError::Transport(e.to_string()))?;
            if !response.status().is_success() {
                return Err(PriceError::Status(response.status().as_u16()));
            }
            let body = response.text().await.map_err(|e| PriceError::Transport(e.to_string()))?;
            let cents = body.trim().parse().map_err(|_| PriceError::Transport(format!("not a price: {body:?}")))?;
            cache.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).insert(sku, cents);
            Ok(Quote { cents, cached: false })
        }
    }

    fn cached_price(
        &self,
        sku: &str,
        ctx: FallbackContext<PriceError>,
    ) -> impl Future<Output = Result<Quote, PriceError>> + Send {
        let cached = self.recall(sku);
        async move {
            match cached {
                Some(cents) => Ok(Quote { cents, cached: true }),
                None => Err(ctx.into_error()),
            }
        }
    }
}
