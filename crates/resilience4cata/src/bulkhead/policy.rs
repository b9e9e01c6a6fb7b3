//! The bulkhead instance the generated code takes a slot from around the call to the delegate.

use std::future::Future;
use std::sync::Arc;
#[cfg(feature = "tower")]
use std::task::Poll;

use super::shared::SlotPool;
use super::state::{BulkheadState, Withdrawn};
#[cfg(feature = "tower")]
use super::state::{Queued, Wake};
use super::{BulkheadConfig, BulkheadConfigBuilder, BulkheadEvent, BulkheadSnapshot};
use crate::error::RegistryError;
use crate::events::Publisher;
use crate::fleet::{self, Answer};
use crate::kit::{Fixed, Inner, policy_kind};
use crate::pass_or::PassOr;
use crate::rejection::Rejection;
pub(crate) use crate::slot_watch::SlotWatch;
use crate::slot_watch::WaitRefusal;
use crate::sync::atomic::Ordering;

/// A slot of a bulkhead, given back when dropped: on return, on error, on panic, and when the
/// future holding it is dropped.
#[derive(Debug)]
#[must_use = "the slot is given back as soon as the permit is dropped"]
pub struct BulkheadPermit<'a> {
    state: &'a BulkheadState,
    held: Held,
}

/// What a [`BulkheadPermit`] holds: one test on drop tells the pass path's local slot from the rest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Held {
    /// A local slot (every slot of a bulkhead that is not shared).
    Local,
    /// A local slot and one of the fleet's (shared bulkheads).
    WithFleet,
    /// Nothing: a disabled bulkhead counts nothing.
    Nothing,
}

impl<'a> BulkheadPermit<'a> {
    /// Owns a slot just taken, then says so: the guard exists before `Permitted` is published,
    /// so the slot is given back whatever an observer does.
    #[inline]
    fn new(state: &'a BulkheadState) -> Self {
        let permit = BulkheadPermit { state, held: Held::Local };
        state.permitted();
        permit
    }
}

impl Drop for BulkheadPermit<'_> {
    #[inline]
    fn drop(&mut self) {
        match self.held {
            Held::Local => self.state.finished(false),
            held => finish_other(self.state, held),
        }
    }
}

/// The drop of a disabled bulkhead's permit (nothing) or of a shared one's (its fleet slot too).
#[cold]
#[inline(never)]
fn finish_other(state: &BulkheadState, held: Held) {
    if held == Held::WithFleet {
        state.finished(true);
    }
}

/// A [`BulkheadPermit`] owned instead of borrowed: a slot taken ahead of its call by a tower
/// service under backpressure (`poll_ready`), so the service can keep it between `poll_ready` and
/// `call`; given back when dropped, used or not.
#[derive(Debug)]
#[cfg_attr(not(feature = "tower"), allow(dead_code))]
pub(crate) struct OwnedBulkheadPermit {
    /// `None` for a disabled bulkhead, which counts nothing.
    state: Option<Arc<BulkheadState>>,
    /// A shared bulkhead's fleet slot is held too (given back with the local one).
    fleet: bool,
}

