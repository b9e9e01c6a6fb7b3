//! The bulkhead instance the generated code takes a slot from around the call to the delegate.

use std::future::poll_fn;
use std::pin::pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use super::state::{Queued, Slots, Wake, Withdrawn};
use super::{BulkheadConfig, BulkheadConfigBuilder, BulkheadEvent, BulkheadSnapshot};
use crate::clock::{Timer, nanos};
use crate::error::RegistryError;
use crate::events::{Publisher, publish};
use crate::registry::{Inner, policy_kind};
use crate::rejection::Rejection;
use crate::shared::{Answer, SharedPublisher, SlotPool};

/// How often a parked sync waiter looks at the clock and the shutdown flag on its own.
const RECHECK: Duration = Duration::from_millis(5);

/// A bulkhead instance's shared state: one per instance id.
#[derive(Debug)]
pub(crate) struct BulkheadState {
    pub(crate) instance: Arc<str>,
    pub(crate) config: BulkheadConfig,
    slots: Slots,
    timer: Arc<Timer>,
    events: Publisher<BulkheadEvent>,
    /// `shared = true`: the fleet's slots this process holds (local slots alone while degraded).
    shared: Option<Arc<SlotPool>>,
}

impl BulkheadState {
    pub(crate) fn new(
        instance: Arc<str>,
        config: BulkheadConfig,
        timer: Arc<Timer>,
        events: Publisher<BulkheadEvent>,
    ) -> Self {
        BulkheadState { slots: Slots::new(config.max_concurrent_calls), instance, config, timer, events, shared: None }
    }

    /// A fleet slot before the local one (shared bulkheads): `Ok(true)` held, `Ok(false)` decided
    /// locally (degraded, or no answer within the store timeout), `Err` the fleet is full.
    #[cold]
    fn fleet_slot(&self, answer: impl FnOnce(&SlotPool) -> Answer) -> Result<bool, Rejection> {
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

    /// Ties a fleet slot to the local outcome: kept by the permit, or given back on a refusal.
    fn with_fleet<'a>(
        &'a self,
        fleet: bool,
        local: Result<BulkheadPermit<'a>, Rejection>,
    ) -> Result<BulkheadPermit<'a>, Rejection> {
        match (local, &self.shared) {
            (Ok(mut permit), _) => {
                permit.fleet = fleet;
                Ok(permit)
            }
            (Err(refused), Some(pool)) if fleet => {
                pool.give_back();
                Err(refused)
            }
            (Err(refused), _) => Err(refused),
        }
    }

    pub(crate) fn snapshot(&self) -> BulkheadSnapshot {
        let (in_flight, waiting) = self.slots.load();
        BulkheadSnapshot {
            instance: Arc::clone(&self.instance),
            config: self.config.clone(),
            in_flight,
            available: self.config.max_concurrent_calls.saturating_sub(in_flight),
            waiting,
        }
    }

    /// The guard exists before `Permitted` is published, so the slot is owned by it whatever an
    /// observer does.
    #[inline]
    fn permit(&self) -> BulkheadPermit<'_> {
        let permit = BulkheadPermit { state: Some(self), fleet: false };
        self.permitted();
        permit
    }

    #[inline]
    fn permitted(&self) {
        publish!(self.events, |m| m.permitted(), || BulkheadEvent::Permitted { instance: Arc::clone(&self.instance) });
    }

    /// Gives a slot back (to the oldest waiter, if any) and says so.
    #[inline]
    fn finished(&self) {
        self.slots.release();
        publish!(self.events, |m| m.finished(), || BulkheadEvent::Finished { instance: Arc::clone(&self.instance) });
    }

    #[cold]
    fn refuse(&self) -> Rejection {
        publish!(self.events, |m| m.rejected(), || BulkheadEvent::Rejected { instance: Arc::clone(&self.instance) });
        Rejection::BulkheadFull { instance: Arc::clone(&self.instance) }
    }

    /// The end of a wait that did not see its slot arrive: the slot may still have reached it.
    fn give_up(&self, ticket: u64) -> Result<BulkheadPermit<'_>, Rejection> {
        match self.slots.withdraw(ticket) {
            Withdrawn::WithSlot => Ok(self.permit()),
            Withdrawn::Empty => Err(self.refuse()),
        }
    }

    /// Parks the calling thread until a slot is handed over, the deadline passes on the registry's
    /// clock, or the registry shuts down.
    #[cold]
    #[inline(never)]
    fn wait(&self) -> Result<BulkheadPermit<'_>, Rejection> {
        let deadline = self.timer.now().saturating_add(nanos(self.config.max_wait));
        let ticket = match self.slots.enqueue(Wake::Thread(std::thread::current())) {
            Queued::Acquired => return Ok(self.permit()),
            Queued::Waiting(ticket) => ticket,
        };
        loop {
            if self.slots.collect(ticket, None) {
                return Ok(self.permit());
            }
            let now = self.timer.now();
            if now >= deadline || self.timer.is_shut_down() {
                return self.give_up(ticket);
            }
            std::thread::park_timeout(Duration::from_nanos(deadline - now).min(RECHECK));
        }
    }

    /// Waits in a future until a slot is handed over, the deadline passes or the registry shuts
    /// down. Dropping the future leaves the queue, passing on a slot that reached it meanwhile.
    #[cold]
    #[inline(never)]
    async fn wait_async(&self) -> Result<BulkheadPermit<'_>, Rejection> {
        let deadline = self.timer.now().saturating_add(nanos(self.config.max_wait));
        let ticket = match self.slots.enqueue(Wake::Task(None)) {
            Queued::Acquired => return Ok(self.permit()),
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
            Some(_) if granted => Ok(self.permit()),
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

/// A slot of a bulkhead, given back when dropped: on return, on error, on panic, and when the
/// future holding it is dropped.
#[derive(Debug)]
#[must_use = "the slot is given back as soon as the permit is dropped"]
pub struct BulkheadPermit<'a> {
    /// `None` for a disabled bulkhead, which counts nothing.
    state: Option<&'a BulkheadState>,
    /// Whether it holds one of the fleet's slots too (shared bulkheads).
    fleet: bool,
}

