//! Keyed instances (SPEC §15): one state per key value, found per call in a [`KeyedTable`].
//!
//! The table is `SHARDS` shards, each a `hashbrown::HashTable` of slots behind its own `RwLock`
//! (docs/keyed.md says why, with the numbers). An existing key's lookup hashes the borrowed key,
//! takes its shard's read lock, compares through `Borrow` (the owned key is type-erased as
//! `dyn Any`, so the facades stay non-generic), clones the slot's `Arc` and releases the lock: no
//! allocation, no lock held across the call. The `Arc` clone is the call's hold on the key: a slot
//! whose strong count is above one (the table's own) is in flight and never evicted.
//!
//! New keys are made one at a time under [`KeyedTable::create`]'s mutex (they may allocate, and
//! at the cap they evict: see [`Newcomers`]).

use std::any::Any;
use std::borrow::Borrow;
use std::fmt::{self, Debug, Write as _};
use std::hash::{BuildHasher, Hash, RandomState};
use std::ops::Deref;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard, Weak};

use crossbeam_utils::CachePadded;
use hashbrown::HashTable;

use crate::events::KeyUse;

/// Shards of a table: enough that two threads on different keys rarely share a shard (and so its
/// lock word) at 2–8 cores.
const SHARDS: usize = 16;

/// The longest key text kept, in bytes (then `…`).
pub(crate) const KEY_TEXT_MAX: usize = 256;

/// Work a scan for eviction candidates may spend per new key at the cap, in slots visited: a scan
/// visits every slot, so after a scan that found nothing a new one waits for `len / SCAN_SHARE`
/// more new keys (a flood of keys while every key is busy costs `SCAN_SHARE` slot visits each).
const SCAN_SHARE: u64 = 16;

/// One key's entry: its owned key (type-erased), its text and refusal mark (shared with its
/// publisher), the policy facade over its own state, and the use stamp eviction orders by.
pub(crate) struct Slot<P> {
    hash: u64,
    key: Box<dyn Any + Send + Sync>,
    mark: Arc<KeyUse>,
    policy: P,
    /// The table's epoch at this key's last use (a relaxed store, only when it changed).
    stamp: AtomicU64,
}

impl<P> Slot<P> {
    /// The key's `Debug` text (at most [`KEY_TEXT_MAX`] bytes and `…`).
    pub(crate) fn text(&self) -> &Arc<str> {
        self.mark.text()
    }

    /// The key's own policy facade.
    pub(crate) fn policy(&self) -> &P {
        &self.policy
    }

    fn holds<Q: ?Sized + Eq + ToOwned>(&self, key: &Q) -> bool
    where
        Q::Owned: 'static,
    {
        self.key.downcast_ref::<Q::Owned>().is_some_and(|owned| owned.borrow() == key)
    }
}

/// The call's hold on one key: derefs to the key's policy facade, so every method of the unkeyed
/// facade works through it. While it lives the key is in flight (never evicted); dropping it ends
/// that, and makes the key its table's most recently served unless the policy refused the call.
pub struct KeyRef<'a, P> {
    slot: Arc<Slot<P>>,
    /// The table's most recently served key (its serial).
    served: &'a AtomicU64,
}

impl<P> KeyRef<'_, P> {
    /// The key's text (its `Debug` form, truncated at 256 bytes with `…`).
    pub fn key_text(&self) -> &str {
        self.slot.text()
    }
}

impl<P> Drop for KeyRef<'_, P> {
    #[inline]
    fn drop(&mut self) {
        self.slot.mark.end_call(self.served);
    }
}

impl<P> Deref for KeyRef<'_, P> {
    type Target = P;

    #[inline(always)]
    fn deref(&self) -> &P {
        &self.slot.policy
    }
}

impl<P: Debug> Debug for KeyRef<'_, P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyRef").field("key", self.slot.text()).field("policy", &self.slot.policy).finish()
    }
}

