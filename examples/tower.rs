//! A `tower::service_fn` service behind a pipeline's layer: the inventory backend fails twice, the
//! layer retries it 100 ms and then 200 ms later, on a manual clock so the example runs at once.
//!
//! Run with `cargo run -p resilience4cata --example tower --features tower,testing`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use resilience4cata::retry::Jitter;
use resilience4cata::testing::{self, ManualClock};
use resilience4cata::{Pipeline, RetryEvent};
use tower::{ServiceBuilder, ServiceExt, service_fn};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let clock = ManualClock::new();
    let registry = testing::registry(&clock)
        .retry_defaults(|r| r.jitter(Jitter::None))
        .listen(|e: &RetryEvent| println!("event: {e:?}"))
        .build()?;

    let inventory = Pipeline::builder(&registry, "inventory")
        .retry_with(|r| r.max_attempts(3).delay(Duration::from_millis(100)))
        .build::<u32, std::io::Error>()?;

    let calls = Arc::new(AtomicU32::new(0));
    let seen = Arc::clone(&calls);
    let backend = service_fn(move |sku: String| {
        let n = seen.fetch_add(1, Ordering::SeqCst) + 1;
        async move { if n <= 2 { Err(std::io::Error::other(format!("{sku}: inventory down"))) } else { Ok(7) } }
    });

    let service = ServiceBuilder::new().layer(inventory.layer()).service(backend);
    let units = service.oneshot("sku-1".to_owned()).await?;

    println!("{units} units after {} calls and {:?}", calls.load(Ordering::SeqCst), clock.elapsed());
    assert_eq!((units, calls.load(Ordering::SeqCst), clock.elapsed()), (7, 3, Duration::from_millis(300)));
    Ok(())
}
