//! `#[policy_order]` on the trait and on methods, reversing the default nesting on every form
//! (sync, `async fn`, `impl Future + Send`), with owned arguments cloned per attempt wherever the
//! retry sits: every order expands to code that compiles, and the futures stay `Send`.
#![deny(warnings)]
use std::future::Future;

use resilience4cata::{Registry, resilient};
use testkit::Down;

#[resilient]
#[policy_order(Bulkhead, RateLimiter, CircuitBreaker, Retry)]
pub trait Inventory {
    #[retry(max_attempts = 2, delay = "0")]
    #[circuit_breaker]
    #[rate_limiter(permits = 100)]
    #[bulkhead]
    fn stock(&self, sku: String) -> Result<u32, Down>;

    #[policy_order(Timeout, Bulkhead, RateLimiter, CircuitBreaker, Retry)]
    #[retry(max_attempts = 2, delay = "0")]
    #[circuit_breaker]
    #[rate_limiter(permits = 100)]
    #[timeout(duration = "1s")]
    #[bulkhead]
    async fn reserve(&self, sku: String, units: u32) -> Result<(), Down>;

    #[policy_order(Fallback, Hedge, AdaptiveLimit, Timeout)]
    #[retry(max_attempts = 2, delay = "0")]
    #[timeout(duration = "1s")]
    fn release(&self, sku: String) -> impl Future<Output = Result<(), Down>> + Send;
}

struct Backend;

impl Inventory for Backend {
    fn stock(&self, _sku: String) -> Result<u32, Down> {
        Err(Down::Failed)
    }
    async fn reserve(&self, _sku: String, _units: u32) -> Result<(), Down> {
        Ok(())
    }
    async fn release(&self, _sku: String) -> Result<(), Down> {
        Ok(())
    }
}

fn require_send<T: Send>(_: &T) {}

fn main() {
    let registry = Registry::builder().build().unwrap();
    let inventory = ResilientInventory::new(Backend, &registry).unwrap();
    let _ = inventory.stock("sku-1".to_owned());
    let reserve = inventory.reserve("sku-1".to_owned(), 2);
    require_send(&reserve);
    let release = inventory.release("sku-1".to_owned());
    require_send(&release);
}
