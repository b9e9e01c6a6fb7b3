//! The main demo: a flaky inventory service, wrapped once, called through the wrapper while it is
//! flaky, then down, then back. It shows the dependency retried, the breaker opening (calls refused at
//! once instead of piling retries on a failing service), and recovery through half-open probes.
//!
//! Run it with `cargo run --example quickstart`. Every event is printed as it happens, then the
//! registry's snapshot.

use std::sync::atomic::{AtomicU8, AtomicU32, Ordering};
use std::time::{Duration, Instant};

use resilience4cata::circuit_breaker::CircuitBreakerEvent;
use resilience4cata::prelude::*;

/// What the inventory service can fail with.
#[derive(Debug, ResilienceError)]
pub enum InventoryError {
    /// The service answered 503.
    Unavailable,
    /// The SKU does not exist: retrying will not help.
    UnknownSku,
    /// A policy refused the call (here: the breaker while it is open).
    #[rejection]
    Rejected(Rejection),
}

#[resilient]
pub trait InventoryApi {
    /// Units in stock. Retried on `Unavailable`, never on `UnknownSku`; every attempt passes the breaker.
    #[retry(max_attempts = 3, delay = "20ms", jitter = None, abort_on = InventoryError::UnknownSku)]
    #[circuit_breaker(
        window_size = 6,
        minimum_calls = 6,
        failure_rate_threshold = 50,
        wait_in_open = "300ms",
        permitted_calls_in_half_open = 2
    )]
    fn stock(&self, sku: &str) -> Result<u32, InventoryError>;
}

const FLAKY: u8 = 0;
const DOWN: u8 = 1;
const HEALTHY: u8 = 2;

/// An in-process stand-in for a remote service whose health we control.
struct Warehouse {
    mode: AtomicU8,
    calls: AtomicU32,
}

impl InventoryApi for Warehouse {
    fn stock(&self, sku: &str) -> Result<u32, InventoryError> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        let answer = match self.mode.load(Ordering::SeqCst) {
            _ if sku == "sku-404" => Err(InventoryError::UnknownSku),
            FLAKY if n % 2 == 1 => Err(InventoryError::Unavailable),
            DOWN => Err(InventoryError::Unavailable),
            _ => Ok(12),
        };
        println!("    warehouse call #{n}: {answer:?}");
        answer
    }
}

fn main() -> Result<(), RegistryError> {
    let registry = Registry::builder()
        .listen(|e: &RetryEvent| match e {
            RetryEvent::Retrying { attempt, delay, .. } => {
                println!("    retry: attempt {attempt} failed, next in {delay:?}")
            }
            RetryEvent::GaveUp { attempts, reason, .. } => println!("    retry: gave up after {attempts} ({reason:?})"),
            other => println!("    retry: {other:?}"),
        })
        .listen(|e: &CircuitBreakerEvent| {
            if let CircuitBreakerEvent::StateTransition { from, to, .. } = e {
                println!("    breaker: {from:?} -> {to:?}");
            }
        })
        .build()?;
    let warehouse = Warehouse { mode: AtomicU8::new(FLAKY), calls: AtomicU32::new(0) };
    let inventory = ResilientInventoryApi::new(warehouse, &registry)?;

    println!("1. The warehouse is flaky: retries hide it.");
    call(&inventory, "sku-1");
    call(&inventory, "sku-404");

    println!("\n2. The warehouse goes down: retries give up, the breaker opens, calls are refused at once.");
    inventory.delegate().mode.store(DOWN, Ordering::SeqCst);
    for _ in 0..3 {
        call(&inventory, "sku-1");
    }

    println!("\n3. The warehouse is back; after wait_in_open the breaker lets probes through and closes.");
    inventory.delegate().mode.store(HEALTHY, Ordering::SeqCst);
    std::thread::sleep(Duration::from_millis(320));
    for _ in 0..3 {
        call(&inventory, "sku-1");
    }

    println!("\nSnapshot:");
    let snapshot = registry.snapshot();
    for r in snapshot.retries() {
        println!(
            "  retry {}: max_attempts={} delay={:?} backoff={:?}",
            r.instance, r.config.max_attempts, r.config.delay, r.config.backoff
        );
    }
    for b in snapshot.circuit_breakers() {
        println!(
            "  breaker {}: {:?}, {} buffered, {} failed, {} refused while open",
            b.instance, b.state, b.buffered_calls, b.failed_calls, b.not_permitted_calls
        );
    }
    Ok(())
}

fn call(inventory: &ResilientInventoryApi<Warehouse>, sku: &str) {
    println!("  stock({sku}):");
    let started = Instant::now();
    let result = inventory.stock(sku);
    println!("  -> {result:?} in {} ms", started.elapsed().as_millis());
}
