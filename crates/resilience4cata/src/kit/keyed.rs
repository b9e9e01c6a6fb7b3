//! Keyed instances (SPEC §15): one state per key value, found per call in a [`KeyedTable`].
//!
//! The table is `SHARDS` shards, each a `hashbrown::HashTable` of slots behind its own `RwLock`
//! (docs/keyed.md says why, with the numbers). A call's hold on its key is a count in its thread's
//! *stripe* of the key's holds (`HOLD_STRIPES` words on cache lines of their own, the stripe from
//! the thread's exclusive claim in `stripes.rs`), so two threads on one key write their holds on
//! lines of their own and share only the policy's own hot word; a key whose stripes are all zero
//! is not in flight and may be evicted.
//!
//! Each thread keeps the slot of its last call per table ([`LAST`], a few ways indexed by the
//! table's id): a call on that key again compares the borrowed key with the slot's (through
//! `Borrow`; the owned key is type-erased as `dyn Any`, so the facades stay non-generic), adds its
//! hold and goes on, with no hash, no lock and no reference count; its hold's end puts the slot
//! back. Any other call hashes the key, takes its shard's read lock, adds its hold, clones the
//! slot's `Arc` and releases the lock. No allocation either way, no lock held across the call.
//!
//! An eviction marks every stripe [`RETIRED`], each with a compare-and-set from zero, under the
//! shard's write lock, *then* asks the policy whether the key is at rest (and takes the marks back
//! if not, or at the first stripe a call holds): a call from a thread's cache that adds its hold
//! after its stripe's mark sees it and looks the key up in the table instead; one that added it
//! before makes that stripe's compare-and-set fail. The slot a cache still points to after its
//! eviction is dropped when that thread's cache moves on (at most `WAYS` slots per thread). The
//! loom models in `kit/loom.rs` check this protocol.
//!
//! New keys are made one at a time under [`KeyedTable::create`]'s mutex (they may allocate, and
//! at the cap they evict: see [`Newcomers`]).

use std::any::Any;
use std::borrow::Borrow;
use std::cell::Cell;
use std::fmt::{self, Debug, Write as _};
use std::hash::{BuildHasher, Hash, RandomState};
use std::ops::Deref;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard, Weak};

use crate::sync::atomic::{AtomicU64 as HoldWord, Ordering};

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

/// A hold stripe's mark while an eviction decides (and for good once the key is evicted): a call
/// that adds its hold and finds it takes its hold back and looks the key up in the table.
pub(crate) const RETIRED: u64 = 1 << 63;

/// Ways of a thread's cache of last-used slots ([`LAST`]), one table per way (its id modulo).
const WAYS: usize = 8;

/// A thread's calls from its cache that find another key marked most recently served, before one
/// of them marks its own (see [`KeyedTable::end`]).
const LAZY_SERVED: u32 = 64;

/// One way of a thread's cache: the table's id and the slot of that thread's last call on it, and
/// whether that call was served.
struct Cached {
    table: u64,
    slot: Arc<dyn Any + Send + Sync>,
    served: bool,
}

thread_local! {
    /// Each thread's last-used slot per table (way `id % WAYS`): a slot here is not a hold (its
    /// hold stripes count calls, not caches), only a shortcut that a call validates.
    static LAST: [Cell<Option<Cached>>; WAYS] = const { [const { Cell::new(None) }; WAYS] };
    /// This thread's count towards [`LAZY_SERVED`].
    static LAZY: Cell<u32> = const { Cell::new(0) };
}

/// Table ids: unique in the process, so a way never mistakes one table's slot for another's.
static NEXT_TABLE: AtomicU64 = AtomicU64::new(0);

/// One key's entry: its owned key (type-erased), its text and refusal mark (shared with its
/// publisher), the policy facade over its own state, and the use stamp eviction orders by.
pub(crate) struct Slot<P> {
    hash: u64,
    key: Box<dyn Any + Send + Sync>,
    mark: Arc<KeyUse>,
    policy: P,
    /// The table's epoch at this key's last use (a relaxed store, only when it changed).
    stamp: AtomicU64,
    /// The call's holds on this key, one stripe per thread slot ([`hold_stripe`]).
    holds: [HoldStripe; HOLD_STRIPES],
}

