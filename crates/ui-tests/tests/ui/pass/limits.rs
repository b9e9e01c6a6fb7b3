//! Rate limiter, timeout and bulkhead on every supported form, on the trait and on methods, with
//! an error type of each kind that can carry a rejection.
use std::future::Future;

use resilience4cata::{Registry, Rejection, ResilienceError, resilient};

#[derive(Debug, ResilienceError)]
pub enum InventoryError {
    Unavailable,
    #[rejection]
    Rejected(Rejection),
}

#[resilient]
#[rate_limiter(permits = 100, period = "1s")]
#[bulkhead(max_concurrent_calls = 8, max_wait = "5ms")]
pub trait Inventory {
    fn stock(&self, sku: &str) -> Result<u32, InventoryError>;

    #[retry(max_attempts = 2, delay = "0")]
    #[timeout(duration = "PT0.5S")]
    async fn reserve(&self, sku: &str, units: u32) -> std::io::Result<()>;

    #[timeout(duration = "250ms", enabled = false)]
    #[bulkhead(max_concurrent_calls = 2, name = "writes")]
    fn release(&self, sku: String) -> impl Future<Output = Result<(), Box<dyn std::error::Error + Send + Sync>>> + Send;

    #[rate_limiter(enabled = false)]
    #[bulkhead(config = "reports")]
    fn report(&self) -> Result<String, InventoryError>;
}

struct Backend;

impl Inventory for Backend {
    fn stock(&self, _sku: &str) -> Result<u32, InventoryError> {
        Err(InventoryError::Unavailable)
    }
    async fn reserve(&self, _sku: &str, _units: u32) -> std::io::Result<()> {
        Ok(())
    }
    fn release(&self, _sku: String) -> impl Future<Output = Result<(), Box<dyn std::error::Error + Send + Sync>>> + Send {
        async { Ok(()) }
    }
    fn report(&self) -> Result<String, InventoryError> {
        Ok(String::new())
    }
}

fn send<T: Send>(t: T) -> T {
    t
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let registry = Registry::builder().bulkhead("reports", |b| b.max_concurrent_calls(1)).build().unwrap();
    let inventory = ResilientInventory::new(Backend, &registry).unwrap();
    assert!(matches!(inventory.stock("sku"), Err(InventoryError::Unavailable)));
    inventory.reserve("sku", 1).await.unwrap();
    send(inventory.release("sku".to_owned())).await.unwrap();
    assert_eq!(inventory.report().unwrap(), "");
    assert_eq!(registry.snapshot().bulkheads().len(), 4);
}
