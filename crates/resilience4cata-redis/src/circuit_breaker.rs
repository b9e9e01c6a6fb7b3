//! The shared circuit breaker's tasks, on the store's thread: one publishes this process's
//! transitions (Opens, Closes after successful probes) and claims half-open probes, one listens to
//! the fleet's (pub/sub) and checks the store is still there while the channel is quiet.
//!
//! A keyed instance (SPEC §15) has one publishing task per key (each key's Open key and probe
//! round are its own) but one listener per instance and process: its keys share one channel
//! ([`Group`]), whose messages name the key, so a process with ten thousand keys holds one pub/sub
//! connection for them, not ten thousand.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};

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

/// The keys of one breaker: the Open key, the probe round, the pub/sub channel (the Open key
/// itself, unkeyed; the instance's channel for one key of a keyed instance, whose text `key` the
/// messages carry), and this process's sender id (its own messages come back on the channel and
/// are skipped).
#[derive(Clone)]
pub(crate) struct Keys {
    pub(crate) open: String,
    pub(crate) probes: String,
    pub(crate) channel: String,
    pub(crate) key: Option<Arc<str>>,
    pub(crate) sender: Arc<str>,
}

impl Keys {
    /// A message to the fleet: `<words> <sender>`, then ` <key text>` for one key of a keyed
    /// instance (last, as it may hold spaces).
    fn message(&self, words: &str) -> String {
        match &self.key {
            Some(key) => format!("{words} {} {key}", self.sender),
            None => format!("{words} {}", self.sender),
        }
    }
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

/// A message on a keyed instance's channel, and the key it names: `open <ms> <sender> <key>` or
/// `closed <sender> <key>` (the key text is the rest of the message, spaces and all).
fn parse_keyed(payload: &str) -> Option<(Message<'_>, &str)> {
    if let Some(rest) = payload.strip_prefix("open ") {
        let (ms, rest) = rest.split_once(' ')?;
        let (sender, key) = rest.split_once(' ')?;
        return Some((Message::Open(Duration::from_millis(ms.parse().ok()?), sender), key));
    }
    let (sender, key) = payload.strip_prefix("closed ")?.split_once(' ')?;
    Some((Message::Closed(sender), key))
}

/// Publishes one transition; `Err` when the store did not answer in time.
async fn send(conn: &Conn, keys: &Keys, work: BreakerWork, timeout: Duration) -> Result<(), String> {
    match work {
        BreakerWork::Open(left) => {
            let ms = millis(left);
            let mut call = OPEN.key(&keys.open);
            call.key(&keys.probes).arg(ms).arg(&keys.channel).arg(keys.message(&format!("open {ms}")));
            let call = &call;
            conn.call(timeout, |mut c| async move { call.invoke_async::<i64>(&mut c).await }).await.map(drop)
        }
        BreakerWork::Closed => {
            let mut call = CLOSE.key(&keys.open);
            call.key(&keys.probes).arg(&keys.channel).arg(keys.message("closed"));
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
    if keys.key.is_some() {
        // A new key of a keyed instance joins a listener that may have subscribed long ago: an
        // Open the fleet published for this key before is still in its key.
        check(&link, &conn, &keys.open, timeout, true).await;
    }
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
            let client = conn.pubsub_client(&keys.channel).await?;
            let mut pubsub = client.get_async_pubsub().await?;
            pubsub.subscribe(&keys.channel).await?;
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
        if !check(&l, &conn, &keys.open, timeout, true).await {
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
                    if !check(&l, &conn, &keys.open, timeout, false).await {
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
async fn check(l: &BreakerLink, conn: &Conn, key: &str, timeout: Duration, apply: bool) -> bool {
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

/// The keyed breakers of this process, one [`Group`] per keyed instance (by its channel).
#[derive(Clone, Default)]
pub(crate) struct Groups(Arc<Mutex<HashMap<String, Arc<Group>>>>);

/// The breakers of one keyed instance in this process, by key text, each with its Open key: one
/// subscription to the instance's channel serves them all ([`listen_group`]).
#[derive(Default)]
pub(crate) struct Group {
    breakers: Mutex<Members>,
}

/// A group's breakers: key text → (the key's link, its Open key).
type Members = HashMap<Arc<str>, (Weak<BreakerLink>, String)>;

impl Groups {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Group>>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Adds one key's breaker to its instance's group; the group when it is new (its listener is
    /// to be started), `None` when a listener already serves it.
    pub(crate) fn join(
        &self,
        channel: &str,
        key: Arc<str>,
        link: &Arc<BreakerLink>,
        open: String,
    ) -> Option<Arc<Group>> {
        let mut groups = self.lock();
        let mut new = None;
        let group = groups.entry(channel.to_owned()).or_insert_with(|| {
            let group = Arc::new(Group::default());
            new = Some(Arc::clone(&group));
            group
        });
        group.lock().insert(key, (Arc::downgrade(link), open));
        new
    }

    /// Drops `group` if none of its breakers is left (their keys were evicted, or the registry
    /// dropped): `true` when it is gone and its listener ends. Checked under the groups' lock, so
    /// a key that joins meanwhile either finds the group kept or starts a new one.
    fn leave_if_empty(&self, channel: &str, group: &Arc<Group>) -> bool {
        let mut groups = self.lock();
        if !group.live().is_empty() {
            return false;
        }
        if groups.get(channel).is_some_and(|g| Arc::ptr_eq(g, group)) {
            groups.remove(channel);
        }
        true
    }
}

impl Group {
    fn lock(&self) -> std::sync::MutexGuard<'_, Members> {
        self.breakers.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The breakers still alive, with their Open keys; the others are forgotten.
    fn live(&self) -> Vec<(Arc<BreakerLink>, String)> {
        let mut breakers = self.lock();
        breakers.retain(|_, (link, _)| link.strong_count() > 0);
        breakers.values().filter_map(|(link, open)| Some((link.upgrade()?, open.clone()))).collect()
    }

    /// The breaker of the key whose text is `key`, if this process has it.
    fn breaker(&self, key: &str) -> Option<Arc<BreakerLink>> {
        self.lock().get(key).and_then(|(link, _)| link.upgrade())
    }
}

/// Applies the fleet's Opens still in force to every breaker of `group` (on (re)subscribing);
/// whether the store answered for all of them.
async fn check_group(group: &Group, conn: &Conn, timeout: Duration) -> bool {
    let live = group.live();
    let checks = live.iter().map(|(link, open)| check(link, conn, open, timeout, true));
    futures_util::future::join_all(checks).await.into_iter().all(|answered| answered)
}

/// Whether the store still answers on the group's channel's node (a quiet second): every breaker
/// of the group recovers (unless it has a transition to publish) or degrades with it.
async fn ping_group(group: &Group, conn: &Conn, channel: &str, timeout: Duration) -> bool {
    let answered = conn
        .call(timeout, |mut c| async move { redis::cmd("PTTL").arg(channel).query_async::<i64>(&mut c).await })
        .await;
    for (link, _) in group.live() {
        match answered {
            Ok(_) if !link.has_pending() => link.recover(),
            Ok(_) => {}
            Err(_) => link.degrade(),
        }
    }
    answered.is_ok()
}

/// Listens to the fleet's transitions of a keyed instance's breakers: one subscription to the
/// instance's channel for every key this process has, each message applied to the key it names.
/// As [`listen`] does, it applies the Opens still in force on (re)subscribing, checks the store
/// every quiet second, and reconnects in the background (10 ms, doubling to 1 s). It ends when
/// the group has no breaker left (their keys evicted at rest, or the registry dropped).
pub(crate) async fn listen_group(group: Arc<Group>, groups: Groups, conn: Arc<Conn>, keys: Keys, timeout: Duration) {
    let channel = keys.channel.as_str();
    let connect_budget = timeout.max(Duration::from_millis(100));
    let mut failures = 0;
    loop {
        if groups.leave_if_empty(channel, &group) {
            return;
        }
        let subscribed = tokio::time::timeout(connect_budget, async {
            let client = conn.pubsub_client(channel).await?;
            let mut pubsub = client.get_async_pubsub().await?;
            pubsub.subscribe(channel).await?;
            Ok::<_, redis::RedisError>(pubsub)
        })
        .await;
        let Ok(Ok(mut pubsub)) = subscribed else {
            group.live().iter().for_each(|(link, _)| link.degrade());
            failures += 1;
            tokio::time::sleep(backoff(failures)).await;
            continue;
        };
        if !check_group(&group, &conn, timeout).await {
            failures += 1;
            tokio::time::sleep(backoff(failures)).await;
            continue;
        }
        failures = 0;
        let mut messages = pubsub.on_message();
        let mut pruned = Instant::now();
        loop {
            let next = tokio::time::timeout(Duration::from_secs(1), messages.next()).await;
            if pruned.elapsed() >= Duration::from_secs(1) {
                pruned = Instant::now();
                if groups.leave_if_empty(channel, &group) {
                    return;
                }
            }
            match next {
                Err(_) => {
                    if !ping_group(&group, &conn, channel, timeout).await {
                        break;
                    }
                }
                Ok(None) => {
                    group.live().iter().for_each(|(link, _)| link.degrade());
                    break;
                }
                Ok(Some(message)) => {
                    let payload: String = message.get_payload().unwrap_or_default();
                    apply(&group, &keys.sender, &payload);
                }
            }
        }
    }
}

/// Applies one message of a keyed instance's channel to the breaker of the key it names (if this
/// process has that key; another process's own messages only).
fn apply(group: &Group, me: &str, payload: &str) {
    let Some((message, key)) = parse_keyed(payload) else { return };
    let Some(link) = group.breaker(key) else { return };
    match message {
        Message::Open(wait, sender) if sender != me && !wait.is_zero() => link.open_remotely(wait),
        Message::Closed(sender) if sender != me => link.close_remotely(),
        _ => {}
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

    #[test]
    fn keyed_messages_name_their_key_spaces_and_all() {
        let open = parse_keyed("open 1500 a-1 (7, \"e u\")");
        assert_eq!(open, Some((Message::Open(Duration::from_millis(1500), "a-1"), "(7, \"e u\")")));
        assert_eq!(parse_keyed("closed b-2 \"h\""), Some((Message::Closed("b-2"), "\"h\"")));
        for garbage in ["", "open 1500 a-1", "open x a k", "closed b-2", "shut a k"] {
            assert_eq!(parse_keyed(garbage), None, "{garbage:?}");
        }
        let keys = Keys {
            open: "o".into(),
            probes: "p".into(),
            channel: "c".into(),
            key: Some(Arc::from("\"h\"")),
            sender: Arc::from("s-1"),
        };
        assert_eq!(
            parse_keyed(&keys.message("open 20")),
            Some((Message::Open(Duration::from_millis(20), "s-1"), "\"h\""))
        );
    }
}