/// What a keyed table asks of the policy whose per-key facades it keeps.
pub(crate) trait AtRest {
    /// Whether forgetting this key now could not be observed (SPEC §15): nothing in flight or
    /// waiting, its limit fully replenished, a breaker Closed with a clean window. The table checks
    /// its own holds (the `Arc`'s count) besides.
    fn at_rest(&self) -> bool;
}

/// An eviction candidate found by a scan: re-checked (same stamp, no hold, at rest) under its
/// shard's write lock before it goes. The `Weak` keeps the slot's allocation, so its address is
/// never another slot's while the candidate waits.
struct Candidate<P> {
    stamp: u64,
    hash: u64,
    slot: Weak<Slot<P>>,
}

/// The new-key side of a table, behind one mutex: the eviction candidates of the last scan
/// (oldest last) and the scan credit.
struct Newcomers<P> {
    candidates: Vec<Candidate<P>>,
    /// Slot visits a scan may spend: `SCAN_SHARE` per new key at the cap, at most `max_keys`.
    credit: u64,
}

/// One shard: its keys' slots behind its lock, alone on its cache lines. Every lookup writes its
/// shard's lock word (a read lock is a read-modify-write); unpadded, four shards share a 64-byte
/// line, so two threads on keys of different shards would still take turns owning it. 128 bytes:
/// x86's adjacent-line prefetcher fetches lines in pairs.
#[repr(align(128))]
struct Shard<P>(RwLock<HashTable<Arc<Slot<P>>>>);

impl<P> Deref for Shard<P> {
    type Target = RwLock<HashTable<Arc<Slot<P>>>>;

    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

/// A keyed instance's table of keys.
pub(crate) struct KeyedTable<P> {
    shards: Box<[Shard<P>]>,
    hasher: RandomState,
    /// Advanced once per new key: the stamps' clock (so the pass path stores, never adds).
    epoch: AtomicU64,
    /// The serial of the key whose call was last served, not refused (0: none yet): the key a
    /// keyed instance's snapshot shows (SPEC §15). Stored when a call's hold ends, so on a line of
    /// its own: the lookup's fields (shards, hasher, epoch) stay shared-clean for every thread.
    served: CachePadded<AtomicU64>,
    len: AtomicU32,
    max_keys: AtomicU32,
    evicted: AtomicU64,
    exhausted: AtomicU64,
    newcomers: Mutex<Newcomers<P>>,
}

/// The counts of a table (`keys`, `evicted`, `keys_exhausted` of a snapshot).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct KeyCounts {
    pub(crate) keys: u32,
    pub(crate) evicted: u64,
    pub(crate) exhausted: u64,
}

/// A new key met `max_keys` keys and none at rest.
#[derive(Debug)]
pub(crate) struct Exhausted;

impl<P: AtRest> KeyedTable<P> {
    pub(crate) fn new(max_keys: u32) -> Self {
        KeyedTable {
            shards: (0..SHARDS).map(|_| Shard(RwLock::new(HashTable::new()))).collect(),
            hasher: RandomState::new(),
            epoch: AtomicU64::new(0),
            served: CachePadded::new(AtomicU64::new(0)),
            len: AtomicU32::new(0),
            max_keys: AtomicU32::new(max_keys),
            evicted: AtomicU64::new(0),
            exhausted: AtomicU64::new(0),
            newcomers: Mutex::new(Newcomers { candidates: Vec::new(), credit: u64::from(max_keys) }),
        }
    }

    /// An existing key's slot, held: no allocation, the shard's read lock released on return.
    /// Inlined into the caller's pass path (one call site per keyed layer): as a call of its own
    /// it paid a frame of six saved registers per lookup.
    #[inline(always)]
    pub(crate) fn get<Q>(&self, key: &Q) -> Option<KeyRef<'_, P>>
    where
        Q: ?Sized + Hash + Eq + ToOwned,
        Q::Owned: 'static,
    {
        let hash = self.hasher.hash_one(key);
        let slot = Arc::clone(self.read(hash).find(hash, |slot| slot.holds(key))?);
        let epoch = self.epoch.load(Relaxed);
        if slot.stamp.load(Relaxed) != epoch {
            slot.stamp.store(epoch, Relaxed);
        }
        Some(KeyRef { slot, served: &self.served })
    }

