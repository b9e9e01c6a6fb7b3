//! The shared circuit breaker's tasks, on the store's thread: one publishes this process's
//! transitions (Opens, Closes after successful probes) and claims half-open probes, one listens to
//! the fleet's (pub/sub) and checks the store is still there while the channel is quiet.

use std::sync::{Arc, LazyLock, Weak};
use std::time::Duration;

use futures_util::StreamExt;
use redis::Script;
use resilience4cata::shared::{BreakerLink, BreakerWork};

use crate::conn::{Conn, backoff};

/// `scripts/breaker_open.lua`: set the expiring Open key and publish.
pub(crate) static OPEN: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("../scripts/breaker_open.lua")));
/// `scripts/breaker_close.lua`: drop the Open key and the probe round, and publish.
pub(crate) static CLOSE: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("../scripts/breaker_close.lua")));
/// `scripts/breaker_probes.lua`: claim half-open probes against the fleet-wide cap.
pub(crate) static PROBES: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("../scripts/breaker_probes.lua")));

/// The keys of one breaker: the Open key (also the pub/sub channel) and the probe round, and this
/// process's sender id (its own messages come back on the channel and are skipped).
#[derive(Clone)]
pub(crate) struct Keys {
    pub(crate) open: String,
    pub(crate) probes: String,
    pub(crate) sender: Arc<str>,
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)
}

/// A message on a breaker's channel.
#[derive(Debug, PartialEq, Eq)]
enum Message<'a> {
    Open(Duration, &'a str),
    Closed(&'a str),
}

fn parse(payload: &str) -> Option<Message<'_>> {
    let mut words = payload.split(' ');
    match (words.next()?, words.next(), words.next()) {
        ("open", Some(ms), Some(sender)) => Some(Message::Open(Duration::from_millis(ms.parse().ok()?), sender)),
        ("closed", Some(sender), None) => Some(Message::Closed(sender)),
        (ms, None, None) => Some(Message::Open(Duration::from_millis(ms.parse().ok()?), "")),
        _ => None,
    }
}

/// Publishes one transition; `Err` when the store did not answer in time.
async fn send(conn: &Conn, keys: &Keys, work: BreakerWork, timeout: Duration) -> Result<(), String> {
    match work {
        BreakerWork::Open(left) => {
            let ms = millis(left);
            let mut call = OPEN.key(&keys.open);
            call.key(&keys.probes).arg(ms).arg(&keys.open).arg(format!("open {ms} {}", keys.sender));
            let call = &call;
            conn.call(timeout, |mut c| async move { call.invoke_async::<i64>(&mut c).await }).await.map(drop)
        }
        BreakerWork::Closed => {
            let mut call = CLOSE.key(&keys.open);
            call.key(&keys.probes).arg(&keys.open).arg(format!("closed {}", keys.sender));
            let call = &call;
            conn.call(timeout, |mut c| async move { call.invoke_async::<i64>(&mut c).await }).await.map(drop)
        }
        _ => Ok(()),
    }
}

