//! loom models of a keyed table's races (run with `RUSTFLAGS="--cfg loom"`, see
//! `docs/reliability.md` and `docs/keyed.md`): a call taking a key against the eviction of that
//! key. The table's protocol, on loom's lock and atomics: a call's hold is a count in its thread's
//! stripe of the key's holds, added under the shard's read lock (a table lookup) or with no lock at
//! all (a call from its thread's cache); an eviction, under the write lock, marks every stripe
//! `RETIRED` with a compare-and-set from zero (taking its marks back at the first stripe held),
//! *then* asks whether the key is at rest, and takes the marks back if not. Invariants: a key is never evicted while a call holds it or after a call used it
//! (no orphan permit), a call never runs on an evicted key (it finds the mark or misses in the
//! table), and a mark that does not evict is taken back whole.

use loom::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use loom::sync::{Arc, RwLock};
use loom::thread;

const RETIRED: u64 = 1 << 63;

/// One key's slot: its two hold stripes and its policy's state ("used": a permit taken, so not at
/// rest until time passes, which it does not here).
struct Slot {
    holds: [AtomicU64; 2],
    used: AtomicBool,
}

type Shard = RwLock<Option<Arc<Slot>>>;

fn shard_with_one_key() -> (Arc<Slot>, Arc<Shard>) {
    let slot = Arc::new(Slot { holds: [AtomicU64::new(0), AtomicU64::new(0)], used: AtomicBool::new(false) });
    (Arc::clone(&slot), Arc::new(RwLock::new(Some(slot))))
}

/// The call on a held key: its permit, then its hold's end.
fn run(slot: &Slot, stripe: usize) {
    slot.used.store(true, Ordering::Relaxed);
    slot.holds[stripe].fetch_sub(1, Ordering::Release);
}

/// `KeyedTable::lookup`: the hold added under the read lock.
fn call_from_table(shard: &Shard, stripe: usize) -> bool {
    let Some(slot) = shard.read().unwrap().as_ref().map(|slot| {
        slot.holds[stripe].fetch_add(1, Ordering::Acquire);
        Arc::clone(slot)
    }) else {
        return false;
    };
    run(&slot, stripe);
    true
}

/// `KeyedTable::cached`: the hold added with no lock; `false` when it finds the mark (the call
/// then goes to the table).
fn call_from_cache(slot: &Slot, stripe: usize) -> bool {
    if slot.holds[stripe].fetch_add(1, Ordering::Acquire) >= RETIRED {
        slot.holds[stripe].fetch_sub(1, Ordering::Relaxed);
        return false;
    }
    run(slot, stripe);
    true
}

/// `KeyedTable::try_evict` (`Slot::retire`, `unretire`): every stripe marked from zero holds,
/// then the policy's answer.
fn evict(shard: &Shard) -> bool {
    let mut entry = shard.write().unwrap();
    let Some(slot) = entry.as_ref() else { return false };
    let unretire = |marked: usize| {
        for stripe in &slot.holds[..marked] {
            stripe.fetch_sub(RETIRED, Ordering::Release);
        }
    };
    for (marked, stripe) in slot.holds.iter().enumerate() {
        if stripe.compare_exchange(0, RETIRED, Ordering::Acquire, Ordering::Relaxed).is_err() {
            unretire(marked);
            return false;
        }
    }
    if slot.used.load(Ordering::Relaxed) {
        unretire(slot.holds.len());
        return false;
    }
    *entry = None;
    true
}

fn check(slot: &Slot, shard: &Shard, ran: bool, evicted: bool) {
    assert!(!(evicted && slot.used.load(Ordering::SeqCst)), "evicted a key a call had used");
    assert!(ran || evicted, "a call misses its key only for an eviction that happens");
    let holds: Vec<u64> = slot.holds.iter().map(|h| h.load(Ordering::SeqCst)).collect();
    if evicted {
        assert!(!ran);
        assert_eq!(holds, [RETIRED, RETIRED], "an evicted key keeps its marks");
        assert!(shard.read().unwrap().is_none());
    } else {
        assert_eq!(holds, [0, 0], "every hold and mark taken back");
        assert!(shard.read().unwrap().is_some());
    }
}

#[test]
fn loom_a_held_key_is_never_evicted_and_an_evicted_key_is_never_taken() {
    loom::model(|| {
        let (slot, shard) = shard_with_one_key();
        let caller_shard = Arc::clone(&shard);
        let caller = thread::spawn(move || call_from_table(&caller_shard, 1));
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
        let caller = thread::spawn(move || call_from_cache(&cached, 1));
        let evicted = evict(&shard);
        let ran = caller.join().unwrap();
        check(&slot, &shard, ran, evicted);
    });
}

#[test]
fn loom_two_threads_on_two_stripes_against_an_eviction() {
    loom::model(|| {
        let (slot, shard) = shard_with_one_key();
        let callers: Vec<_> = (0..2)
            .map(|stripe| {
                let (cached, shard) = (Arc::clone(&slot), Arc::clone(&shard));
                // Turned away by a mark, the call looks its key up in the table.
                thread::spawn(move || call_from_cache(&cached, stripe) || call_from_table(&shard, stripe))
            })
            .collect();
        let evicted = evict(&shard);
        let ran: Vec<bool> = callers.into_iter().map(|c| c.join().unwrap()).collect();
        assert!(!(evicted && slot.used.load(Ordering::SeqCst)), "evicted a key a call had used");
        if evicted {
            assert_eq!(ran, [false, false], "no call ran on the evicted key");
        } else {
            assert_eq!(ran, [true, true], "a key not evicted serves both calls, from the cache or the table");
            let holds: Vec<u64> = slot.holds.iter().map(|h| h.load(Ordering::SeqCst)).collect();
            assert_eq!(holds, [0, 0], "every hold and mark taken back");
        }
    });
}
