// The README's tour as a user copies it, under `#![deny(warnings)]`: an `async fn` in a public
// `#[resilient]` trait raises no `async_fn_in_trait` warning, because it is desugared to
// `fn … -> impl Future<Output = …> + Send`.
#![deny(warnings)]

use resilience4cata::prelude::*;

#[derive(Debug, ResilienceError)]
pub enum InventoryError {
    Unavailable,
    UnknownSku,
    #[rejection]
    Rejected(Rejection),
}

#[resilient]
pub trait InventoryApi {
    #[retry(max_attempts = 3, delay = "100ms", abort_on = InventoryError::UnknownSku)]
    #[circuit_breaker(window_size = 20, minimum_calls = 10)]
    #[rate_limiter(permits = 100, period = "1s")]
    #[bulkhead(max_concurrent_calls = 8)]
    fn stock(&self, sku: &str) -> Result<u32, InventoryError>;

    #[retry]
    #[timeout(duration = "2s")]
    async fn reserve(&self, sku: &str, units: u32) -> Result<(), InventoryError>;

    async fn version(&self) -> u32 {
        1
    }
}

struct Backend;

impl InventoryApi for Backend {
    fn stock(&self, _sku: &str) -> Result<u32, InventoryError> {
        Ok(7)
    }
    async fn reserve(&self, _sku: &str, _units: u32) -> Result<(), InventoryError> {
        Ok(())
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), RegistryError> {
    let registry = Registry::builder().build()?;
    let inventory = std::sync::Arc::new(ResilientInventoryApi::new(Backend, &registry)?);
    assert_eq!(inventory.stock("sku-1").ok(), Some(7));
    let spawned = std::sync::Arc::clone(&inventory);
    let reserved = tokio::spawn(async move { spawned.reserve("sku-1", 2).await.is_ok() });
    assert!(reserved.await.unwrap());
    assert_eq!(inventory.version().await, 1);
    if let Err(InventoryError::Unavailable | InventoryError::UnknownSku | InventoryError::Rejected(_)) =
        inventory.reserve("sku-1", 1).await
    {
        unreachable!();
    }
    Ok(())
}