/// Publishes this process's transitions and claims probes when the breaker goes half-open. A
/// transition the store could not take stays with the link and is sent again after 10 ms,
/// doubling to 1 s (an Open only while still current).
pub(crate) async fn publish(link: Arc<BreakerLink>, conn: Arc<Conn>, keys: Keys, timeout: Duration) {
    let wait = millis(link.wait_in_open());
    let link: Weak<BreakerLink> = Arc::downgrade(&link);
    let mut failures = 0;
    loop {
        let Some(l) = link.upgrade() else { return };
        let Ok(work) = tokio::time::timeout(Duration::from_secs(1), l.work()).await else { continue };
        if work != BreakerWork::Probes {
            match send(&conn, &keys, work, timeout).await {
                Ok(()) => {
                    failures = 0;
                    l.published();
                }
                Err(_) => {
                    l.unpublished(work);
                    drop(l);
                    failures += 1;
                    tokio::time::sleep(backoff(failures)).await;
                }
            }
            continue;
        }
        // Half-open: claim probes; with none granted, claim again when the round expires, for as
        // long as the breaker is still half-open without probes.
        loop {
            let mut call = PROBES.key(&keys.probes);
            call.arg(l.probes_wanted()).arg(l.permitted_calls_in_half_open()).arg(wait);
            let call = &call;
            match conn.call(timeout, |mut c| async move { call.invoke_async::<(u32, u64)>(&mut c).await }).await {
                Ok((granted, left_ms)) => {
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
                Err(_) => {
                    l.degrade(); // probes capped locally until the store answers
                    break;
                }
            }
        }
    }
}

/// Listens to the fleet's transitions: subscribes to the breaker's channel (on a cluster, at the
/// master that holds the breaker's slot), applies an Open still
/// in force on (re)subscribing, checks the store every quiet second (`PTTL` of the Open key: a
/// store that stopped answering degrades the link and the channel is subscribed again), and
/// reconnects in the background (10 ms, doubling to 1 s) when Redis goes away.
pub(crate) async fn listen(link: Arc<BreakerLink>, conn: Arc<Conn>, keys: Keys, timeout: Duration) {
    let link: Weak<BreakerLink> = Arc::downgrade(&link);
    // A subscription that cannot be made in this time is tried again after the backoff: so the
    // listener is subscribed again at most about a second (the longest pause) after Redis is back.
    let connect_budget = timeout.max(Duration::from_millis(100));
    let mut failures = 0;
    loop {
        if link.strong_count() == 0 {
            return;
        }
        let subscribed = tokio::time::timeout(connect_budget, async {
            // On a cluster: the master of the channel's slot (the breaker's keys' slot).
            let client = conn.pubsub_client(&keys.open).await?;
            let mut pubsub = client.get_async_pubsub().await?;
            pubsub.subscribe(&keys.open).await?;
            Ok::<_, redis::RedisError>(pubsub)
        })
        .await;
        let Ok(Ok(mut pubsub)) = subscribed else {
            if let Some(l) = link.upgrade() {
                l.degrade();
            }
            failures += 1;
            tokio::time::sleep(backoff(failures)).await;
            continue;
        };
        // An Open published while this process was not listening is still in the key.
        let Some(l) = link.upgrade() else { return };
        if !check(&l, &conn, &keys, timeout, true).await {
            failures += 1;
            drop(l);
            tokio::time::sleep(backoff(failures)).await;
            continue;
        }
        failures = 0;
        drop(l);
        let mut messages = pubsub.on_message();
        loop {
            let next = tokio::time::timeout(Duration::from_secs(1), messages.next()).await;
            let Some(l) = link.upgrade() else { return };
            match next {
                Err(_) => {
                    // Quiet: is the store still there? (A channel to a server that stopped
                    // answering says nothing.)
                    if !check(&l, &conn, &keys, timeout, false).await {
                        break;
                    }
                }
                Ok(None) => {
                    l.degrade(); // the connection is gone
                    break;
                }
                Ok(Some(message)) => {
                    let payload: String = message.get_payload().unwrap_or_default();
                    match parse(&payload) {
                        Some(Message::Open(wait, sender)) if sender != &*keys.sender && !wait.is_zero() => {
                            l.open_remotely(wait)
                        }
                        Some(Message::Closed(sender)) if sender != &*keys.sender => l.close_remotely(),
                        _ => {}
                    }
                }
            }
        }
    }
}

/// Reads the Open key's time to live: the store answers (the link recovers; on `apply`, an Open
/// still in force is applied here) or not (the link degrades). Whether it answered.
async fn check(l: &BreakerLink, conn: &Conn, keys: &Keys, timeout: Duration, apply: bool) -> bool {
    let key = keys.open.as_str();
    let left =
        conn.call(timeout, |mut c| async move { redis::cmd("PTTL").arg(key).query_async::<i64>(&mut c).await }).await;
    match left {
        Ok(ms) => {
            if !l.has_pending() {
                l.recover();
            }
            if apply && ms > 0 {
                l.open_remotely(Duration::from_millis(ms.unsigned_abs()));
            }
            true
        }
        Err(_) => {
            l.degrade();
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_parse_and_garbage_does_not() {
        assert_eq!(parse("open 1500 a-1"), Some(Message::Open(Duration::from_millis(1500), "a-1")));
        assert_eq!(parse("closed b-2"), Some(Message::Closed("b-2")));
        assert_eq!(parse("250"), Some(Message::Open(Duration::from_millis(250), "")));
        for garbage in ["", "open", "open x a", "closed", "closed a b", "shut a"] {
            assert_eq!(parse(garbage), None, "{garbage:?}");
        }
    }
}