    /// The key's slot, made with `make(its text and mark)` if the key is new: at the cap the least
    /// recently used key at rest is evicted first, and with none at rest the key is refused.
    /// `make` runs under the new-key mutex (a live update takes it too, so a key made during an
    /// update sees it or is reached by it).
    pub(crate) fn get_or_create<Q>(
        &self,
        key: &Q,
        make: impl FnOnce(Arc<KeyUse>) -> P,
    ) -> Result<KeyRef<'_, P>, Exhausted>
    where
        Q: ?Sized + Hash + Eq + ToOwned,
        Q::Owned: Hash + Eq + Debug + Send + Sync + 'static,
    {
        match self.get(key) {
            Some(held) => Ok(held),
            None => self.create(key, make),
        }
    }

    #[cold]
    #[inline(never)]
    fn create<Q>(&self, key: &Q, make: impl FnOnce(Arc<KeyUse>) -> P) -> Result<KeyRef<'_, P>, Exhausted>
    where
        Q: ?Sized + Hash + Eq + ToOwned,
        Q::Owned: Hash + Eq + Debug + Send + Sync + 'static,
    {
        let mut newcomers = self.lock_newcomers();
        if let Some(held) = self.get(key) {
            return Ok(held); // made by another caller meanwhile
        }
        if self.len.load(Relaxed) >= self.max_keys.load(Relaxed) && !self.evict_one(&mut newcomers) {
            self.exhausted.fetch_add(1, Relaxed);
            return Err(Exhausted);
        }
        let hash = self.hasher.hash_one(key);
        let owned = key.to_owned();
        let text = key_text(&owned);
        let epoch = self.epoch.fetch_add(1, Relaxed) + 1;
        let mark = Arc::new(KeyUse::new(text, epoch)); // epochs are unique per key and start at 1
        let policy = make(Arc::clone(&mark));
        let slot = Arc::new(Slot { hash, key: Box::new(owned), mark, policy, stamp: AtomicU64::new(epoch) });
        self.write(hash).insert_unique(hash, Arc::clone(&slot), |s| s.hash);
        self.len.fetch_add(1, Relaxed);
        Ok(KeyRef { slot, served: &self.served })
    }

    /// Evicts the oldest candidate still at rest, scanning for a new batch when the last one is
    /// spent (and the scan credit allows). `false`: no key at rest.
    fn evict_one(&self, newcomers: &mut Newcomers<P>) -> bool {
        newcomers.credit = (newcomers.credit + SCAN_SHARE).min(u64::from(self.max_keys.load(Relaxed)).max(1));
        loop {
            while let Some(candidate) = newcomers.candidates.pop() {
                if self.try_evict(&candidate) {
                    return true;
                }
            }
            let len = u64::from(self.len.load(Relaxed));
            if newcomers.credit < len {
                return false;
            }
            newcomers.credit -= len;
            self.scan(&mut newcomers.candidates);
            if newcomers.candidates.is_empty() {
                return false;
            }
        }
    }

    /// Removes the candidate's slot if it is unchanged since the scan: same stamp (not used
    /// since), no hold but the table's, and at rest. Checked under the shard's write lock, which a
    /// lookup's read lock excludes, so no call can take the key between the check and the removal.
    fn try_evict(&self, candidate: &Candidate<P>) -> bool {
        let mut shard = self.write(candidate.hash);
        let target = candidate.slot.as_ptr();
        let Ok(entry) = shard.find_entry(candidate.hash, |slot| std::ptr::eq(Arc::as_ptr(slot), target)) else {
            return false;
        };
        let slot = entry.get();
        if slot.stamp.load(Relaxed) != candidate.stamp || Arc::strong_count(slot) != 1 || !slot.policy.at_rest() {
            return false;
        }
        entry.remove();
        self.len.fetch_sub(1, Relaxed);
        self.evicted.fetch_add(1, Relaxed);
        true
    }

