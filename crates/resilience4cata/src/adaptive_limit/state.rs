//! The adaptive limit's slots: one atomic word holding `limit << 32 | in_flight`.
//!
//! Taking a slot is one compare-and-set (while `in_flight < limit`); giving it back is one
//! read-modify-write that may also store a new limit, so the limit and the count never disagree.
//! Waiters (only with `max_wait > 0`) are counted in a separate word that the release path only
//! loads; their wake-ups sit behind a mutex that only the wait path and a release that sees a
//! waiter touch. Unlike the bulkhead's queue this is not first-come-first-served: a woken waiter
//! competes with newcomers for the freed slot (the limit moves anyway, so a FIFO hand-off would
//! have to be re-done on every change).

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::task::Waker;
use std::thread::Thread;

use crossbeam_utils::CachePadded;

const IN_FLIGHT: u64 = (1 << 32) - 1;

fn in_flight(word: u64) -> u32 {
    (word & IN_FLIGHT) as u32
}

fn limit(word: u64) -> u32 {
    (word >> 32) as u32
}

fn word(limit: u32, in_flight: u32) -> u64 {
    u64::from(limit) << 32 | u64::from(in_flight)
}

/// How to wake a waiter: a parked thread (sync) or a task (async).
#[derive(Debug)]
pub(crate) enum Wake {
    Thread(Thread),
    Task(Waker),
}

/// The slots of one adaptive limit instance.
#[derive(Debug)]
pub(crate) struct Slots {
    word: CachePadded<AtomicU64>,
    waiting: AtomicU32,
    wakes: Mutex<Vec<Wake>>,
}

impl Slots {
    pub(crate) fn new(initial_limit: u32) -> Self {
        Slots {
            word: CachePadded::new(AtomicU64::new(word(initial_limit, 0))),
            waiting: AtomicU32::new(0),
            wakes: Mutex::default(),
        }
    }

    /// A slot if fewer than `limit` calls are in flight: the number in flight with this call
    /// (one compare-and-set).
    #[inline]
    pub(crate) fn try_acquire(&self) -> Option<u32> {
        let mut current = self.word.load(Ordering::SeqCst);
        while in_flight(current) < limit(current) {
            match self.word.compare_exchange_weak(current, current + 1, Ordering::SeqCst, Ordering::SeqCst) {
                Ok(_) => return Some(in_flight(current) + 1),
                Err(actual) => current = actual,
            }
        }
        None
    }

    /// Gives a slot back and sets the limit to `next(limit)` in the same compare-and-set;
    /// returns `(old, new)` limits. Wakes waiters if there are any.
    #[inline]
    pub(crate) fn release_with(&self, next: impl Fn(u32) -> u32) -> (u32, u32) {
        let mut current = self.word.load(Ordering::Relaxed);
        let (old, new) = loop {
            let (old, new) = (limit(current), next(limit(current)));
            let updated = word(new, in_flight(current) - 1);
            match self.word.compare_exchange_weak(current, updated, Ordering::SeqCst, Ordering::Relaxed) {
                Ok(_) => break (old, new),
                Err(actual) => current = actual,
            }
        };
        self.wake_waiters();
        (old, new)
    }

    /// Gives a slot back, leaving the limit (one read-modify-write).
    #[inline]
    pub(crate) fn release(&self) {
        self.word.fetch_sub(1, Ordering::SeqCst);
        self.wake_waiters();
    }

    #[inline]
    fn wake_waiters(&self) {
        if self.waiting.load(Ordering::SeqCst) > 0 {
            self.wake_all();
        }
    }

    #[cold]
    fn wake_all(&self) {
        let woken = std::mem::take(&mut *self.lock());
        for wake in woken {
            match wake {
                Wake::Thread(thread) => thread.unpark(),
                Wake::Task(waker) => waker.wake(),
            }
        }
    }

    /// Counts a waiter in (`true`) or out (`false`).
    pub(crate) fn set_waiting(&self, waiting: bool) {
        match waiting {
            true => self.waiting.fetch_add(1, Ordering::SeqCst),
            false => self.waiting.fetch_sub(1, Ordering::SeqCst),
        };
    }

    /// Asks to be woken by the next release (registered before the waiter looks again, so no
    /// release between the look and the sleep is missed).
    pub(crate) fn wake_me(&self, wake: Wake) {
        let mut wakes = self.lock();
        let known = match &wake {
            Wake::Task(waker) => wakes.iter().any(|w| matches!(w, Wake::Task(old) if old.will_wake(waker))),
            Wake::Thread(thread) => wakes.iter().any(|w| matches!(w, Wake::Thread(t) if t.id() == thread.id())),
        };
        if !known {
            wakes.push(wake);
        }
    }

    /// `(limit, in_flight, waiting)` right now.
    pub(crate) fn load(&self) -> (u32, u32, u32) {
        let current = self.word.load(Ordering::Relaxed);
        (limit(current), in_flight(current), self.waiting.load(Ordering::Relaxed))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Wake>> {
        self.wakes.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acquire_counts_up_to_the_limit() {
        let s = Slots::new(2);
        assert_eq!(s.try_acquire(), Some(1));
        assert_eq!(s.try_acquire(), Some(2));
        assert_eq!(s.try_acquire(), None);
        assert_eq!(s.load(), (2, 2, 0));
        s.release();
        assert_eq!(s.load(), (2, 1, 0));
    }

    #[test]
    fn release_sets_the_new_limit_in_the_same_step() {
        let s = Slots::new(2);
        s.try_acquire();
        s.try_acquire();
        assert_eq!(s.release_with(|l| l + 1), (2, 3));
        assert_eq!(s.load(), (3, 1, 0));
        assert_eq!(s.release_with(|_| 1), (3, 1));
        assert_eq!(s.load(), (1, 0, 0));
    }

    #[test]
    fn a_lowered_limit_refuses_until_enough_calls_left() {
        let s = Slots::new(3);
        for _ in 0..3 {
            s.try_acquire();
        }
        s.release_with(|_| 1);
        assert_eq!(s.try_acquire(), None, "2 in flight, limit 1");
        s.release();
        s.release();
        assert_eq!(s.try_acquire(), Some(1));
    }

    #[test]
    fn a_release_wakes_registered_waiters_once() {
        let s = Slots::new(1);
        s.try_acquire();
        s.set_waiting(true);
        s.wake_me(Wake::Thread(std::thread::current()));
        s.wake_me(Wake::Thread(std::thread::current()));
        assert_eq!(s.lock().len(), 1, "registered once");
        s.release();
        assert!(s.lock().is_empty(), "woken and forgotten");
        s.set_waiting(false);
        assert_eq!(s.load(), (1, 0, 0));
    }

    /// Four threads racing acquire/release with limit changes: the count never passes the limit
    /// it was taken under, and nothing leaks.
    #[test]
    fn stress_the_word() {
        let s = Slots::new(3);
        std::thread::scope(|scope| {
            for t in 0..4u32 {
                let s = &s;
                scope.spawn(move || {
                    for i in 0..5_000u32 {
                        if let Some(n) = s.try_acquire() {
                            assert!(n <= 8, "never above the highest limit");
                            if (i + t) % 3 == 0 {
                                s.release_with(|l| if l >= 8 { 2 } else { l + 1 });
                            } else {
                                s.release();
                            }
                        }
                    }
                });
            }
        });
        let (limit, in_flight, waiting) = s.load();
        assert_eq!((in_flight, waiting), (0, 0));
        assert!((2..=8).contains(&limit));
    }
}
