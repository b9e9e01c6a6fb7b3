//! loom models of the bulkhead's slots and their hand-off to waiters (run with
//! `RUSTFLAGS="--cfg loom"`, see `docs/reliability.md`).

use std::sync::Arc;

use loom::thread;

use super::state::{Queued, Slots, Wake, Withdrawn};
use crate::sync::atomic::{AtomicU32, Ordering};

#[test]
fn loom_never_more_than_max_in_flight_and_every_slot_comes_back() {
    loom::model(|| {
        let slots = Arc::new(Slots::new(1));
        let inside = Arc::new(AtomicU32::new(0));
        let callers: Vec<_> = (0..2)
            .map(|_| {
                let (slots, inside) = (Arc::clone(&slots), Arc::clone(&inside));
                thread::spawn(move || {
                    if slots.try_acquire() {
                        assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0, "two calls inside a bulkhead of one");
                        inside.fetch_sub(1, Ordering::SeqCst);
                        slots.release();
                    }
                })
            })
            .collect();
        callers.into_iter().for_each(|h| h.join().unwrap());
        assert_eq!(slots.load(), (0, 0));
    });
}

#[test]
fn loom_a_slot_handed_to_a_waiter_that_gives_up_is_not_lost() {
    loom::model(|| {
        let slots = Arc::new(Slots::new(1));
        assert!(slots.try_acquire());
        let waiting = Arc::clone(&slots);
        let waiter = thread::spawn(move || match waiting.enqueue(Wake::Task(None)) {
            Queued::Acquired => waiting.release(),
            // Gives up at once (a deadline or shutdown): the slot may have reached it meanwhile.
            Queued::Waiting(ticket) => {
                if waiting.collect(ticket, None) || waiting.withdraw(ticket) == Withdrawn::WithSlot {
                    waiting.release();
                }
            }
        });
        let holder = Arc::clone(&slots);
        let releaser = thread::spawn(move || holder.release());
        waiter.join().unwrap();
        releaser.join().unwrap();
        assert_eq!(slots.load(), (0, 0), "no slot lost or doubled");
        assert!(slots.try_acquire());
    });
}
