//! The expansion is warning-free and documented, for crates that deny both.
#![deny(warnings, missing_docs, missing_debug_implementations, unused_qualifications, unused_results)]

use std::future::Future;

use resilience4cata::{Registry, Verdict, resilient};

/// Errors of the inventory.
#[derive(Debug, PartialEq)]
pub enum InventoryError {
    /// Try again.
    Unavailable,
}

fn classify(result: &Result<u32, InventoryError>) -> Verdict {
    if result.is_ok() { Verdict::Success } else { Verdict::Retry }
}

fn keep(units: u32) -> Result<u32, InventoryError> {
    Ok(units)
}

/// The inventory.
#[resilient]
#[retry(max_attempts = 2, delay = "0")]
pub trait Inventory: Send + Sync {
    /// Units in stock.
    #[retry(retry_on = InventoryError::Unavailable)]
    fn stock(&self, sku: &str) -> Result<u32, InventoryError>;

    /// Units in stock, asynchronously.
    #[retry(classifier = classify, on_exhausted_result = keep)]
    fn stock_async(&self, sku: String) -> impl Future<Output = Result<u32, InventoryError>> + Send;
}

#[derive(Debug)]
struct Backend;

impl Inventory for Backend {
    fn stock(&self, _sku: &str) -> Result<u32, InventoryError> {
        Ok(1)
    }

    fn stock_async(&self, _sku: String) -> impl Future<Output = Result<u32, InventoryError>> + Send {
        async { Ok(2) }
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let inventory = ResilientInventory::new(Backend, &Registry::builder().build().unwrap()).unwrap();
    assert_eq!(inventory.stock("a"), Ok(1));
    assert_eq!(inventory.stock_async("a".to_owned()).await, Ok(2));
}
