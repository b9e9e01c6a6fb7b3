//! The shared rate limiter's refill task: one per instance, on the store's thread.

use std::sync::{Arc, LazyLock, Weak};
use std::time::Duration;

use redis::Script;
use resilience4cata::shared::LeasePool;

use crate::conn::{Conn, backoff};

/// `scripts/rate_limiter.lua`, hashed once (run with `EVALSHA`, loaded again only if Redis lost
/// it, e.g. after a restart).
pub(crate) static SCRIPT: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("../scripts/rate_limiter.lua")));

/// The script's constants for one limiter: the emission interval and the burst tolerance (one
/// lease), in microseconds.
pub(crate) fn constants(pool: &LeasePool) -> (u64, u64) {
    let period = u64::try_from(pool.period().as_micros()).unwrap_or(u64::MAX);
    let interval = period.div_ceil(u64::from(pool.permits().max(1))).max(1);
    (interval, interval.saturating_mul(u64::from(pool.lease())))
}

/// One lease request: `(granted, retry_after)`, or why Redis did not answer in time.
pub(crate) async fn lease(
    conn: &Conn,
    key: &str,
    (interval, tolerance): (u64, u64),
    wanted: u32,
    timeout: Duration,
) -> Result<(u32, Duration), String> {
    let mut invocation = SCRIPT.key(key);
    invocation.arg(interval).arg(tolerance).arg(wanted);
    let invocation = &invocation;
    let (granted, retry_us) =
        conn.call(timeout, |mut c| async move { invocation.invoke_async::<(u32, u64)>(&mut c).await }).await?;
    Ok((granted, Duration::from_micros(retry_us)))
}

/// Refills `pool` whenever it asks, until the instance is dropped. While Redis cannot be reached
/// the pool is degraded and this retries after 10 ms, doubling up to a second, so recovery
/// happens in the background within a second of Redis answering again.
pub(crate) async fn refill(pool: Arc<LeasePool>, conn: Arc<Conn>, key: String, timeout: Duration) {
    let constants = constants(&pool);
    let pool: Weak<LeasePool> = Arc::downgrade(&pool);
    let mut failures = 0;
    loop {
        let Some(pool) = pool.upgrade() else { return };
        if !pool.is_degraded() {
            // Wake now and then to notice a dropped instance.
            if tokio::time::timeout(Duration::from_secs(1), pool.wanted()).await.is_err() {
                continue;
            }
        }
        if Arc::strong_count(&pool) == 1 {
            // Only this task holds the pool: its instance (or its key, evicted at rest) is gone,
            // and a permit leased now would be taken from the fleet for nobody.
            return;
        }
        match lease(&conn, &key, constants, pool.wanted_permits(), timeout).await {
            Ok((granted, retry_after)) => {
                failures = 0;
                pool.recover();
                pool.grant(granted, retry_after);
                if granted == 0 {
                    // The fleet is out of permits: ask again when the next one conforms.
                    drop(pool);
                    tokio::time::sleep(retry_after.min(Duration::from_secs(1))).await;
                }
            }
            Err(_) => {
                pool.degrade();
                drop(pool);
                failures += 1;
                tokio::time::sleep(backoff(failures)).await;
            }
        }
    }
}