/// One stripe of a key's holds, alone on its cache line.
#[repr(align(64))]
struct HoldStripe(HoldWord);

/// Stripes of a key's holds: two threads with stripe claims `0` and `1` (`stripes::this_thread`,
/// exclusive among live threads) count their holds on lines of their own.
const HOLD_STRIPES: usize = 2;

/// This thread's stripe of every key's holds.
#[inline(always)]
fn hold_stripe() -> usize {
    crate::stripes::this_thread() % HOLD_STRIPES
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

impl<P> Slot<P> {
    /// Stripe `stripe` of the count of calls holding this key, [`RETIRED`] added while an
    /// eviction decides.
    #[inline(always)]
    fn hold_word(&self, stripe: usize) -> &HoldWord {
        &self.holds[stripe].0
    }

    /// No call holds the key.
    fn unheld(&self) -> bool {
        self.holds.iter().all(|h| h.0.load(Ordering::Relaxed) == 0)
    }

    /// Marks every stripe [`RETIRED`], each from zero: `false` (and no mark left) if a call holds
    /// the key.
    fn retire(&self) -> bool {
        for (marked, stripe) in self.holds.iter().enumerate() {
            // `Acquire`: the state every ended hold left (`Release`) is what `at_rest` reads.
            if stripe.0.compare_exchange(0, RETIRED, Ordering::Acquire, Ordering::Relaxed).is_err() {
                self.unretire(marked);
                return false;
            }
        }
        true
    }

    /// Takes back the marks of the first `marked` stripes.
    fn unretire(&self, marked: usize) {
        for stripe in &self.holds[..marked] {
            stripe.0.fetch_sub(RETIRED, Ordering::Release);
        }
    }
}

/// The call's hold on one key: derefs to the key's policy facade, so every method of the unkeyed
/// facade works through it. While it lives the key is in flight (never evicted); dropping it ends
/// that, and makes the key its table's most recently served unless the policy refused the call.
// `AtRest` is the crate's own: the bound is what the drop needs, not a promise to users.
#[allow(private_bounds)]
pub struct KeyRef<'a, P: AtRest> {
    /// Always `Some` until the drop hands the slot to the thread's cache.
    slot: Option<Arc<Slot<P>>>,
    table: &'a KeyedTable<P>,
    /// Found in the thread's cache, where this thread's last call on the table was on this key
    /// and was served.
    again: bool,
    /// The stripe of the key's holds this call counts in.
    stripe: usize,
}

#[allow(private_bounds)]
impl<P: AtRest> KeyRef<'_, P> {
    /// The key's text (its `Debug` form, truncated at 256 bytes with `…`).
    pub fn key_text(&self) -> &str {
        self.slot().text()
    }

    #[inline(always)]
    fn slot(&self) -> &Slot<P> {
        match &self.slot {
            Some(slot) => slot,
            None => unreachable!("a key's hold keeps its slot until it is dropped"),
        }
    }
}

impl<P: AtRest> Drop for KeyRef<'_, P> {
    #[inline]
    fn drop(&mut self) {
        let Some(slot) = self.slot.take() else { return };
        // `Release`: an eviction that finds no hold sees what the call did to the key's state.
        slot.hold_word(self.stripe).fetch_sub(1, Ordering::Release);
        self.table.end(slot, self.again);
    }
}

impl<P: AtRest> Deref for KeyRef<'_, P> {
    type Target = P;

    #[inline(always)]
    fn deref(&self) -> &P {
        &self.slot().policy
    }
}

impl<P: AtRest + Debug> Debug for KeyRef<'_, P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let slot = self.slot();
        f.debug_struct("KeyRef").field("key", slot.text()).field("policy", &slot.policy).finish()
    }
}

/// What a keyed table asks of the policy whose per-key facades it keeps.
pub(crate) trait AtRest: Send + Sync + 'static {
    /// Whether forgetting this key now could not be observed (SPEC §15): nothing in flight or
    /// waiting, its limit fully replenished, a breaker Closed with a clean window. The table checks
    /// its own holds (the hold stripes) besides.
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
    /// Unique in the process: the table's way in each thread's cache ([`LAST`]).
    id: u64,
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

