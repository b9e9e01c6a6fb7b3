//! The shared rate limiter's refill task: one per instance, on the store's thread.

use std::sync::{Arc, LazyLock, Weak};
use std::time::Duration;

use redis::Script;
use redis::aio::ConnectionManager;
use resilience4cata::shared::LeasePool;

/// `scripts/rate_limiter.lua`, hashed once (run with `EVALSHA`, loaded again only if Redis lost
/// it, e.g. after a restart).
pub(crate) static SCRIPT: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("../scripts/rate_limiter.lua")));

/// The longest pause between two attempts to reach Redis while degraded.
const MAX_BACKOFF: Duration = Duration::from_secs(1);

/// The script's constants for one limiter: the emission interval and the burst tolerance (one
/// lease), in microseconds.
pub(crate) fn constants(pool: &LeasePool) -> (u64, u64) {
    let period = u64::try_from(pool.period().as_micros()).unwrap_or(u64::MAX);
    let interval = period.div_ceil(u64::from(pool.permits().max(1))).max(1);
    (interval, interval.saturating_mul(u64::from(pool.lease())))
}

/// One lease request: `(granted, retry_after)`, or why Redis did not answer in time.
pub(crate) async fn lease(
    connection: &mut ConnectionManager,
    key: &str,
    (interval, tolerance): (u64, u64),
    wanted: u32,
    timeout: Duration,
) -> Result<(u32, Duration), String> {
    let mut invocation = SCRIPT.key(key);
    invocation.arg(interval).arg(tolerance).arg(wanted);
    match tokio::time::timeout(timeout, invocation.invoke_async::<(u32, u64)>(connection)).await {
        Ok(Ok((granted, retry_us))) => Ok((granted, Duration::from_micros(retry_us))),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err(format!("no answer within {timeout:?}")),
    }
}

/// Refills `pool` whenever it asks, until the instance is dropped. While Redis cannot be reached
/// the pool is degraded and this retries with a growing pause (up to a second), so recovery
/// happens in the background.
pub(crate) async fn refill(pool: Arc<LeasePool>, mut connection: ConnectionManager, key: String, timeout: Duration) {
    let constants = constants(&pool);
    let pool: Weak<LeasePool> = Arc::downgrade(&pool);
    let mut backoff = Duration::from_millis(10);
    loop {
        let Some(pool) = pool.upgrade() else { return };
        if !pool.is_degraded() {
            // Wake now and then to notice a dropped instance.
            if tokio::time::timeout(Duration::from_secs(1), pool.wanted()).await.is_err() {
                continue;
            }
        }
        match lease(&mut connection, &key, constants, pool.wanted_permits(), timeout).await {
            Ok((granted, retry_after)) => {
                backoff = Duration::from_millis(10);
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
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        }
    }
}