impl Drop for BulkheadPermit<'_> {
    #[inline]
    fn drop(&mut self) {
        if let Some(state) = self.state {
            state.slots.release();
            if self.fleet
                && let Some(pool) = &state.shared
            {
                pool.give_back();
            }
            publish!(state.events, |m| m.finished(), || BulkheadEvent::Finished {
                instance: Arc::clone(&state.instance)
            });
        }
    }
}

/// A slot taken ahead of its call by a tower service under backpressure (`poll_ready`), owned so
/// the service can keep it between `poll_ready` and `call`; given back when dropped, used or not.
#[derive(Debug)]
#[cfg_attr(not(feature = "tower"), allow(dead_code))]
pub(crate) struct OwnedSlot {
    /// `None` for a disabled bulkhead, which counts nothing.
    state: Option<Arc<BulkheadState>>,
}

impl Drop for OwnedSlot {
    #[inline]
    fn drop(&mut self) {
        if let Some(state) = self.state.take() {
            state.finished();
        }
    }
}

/// A tower service's place in a bulkhead's queue while its `poll_ready` waits for a slot: leaves
/// the queue when dropped, passing on a slot that reached it meanwhile.
#[derive(Debug)]
#[cfg_attr(not(feature = "tower"), allow(dead_code))]
pub(crate) struct SlotWait {
    state: Arc<BulkheadState>,
    /// `None` once the ticket was collected or withdrawn.
    ticket: Option<u64>,
}

impl Drop for SlotWait {
    fn drop(&mut self) {
        if let Some(ticket) = self.ticket.take()
            && self.state.slots.withdraw(ticket) == Withdrawn::WithSlot
        {
            self.state.slots.release();
        }
    }
}

/// The field the generated code keeps for one method with a bulkhead: a slot is held only while
/// the delegate runs (inside the retry, so never during a backoff).
#[derive(Clone, Debug)]
pub struct BulkheadPolicy {
    state: Arc<BulkheadState>,
}

impl BulkheadPolicy {
    pub(crate) fn new(state: Arc<BulkheadState>) -> Self {
        BulkheadPolicy { state }
    }

    /// The instance id.
    pub fn instance(&self) -> &str {
        &self.state.instance
    }

