use std::future::Future;

use resilience4cata::{Registry, resilient};

#[resilient]
pub trait Inventory: Send + Sync {
    #[retry(max_attempts = 3, delay = "100ms")]
    fn stock(&self, sku: &str) -> impl Future<Output = Result<u32, String>> + Send;

    #[retry]
    fn reserve<'a>(&'a self, sku: &'a str, units: u32) -> impl Future<Output = Result<(), String>> + Send + 'a;
}

struct Backend;

impl Inventory for Backend {
    fn stock(&self, _sku: &str) -> impl Future<Output = Result<u32, String>> + Send {
        async { Ok(7) }
    }

    fn reserve<'a>(&'a self, _sku: &'a str, _units: u32) -> impl Future<Output = Result<(), String>> + Send + 'a {
        async { Ok(()) }
    }
}

fn assert_send<F: Future + Send>(future: F) -> F {
    future
}

/// Generic code sees the trait's promise: the wrapper's futures are `Send` too.
fn spawn_stock<I: Inventory + 'static>(inventory: std::sync::Arc<I>) -> tokio::task::JoinHandle<Result<u32, String>> {
    tokio::spawn(async move { inventory.stock("sku-1").await })
}

#[tokio::main]
async fn main() {
    let registry = Registry::builder().build().unwrap();
    let inventory = std::sync::Arc::new(ResilientInventory::new(Backend, &registry).unwrap());
    assert_eq!(assert_send(inventory.stock("sku-1")).await, Ok(7));
    assert_eq!(assert_send(inventory.reserve("sku-1", 2)).await, Ok(()));
    assert_eq!(spawn_stock(inventory).await.unwrap(), Ok(7));
}
