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

/// The release is a fetch-sub, so for a moment a slot is free while a waiter is queued: the pass
/// path must not take it (it goes to the waiter), whatever the interleaving.
#[test]
fn loom_a_released_slot_goes_to_the_waiter_not_to_a_newcomer() {
    loom::model(|| {
        let slots = Arc::new(Slots::new(1));
        assert!(slots.try_acquire());
        let Queued::Waiting(waiter) = slots.enqueue(Wake::Task(None)) else { panic!("the slot is held") };
        let holder = Arc::clone(&slots);
        let releaser = thread::spawn(move || holder.release());
        let newcomer = Arc::clone(&slots);
        let newcomer = thread::spawn(move || {
            assert!(!newcomer.try_acquire(), "a newcomer overtook the queue");
            // Joins the queue behind the waiter, even while the slot is on its way to it.
            newcomer.enqueue(Wake::Task(None))
        });
        releaser.join().unwrap();
        let Queued::Waiting(late) = newcomer.join().unwrap() else { panic!("a newcomer took a queued slot") };
        assert!(!slots.collect(late, None), "served before the older waiter");
        assert!(slots.collect(waiter, None), "the slot reached the oldest waiter");
        assert_eq!(slots.load(), (1, 1));
        slots.release();
        assert!(slots.collect(late, None));
        slots.release();
        assert_eq!(slots.load(), (0, 0));
    });
}

/// Two releases race each other and a waiter that gives up: every freed slot is handed over or
/// freed exactly once, and `in_flight` never passes `max`.
#[test]
fn loom_racing_releases_hand_each_slot_once() {
    loom::model(|| {
        let slots = Arc::new(Slots::new(2));
        assert!(slots.try_acquire() && slots.try_acquire());
        let Queued::Waiting(first) = slots.enqueue(Wake::Task(None)) else { panic!("both slots are held") };
        let Queued::Waiting(second) = slots.enqueue(Wake::Task(None)) else { panic!("both slots are held") };
        let releasers: Vec<_> = (0..2)
            .map(|_| {
                let slots = Arc::clone(&slots);
                thread::spawn(move || {
                    slots.release();
                    assert!(slots.load().0 <= 2, "more slots in flight than the bulkhead has");
                })
            })
            .collect();
        let quitter = Arc::clone(&slots);
        let quitter = thread::spawn(move || {
            if quitter.collect(second, None) || quitter.withdraw(second) == Withdrawn::WithSlot {
                quitter.release();
            }
        });
        releasers.into_iter().for_each(|h| h.join().unwrap());
        quitter.join().unwrap();
        assert!(slots.collect(first, None), "the oldest waiter was served");
        assert_eq!(slots.load(), (1, 0));
        slots.release();
        assert_eq!(slots.load(), (0, 0));
    });
}