    /// One pass over every slot, then the oldest `batch` of those no call holds, kept if at rest
    /// now (the policy's check runs on the batch, not on the whole table); only when none of them
    /// is at rest does the check run on the rest. Oldest last.
    fn scan(&self, out: &mut Vec<Candidate<P>>) {
        out.clear();
        for shard in &self.shards {
            let shard = shard.read().unwrap_or_else(PoisonError::into_inner);
            for slot in shard.iter().filter(|slot| Arc::strong_count(slot) == 1) {
                let stamp = slot.stamp.load(Relaxed);
                out.push(Candidate { stamp, hash: slot.hash, slot: Arc::downgrade(slot) });
            }
        }
        let batch = batch_size(self.max_keys.load(Relaxed));
        oldest_first(out, batch);
        let rest = out.split_off(batch.min(out.len()));
        out.retain(Candidate::at_rest);
        if out.is_empty() {
            out.extend(rest.into_iter().filter(Candidate::at_rest));
            oldest_first(out, batch);
        }
        out.truncate(batch);
        out.sort_unstable_by_key(|c| std::cmp::Reverse(c.stamp));
    }
}

impl<P: AtRest> Candidate<P> {
    fn at_rest(&self) -> bool {
        self.slot.upgrade().is_some_and(|slot| slot.policy.at_rest())
    }
}

/// Moves the `batch` oldest candidates to the front (in no order among themselves).
fn oldest_first<P>(candidates: &mut [Candidate<P>], batch: usize) {
    if candidates.len() > batch {
        candidates.select_nth_unstable_by_key(batch, |c| c.stamp);
    }
}

impl<P> KeyedTable<P> {
    fn shard_of(&self, hash: u64) -> &Shard<P> {
        // The high bits: hashbrown uses the low ones inside a shard.
        &self.shards[(hash >> 60) as usize % SHARDS]
    }

    fn read(&self, hash: u64) -> RwLockReadGuard<'_, HashTable<Arc<Slot<P>>>> {
        self.shard_of(hash).read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self, hash: u64) -> RwLockWriteGuard<'_, HashTable<Arc<Slot<P>>>> {
        self.shard_of(hash).write().unwrap_or_else(PoisonError::into_inner)
    }

    fn lock_newcomers(&self) -> MutexGuard<'_, Newcomers<P>> {
        self.newcomers.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `f` with the new-key mutex held: no key is made meanwhile (a live update).
    pub(crate) fn exclusive<R>(&self, f: impl FnOnce() -> R) -> R {
        let _newcomers = self.lock_newcomers();
        f()
    }

    /// A new cap (a live update); keys above it stay until they are evicted at rest.
    pub(crate) fn set_max_keys(&self, max_keys: u32) {
        self.max_keys.store(max_keys, Relaxed);
    }

    /// Every slot, most recently used first (at most `n`).
    pub(crate) fn recent(&self, n: usize) -> Vec<Arc<Slot<P>>> {
        let mut all = self.all();
        all.sort_by_key(|slot| std::cmp::Reverse(slot.stamp.load(Relaxed)));
        all.truncate(n);
        all
    }

    /// Every slot, in no order.
    pub(crate) fn all(&self) -> Vec<Arc<Slot<P>>> {
        let mut all = Vec::with_capacity(self.len.load(Relaxed) as usize);
        for shard in &self.shards {
            all.extend(shard.read().unwrap_or_else(PoisonError::into_inner).iter().cloned());
        }
        all
    }

    /// The slot whose key text is `text`.
    pub(crate) fn by_text(&self, text: &str) -> Option<Arc<Slot<P>>> {
        self.shards.iter().find_map(|shard| {
            shard.read().unwrap_or_else(PoisonError::into_inner).iter().find(|slot| &**slot.text() == text).cloned()
        })
    }

    /// Whether `slot` is the key whose call was last served (a refused call is not a use).
    pub(crate) fn last_served(&self, slot: &Slot<P>) -> bool {
        slot.mark.serial() == self.served.load(Relaxed)
    }

    pub(crate) fn counts(&self) -> KeyCounts {
        KeyCounts {
            keys: self.len.load(Relaxed),
            evicted: self.evicted.load(Relaxed),
            exhausted: self.exhausted.load(Relaxed),
        }
    }
}

