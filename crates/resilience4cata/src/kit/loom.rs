//! loom models of a keyed table's races (run with `RUSTFLAGS="--cfg loom"`, see
//! `docs/reliability.md` and `docs/keyed.md`): a call taking a key against the eviction of that
//! key. The table's protocol, on loom's lock and atomics: a call's hold is a count in the key's
//! hold word, added under the shard's read lock (a table lookup) or with no lock at all (a call
//! from its thread's cache); an eviction, under the write lock, marks the hold word `RETIRED`
//! with a compare-and-set from zero, *then* asks whether the key is at rest, and takes the mark
//! back if not. Invariants: a key is never evicted while a call holds it or after a call used it
//! (no orphan permit), a call never runs on an evicted key (it finds the mark or misses in the
//! table), and a mark that does not evict is taken back whole.

use loom::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use loom::sync::{Arc, RwLock};
use loom::thread;

const RETIRED: u64 = 1 << 63;

/// One key's slot: its hold word and its policy's state ("used": a permit taken, so not at rest
/// until time passes, which it does not here).
struct Slot {
    holds: AtomicU64,
    used: AtomicBool,
}

type Shard = RwLock<Option<Arc<Slot>>>;

fn shard_with_one_key() -> (Arc<Slot>, Arc<Shard>) {
    let slot = Arc::new(Slot { holds: AtomicU64::new(0), used: AtomicBool::new(false) });
    (Arc::clone(&slot), Arc::new(RwLock::new(Some(slot))))
}

/// The call on a held key: its permit, then its hold's end.
fn run(slot: &Slot) {
    slot.used.store(true, Ordering::Relaxed);
    slot.holds.fetch_sub(1, Ordering::Release);
}

/// `KeyedTable::lookup`: the hold added under the read lock.
fn call_from_table(shard: &Shard) -> bool {
    let Some(slot) = shard.read().unwrap().as_ref().map(|slot| {
        slot.holds.fetch_add(1, Ordering::Acquire);
        Arc::clone(slot)
    }) else {
        return false;
    };
    run(&slot);
    true
}

/// `KeyedTable::cached`: the hold added with no lock; `false` when it finds the mark (the call
/// then goes to the table).
fn call_from_cache(slot: &Slot) -> bool {
    if slot.holds.fetch_add(1, Ordering::Acquire) >= RETIRED {
        slot.holds.fetch_sub(1, Ordering::Relaxed);
        return false;
    }
    run(slot);
    true
}

/// `KeyedTable::try_evict`: the mark from zero holds, then the policy's answer.
fn evict(shard: &Shard) -> bool {
    let mut entry = shard.write().unwrap();
    let Some(slot) = entry.as_ref() else { return false };
    if slot.holds.compare_exchange(0, RETIRED, Ordering::Acquire, Ordering::Relaxed).is_err() {
        return false;
    }
    if slot.used.load(Ordering::Relaxed) {
        slot.holds.fetch_sub(RETIRED, Ordering::Release);
        return false;
    }
    *entry = None;
    true
}

fn check(slot: &Slot, shard: &Shard, ran: bool, evicted: bool) {
    assert!(!(evicted && slot.used.load(Ordering::SeqCst)), "evicted a key a call had used");
    assert!(ran || evicted, "a call misses its key only for an eviction that happens");
    if evicted {
        assert!(!ran);
        assert_eq!(slot.holds.load(Ordering::SeqCst), RETIRED, "an evicted key keeps its mark");
        assert!(shard.read().unwrap().is_none());
    } else {
        assert_eq!(slot.holds.load(Ordering::SeqCst), 0, "every hold and mark taken back");
        assert!(shard.read().unwrap().is_some());
    }
}

#[test]
fn loom_a_held_key_is_never_evicted_and_an_evicted_key_is_never_taken() {
    loom::model(|| {
        let (slot, shard) = shard_with_one_key();
        let caller_shard = Arc::clone(&shard);
        let caller = thread::spawn(move || call_from_table(&caller_shard));
        let evicted = evict(&shard);
        let ran = caller.join().unwrap();
        check(&slot, &shard, ran, evicted);
    });
}

#[test]
fn loom_a_call_from_a_thread_cache_never_runs_on_an_evicted_key() {
    loom::model(|| {
        let (slot, shard) = shard_with_one_key();
        let cached = Arc::clone(&slot);
        let caller = thread::spawn(move || call_from_cache(&cached));
        let evicted = evict(&shard);
        let ran = caller.join().unwrap();
        check(&slot, &shard, ran, evicted);
    });
}
