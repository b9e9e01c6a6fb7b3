//! The shared bulkhead's task, on the store's thread: takes slots from the fleet, returns the
//! surplus, and renews the held ones every `lease_ttl / 3`.

use std::sync::{Arc, LazyLock, Weak};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use redis::Script;
use resilience4cata::shared::SlotPool;

use crate::conn::{Conn, Link, backoff};

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
    mut connection: Link,
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
            redis::cmd("ZREM").arg(key).arg(&gone).query_async::<i64>(&mut connection).await?;
        }
    }
    if renew && !held.members.is_empty() {
        let mut call = RENEW.key(key);
        call.arg(ttl).arg(&held.members);
        let lost: Vec<String> = call.invoke_async(&mut connection).await?;
        if !lost.is_empty() {
            held.members.retain(|m| !lost.contains(m));
            pool.lost(u32::try_from(lost.len()).unwrap_or(u32::MAX));
        }
    }
    if pool.spare() <= pool.lease() / 2 {
        let mut call = ACQUIRE.key(key);
        call.arg(pool.max_concurrent_calls()).arg(pool.wanted_slots()).arg(ttl).arg(&held.prefix).arg(held.next);
        let granted: u32 = call.invoke_async(&mut connection).await?;
        held.members.extend((0..u64::from(granted)).map(|i| format!("{}{}", held.prefix, held.next + i)));
        held.next += u64::from(granted);
        pool.grant(granted);
    }
    Ok(())
}

/// Keeps `pool`'s fleet slots until the instance is dropped; degrades it while Redis cannot be
/// reached and retries in the background (10 ms, doubling to 1 s).
pub(crate) async fn keep(pool: Arc<SlotPool>, conn: Arc<Conn>, key: String, timeout: Duration) {
    let renew_every = pool.lease_ttl() / 3;
    let pool: Weak<SlotPool> = Arc::downgrade(&pool);
    let mut held = Held { prefix: process_prefix(), members: Vec::new(), next: 0 };
    let mut renewed = Instant::now();
    let mut failures = 0;
    loop {
        let Some(p) = pool.upgrade() else {
            if !held.members.is_empty() {
                let mut zrem = redis::cmd("ZREM");
                zrem.arg(&key).arg(&held.members);
                let zrem = &zrem;
                let _ = conn.call(timeout, |mut c| async move { zrem.query_async::<i64>(&mut c).await }).await;
            }
            return;
        };
        if !p.is_degraded() {
            let _ = tokio::time::timeout(renew_every.min(Duration::from_secs(1)), p.wanted()).await;
        }
        // While degraded every round asks Redis something (renewing the held slots, or taking
        // some), so a round that had nothing to do never counts as the store being back.
        let renew = renewed.elapsed() >= renew_every || p.is_degraded();
        let outcome = conn.call_once(timeout, |c| round(&p, c, &key, &mut held, renew)).await;
        match outcome {
            Ok(()) => {
                if renew {
                    renewed = Instant::now();
                }
                failures = 0;
                p.recover();
            }
            Err(_) => {
                p.degrade();
                drop(p);
                failures += 1;
                tokio::time::sleep(backoff(failures)).await;
            }
        }
    }
}
