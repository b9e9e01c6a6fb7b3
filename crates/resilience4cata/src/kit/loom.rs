//! loom model of a keyed table's one race (run with `RUSTFLAGS="--cfg loom"`, see
//! `docs/reliability.md` and `docs/keyed.md`): a call taking a key against the eviction of that
//! key. The table's protocol, on loom's lock and `Arc`: a lookup clones the slot's `Arc` under
//! its shard's read lock (the call's hold); an eviction removes the slot under the write lock only
//! if the table's `Arc` is the only one. Invariant: a slot is never evicted while a call holds it,
//! and once evicted no call can take it (a later lookup misses and makes the key anew).

use loom::sync::atomic::{AtomicBool, Ordering};
use loom::sync::{Arc, RwLock};
use loom::thread;

/// One key's slot: `true` while it is in the table.
type Shard = RwLock<Option<Arc<AtomicBool>>>;

/// `KeyedTable::get`: the slot's `Arc`, cloned under the read lock.
fn take(shard: &Shard) -> Option<Arc<AtomicBool>> {
    shard.read().unwrap().as_ref().map(Arc::clone)
}

/// `KeyedTable::try_evict`: removed under the write lock if nothing but the table holds it.
fn evict(shard: &Shard) -> bool {
    let mut slot = shard.write().unwrap();
    match slot.as_ref() {
        Some(held) if Arc::strong_count(held) == 1 => {
            held.store(false, Ordering::SeqCst);
            *slot = None;
            true
        }
        _ => false,
    }
}

#[test]
fn loom_a_held_key_is_never_evicted_and_an_evicted_key_is_never_taken() {
    loom::model(|| {
        let shard: Arc<Shard> = Arc::new(RwLock::new(Some(Arc::new(AtomicBool::new(true)))));
        let caller_shard = Arc::clone(&shard);
        let caller = thread::spawn(move || {
            if let Some(slot) = take(&caller_shard) {
                // The call runs on its key: the key is in the table the whole time.
                assert!(slot.load(Ordering::SeqCst), "took an evicted key");
                thread::yield_now();
                assert!(slot.load(Ordering::SeqCst), "evicted while held");
                true
            } else {
                false
            }
        });
        let evicted = evict(&shard);
        let took = caller.join().unwrap();
        assert!(took || evicted, "the caller misses the key only once it is evicted");
        if !evicted {
            assert!(evict(&shard), "once the call is done, the key is at rest and goes");
        }
        assert!(shard.read().unwrap().is_none());
    });
}
