//! The shared circuit breaker's tasks, on the store's thread: one publishes this process's Opens
//! and claims half-open probes, one listens to the fleet's Opens (pub/sub).

use std::sync::{Arc, LazyLock, Weak};
use std::time::Duration;

use futures_util::StreamExt;
use redis::Script;
use redis::aio::ConnectionManager;
use resilience4cata::shared::BreakerLink;

/// `scripts/breaker_open.lua`: set the expiring Open key and publish.
pub(crate) static OPEN: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("../scripts/breaker_open.lua")));
/// `scripts/breaker_probes.lua`: claim half-open probes against the fleet-wide cap.
pub(crate) static PROBES: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("../scripts/breaker_probes.lua")));

/// The keys of one breaker: the Open key (also the pub/sub channel) and the probe round.
#[derive(Clone)]
pub(crate) struct Keys {
    pub(crate) open: String,
    pub(crate) probes: String,
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)
}

/// Publishes this process's Opens and claims probes when the breaker goes half-open.
pub(crate) async fn publish(link: Arc<BreakerLink>, mut connection: ConnectionManager, keys: Keys, timeout: Duration) {
    let wait = millis(link.wait_in_open());
    let link: Weak<BreakerLink> = Arc::downgrade(&link);
    loop {
        let Some(l) = link.upgrade() else { return };
        let Ok(opened) = tokio::time::timeout(Duration::from_secs(1), l.work()).await else { continue };
        if opened {
            let mut call = OPEN.key(&keys.open);
            call.key(&keys.probes).arg(wait).arg(&keys.open);
            match tokio::time::timeout(timeout, call.invoke_async::<i64>(&mut connection)).await {
                Ok(Ok(_)) => l.recover(),
                _ => l.degrade(), // the Open stays local; the listener task reconnects
            }
            continue;
        }
        // Half-open: claim probes; with none granted, claim again when the round expires, for as
        // long as the breaker is still half-open without probes.
        loop {
            let mut call = PROBES.key(&keys.probes);
            call.arg(l.probes_wanted()).arg(l.permitted_calls_in_half_open()).arg(wait);
            match tokio::time::timeout(timeout, call.invoke_async::<(u32, u64)>(&mut connection)).await {
                Ok(Ok((granted, left_ms))) => {
                    l.recover();
                    l.grant_probes(granted);
                    if granted > 0 {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(left_ms.clamp(10, 60_000))).await;
                    if !l.needs_probes() {
                        break;
                    }
                }
                _ => {
                    l.degrade(); // probes capped locally until the store answers
                    break;
                }
            }
        }
    }
}

/// Listens to the fleet's Opens: subscribes to the breaker's channel, applies an Open still in
/// force on (re)subscribing, and reconnects in the background when Redis goes away.
pub(crate) async fn listen(
    link: Arc<BreakerLink>,
    client: redis::Client,
    mut connection: ConnectionManager,
    keys: Keys,
    timeout: Duration,
) {
    let link: Weak<BreakerLink> = Arc::downgrade(&link);
    let mut backoff = Duration::from_millis(10);
    loop {
        if link.strong_count() == 0 {
            return;
        }
        let subscribed = tokio::time::timeout(timeout.max(Duration::from_millis(250)), async {
            let mut pubsub = client.get_async_pubsub().await?;
            pubsub.subscribe(&keys.open).await?;
            Ok::<_, redis::RedisError>(pubsub)
        })
        .await;
        let Ok(Ok(mut pubsub)) = subscribed else {
            if let Some(l) = link.upgrade() {
                l.degrade();
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(Duration::from_secs(1));
            continue;
        };
        backoff = Duration::from_millis(10);
        // An Open published while this process was not listening is still in the key.
        let left =
            tokio::time::timeout(timeout, redis::cmd("PTTL").arg(&keys.open).query_async::<i64>(&mut connection)).await;
        let Some(l) = link.upgrade() else { return };
        match left {
            Ok(Ok(ms)) => {
                l.recover();
                if ms > 0 {
                    l.open_remotely(Duration::from_millis(ms.unsigned_abs()));
                }
            }
            _ => l.degrade(),
        }
        drop(l);
        let mut messages = pubsub.on_message();
        loop {
            let next = tokio::time::timeout(Duration::from_secs(1), messages.next()).await;
            let Some(l) = link.upgrade() else { return };
            match next {
                Err(_) => continue, // quiet: check the instance is still alive
                Ok(None) => {
                    l.degrade(); // the connection is gone
                    break;
                }
                Ok(Some(message)) => {
                    let wait: u64 = message.get_payload().unwrap_or(0);
                    if wait > 0 {
                        l.open_remotely(Duration::from_millis(wait));
                    }
                }
            }
        }
    }
}
