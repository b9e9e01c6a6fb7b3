//! The bulkhead's slots: one atomic word for the pass path, a FIFO queue behind a mutex for waiters.
//!
//! The word holds `waiting << 32 | in_flight`. A call takes a slot with one compare-and-set when
//! `in_flight < max`, and gives it back with one compare-and-set when nobody waits. When someone
//! waits, the slot is *handed* to the oldest waiter instead of being freed, so `in_flight` stays at
//! `max` and a newcomer cannot overtake the queue. Invariant: `waiting > 0` implies
//! `in_flight == max`; every change of `waiting` happens under the queue's lock, together with the
//! queue itself.

use std::collections::BTreeMap;
use std::sync::PoisonError;

use crate::sync::atomic::{AtomicU64, Ordering};
use crate::sync::{Mutex, MutexGuard};
use std::task::Waker;
use std::thread::Thread;

use crossbeam_utils::CachePadded;

const ONE_WAITER: u64 = 1 << 32;
const IN_FLIGHT: u64 = ONE_WAITER - 1;

fn in_flight(word: u64) -> u32 {
    (word & IN_FLIGHT) as u32
}

fn waiting(word: u64) -> u32 {
    (word >> 32) as u32
}

/// How to wake a waiter: a parked thread (sync) or a task (async).
#[derive(Debug)]
pub(crate) enum Wake {
    Thread(Thread),
    Task(Option<Waker>),
}

impl Wake {
    fn wake(self) {
        match self {
            Wake::Thread(thread) => thread.unpark(),
            Wake::Task(waker) => waker.into_iter().for_each(Waker::wake),
        }
    }
}

/// The result of asking for a slot on the wait path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Queued {
    /// A slot was free after all.
    Acquired,
    /// In line with this ticket.
    Waiting(u64),
}

/// A waiter that gives up learns whether a slot reached it first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Withdrawn {
    /// It left the queue without a slot.
    Empty,
    /// A slot was handed to it just before: it holds that slot now.
    WithSlot,
}

#[derive(Debug, Default)]
struct Queue {
    next_ticket: u64,
    /// Waiters by ticket: the first entry is the oldest.
    waiting: BTreeMap<u64, Wake>,
    /// Tickets handed a slot that they have not collected yet.
    granted: Vec<u64>,
}

/// The slots of one bulkhead.
#[derive(Debug)]
pub(crate) struct Slots {
    word: CachePadded<AtomicU64>,
    max: u32,
    queue: Mutex<Queue>,
}

impl Slots {
    pub(crate) fn new(max: u32) -> Self {
        Slots { word: CachePadded::new(AtomicU64::new(0)), max, queue: Mutex::default() }
    }

    /// The pass path: a slot if one is free (one compare-and-set).
    #[inline]
    pub(crate) fn try_acquire(&self) -> bool {
        let mut word = self.word.load(Ordering::Relaxed);
        while in_flight(word) < self.max {
            match self.word.compare_exchange_weak(word, word + 1, Ordering::Acquire, Ordering::Relaxed) {
                Ok(_) => return true,
                Err(current) => word = current,
            }
        }
        false
    }

    /// Gives a slot back: freed when nobody waits (one compare-and-set), else handed to the oldest
    /// waiter.
    #[inline]
    pub(crate) fn release(&self) {
        let mut word = self.word.load(Ordering::Relaxed);
        while waiting(word) == 0 {
            match self.word.compare_exchange_weak(word, word - 1, Ordering::Release, Ordering::Relaxed) {
                Ok(_) => return,
                Err(current) => word = current,
            }
        }
        self.hand_off();
    }

    #[cold]
    fn hand_off(&self) {
        let mut queue = self.lock();
        let woken = match queue.waiting.pop_first() {
            Some((ticket, wake)) => {
                self.word.fetch_sub(ONE_WAITER, Ordering::AcqRel);
                queue.granted.push(ticket);
                Some(wake)
            }
            None => {
                self.word.fetch_sub(1, Ordering::AcqRel);
                None
            }
        };
        drop(queue);
        woken.into_iter().for_each(Wake::wake);
    }