    /// Takes a slot, parking the thread up to `max_wait` for one; otherwise
    /// `Rejection::BulkheadFull`. Hold the permit while the call runs.
    #[inline]
    pub fn acquire(&self) -> Result<BulkheadPermit<'_>, Rejection> {
        let state = &*self.state;
        if !state.config.enabled {
            return Ok(BulkheadPermit { state: None, fleet: false });
        }
        if state.shared.is_some() {
            let fleet = state.fleet_slot(SlotPool::wait_sync)?;
            return state.with_fleet(fleet, self.acquire_local());
        }
        self.acquire_local()
    }

    #[inline]
    fn acquire_local(&self) -> Result<BulkheadPermit<'_>, Rejection> {
        let state = &*self.state;
        if state.slots.try_acquire() {
            return Ok(state.permit());
        }
        if state.config.max_wait.is_zero() {
            return Err(state.refuse());
        }
        state.wait()
    }

    /// The async form of [`acquire`](Self::acquire): waiters are served in arrival order, and
    /// dropping the future leaves the queue.
    #[inline]
    pub async fn acquire_async(&self) -> Result<BulkheadPermit<'_>, Rejection> {
        let state = &*self.state;
        if !state.config.enabled {
            return Ok(BulkheadPermit { state: None, fleet: false });
        }
        if let Some(pool) = &state.shared {
            let fleet = match pool.is_degraded() || pool.try_take() {
                true => !pool.is_degraded(),
                false => match pool.wait_async().await {
                    Answer::Permit => true,
                    Answer::Exhausted(_) => return Err(state.refuse()),
                    Answer::Local => false,
                },
            };
            return state.with_fleet(fleet, self.acquire_local_async().await);
        }
        self.acquire_local_async().await
    }

    #[inline]
    async fn acquire_local_async(&self) -> Result<BulkheadPermit<'_>, Rejection> {
        let state = &*self.state;
        if state.slots.try_acquire() {
            return Ok(state.permit());
        }
        if state.config.max_wait.is_zero() {
            return Err(state.refuse());
        }
        state.wait_async().await
    }
}

#[cfg(feature = "tower")]
impl BulkheadPolicy {
    /// Backpressure for a tower service's `poll_ready`: a slot now, or `Pending` in the queue
    /// (arrival order, `waiting` keeps the place) until one is handed over; no `max_wait`, as
    /// tower's `ConcurrencyLimit`. The pass path is the compare-and-set of
    /// [`acquire`](Self::acquire) and a reference count; a wait takes the queue's lock. After
    /// `Registry::shutdown`, the next poll is refused (`BulkheadFull`) unless a slot reached it.
    pub(crate) fn poll_reserve(
        &self,
        waiting: &mut Option<SlotWait>,
        cx: &mut std::task::Context<'_>,
    ) -> Poll<Result<OwnedSlot, Rejection>> {
        let state = &*self.state;
        if !state.config.enabled {
            return Poll::Ready(Ok(OwnedSlot { state: None }));
        }
        let owned = || {
            let slot = OwnedSlot { state: Some(Arc::clone(&self.state)) };
            state.permitted(); // after the guard exists, as in `permit`
            slot
        };
        if let Some(wait) = waiting {
            let ticket = wait.ticket.expect("a waiting place holds its ticket");
            if state.slots.collect(ticket, Some(cx.waker())) {
                wait.ticket = None;
                *waiting = None;
                return Poll::Ready(Ok(owned()));
            }
            if !state.timer.is_shut_down() {
                return Poll::Pending;
            }
            wait.ticket = None;
            *waiting = None;
            return Poll::Ready(match state.slots.withdraw(ticket) {
                Withdrawn::WithSlot => Ok(owned()),
                Withdrawn::Empty => Err(state.refuse()),
            });
        }
        if state.slots.try_acquire() {
            return Poll::Ready(Ok(owned()));
        }
        if state.timer.is_shut_down() {
            return Poll::Ready(Err(state.refuse()));
        }
        match state.slots.enqueue(Wake::Task(Some(cx.waker().clone()))) {
            Queued::Acquired => Poll::Ready(Ok(owned())),
            Queued::Waiting(ticket) => {
                *waiting = Some(SlotWait { state: Arc::clone(&self.state), ticket: Some(ticket) });
                Poll::Pending
            }
        }
    }
}

