//! The bulkhead's slots: one atomic word for the pass path, a FIFO queue behind a mutex for waiters.
//!
//! The word holds `waiting << 32 | in_flight`. A call takes a slot with one compare-and-set when
//! nobody waits and `in_flight < max` (the whole word below `max`), and gives it back with one
//! fetch-sub. When someone waited, the releaser then takes the queue's lock and *hands* the freed
//! slot to the oldest waiter (`in_flight + 1`, `waiting − 1` in one add), so a newcomer cannot
//! overtake the queue: the pass path never takes a slot while anybody waits, and a caller that
//! finds no free slot joins the end of the queue under the same lock.
//!
//! Invariants: every change of `waiting` happens under the queue's lock, together with the queue
//! itself, so `waiting` is the queue's length. `waiting > 0` implies `in_flight == max`, except
//! between a release's fetch-sub (which saw `waiting > 0`) and its hand-off under the lock: in that
//! window the freed slot belongs to the queue (no one outside it can take it, and a caller that
//! arrives joins the queue), and the hand-off, a loop under the lock while `waiting > 0` and
//! `in_flight < max`, restores the invariant. While the lock is held and `waiting > 0`,
//! `in_flight` can only fall (fast releases), so the hand-off's add can never pass `max`.

use std::collections::BTreeMap;
use std::future::poll_fn;
use std::pin::pin;
use std::sync::{Arc, PoisonError};
use std::task::Poll;

use crate::sync::atomic::{AtomicU64, Ordering};
use crate::sync::{Live, Mutex, MutexGuard};
use std::task::Waker;
use std::thread::Thread;

use crossbeam_utils::CachePadded;

use super::shared::SlotPool;
use super::{BulkheadConfig, BulkheadEvent, BulkheadSnapshot};
use crate::clock::{Timer, nanos};
use crate::events::{Publisher, publish};
use crate::fleet::Answer;
use crate::rejection::Rejection;

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
    /// `max_concurrent_calls`, widened so the pass path compares the word with it directly; a
    /// live update may change it ([`set_max`](Self::set_max)), read relaxed (a plain load).
    max: AtomicU64,
    queue: Mutex<Queue>,
}

impl Slots {
    pub(crate) fn new(max: u32) -> Self {
        Slots {
            word: CachePadded::new(AtomicU64::new(0)),
            max: AtomicU64::new(u64::from(max)),
            queue: Mutex::default(),
        }
    }

    /// A live update of `max_concurrent_calls` (SPEC §16): a higher cap hands its new slots to
    /// the waiters at once (in their order); a lower one takes nothing from calls in flight, and
    /// admits (through the pass path or the queue) only once `in_flight` is below it.
    #[cfg_attr(not(feature = "serde"), allow(dead_code))] // reached through a live update (feature `serde`)
    pub(crate) fn set_max(&self, max: u32) {
        {
            // Under the queue's lock, so a hand-off or an enqueue sees one cap throughout.
            let _queue = self.lock();
            self.max.store(u64::from(max), Ordering::Relaxed);
        }
        if waiting(self.word.load(Ordering::Acquire)) != 0 {
            self.hand_off();
        }
    }

    /// A slot if one is free and nobody waits (one compare-and-set). The whole word is below
    /// `max` exactly when `waiting == 0` and `in_flight < max`.
    #[inline]
    pub(crate) fn try_acquire(&self) -> bool {
        self.try_acquire_below(self.max.load(Ordering::Relaxed))
    }

    /// [`try_acquire`](Self::try_acquire) under `max`, at most the cap (the pass path's
    /// `BulkheadState::pass_max`: 0 refuses without a compare-and-set).
    #[inline]
    pub(crate) fn try_acquire_below(&self, max: u64) -> bool {
        let mut word = self.word.load(Ordering::Relaxed);
        while word < max {
            match self.word.compare_exchange_weak(word, word + 1, Ordering::Acquire, Ordering::Relaxed) {
                Ok(_) => return true,
                Err(current) => {
                    #[cfg(r4c_cas_count)]
                    crate::sync::cas_count::failed(crate::sync::cas_count::Word::BulkheadSlots);
                    word = current;
                }
            }
        }
        false
    }

    /// Gives a slot back (one fetch-sub); when somebody was waiting, hands it to the oldest waiter.
    #[inline]
    pub(crate) fn release(&self) {
        let before = self.word.fetch_sub(1, Ordering::Release);
        if waiting(before) != 0 {
            self.hand_off();
        }
    }

