//! The demo's client: a `#[resilient]` trait implemented with reqwest, so every call to the
//! downstream service goes through a retry (with a budget), a breaker, a timeout and a bulkhead.

use std::future::Future;
use std::net::SocketAddr;

use resilience4cata::{Rejection, ResilienceError, resilient};

/// Why a price could not be had.
#[derive(Debug, ResilienceError)]
pub enum PriceError {
    /// The service answered with an error status.
    Status(u16),
    /// No answer: connection refused or reset, or an unreadable body.
    Transport(String),
    /// A policy refused the call: the breaker while open, the timeout, a full bulkhead.
    #[rejection]
    Rejected(Rejection),
}

/// The downstream price service as the demo's callers see it.
#[resilient]
pub trait Prices {
    /// One price. Up to three attempts while the retry budget allows (20 % of calls, at least 5
    /// retries a second); every attempt passes the breaker, is cut off after 1 s and holds one of
    /// 8 bulkhead slots while it runs.
    #[retry(max_attempts = 3, delay = "100ms", budget_percent = 20, budget_min_retries_per_second = 5)]
    #[circuit_breaker(
        window_size = 20,
        minimum_calls = 10,
        failure_rate_threshold = 50,
        slow_call_duration = "500ms",
        wait_in_open = "5s",
        permitted_calls_in_half_open = 3
    )]
    #[timeout(duration = "1s")]
    #[bulkhead(max_concurrent_calls = 8)]
    fn price(&self, sku: &str) -> impl Future<Output = Result<u32, PriceError>> + Send;
}

/// The instance id every policy of `Prices::price` shares (no `name =`: the derived id).
pub const PRICE_ID: &str = concat!(module_path!(), "::Prices::price");

/// Calls the service over HTTP.
#[derive(Debug, Clone)]
pub struct HttpPrices {
    client: reqwest::Client,
    base: String,
}

impl HttpPrices {
    /// A client of the service at `addr`.
    pub fn new(addr: SocketAddr) -> Self {
        HttpPrices { client: reqwest::Client::new(), base: format!("http://{addr}") }
    }
}

impl Prices for HttpPrices {
    fn price(&self, sku: &str) -> impl Future<Output = Result<u32, PriceError>> + Send {
        let request = self.client.get(format!("{}/price/{sku}", self.base));
        async move {
            let response = request.send().await.map_err(|e| PriceError::Transport(e.to_string()))?;
            if !response.status().is_success() {
                return Err(PriceError::Status(response.status().as_u16()));
            }
            let body = response.text().await.map_err(|e| PriceError::Transport(e.to_string()))?;
            body.trim().parse().map_err(|_| PriceError::Transport(format!("not a price: {body:?}")))
        }
    }
}
