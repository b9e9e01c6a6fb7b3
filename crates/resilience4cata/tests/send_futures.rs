//! SPEC §3: an `async fn` of a `#[resilient]` trait is a `Send` future, so generic code can spawn a
//! call through `impl Api` (the wrapper included) without knowing the implementation.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use resilience4cata::testing::{self, ManualClock};
use resilience4cata::{Jitter, resilient};

#[resilient]
pub trait Inventory {
    #[retry(max_attempts = 3, delay = "100ms")]
    async fn stock(&self, sku: &str) -> Result<u32, String>;

    async fn name(&self) -> String;
}

struct Flaky(AtomicU32);

impl Inventory for Flaky {
    async fn stock(&self, sku: &str) -> Result<u32, String> {
        tokio::task::yield_now().await;
        match self.0.fetch_add(1, Ordering::SeqCst) {
            0 => Err(format!("{sku}: unavailable")),
            n => Ok(n),
        }
    }

    async fn name(&self) -> String {
        "flaky".into()
    }
}

/// Knows nothing of the wrapper: only that `A` implements the trait.
async fn spawn_stock(api: Arc<impl Inventory + Send + Sync + 'static>) -> Result<u32, String> {
    tokio::spawn(async move { api.stock("sku-1").await }).await.expect("the task ran")
}

async fn spawn_name(api: Arc<impl Inventory + Send + Sync + 'static>) -> String {
    tokio::spawn(async move { api.name().await }).await.expect("the task ran")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_generic_function_spawns_calls_through_the_wrapper() {
    let clock = ManualClock::new();
    let registry = testing::registry(&clock).retry_defaults(|r| r.jitter(Jitter::None)).build().unwrap();
    let wrapper = Arc::new(ResilientInventory::new(Flaky(AtomicU32::new(0)), &registry).unwrap());
    assert_eq!(spawn_stock(Arc::clone(&wrapper)).await, Ok(1)); // retried once, on another thread
    assert_eq!(clock.elapsed(), std::time::Duration::from_millis(100));
    assert_eq!(spawn_name(Arc::clone(&wrapper)).await, "flaky");
    assert_eq!(wrapper.delegate().0.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn the_plain_implementation_spawns_too() {
    let backend = Arc::new(Flaky(AtomicU32::new(1)));
    assert_eq!(spawn_stock(backend).await, Ok(1));
}
