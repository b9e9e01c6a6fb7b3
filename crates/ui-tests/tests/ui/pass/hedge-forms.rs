//! Every form a hedged method may take: `async fn`, `impl Future + Send` with an owned argument,
//! and a hedge over every inner policy.
use std::future::Future;

use resilience4cata::{Registry, Rejection, ResilienceError, resilient};

#[derive(Clone, Debug, ResilienceError)]
pub enum Error {
    Down,
    #[rejection]
    Rejected(Rejection),
}

#[resilient]
pub trait Search {
    #[hedge]
    async fn plain(&self, query: &str) -> Result<u32, Error>;

    #[hedge(delay = "10ms", max_hedged_attempts = 8)]
    fn send(&self, query: String, page: u32) -> impl Future<Output = Result<u32, Error>> + Send;

    #[hedge(enabled = false)]
    #[circuit_breaker]
    #[rate_limiter]
    #[timeout(duration = "1s")]
    #[bulkhead]
    async fn everything(&self, query: Vec<u8>) -> Result<u32, Error>;
}

struct Backend;

impl Search for Backend {
    async fn plain(&self, _query: &str) -> Result<u32, Error> {
        Ok(1)
    }
    fn send(&self, _query: String, page: u32) -> impl Future<Output = Result<u32, Error>> + Send {
        async move { if page > 0 { Ok(page) } else { Err(Error::Down) } }
    }
    async fn everything(&self, query: Vec<u8>) -> Result<u32, Error> {
        Ok(query.len() as u32)
    }
}

fn main() {
    let _ = ResilientSearch::new(Backend, &Registry::builder().build().unwrap());
}