impl Drop for OwnedBulkheadPermit {
    #[inline]
    fn drop(&mut self) {
        if let Some(state) = self.state.take() {
            state.finished(self.fleet);
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
    /// A shared bulkhead's fleet slot, taken before the wait for a local one: it goes to the
    /// permit, or back to the pool when the wait is dropped.
    fleet: bool,
}

impl Drop for SlotWait {
    fn drop(&mut self) {
        if let Some(ticket) = self.ticket.take()
            && self.state.slots.withdraw(ticket) == Withdrawn::WithSlot
        {
            self.state.slots.release();
        }
        if std::mem::take(&mut self.fleet)
            && let Some(pool) = &self.state.shared
        {
            pool.give_back();
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
        match self.pass() {
            Some(permit) => Ok(permit),
            None => self.acquire_slow(),
        }
    }

    /// The pass path of both forms: a free local slot of an enabled bulkhead that is not shared
    /// (one compare-and-set under `pass_max`, 0 for the others); `None` for everything else (the slow paths).
    #[inline]
    fn pass(&self) -> Option<BulkheadPermit<'_>> {
        let state = &*self.state;
        if state.slots.try_acquire_below(state.pass_max.load(Ordering::Relaxed)) {
            return Some(BulkheadPermit::new(state));
        }
        None
    }

    /// Past the pass path, sync: a disabled bulkhead's empty permit, a shared bulkhead's fleet
    /// slot then local slot, or no slot free at first sight (refuse at once, or park for one up to
    /// `max_wait`). Out of line, so the pass path stays small enough to inline into the generated
    /// method.
    #[cold]
    #[inline(never)]
    fn acquire_slow(&self) -> Result<BulkheadPermit<'_>, Rejection> {
        let state = &*self.state;
        if !state.config.load().enabled {
            return Ok(BulkheadPermit { state, held: Held::Nothing });
        }
        if state.shared.is_none() {
            return self.acquire_local_slow();
        }
        let fleet = state.fleet_slot(SlotPool::wait_sync)?;
        let local = match state.slots.try_acquire() {
            true => Ok(BulkheadPermit::new(state)),
            false => self.acquire_local_slow(),
        };
        with_fleet(state, fleet, local)
    }

    fn acquire_local_slow(&self) -> Result<BulkheadPermit<'_>, Rejection> {
        let state = &*self.state;
        if state.config.load().max_wait.is_zero() {
            return Err(state.refuse());
        }
        state.wait().map(|()| BulkheadPermit::new(state))
    }

    /// The async form of [`acquire`](Self::acquire): waiters are served in arrival order, and
    /// dropping the future leaves the queue.
    ///
    /// The pass path runs when this is *called*, before any future exists: a free slot is taken
    /// (and `Permitted` published) then, and the future only hands it over, ready on its first
    /// poll; the wait for a slot (and the shared and disabled cases) runs in the future. The
    /// generated code awaits the call at once, so the two moments are the same; a future dropped
    /// unpolled gives its slot back as any permit does.
    #[inline(always)]
    pub fn acquire_async(
        &self,
    ) -> PassOr<BulkheadPermit<'_>, impl Future<Output = Result<BulkheadPermit<'_>, Rejection>> + Send + '_> {
        match self.pass() {
            Some(permit) => PassOr::Passed { permit },
            None => PassOr::Slow { future: self.acquire_slow_async() },
        }
    }

    /// [`acquire_async`](Self::acquire_async) under a timeout (SPEC §6): the same pass path, and a
    /// slow path that marks `watch` as waiting until it ends, so a timeout that fires meanwhile
    /// knows the attempt never got its slot (and refuses it with
    /// [`refuse_waiting`](Self::refuse_waiting) instead of timing it out). A wait dropped by the
    /// timeout leaves the mark set: the timeout reads it either before or after the drop.
    #[inline(always)]
    pub fn acquire_async_watched<'a>(
        &'a self,
        watch: &'a SlotWatch,
    ) -> PassOr<BulkheadPermit<'a>, impl Future<Output = Result<BulkheadPermit<'a>, Rejection>> + Send + 'a> {
        match self.pass() {
            Some(permit) => PassOr::Passed { permit },
            None => PassOr::Slow { future: self.acquire_slow_watched(watch) },
        }
    }

    /// The slow path of [`acquire_async_watched`](Self::acquire_async_watched).
    async fn acquire_slow_watched(&self, watch: &SlotWatch) -> Result<BulkheadPermit<'_>, Rejection> {
        watch.set(true);
        let acquired = self.acquire_slow_async().await;
        watch.set(false);
        acquired
    }

    /// The refusal of an attempt whose timeout fired while it still waited for a slot (see
    /// [`SlotWatch`]): `BulkheadFull`, published and counted as any refusal of this bulkhead
    /// (`Rejected`, `resilience4cata_bulkhead_rejected_total`). The wait itself leaves the queue when the
    /// timeout drops the attempt.
    #[cold]
    #[inline(never)]
    pub fn refuse_waiting(&self) -> Rejection {
        self.state.refuse()
    }

    /// Past the pass path, async: as [`acquire_slow`](Self::acquire_slow), waiting in the future.
    async fn acquire_slow_async(&self) -> Result<BulkheadPermit<'_>, Rejection> {
        let state = &*self.state;
        if !state.config.load().enabled {
            return Ok(BulkheadPermit { state, held: Held::Nothing });
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
            return with_fleet(state, fleet, self.acquire_local_async().await);
        }
        self.acquire_local_async().await
    }

    async fn acquire_local_async(&self) -> Result<BulkheadPermit<'_>, Rejection> {
        let state = &*self.state;
        if state.slots.try_acquire() {
            return Ok(BulkheadPermit::new(state));
        }
        if state.config.load().max_wait.is_zero() {
            return Err(state.refuse());
        }
        state.wait_async().await.map(|()| BulkheadPermit::new(state))
    }
}

