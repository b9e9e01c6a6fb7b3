//! The shared bulkhead's task, on the store's thread: takes slots from the fleet, returns the
//! surplus, and renews the held ones every `lease_ttl / 3`.

use std::sync::{Arc, LazyLock, Weak};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use redis::Script;
use redis::aio::ConnectionManager;
use resilience4cata::shared::SlotPool;

/// `scripts/bulkhead_acquire.lua`.
pub(crate) static ACQUIRE: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("../scripts/bulkhead_acquire.lua")));
/// `scripts/bulkhead_renew.lua`.
pub(crate) static RENEW: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("../scripts/bulkhead_renew.lua")));

/// This process's members' prefix: unique per store task.
fn process_prefix() -> String {
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    format!("{:x}-{:x}:", std::process::id(), nanos)
}

/// The slots this process holds, by member.
struct Held {
    prefix: String,
    members: Vec<String>,
    next: u64,
}

/// One round: return the surplus, renew when due, take slots when short.
async fn round(
    pool: &SlotPool,
    connection: &mut ConnectionManager,
    key: &str,
    held: &mut Held,
    renew: bool,
) -> redis::RedisResult<()> {
    let ttl = u64::try_from(pool.lease_ttl().as_millis()).unwrap_or(u64::MAX);
    let surplus = pool.surplus();
    if surplus > 0 {
        let n = pool.returned(surplus) as usize;
        let gone = held.members.split_off(held.members.len().saturating_sub(n));
        if !gone.is_empty() {
            redis::cmd("ZREM").arg(key).arg(&gone).query_async::<i64>(connection).await?;
        }
    }
    if renew && !held.members.is_empty() {
        let mut call = RENEW.key(key);
        call.arg(ttl).arg(&held.members);
        let lost: Vec<String> = call.invoke_async(connection).await?;
        if !lost.is_empty() {
            held.members.retain(|m| !lost.contains(m));
            pool.lost(u32::try_from(lost.len()).unwrap_or(u32::MAX));
        }
    }
    if pool.spare() <= pool.lease() / 2 {
        let mut call = ACQUIRE.key(key);
        call.arg(pool.max_concurrent_calls()).arg(pool.wanted_slots()).arg(ttl).arg(&held.prefix).arg(held.next);
        let granted: u32 = call.invoke_async(connection).await?;
        held.members.extend((0..u64::from(granted)).map(|i| format!("{}{}", held.prefix, held.next + i)));
        held.next += u64::from(granted);
        pool.grant(granted);
    }
    Ok(())
}

/// Keeps `pool`'s fleet slots until the instance is dropped; degrades it while Redis cannot be
/// reached and retries in the background.
pub(crate) async fn keep(pool: Arc<SlotPool>, mut connection: ConnectionManager, key: String, timeout: Duration) {
    let renew_every = pool.lease_ttl() / 3;
    let pool: Weak<SlotPool> = Arc::downgrade(&pool);
    let mut held = Held { prefix: process_prefix(), members: Vec::new(), next: 0 };
    let mut renewed = Instant::now();
    let mut backoff = Duration::from_millis(10);
    loop {
        let Some(p) = pool.upgrade() else {
            if !held.members.is_empty() {
                let _ = tokio::time::timeout(
                    timeout,
                    redis::cmd("ZREM").arg(&key).arg(&held.members).query_async::<i64>(&mut connection),
                )
                .await;
            }
            return;
        };
        if !p.is_degraded() {
            let _ = tokio::time::timeout(renew_every.min(Duration::from_secs(1)), p.wanted()).await;
        }
        let renew = renewed.elapsed() >= renew_every;
        match tokio::time::timeout(timeout, round(&p, &mut connection, &key, &mut held, renew)).await {
            Ok(Ok(())) => {
                if renew {
                    renewed = Instant::now();
                }
                backoff = Duration::from_millis(10);
                p.recover();
            }
            _ => {
                p.degrade();
                drop(p);
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(1));
            }
        }
    }
}
