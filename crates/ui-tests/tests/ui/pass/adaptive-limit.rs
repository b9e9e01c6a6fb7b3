//! The adaptive limit on every supported form, with each algorithm and every key.
use std::future::Future;

use resilience4cata::{Registry, Rejection, ResilienceError, resilient};

#[derive(Debug, ResilienceError)]
pub enum SearchError {
    Overloaded,
    NotFound,
    #[rejection]
    Rejected(Rejection),
}

fn is_not_found(e: &SearchError) -> bool {
    matches!(e, SearchError::NotFound)
}

#[resilient]
#[adaptive_limit(max_limit = 100)]
pub trait Search {
    fn query(&self, q: &str) -> Result<u32, SearchError>;

    #[adaptive_limit(algorithm = Gradient2, smoothing = 0.3, long_window = 100, rtt_tolerance = 2.0, queue_size = 2)]
    #[timeout(duration = "1s")]
    async fn suggest(&self, q: &str) -> Result<Vec<String>, SearchError>;

    #[adaptive_limit(algorithm = vegas, alpha = 2, beta = 4, max_wait = "10ms", name = "index")]
    fn index(&self, doc: String) -> impl Future<Output = std::io::Result<()>> + Send;

    #[retry(max_attempts = 2, delay = "0")]
    #[adaptive_limit(min_limit = 2, initial_limit = 4, backoff_ratio = 0.5, latency_timeout = "2s",
        drop_on = SearchError::Overloaded, ignore_on_if = is_not_found)]
    #[bulkhead(max_concurrent_calls = 8)]
    fn fetch(&self, id: u64) -> Result<u32, SearchError>;

    #[adaptive_limit(enabled = false, config = "reports", drop_on_if = is_not_found, ignore_on = SearchError::NotFound)]
    fn report(&self) -> Result<u32, SearchError>;
}

struct Backend;

impl Search for Backend {
    fn query(&self, _q: &str) -> Result<u32, SearchError> {
        Ok(1)
    }
    async fn suggest(&self, _q: &str) -> Result<Vec<String>, SearchError> {
        Ok(Vec::new())
    }
    fn index(&self, _doc: String) -> impl Future<Output = std::io::Result<()>> + Send {
        async { Ok(()) }
    }
    fn fetch(&self, id: u64) -> Result<u32, SearchError> {
        Ok(id as u32)
    }
    fn report(&self) -> Result<u32, SearchError> {
        Ok(0)
    }
}

fn main() {
    let registry = Registry::builder().adaptive_limit("reports", |a| a.max_limit(10)).build().unwrap();
    let search = ResilientSearch::new(Backend, &registry).unwrap();
    assert_eq!(search.query("q").unwrap(), 1);
    assert_eq!(search.fetch(3).unwrap(), 3);
}