    /// Hands freed slots to the oldest waiters while both exist (`waiting > 0` and
    /// `in_flight < max`), one at a time under the lock, waking each after the lock is released.
    #[cold]
    #[inline(never)]
    fn hand_off(&self) {
        loop {
            let mut queue = self.lock();
            let word = self.word.load(Ordering::Acquire);
            if waiting(word) == 0 || u64::from(in_flight(word)) >= self.max.load(Ordering::Relaxed) {
                return;
            }
            let Some((ticket, wake)) = queue.waiting.pop_first() else {
                debug_assert_eq!(waiting(word), 0, "`waiting` counts the queue, under its lock");
                return;
            };
            // `waiting` cannot change while the lock is held and `in_flight` can only fall, so
            // this leaves `in_flight ≤ max`.
            self.word.fetch_sub(ONE_WAITER - 1, Ordering::AcqRel);
            queue.granted.push(ticket);
            drop(queue);
            wake.wake();
        }
    }

    /// Takes a slot if one is free and nobody waits, else joins the end of the queue.
    pub(crate) fn enqueue(&self, wake: Wake) -> Queued {
        let mut queue = self.lock();
        let mut word = self.word.load(Ordering::Relaxed);
        let max = self.max.load(Ordering::Relaxed);
        loop {
            // Behind anybody already waiting, even while a released slot is on its way to them.
            let (next, acquired) = if word < max { (word + 1, true) } else { (word + ONE_WAITER, false) };
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

    /// `(in_flight, waiting)` right now; slots handed to a waiter count as in flight. A slot
    /// being handed over (between a release and its hand-off) counts as free for that moment.
    pub(crate) fn load(&self) -> (u32, u32) {
        let word = self.word.load(Ordering::Relaxed);
        (in_flight(word), waiting(word))
    }

    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A bulkhead instance's shared state: one per instance id.
#[derive(Debug)]
pub(crate) struct BulkheadState {
    pub(crate) instance: Arc<str>,
    /// The resolved configuration as of the last update: the slow paths load it once each.
    pub(crate) config: Live<BulkheadConfig>,
    pub(super) slots: Slots,
    pub(super) timer: Arc<Timer>,
    events: Publisher<BulkheadEvent>,
    /// `shared = true`: the fleet's slots this process holds (local slots alone while degraded).
    /// Set through [`share`](Self::share).
    pub(super) shared: Option<Arc<SlotPool>>,
    /// The pass path's cap: `max_concurrent_calls` while enabled and not shared (the pass path
    /// needs only the local slots), else 0, which no slot word is below, so a disabled or shared
    /// bulkhead takes the slow path with no test of its own on the pass path (a live update may
    /// turn `enabled`; `shared` is fixed once built).
    pub(super) pass_max: AtomicU64,
}

impl BulkheadState {
    pub(crate) fn new(
        instance: Arc<str>,
        config: BulkheadConfig,
        timer: Arc<Timer>,
        events: Publisher<BulkheadEvent>,
    ) -> Self {
        let (local, config_max) = (config.enabled, config.max_concurrent_calls);
        BulkheadState {
            slots: Slots::new(config.max_concurrent_calls),
            instance,
            config: Live::new(config),
            timer,
            events,
            shared: None,
            pass_max: AtomicU64::new(pass_max(config_max, local)),
        }
    }

    /// Shares the instance's slots with the fleet through `pool` (`shared = true`).
    pub(super) fn share(&mut self, pool: Arc<SlotPool>) {
        self.shared = Some(pool);
        self.pass_max = AtomicU64::new(0);
    }

    /// A live update (SPEC §16): the new cap applies from the next acquisition on (see
    /// [`Slots::set_max`]); permits in flight and waiters are kept.
    #[cfg_attr(not(feature = "serde"), allow(dead_code))] // reached through a live update (feature `serde`)
    pub(crate) fn reconfigure(&self, config: BulkheadConfig) {
        let (max, local) = (config.max_concurrent_calls, config.enabled && self.shared.is_none());
        self.config.store(config);
        self.slots.set_max(max);
        // After the cap: a raised one serves the waiters before the pass path sees it.
        self.pass_max.store(pass_max(max, local), Ordering::Relaxed);
    }

    /// A fleet slot before the local one (shared bulkheads): `Ok(true)` held, `Ok(false)` decided
    /// locally (degraded, or no answer within the store timeout), `Err` the fleet is full.
    #[cold]
    pub(super) fn fleet_slot(&self, answer: impl FnOnce(&SlotPool) -> Answer) -> Result<bool, Rejection> {
        let Some(pool) = &self.shared else { return Ok(false) };
        if pool.is_degraded() {
            return Ok(false);
        }
        if pool.try_take() {
            return Ok(true);
        }
        match answer(pool) {
            Answer::Permit => Ok(true),
            Answer::Exhausted(_) => Err(self.refuse()),
            Answer::Local => Ok(false),
        }
    }

    /// Nothing in flight or waiting (a keyed instance's key, SPEC §15).
    pub(crate) fn at_rest(&self) -> bool {
        self.slots.load() == (0, 0)
    }

    pub(crate) fn snapshot(&self) -> BulkheadSnapshot {
        let (in_flight, waiting) = self.slots.load();
        let config = BulkheadConfig::clone(&self.config.load());
        BulkheadSnapshot {
            instance: Arc::clone(&self.instance),
            available: config.max_concurrent_calls.saturating_sub(in_flight),
            config,
            in_flight,
            waiting,
            keys: 0,
            evicted: 0,
            keys_exhausted: 0,
        }
    }

    /// Says a slot was taken: published only once its guard exists, so the slot is owned by the
    /// guard whatever an observer does.
    #[inline]
    pub(super) fn permitted(&self) {
        publish!(self.events, |m| m.permitted(), || BulkheadEvent::Permitted {
            instance: Arc::clone(&self.instance),
            key: self.events.key()
        });
    }

    /// Gives a slot back (to the oldest waiter, if any), and the fleet's slot it held with it
    /// (`fleet`), and says so.
    #[inline]
    pub(super) fn finished(&self, fleet: bool) {
        self.slots.release();
        if fleet && let Some(pool) = &self.shared {
            pool.give_back();
        }
        publish!(self.events, |m| m.finished(), || BulkheadEvent::Finished {
            instance: Arc::clone(&self.instance),
            key: self.events.key()
        });
    }

    #[cold]
    pub(super) fn refuse(&self) -> Rejection {
        self.events.refused();
        publish!(self.events, |m| m.rejected(), || BulkheadEvent::Rejected {
            instance: Arc::clone(&self.instance),
            key: self.events.key()
        });
        Rejection::BulkheadFull { instance: Arc::clone(&self.instance) }
    }

    /// The end of a wait that did not see its slot arrive: the slot may still have reached it.
    fn give_up(&self, ticket: u64) -> Result<(), Rejection> {
        match self.slots.withdraw(ticket) {
            Withdrawn::WithSlot => Ok(()),
            Withdrawn::Empty => Err(self.refuse()),
        }
    }

    /// Parks the calling thread until a slot is handed over (`Ok`: the caller holds it, not yet
    /// published), the deadline passes on the registry's clock, or the registry shuts down.
    #[cold]
    #[inline(never)]
    pub(super) fn wait(&self) -> Result<(), Rejection> {
        let deadline = self.timer.now().saturating_add(nanos(self.config.load().max_wait));
        let ticket = match self.slots.enqueue(Wake::Thread(std::thread::current())) {
            Queued::Acquired => return Ok(()),
            Queued::Waiting(ticket) => ticket,
        };
        match self.timer.park_until(deadline, || self.slots.collect(ticket, None).then_some(())) {
            Ok(()) => Ok(()),
            Err(_) => self.give_up(ticket),
        }
    }

    /// Waits in a future until a slot is handed over (as [`wait`](Self::wait)), the deadline
    /// passes or the registry shuts down. Dropping the future leaves the queue, passing on a slot
    /// that reached it meanwhile.
    #[cold]
    #[inline(never)]
    pub(super) async fn wait_async(&self) -> Result<(), Rejection> {
        let deadline = self.timer.now().saturating_add(nanos(self.config.load().max_wait));
        let ticket = match self.slots.enqueue(Wake::Task(None)) {
            Queued::Acquired => return Ok(()),
            Queued::Waiting(ticket) => ticket,
        };
        let mut ticket = InLine { state: self, ticket: Some(ticket) };
        let mut alarm = pin!(self.timer.sleep_until_async(deadline));
        let granted = poll_fn(|cx| {
            if ticket.collect(Some(cx.waker())) {
                return Poll::Ready(true);
            }
            alarm.as_mut().poll(cx).map(|_| false)
        })
        .await;
        match ticket.ticket.take() {
            Some(_) if granted => Ok(()),
            Some(t) => self.give_up(t),
            None => unreachable!("the ticket is only taken here"),
        }
    }
}

/// An async waiter's place in the queue: leaves it when dropped before its wait ended.
struct InLine<'a> {
    state: &'a BulkheadState,
    ticket: Option<u64>,
}

impl InLine<'_> {
    fn collect(&self, waker: Option<&std::task::Waker>) -> bool {
        self.ticket.is_some_and(|t| self.state.slots.collect(t, waker))
    }
}

impl Drop for InLine<'_> {
    fn drop(&mut self) {
        if let Some(ticket) = self.ticket.take()
            && self.state.slots.withdraw(ticket) == Withdrawn::WithSlot
        {
            self.state.slots.release();
        }
    }
}

/// The pass path's cap (see `BulkheadState::pass_max`).
fn pass_max(max: u32, local: bool) -> u64 {
    if local { u64::from(max) } else { 0 }
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