/// Ties a fleet slot to the local outcome: kept by the permit, or given back on a refusal.
fn with_fleet<'a>(
    state: &'a BulkheadState,
    fleet: bool,
    local: Result<BulkheadPermit<'a>, Rejection>,
) -> Result<BulkheadPermit<'a>, Rejection> {
    match (local, &state.shared) {
        (Ok(mut permit), _) => {
            if fleet {
                permit.held = Held::WithFleet;
            }
            Ok(permit)
        }
        (Err(refused), Some(pool)) if fleet => {
            pool.give_back();
            Err(refused)
        }
        (Err(refused), _) => Err(refused),
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
    ) -> Poll<Result<OwnedBulkheadPermit, Rejection>> {
        let state = &*self.state;
        if !state.config.load().enabled {
            return Poll::Ready(Ok(OwnedBulkheadPermit { state: None, fleet: false }));
        }
        let owned = |fleet: bool| {
            let slot = OwnedBulkheadPermit { state: Some(Arc::clone(&self.state)), fleet };
            state.permitted(); // after the guard exists, as in `BulkheadPermit::new`
            slot
        };
        if let Some(wait) = waiting {
            let ticket = wait.ticket.expect("a waiting place holds its ticket");
            if state.slots.collect(ticket, Some(cx.waker())) {
                wait.ticket = None;
                let fleet = std::mem::take(&mut wait.fleet);
                *waiting = None;
                return Poll::Ready(Ok(owned(fleet)));
            }
            if !state.timer.is_shut_down() {
                return Poll::Pending;
            }
            wait.ticket = None;
            let fleet = std::mem::take(&mut wait.fleet);
            *waiting = None;
            return Poll::Ready(match state.slots.withdraw(ticket) {
                Withdrawn::WithSlot => Ok(owned(fleet)),
                Withdrawn::Empty => {
                    if fleet && let Some(pool) = &state.shared {
                        pool.give_back();
                    }
                    Err(state.refuse())
                }
            });
        }
        // A shared bulkhead's fleet slot first, as `acquire` takes it (up to `store_timeout`
        // for the store's answer when no spare one is held; the fleet full refuses).
        let fleet = match state.shared.is_some() {
            true => match state.fleet_slot(SlotPool::wait_sync) {
                Ok(fleet) => fleet,
                Err(refused) => return Poll::Ready(Err(refused)),
            },
            false => false,
        };
        if state.slots.try_acquire() {
            return Poll::Ready(Ok(owned(fleet)));
        }
        let mut wait = SlotWait { state: Arc::clone(&self.state), ticket: None, fleet };
        if state.timer.is_shut_down() {
            drop(wait); // gives the fleet slot back
            return Poll::Ready(Err(state.refuse()));
        }
        match state.slots.enqueue(Wake::Task(Some(cx.waker().clone()))) {
            Queued::Acquired => Poll::Ready(Ok(owned(std::mem::take(&mut wait.fleet)))),
            Queued::Waiting(ticket) => {
                wait.ticket = Some(ticket);
                *waiting = Some(wait);
                Poll::Pending
            }
        }
    }
}

