//! The main demo: a flaky inventory service wrapped once, called through the wrapper.
//!
//! Run it with `cargo run --example quickstart`. It prints every retry event as it happens, then the
//! registry's snapshot.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use resilience4cata::prelude::*;

/// What the inventory service can fail with.
#[derive(Debug)]
pub enum InventoryError {
    /// The service answered 503.
    Unavailable,
    /// The SKU does not exist: retrying will not help.
    UnknownSku,
}

#[resilient]
pub trait InventoryApi {
    /// Units in stock; retried up to 4 attempts on `Unavailable`, never on `UnknownSku`.
    #[retry(max_attempts = 4, delay = "20ms", jitter = None, abort_on = InventoryError::UnknownSku)]
    fn stock(&self, sku: &str) -> Result<u32, InventoryError>;
}

/// An in-process stand-in for a remote service that fails two calls out of three.
struct FlakyWarehouse {
    calls: AtomicU32,
}

impl InventoryApi for FlakyWarehouse {
    fn stock(&self, sku: &str) -> Result<u32, InventoryError> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        println!("  warehouse: call #{n} for {sku}");
        if sku == "sku-404" {
            Err(InventoryError::UnknownSku)
        } else if !n.is_multiple_of(3) {
            Err(InventoryError::Unavailable)
        } else {
            Ok(12)
        }
    }
}

fn main() -> Result<(), RegistryError> {
    let registry = Registry::builder()
        .listen(|e: &RetryEvent| match e {
            RetryEvent::Retrying { attempt, delay, .. } => {
                println!("  retry: attempt {attempt} failed, next in {delay:?}")
            }
            RetryEvent::GaveUp { attempts, reason, .. } => println!("  retry: gave up after {attempts} ({reason:?})"),
            other => println!("  retry: {other:?}"),
        })
        .build()?;
    let inventory = ResilientInventoryApi::new(FlakyWarehouse { calls: AtomicU32::new(0) }, &registry)?;

    for sku in ["sku-1", "sku-2", "sku-404"] {
        println!("stock({sku}):");
        let started = std::time::Instant::now();
        let result = inventory.stock(sku);
        println!("  -> {result:?} in {:?}", round(started.elapsed()));
    }

    println!("\nsnapshot:");
    for retry in registry.snapshot().retries() {
        let c = &retry.config;
        println!(
            "  {}: max_attempts={} delay={:?} backoff={:?} jitter={:?} budget={:?}",
            retry.instance, c.max_attempts, c.delay, c.backoff, c.jitter, retry.budget
        );
    }
    Ok(())
}

fn round(d: Duration) -> Duration {
    Duration::from_millis(d.as_millis() as u64)
}