    /// Takes a slot if one is free, else joins the end of the queue.
    pub(crate) fn enqueue(&self, wake: Wake) -> Queued {
        let mut queue = self.lock();
        let mut word = self.word.load(Ordering::Relaxed);
        loop {
            let (next, acquired) =
                if in_flight(word) < self.max { (word + 1, true) } else { (word + ONE_WAITER, false) };
            match self.word.compare_exchange_weak(word, next, Ordering::AcqRel, Ordering::Relaxed) {
                Ok(_) if acquired => return Queued::Acquired,
                Ok(_) => break,
                Err(current) => word = current,
            }
        }
        let ticket = queue.next_ticket;
        queue.next_ticket += 1;
        queue.waiting.insert(ticket, wake);
        Queued::Waiting(ticket)
    }

    /// Whether `ticket` was handed a slot (collecting it); if not, an async waiter leaves its
    /// current waker.
    pub(crate) fn collect(&self, ticket: u64, waker: Option<&Waker>) -> bool {
        let mut queue = self.lock();
        if let Some(i) = queue.granted.iter().position(|&t| t == ticket) {
            queue.granted.swap_remove(i);
            return true;
        }
        if let (Some(waker), Some(Wake::Task(slot))) = (waker, queue.waiting.get_mut(&ticket)) {
            match slot {
                Some(old) if old.will_wake(waker) => {}
                _ => *slot = Some(waker.clone()),
            }
        }
        false
    }

    /// Leaves the queue (deadline passed, shutdown, or the waiting future dropped).
    pub(crate) fn withdraw(&self, ticket: u64) -> Withdrawn {
        let mut queue = self.lock();
        if queue.waiting.remove(&ticket).is_some() {
            self.word.fetch_sub(ONE_WAITER, Ordering::AcqRel);
            return Withdrawn::Empty;
        }
        let granted = queue.granted.iter().position(|&t| t == ticket);
        debug_assert!(granted.is_some(), "ticket {ticket} neither waits nor holds a slot");
        if let Some(i) = granted {
            queue.granted.swap_remove(i);
        }
        Withdrawn::WithSlot
    }

    /// `(in_flight, waiting)` right now; slots handed to a waiter count as in flight.
    pub(crate) fn load(&self) -> (u32, u32) {
        let word = self.word.load(Ordering::Relaxed);
        (in_flight(word), waiting(word))
    }

    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn me() -> Wake {
        Wake::Thread(std::thread::current())
    }

    #[test]
    fn capacity_then_refusal_then_release() {
        let s = Slots::new(2);
        assert!(s.try_acquire() && s.try_acquire());
        assert!(!s.try_acquire());
        assert_eq!(s.load(), (2, 0));
        s.release();
        assert_eq!(s.load(), (1, 0));
        assert!(s.try_acquire());
    }

    #[test]
    fn a_released_slot_goes_to_the_oldest_waiter_not_to_a_newcomer() {
        let s = Slots::new(1);
        assert!(s.try_acquire());
        let (Queued::Waiting(first), Queued::Waiting(second)) = (s.enqueue(me()), s.enqueue(me())) else {
            panic!("no slot is free");
        };
        assert_eq!(s.load(), (1, 2));
        s.release();
        assert_eq!(s.load(), (1, 1), "handed over, still in flight");
        assert!(!s.try_acquire(), "a newcomer does not overtake");
        assert!(!s.collect(second, None));
        assert!(s.collect(first, None));
        s.release();
        assert!(s.collect(second, None));
        s.release();
        assert_eq!(s.load(), (0, 0));
    }

    #[test]
    fn withdrawing_before_and_after_the_hand_off() {
        let s = Slots::new(1);
        assert!(s.try_acquire());
        let Queued::Waiting(a) = s.enqueue(me()) else { panic!() };
        assert_eq!(s.withdraw(a), Withdrawn::Empty);
        assert_eq!(s.load(), (1, 0));
        let Queued::Waiting(b) = s.enqueue(me()) else { panic!() };
        s.release();
        assert_eq!(s.withdraw(b), Withdrawn::WithSlot, "the slot reached it first");
        s.release();
        assert_eq!(s.load(), (0, 0));
    }

    #[test]
    fn enqueue_takes_a_slot_freed_in_the_meantime() {
        let s = Slots::new(1);
        assert_eq!(s.enqueue(me()), Queued::Acquired);
        assert_eq!(s.load(), (1, 0));
    }
}