policy_kind! {
    BulkheadPolicy {
        builder: BulkheadConfigBuilder,
        state: BulkheadState,
        event: BulkheadEvent,
        snapshot: BulkheadSnapshot,
        metrics: BulkheadMetrics,
    }

    fn check(inner: &Inner, id: &str, is_async: bool, c: &BulkheadConfig) -> Result<(), RegistryError> {
        if c.shared {
            inner.require_shared_store(id)?;
        }
        match is_async && c.enabled && (!c.max_wait.is_zero() || c.shared) {
            true => inner.require_async_clock(id, "this async method may wait for a bulkhead slot"),
            false => Ok(()),
        }
    }

    fn new_state(
        inner: &Inner,
        instance: Arc<str>,
        config: BulkheadConfig,
        events: Publisher<BulkheadEvent>,
    ) -> BulkheadState {
        let shared = config.shared && config.enabled;
        let mut state = BulkheadState::new(instance, config, Arc::clone(&inner.timer), events);
        if let (Some(store), true) = (&inner.shared, shared) {
            let pool = SlotPool::new(
                Arc::clone(&state.instance),
                &state.config,
                store.store_timeout(),
                Arc::clone(&inner.timer),
                SharedPublisher::new(&inner.listeners),
            );
            let pool = Arc::new(pool);
            store.share_bulkhead(Arc::clone(&pool));
            state.shared = Some(pool);
        }
        state
    }
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
    use testkit::block_on;

    use super::*;
    use crate::clock::{Clock, ManualClock};
    use crate::events::Listener;

    const MS: Duration = Duration::from_millis(1);

    fn bulkhead(clock: &ManualClock, max: u32, max_wait: Duration) -> BulkheadPolicy {
        bulkhead_with(clock, BulkheadConfig { max_concurrent_calls: max, max_wait, ..Default::default() }, &[])
    }

    fn bulkhead_with(
        clock: &ManualClock,
        config: BulkheadConfig,
        listeners: &[Listener<BulkheadEvent>],
    ) -> BulkheadPolicy {
        let timer = Arc::new(Clock::from(clock).into_timer());
        BulkheadPolicy::new(Arc::new(BulkheadState::new(
            "bh".into(),
            config,
            timer,
            Publisher::detached(listeners, &"bh".into()),
        )))
    }

    fn counts(b: &BulkheadPolicy) -> (u32, u32, u32) {
        let s = b.state.snapshot();
        (s.in_flight, s.available, s.waiting)
    }

    fn wait_until(b: &BulkheadPolicy, waiting: u32) {
        while b.state.snapshot().waiting != waiting {
            std::thread::yield_now();
        }
    }

    fn is_full(r: Result<BulkheadPermit<'_>, Rejection>) -> bool {
        matches!(r, Err(Rejection::BulkheadFull { instance }) if &*instance == "bh")
    }

    #[test]
    fn capacity_then_refusal_then_the_slot_comes_back() {
        let clock = ManualClock::new();
        let b = bulkhead(&clock, 2, Duration::ZERO);
        let first = b.acquire().unwrap();
        let second = b.acquire().unwrap();
        assert_eq!(counts(&b), (2, 0, 0));
        assert!(is_full(b.acquire()));
        drop(first);
        assert_eq!(counts(&b), (1, 1, 0));
        let _third = b.acquire().unwrap();
        drop(second);
        assert_eq!(counts(&b), (1, 1, 0));
    }

    #[test]
    fn sync_waiter_gets_the_slot_a_thread_frees() {
        let clock = ManualClock::new();
        let b = bulkhead(&clock, 1, 10 * MS);
        let held = b.acquire().unwrap();
        std::thread::scope(|s| {
            let waiter = s.spawn(|| b.acquire().map(drop).is_ok());
            wait_until(&b, 1);
            drop(held);
            assert!(waiter.join().unwrap());
        });
        assert_eq!(counts(&b), (0, 1, 0));
        assert_eq!(clock.elapsed(), Duration::ZERO, "a sync waiter does not move the manual clock");
    }

    #[test]
    fn sync_waiter_is_refused_once_the_clock_passes_its_deadline() {
        let clock = ManualClock::new();
        let b = bulkhead(&clock, 1, 10 * MS);
        let _held = b.acquire().unwrap();
        std::thread::scope(|s| {
            let waiter = s.spawn(|| is_full(b.acquire()));
            wait_until(&b, 1);
            clock.advance(10 * MS);
            assert!(waiter.join().unwrap());
        });
        assert_eq!(counts(&b), (1, 0, 0));
    }

    #[test]
    fn async_waiters_are_served_in_arrival_order() {
        let clock = ManualClock::new();
        let b = bulkhead(&clock, 1, 10_000 * MS);
        let order = Mutex::new(Vec::new());
        let call = |name: &'static str, work: Duration| {
            let (b, order) = (&b, &order);
            async move {
                let _slot = b.acquire_async().await.unwrap();
                order.lock().unwrap().push(name);
                b.state.timer.sleep_async(work).await.unwrap();
            }
        };
        block_on(async {
            tokio::join!(call("holder", 100 * MS), call("a", 10 * MS), call("b", 10 * MS), call("c", 10 * MS))
        });
        assert_eq!(*order.lock().unwrap(), ["holder", "a", "b", "c"]);
        assert_eq!(clock.elapsed(), 130 * MS, "the waiters' own timers never fired");
        assert_eq!(counts(&b), (0, 1, 0));
    }

    #[test]
    fn async_waiter_is_refused_at_its_deadline() {
        let clock = ManualClock::new();
        let b = bulkhead(&clock, 1, 30 * MS);
        let refused = block_on(async {
            let holder = async {
                let _slot = b.acquire_async().await.unwrap();
                b.state.timer.sleep_async(100 * MS).await.unwrap();
            };
            let waiter = async {
                let refused = is_full(b.acquire_async().await);
                (refused, clock.elapsed())
            };
            tokio::join!(holder, waiter).1
        });
        assert_eq!(refused, (true, 30 * MS));
        assert_eq!(counts(&b), (0, 1, 0));
    }

    #[test]
    fn the_slot_comes_back_on_panic() {
        let clock = ManualClock::new();
        let b = bulkhead(&clock, 1, Duration::ZERO);
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _slot = b.acquire().unwrap();
            panic!("the delegate panicked");
        }));
        assert!(outcome.is_err());
        assert_eq!(counts(&b), (0, 1, 0));
    }

    /// Polls `f` once, then drops it.
    fn poll_once_then_drop<F: Future>(f: F) -> bool {
        block_on(async {
            let mut f = std::pin::pin!(f);
            std::future::poll_fn(|cx| Poll::Ready(f.as_mut().poll(cx).is_pending())).await
        })
    }

    #[test]
    fn the_slot_comes_back_when_a_pending_call_is_dropped() {
        let clock = ManualClock::new();
        let b = bulkhead(&clock, 1, Duration::ZERO);
        let call = async {
            let _slot = b.acquire_async().await.unwrap();
            std::future::pending::<()>().await;
        };
        assert!(poll_once_then_drop(call));
        assert_eq!(counts(&b), (0, 1, 0));
    }

    #[test]
    fn a_dropped_waiter_leaves_the_queue_and_passes_on_a_slot_it_was_handed() {
        let clock = ManualClock::new();
        let b = bulkhead(&clock, 1, 1000 * MS);
        let held = b.acquire().unwrap();
        assert!(poll_once_then_drop(b.acquire_async()));
        assert_eq!(counts(&b), (1, 0, 0), "left the queue");
        block_on(async {
            let mut waiter = std::pin::pin!(b.acquire_async());
            let pending = std::future::poll_fn(|cx| Poll::Ready(waiter.as_mut().poll(cx).is_pending())).await;
            assert!(pending);
            drop(held); // handed to the waiter, which is dropped before it resumes
        });
        assert_eq!(counts(&b), (0, 1, 0));
        assert_eq!(clock.elapsed(), Duration::ZERO);
    }

    #[test]
    fn shutdown_ends_waits_with_a_refusal() {
        let clock = ManualClock::new();
        let b = bulkhead(&clock, 1, 1000 * MS);
        let _held = b.acquire().unwrap();
        b.state.timer.shut_down();
        assert!(is_full(b.acquire()));
        assert!(is_full(block_on(b.acquire_async())));
        assert_eq!(counts(&b), (1, 0, 0));
    }

    #[test]
    fn events_per_call_when_listened_and_none_when_disabled() {
        let clock = ManualClock::new();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&seen);
        let listener: Listener<BulkheadEvent> = Arc::new(move |e| sink.lock().unwrap().push(e.clone()));
        let config = BulkheadConfig { max_concurrent_calls: 1, ..Default::default() };
        let b = bulkhead_with(&clock, config, std::slice::from_ref(&listener));
        let slot = b.acquire().unwrap();
        assert!(b.acquire().is_err());
        drop(slot);
        let instance: Arc<str> = "bh".into();
        assert_eq!(
            *seen.lock().unwrap(),
            [
                BulkheadEvent::Permitted { instance: instance.clone() },
                BulkheadEvent::Rejected { instance: instance.clone() },
                BulkheadEvent::Finished { instance },
            ]
        );
        let off = bulkhead_with(
            &clock,
            BulkheadConfig { enabled: false, max_concurrent_calls: 1, ..Default::default() },
            &[listener],
        );
        let slots: Vec<_> = (0..10).map(|_| off.acquire().unwrap()).collect();
        drop(slots);
        assert_eq!(seen.lock().unwrap().len(), 3);
        assert_eq!(counts(&off), (0, 1, 0));
    }

    #[test]
    fn futures_and_permits_are_send() {
        fn send<T: Send>(_: T) {}
        let b = bulkhead(&ManualClock::new(), 1, MS);
        send(b.acquire_async());
        send(b.acquire().unwrap());
    }

    /// Four threads, three slots; waits race hand-offs while a fifth thread moves the clock so some
    /// waits time out exactly when a slot is handed to them.
    #[test]
    fn stress_never_more_than_max_inside() {
        const MAX: u32 = 3;
        let clock = ManualClock::new();
        let b = bulkhead(&clock, MAX, 2 * MS);
        let inside = AtomicU32::new(0);
        let most = AtomicU32::new(0);
        let done = AtomicBool::new(false);
        let (mut passed, mut refused) = (0, 0);
        std::thread::scope(|s| {
            let workers: Vec<_> = (0..4)
                .map(|_| {
                    s.spawn(|| {
                        let (mut passed, mut refused) = (0u32, 0u32);
                        for i in 0..2_000 {
                            match b.acquire() {
                                Ok(_slot) => {
                                    let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                                    most.fetch_max(now, Ordering::SeqCst);
                                    for _ in 0..i % 5 {
                                        std::thread::yield_now();
                                    }
                                    inside.fetch_sub(1, Ordering::SeqCst);
                                    passed += 1;
                                }
                                Err(_) => refused += 1,
                            }
                        }
                        (passed, refused)
                    })
                })
                .collect();
            s.spawn(|| {
                while !done.load(Ordering::Relaxed) {
                    clock.advance(MS);
                    std::thread::yield_now();
                }
            });
            for w in workers {
                let (p, r) = w.join().unwrap();
                passed += p;
                refused += r;
            }
            done.store(true, Ordering::Relaxed);
        });
        assert!(most.load(Ordering::SeqCst) <= MAX);
        assert_eq!(passed + refused, 8_000);
        assert!(passed > 0);
        assert_eq!(counts(&b), (0, MAX, 0));
    }

    /// Async tasks on two runtime threads: their waits on the manual clock fire in deadline order
    /// while slots are handed over, so refusals race hand-offs all the time.
    #[test]
    fn stress_async_never_more_than_max_inside() {
        const MAX: u32 = 2;
        let clock = ManualClock::new();
        let b = Arc::new(bulkhead(&clock, MAX, 3 * MS));
        let inside = Arc::new(AtomicU32::new(0));
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).build().unwrap();
        let (passed, refused) = rt.block_on(async {
            let tasks: Vec<_> = (0..6u32)
                .map(|t| {
                    let (b, inside) = (Arc::clone(&b), Arc::clone(&inside));
                    tokio::spawn(async move {
                        let (mut passed, mut refused) = (0u32, 0u32);
                        for i in 0..300u32 {
                            let Ok(_slot) = b.acquire_async().await else {
                                refused += 1;
                                continue;
                            };
                            assert!(inside.fetch_add(1, Ordering::SeqCst) < MAX, "more than {MAX} inside");
                            b.state
                                .timer
                                .sleep_async(Duration::from_micros(u64::from((i * 7 + t) % 5) * 900))
                                .await
                                .unwrap();
                            inside.fetch_sub(1, Ordering::SeqCst);
                            passed += 1;
                        }
                        (passed, refused)
                    })
                })
                .collect();
            let mut totals = (0, 0);
            for task in tasks {
                let (p, r) = task.await.unwrap();
                totals = (totals.0 + p, totals.1 + r);
            }
            totals
        });
        assert_eq!(passed + refused, 1_800);
        assert!(passed > 0 && refused > 0, "both outcomes happen: {passed} passed, {refused} refused");
        assert_eq!(counts(&b), (0, MAX, 0));
    }
}