/// A dropped table's slots go with it, but for those other threads' caches still point to: each
/// is dropped when its thread's way moves on to another table's slot or the thread ends (at most
/// [`WAYS`] slots per thread, with what they hold: a limiter's state keeps its timer's coarse
/// ticker alive meanwhile). The dropping thread's own way is cleared here.
impl<P> Drop for KeyedTable<P> {
    fn drop(&mut self) {
        let way = self.id as usize % WAYS;
        let mine = LAST.try_with(|ways| match ways[way].take() {
            Some(cached) if cached.table == self.id => Some(cached),
            other => {
                ways[way].set(other);
                None
            }
        });
        drop(mine);
    }
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
            id: NEXT_TABLE.fetch_add(1, Relaxed),
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

    /// An existing key's slot, held: no allocation, no lock held on return. From this thread's
    /// cache when its last call on the table was on this key (no hash, no lock, no reference
    /// count), else from the table. Inlined into the caller's pass path (one call site per keyed
    /// layer): as a call of its own it paid a frame of six saved registers per lookup.
    #[inline(always)]
    pub(crate) fn get<Q>(&self, key: &Q) -> Option<KeyRef<'_, P>>
    where
        Q: ?Sized + Hash + Eq + ToOwned,
        Q::Owned: 'static,
    {
        let stripe = hold_stripe();
        let (slot, again) = match self.cached(key, stripe) {
            Some(found) => found,
            None => (self.lookup(key, stripe)?, false),
        };
        let epoch = self.epoch.load(Relaxed);
        if slot.stamp.load(Relaxed) != epoch {
            slot.stamp.store(epoch, Relaxed);
        }
        Some(KeyRef { slot: Some(slot), table: self, again, stripe })
    }

    /// The key's slot from this thread's cache, held, if it is there and not evicted, and whether
    /// this thread's last call on it was served.
    #[inline(always)]
    fn cached<Q>(&self, key: &Q, stripe: usize) -> Option<(Arc<Slot<P>>, bool)>
    where
        Q: ?Sized + Eq + ToOwned,
        Q::Owned: 'static,
    {
        let cached = LAST.try_with(|ways| ways[self.way()].take()).ok().flatten()?;
        let Cached { table, slot, served } = cached;
        if table != self.id {
            self.put_back(Cached { table, slot, served });
            return None;
        }
        // The id is this table's: its slots are `Slot<P>`.
        let slot = slot.downcast::<Slot<P>>().ok()?;
        if !slot.holds(key) {
            self.put_back(Cached { table, slot, served });
            return None;
        }
        // `Acquire`: a hold added before an eviction's mark makes that eviction fail; one added
        // after it finds the mark. Either way the call never runs on a forgotten key.
        let hold = slot.hold_word(stripe);
        if hold.fetch_add(1, Ordering::Acquire) >= RETIRED {
            hold.fetch_sub(1, Ordering::Relaxed);
            return None; // evicted (or being decided): the table answers, after the eviction
        }
        Some((slot, served))
    }

    /// The key's slot from the table, held (its shard's read lock excludes an eviction, so the
    /// hold stripes carry no mark here).
    #[cold]
    #[inline(never)]
    fn lookup<Q>(&self, key: &Q, stripe: usize) -> Option<Arc<Slot<P>>>
    where
        Q: ?Sized + Hash + Eq + ToOwned,
        Q::Owned: 'static,
    {
        let hash = self.hasher.hash_one(key);
        let shard = self.read(hash);
        let slot = shard.find(hash, |slot| slot.holds(key))?;
        slot.hold_word(stripe).fetch_add(1, Ordering::Acquire);
        Some(Arc::clone(slot))
    }

    /// This table's way in each thread's cache.
    #[inline(always)]
    fn way(&self) -> usize {
        self.id as usize % WAYS
    }

    /// Returns a way's entry taken by [`cached`](Self::cached) that did not match.
    fn put_back(&self, cached: Cached) {
        let _ = LAST.try_with(|ways| ways[self.way()].set(Some(cached)));
    }