impl WaitRefusal for BulkheadPolicy {
    #[inline(always)]
    fn refuse_waiting(&self) -> Rejection {
        BulkheadPolicy::refuse_waiting(self)
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
        inner.require_waits(id, is_async, (c.enabled, c.shared), c.max_wait, "this async method may wait for a bulkhead slot")
    }

    fn new_state(
        inner: &Inner,
        instance: Arc<str>,
        config: BulkheadConfig,
        events: Publisher<BulkheadEvent>,
    ) -> BulkheadState {
        let store = inner.shared.as_deref();
        let (enabled, shared) = (config.enabled, config.shared);
        let pool = fleet::link(store, (enabled, shared), (&instance, events.key()), &inner.timer, &inner.listeners, |parts| {
            SlotPool::new(parts, &config)
        });
        let mut state = BulkheadState::new(instance, config, Arc::clone(&inner.timer), events);
        if let Some(pool) = pool {
            state.share(pool);
        }
        state
    }

    fn reconfigure(state: &BulkheadState, config: BulkheadConfig) {
        state.reconfigure(config);
    }

    fn fixed_key(old: &BulkheadConfig, new: &BulkheadConfig) -> Option<Fixed> {
        fixed_key(old, new)
    }
}

/// The key of `new` a live update cannot change from `old` (SPEC §16): `shared` and `lease`; and,
/// on a shared instance, what its fleet link took when it was built (`enabled`, the fleet-wide
/// `max_concurrent_calls`, `lease_ttl`).
#[cfg_attr(not(feature = "serde"), allow(dead_code))] // reached through a live update (feature `serde`)
fn fixed_key(old: &BulkheadConfig, new: &BulkheadConfig) -> Option<Fixed> {
    if old.shared != new.shared {
        return Some(Fixed::Placement("shared"));
    }
    if old.lease != new.lease {
        return Some(Fixed::Placement("lease"));
    }
    if !old.shared {
        return None;
    }
    [
        ("enabled", old.enabled != new.enabled),
        ("max_concurrent_calls", old.max_concurrent_calls != new.max_concurrent_calls),
        ("lease_ttl", old.lease_ttl != new.lease_ttl),
    ]
    .into_iter()
    .find_map(|(key, changed)| changed.then_some(Fixed::Placement(key)))
}

impl crate::kit::AtRest for BulkheadPolicy {
    fn at_rest(&self) -> bool {
        self.state.at_rest()
    }
}

/// Keyable (SPEC §15): the instance as a whole sums its keys' calls in flight and waiting.
impl crate::kit::KeyedKind for BulkheadPolicy {
    fn state(&self) -> &Arc<BulkheadState> {
        &self.state
    }

    fn max_keys(config: &BulkheadConfig) -> u32 {
        config.max_keys
    }

    fn key_metrics(config: &BulkheadConfig) -> bool {
        config.key_metrics
    }

    fn whole(of: BulkheadSnapshot, counts: crate::kit::KeyCounts, keys: &[BulkheadSnapshot]) -> BulkheadSnapshot {
        BulkheadSnapshot {
            keys: counts.keys,
            evicted: counts.evicted,
            keys_exhausted: counts.exhausted,
            in_flight: keys.iter().map(|k| k.in_flight).sum(),
            waiting: keys.iter().map(|k| k.waiting).sum(),
            ..of
        }
    }
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
    use std::task::Poll;
    use std::time::Duration;
    use testkit::block_on;

    use super::*;
    use crate::clock::{Clock, ManualClock};
    use crate::events::{Listener, recorder};

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

