//! One keyed instance (SPEC §15): its id, its resolved configuration, the build context its keys'
//! states are made from, and its [`KeyedTable`]. The registry keeps it beside the instance
//! registered under the id (`registry/policies.rs`), to reach it from a live update, a snapshot
//! and a handle.

use std::any::Any;
use std::borrow::Borrow;
use std::fmt::Debug;
use std::hash::Hash;
use std::sync::{Arc, Mutex, PoisonError};

use super::keyed::{AtRest, KeyCounts, KeyRef, KeyedTable};
use super::{ConfigOf, Inner, PolicyKind};
use crate::events::{KeyUse, Publisher};
use crate::rejection::Rejection;

/// A policy kind whose instances can be keyed: the rate limiter, the breaker, the bulkhead and the
/// adaptive limit. Its facade is the per-key value of the table.
pub(crate) trait KeyedKind: PolicyKind + AtRest + Clone + Send + Sync {
    /// The facade's state.
    fn state(&self) -> &Arc<Self::State>;

    /// `max_keys` of a configuration.
    fn max_keys(config: &ConfigOf<Self>) -> u32;

    /// `key_metrics` of a configuration: a `key` label on each key's metrics.
    fn key_metrics(config: &ConfigOf<Self>) -> bool;

    /// A snapshot of the instance as a whole: `of` (its most recently served key's, where a
    /// refused call is not a use; the most recently looked-up key's if that one was forgotten or
    /// none was served yet; the registered instance's while it has no key) with the table's counts and the sums over keys
    /// (`keys`: every key's snapshot).
    fn whole(of: Self::Snapshot, counts: KeyCounts, keys: &[Self::Snapshot]) -> Self::Snapshot;
}

/// A keyed instance.
pub(crate) struct KeyedCore<P: PolicyKind> {
    pub(crate) instance: Arc<str>,
    inner: Arc<Inner>,
    /// The configuration new keys are made with; replaced by a live update under the table's
    /// new-key mutex.
    config: Mutex<ConfigOf<P>>,
    pub(crate) table: KeyedTable<P>,
}

impl<P: KeyedKind> KeyedCore<P> {
    /// A keyed instance of the registry whose build context is `inner`; its keys report their
    /// fleet outages together ([`Inner::grouped`]).
    pub(crate) fn new(instance: Arc<str>, inner: &Inner, config: ConfigOf<P>) -> Self {
        let table = KeyedTable::new(P::max_keys(&config));
        KeyedCore { instance, inner: Arc::new(inner.grouped()), config: Mutex::new(config), table }
    }

    /// The key's facade, held for the call; a new key is made (or refused, `KeysExhausted`).
    #[inline]
    pub(crate) fn for_key<Q>(&self, key: &Q) -> Result<KeyRef<'_, P>, Rejection>
    where
        Q: ?Sized + Hash + Eq + ToOwned,
        Q::Owned: Borrow<Q> + Hash + Eq + Debug + Send + Sync + 'static,
    {
        match self.table.get(key) {
            Some(held) => Ok(held),
            None => self.new_key(key),
        }
    }

    #[cold]
    fn new_key<Q>(&self, key: &Q) -> Result<KeyRef<'_, P>, Rejection>
    where
        Q: ?Sized + Hash + Eq + ToOwned,
        Q::Owned: Borrow<Q> + Hash + Eq + Debug + Send + Sync + 'static,
    {
        self.table
            .get_or_create(key, |text| self.make(text))
            .map_err(|_| Rejection::KeysExhausted { instance: Arc::clone(&self.instance) })
    }

    /// A new key's facade over its own state, made with the instance's configuration.
    fn make(&self, key: Arc<KeyUse>) -> P {
        let config = self.config().clone();
        let events = Publisher::keyed(&self.inner.listeners, &self.instance, key, P::key_metrics(&config));
        P::from_state(Arc::new(P::new_state(&self.inner, Arc::clone(&self.instance), config, events)))
    }

    fn config(&self) -> std::sync::MutexGuard<'_, ConfigOf<P>> {
        self.config.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A keyed instance as the registry reaches it for any policy kind: a live update, a snapshot.
pub(crate) trait KeyedView<P: PolicyKind>: Send + Sync {
    /// Applies a live update to every key and to the keys made from now on (SPEC §16: keyed
    /// instances keep their keys).
    #[cfg_attr(not(feature = "serde"), allow(dead_code))] // reached through a live update (feature `serde`)
    fn reconfigure(&self, config: &ConfigOf<P>);

    /// The instance as a whole (see [`KeyedKind::whole`]).
    fn snapshot(&self, registered: P::Snapshot) -> P::Snapshot;

    /// The keys, most recently used first (at most `n`), each with its text and its state.
    fn recent(&self, n: usize) -> Vec<(Arc<str>, Arc<P::State>)>;

    /// The state of the key whose text is `text`.
    fn by_text(&self, text: &str) -> Option<Arc<P::State>>;

    /// The view as `Any`, for the keyed constructor to find its `KeyedCore<P>` again.
    fn as_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync>;
}

impl<P: KeyedKind> KeyedView<P> for KeyedCore<P>
where
    ConfigOf<P>: Send,
{
    fn reconfigure(&self, config: &ConfigOf<P>) {
        self.table.exclusive(|| {
            *self.config() = config.clone();
            self.table.set_max_keys(P::max_keys(config));
            for slot in self.table.all() {
                P::reconfigure(slot.policy().state(), config.clone());
            }
        });
    }

    fn snapshot(&self, registered: P::Snapshot) -> P::Snapshot {
        let all = self.table.recent(usize::MAX);
        let keys: Vec<P::Snapshot> = all.iter().map(|slot| P::snapshot(slot.policy().state())).collect();
        let served = all.iter().position(|slot| self.table.last_served(slot)).unwrap_or(0);
        let of = keys.get(served).cloned().unwrap_or(registered);
        P::whole(of, self.table.counts(), &keys)
    }

    fn recent(&self, n: usize) -> Vec<(Arc<str>, Arc<P::State>)> {
        self.table.recent(n).iter().map(|slot| (Arc::clone(slot.text()), Arc::clone(slot.policy().state()))).collect()
    }

    fn by_text(&self, text: &str) -> Option<Arc<P::State>> {
        self.table.by_text(text).map(|slot| Arc::clone(slot.policy().state()))
    }

    fn as_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync> {
        self
    }
}