/// Candidates kept per scan: an eighth of the cap (at least 16), so a scan of `len` slots is
/// spread over that many evictions.
fn batch_size(max_keys: u32) -> usize {
    (max_keys as usize / 8).max(16)
}

/// The key's `Debug` text, formatted into at most [`KEY_TEXT_MAX`] bytes (a huge key is cut while
/// it is formatted, never formatted whole), then `…`.
pub(crate) fn key_text<K: Debug + ?Sized>(key: &K) -> Arc<str> {
    let mut text = Bounded { text: String::new(), cut: false };
    let _ = write!(text, "{key:?}");
    if text.cut {
        text.text.push('…');
    }
    Arc::from(text.text)
}

/// A `fmt::Write` that keeps the first [`KEY_TEXT_MAX`] bytes (on a char boundary) and then stops
/// the formatting.
struct Bounded {
    text: String,
    cut: bool,
}

impl fmt::Write for Bounded {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let room = KEY_TEXT_MAX - self.text.len();
        if s.len() <= room {
            self.text.push_str(s);
            return Ok(());
        }
        let mut end = room;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        self.text.push_str(&s[..end]);
        self.cut = true;
        Err(fmt::Error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;

    struct Flag(AtomicBool);

    impl AtRest for Flag {
        fn at_rest(&self) -> bool {
            self.0.load(Relaxed)
        }
    }

    fn table(max: u32) -> KeyedTable<Flag> {
        KeyedTable::new(max)
    }

    #[test]
    fn a_borrowed_key_finds_its_owned_form() {
        let t = table(4);
        let made = t.get_or_create("a", |_| Flag(AtomicBool::new(true))).unwrap();
        assert_eq!(made.key_text(), "\"a\"");
        drop(made);
        assert!(t.get(&String::from("a")).is_some());
        assert!(t.get("b").is_none());
    }

    #[test]
    fn at_the_cap_the_oldest_key_at_rest_goes_and_a_busy_table_refuses() {
        let t = table(2);
        let rest = |_| Flag(AtomicBool::new(true));
        drop(t.get_or_create(&1u32, rest).unwrap());
        drop(t.get_or_create(&2u32, rest).unwrap());
        drop(t.get(&1u32)); // 2 is now the least recently used... once the epoch moves on
        drop(t.get_or_create(&3u32, rest).unwrap());
        assert_eq!(t.counts(), KeyCounts { keys: 2, evicted: 1, exhausted: 0 });
        let held: Vec<_> = t.all().iter().map(|s| s.text().to_string()).collect();
        assert_eq!(held.len(), 2);
        let _a = t.get_or_create(&3u32, rest).unwrap();
        let other = t.all().into_iter().find(|s| &**s.text() != "3").unwrap();
        other.policy().0.store(false, Relaxed);
        drop(other);
        assert!(t.get_or_create(&4u32, rest).is_err(), "one key held, the other not at rest");
        assert_eq!(t.counts().exhausted, 1);
    }

    #[test]
    fn no_two_shards_share_a_cache_line() {
        let t = table(4);
        for pair in t.shards.windows(2) {
            let (a, b) = (&pair[0] as *const Shard<Flag> as usize, &pair[1] as *const Shard<Flag> as usize);
            assert!(b - a >= 128 && a % 128 == 0, "shards at {a:#x} and {b:#x}");
        }
    }

    #[test]
    fn a_huge_key_text_is_cut_at_256_bytes() {
        let text = key_text(&"é".repeat(1000));
        assert!(text.ends_with('…'));
        assert!(text.len() <= KEY_TEXT_MAX + '…'.len_utf8());
        assert!(text.starts_with("\"é"));
    }
}