    /// A call's hold has ended (`again`: the thread's last call on the table was on this key and
    /// served). Unless the policy refused it, the key becomes the table's most recently served
    /// (SPEC §15), and the slot becomes this thread's cached slot for the table (the way's
    /// previous slot, if another, is dropped after the thread's cache is left).
    ///
    /// The served word is shared by every key of the table: two threads serving two keys would
    /// take turns owning its line at every call. So a call that follows this thread's own served
    /// call on the same key (`again`) and finds another key marked marks its own only at every
    /// [`LAZY_SERVED`]th such call of the thread; every other served call marks its key at once.
    /// One thread's order is therefore exact, and under several threads the mark trails a thread
    /// that keeps calling one key by at most that many of its calls (docs/keyed.md).
    #[inline]
    fn end(&self, slot: Arc<Slot<P>>, again: bool) {
        let served = !slot.mark.take_refusal();
        if served && (!again || lazy_turn(&self.served, slot.mark.serial())) {
            slot.mark.served(&self.served);
        }
        let slot: Arc<dyn Any + Send + Sync> = slot;
        let cached = Cached { table: self.id, slot, served };
        let previous = LAST.try_with(|ways| ways[self.way()].replace(Some(cached)));
        drop(previous);
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
        let slot = Arc::new(Slot {
            hash,
            key: Box::new(owned),
            mark,
            policy,
            stamp: AtomicU64::new(epoch),
            holds: std::array::from_fn(|_| HoldStripe(HoldWord::new(0))),
        });
        let stripe = hold_stripe();
        slot.hold_word(stripe).fetch_add(1, Ordering::Acquire); // the creating call's hold
        self.write(hash).insert_unique(hash, Arc::clone(&slot), |s| s.hash);
        self.len.fetch_add(1, Relaxed);
        Ok(KeyRef { slot: Some(slot), table: self, again: false, stripe })
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
    /// since), no hold, and at rest. Under the shard's write lock, which a table lookup's read lock
    /// excludes; a call from a thread's cache is excluded by the hold stripes instead: their marks
    /// ([`RETIRED`], each set only from zero holds) come *before* the policy is asked whether the key is
    /// at rest, so no call can run on the key between the answer and the removal.
    fn try_evict(&self, candidate: &Candidate<P>) -> bool {
        let mut shard = self.write(candidate.hash);
        let target = candidate.slot.as_ptr();
        let Ok(entry) = shard.find_entry(candidate.hash, |slot| std::ptr::eq(Arc::as_ptr(slot), target)) else {
            return false;
        };
        let slot = entry.get();
        if slot.stamp.load(Relaxed) != candidate.stamp {
            return false;
        }
        if !slot.retire() {
            return false;
        }
        if !slot.policy.at_rest() {
            slot.unretire(HOLD_STRIPES);
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
            for slot in shard.iter().filter(|slot| slot.unheld()) {
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

/// Whether a served call that follows its thread's served call on the same key marks its key
/// (see [`KeyedTable::end`]): when another key is marked, at every [`LAZY_SERVED`]th time.
#[inline(always)]
fn lazy_turn(served: &AtomicU64, serial: u64) -> bool {
    if served.load(Relaxed) == serial {
        return false;
    }
    LAZY.try_with(|count| {
        let next = count.get() + 1;
        count.set(next % LAZY_SERVED);
        next == LAZY_SERVED
    })
    .unwrap_or(true)
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

    fn served_serial(t: &KeyedTable<Flag>) -> u64 {
        t.served.load(Relaxed)
    }

    #[test]
    fn one_thread_marks_every_served_key_at_once_and_no_refused_one() {
        let t = table(4);
        let rest = |_| Flag(AtomicBool::new(true));
        let serial = |key: u32| {
            let held = t.get_or_create(&key, rest).unwrap();
            held.slot().mark.serial()
        };
        let (a, b) = (serial(1), serial(2));
        assert_eq!(served_serial(&t), b);
        for call in 0..3 {
            let held = t.get(&1u32).unwrap();
            assert_eq!(held.again, call > 0, "the first from the table, then from the thread's cache");
            drop(held);
            assert_eq!(served_serial(&t), a);
        }
        drop(t.get(&2u32).unwrap());
        assert_eq!(served_serial(&t), b);
        let refused = t.get(&1u32).unwrap();
        refused.slot().mark.refuse();
        drop(refused);
        assert_eq!(served_serial(&t), b, "a refused call is not a use");
        drop(t.get(&1u32).unwrap()); // from the cache, after a refused call: marked at once
        assert_eq!(served_serial(&t), a);
    }

    #[test]
    fn under_two_threads_the_mark_trails_a_thread_by_at_most_lazy_served_calls() {
        let t = &table(4);
        let rest = |_| Flag(AtomicBool::new(true));
        std::thread::scope(|s| {
            let b = s.spawn(move || t.get_or_create(&2u32, rest).unwrap().slot().mark.serial()).join().unwrap();
            let a = s.spawn(move || t.get_or_create(&1u32, rest).unwrap().slot().mark.serial()).join().unwrap();
            assert_eq!(served_serial(t), a);
            s.spawn(move || {
                drop(t.get(&2u32).unwrap()); // this thread's first call: from the table, marked
                assert_eq!(served_serial(t), b);
            })
            .join()
            .unwrap();
            s.spawn(move || drop(t.get(&1u32).unwrap())).join().unwrap();
            assert_eq!(served_serial(t), a);
            // One thread keeps calling 2 while 1 stays marked by another thread's call.
            s.spawn(move || {
                drop(t.get(&2u32).unwrap()); // from the table: marked at once
                assert_eq!(served_serial(t), b);
            })
            .join()
            .unwrap();
            t.served.store(a, Relaxed); // as if a third thread had served 1 meanwhile
            s.spawn(move || {
                drop(t.get(&2u32).unwrap());
                assert_eq!(served_serial(t), b, "a thread's first call marks at once");
                t.served.store(a, Relaxed);
                for call in 1..LAZY_SERVED {
                    drop(t.get(&2u32).unwrap()); // from the cache
                    assert_eq!(served_serial(t), a, "call {call} from the cache leaves the mark");
                }
                drop(t.get(&2u32).unwrap());
                assert_eq!(served_serial(t), b, "the {LAZY_SERVED}th call from the cache marks 2");
            })
            .join()
            .unwrap();
        });
    }

    #[test]
    fn an_evicted_key_in_a_thread_cache_is_looked_up_again() {
        let t = table(1);
        let rest = |_| Flag(AtomicBool::new(true));
        let first = t.get_or_create(&1u32, rest).unwrap().slot().mark.serial();
        drop(t.get_or_create(&2u32, rest).unwrap()); // evicts 1, which this thread's cache held
        assert_eq!(t.counts(), KeyCounts { keys: 1, evicted: 1, exhausted: 0 });
        drop(t.get(&2u32).unwrap()); // 2 in the cache now
        assert!(t.get(&1u32).is_none(), "1 was forgotten");
        let again = t.get_or_create(&1u32, rest).unwrap();
        assert_ne!(again.slot().mark.serial(), first, "made anew");
    }

    #[test]
    fn a_cached_key_is_not_a_hold_and_a_held_one_is_never_evicted() {
        let t = table(1);
        let rest = |_| Flag(AtomicBool::new(true));
        let held = t.get_or_create(&1u32, rest).unwrap();
        assert!(t.get_or_create(&2u32, rest).is_err(), "1 is held: nothing at rest");
        drop(held); // now only in this thread's cache
        let fresh = t.get_or_create(&2u32, rest).unwrap();
        assert_eq!(t.counts().evicted, 1);
        drop(fresh);
    }

    #[test]
    fn a_dropped_table_leaves_nothing_in_its_thread_cache() {
        let t = table(4);
        let slot =
            Arc::downgrade(t.get_or_create(&1u32, |_| Flag(AtomicBool::new(true))).unwrap().slot.as_ref().unwrap());
        assert!(slot.upgrade().is_some());
        drop(t);
        assert!(slot.upgrade().is_none(), "the thread's cache let the slot go with its table");
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