    /// The pass path's cap follows `enabled` and `max_concurrent_calls` live: a disabled bulkhead
    /// (cap 0 on the pass path) passes every call without a slot through the slow path, and once
    /// enabled again with a raised cap the pass path counts and refuses under the new cap.
    #[test]
    fn live_enable_and_cap_reach_the_pass_path() {
        let clock = ManualClock::new();
        let b = bulkhead(&clock, 1, Duration::ZERO);
        let held = b.acquire().unwrap();
        assert!(is_full(b.acquire()));
        let config = |enabled, max| BulkheadConfig { enabled, max_concurrent_calls: max, ..Default::default() };
        b.state.reconfigure(config(false, 1));
        let free = [b.acquire().unwrap(), block_on(b.acquire_async()).unwrap()];
        assert_eq!(counts(&b), (1, 0, 0), "a disabled bulkhead takes no slot");
        drop(free);
        b.state.reconfigure(config(true, 2));
        let second = b.acquire().unwrap();
        assert_eq!(counts(&b), (2, 0, 0));
        assert!(is_full(b.acquire()));
        drop((held, second));
        assert_eq!(counts(&b), (0, 2, 0));
    }

    #[test]
    fn sync_waiter_gets_the_slot_a_thread_frees() {
        let clock = ManualClock::new();
        let b = bulkhead(&clock, 1, 10 * MS);
        let held = b.acquire().unwrap();
        // An earlier deadline kept pending (an async sleep polled once, never again): without it
        // the waiter would move the clock to its own deadline after two 1 ms checks (SPEC §10)
        // and be refused whenever this thread is slower than that to free the slot.
        let mut earlier = Box::pin(b.state.timer.sleep_async(MS));
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        assert!(std::future::Future::poll(earlier.as_mut(), &mut cx).is_pending());
        std::thread::scope(|s| {
            let waiter = s.spawn(|| b.acquire().map(drop).is_ok());
            wait_until(&b, 1);
            drop(held);
            assert!(waiter.join().unwrap());
        });
        drop(earlier);
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
            // With nothing earlier pending, the waiter itself moves the clock to its deadline
            // after two 1 ms checks (SPEC §10) and may be gone before it is seen waiting.
            while b.state.snapshot().waiting != 1 && !waiter.is_finished() {
                std::thread::yield_now();
            }
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
        let (seen, listener) = recorder::<BulkheadEvent>();
        let config = BulkheadConfig { max_concurrent_calls: 1, ..Default::default() };
        let b = bulkhead_with(&clock, config, std::slice::from_ref(&listener));
        let slot = b.acquire().unwrap();
        assert!(b.acquire().is_err());
        drop(slot);
        let instance: Arc<str> = "bh".into();
        assert_eq!(
            *seen.lock().unwrap(),
            [
                BulkheadEvent::Permitted { instance: instance.clone(), key: None },
                BulkheadEvent::Rejected { instance: instance.clone(), key: None },
                BulkheadEvent::Finished { instance, key: None },
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
        let (passed, refused) = {
            let b = Arc::clone(&b);
            crate::stress::stress_async(move |t, i| {
                let (b, inside) = (Arc::clone(&b), Arc::clone(&inside));
                async move {
                    let Ok(_slot) = b.acquire_async().await else {
                        return false;
                    };
                    assert!(inside.fetch_add(1, Ordering::SeqCst) < MAX, "more than {MAX} inside");
                    b.state.timer.sleep_async(Duration::from_micros(u64::from((i * 7 + t) % 5) * 900)).await.unwrap();
                    inside.fetch_sub(1, Ordering::SeqCst);
                    true
                }
            })
        };
        assert_eq!(passed + refused, 1_800);
        assert!(passed > 0 && refused > 0, "both outcomes happen: {passed} passed, {refused} refused");
        assert_eq!(counts(&b), (0, MAX, 0));
    }
}
