//! Shared state across processes: the store trait a registry holds, the lease pool a shared rate
//! limiter spends from, the link a shared circuit breaker publishes and learns Opens through, the
//! slot pool of a shared bulkhead, and [`SharedStateEvent`].
//!
//! A fleet of replicas shares one rate limiter, circuit breaker or bulkhead when each builds it with
//! `shared = true` (a configuration key, in builders and files only) on a registry given a store
//! with
//! [`RegistryBuilder::shared_state`](crate::RegistryBuilder::shared_state). The runtime knows no
//! engine: `resilience4cata-redis` implements [`SharedStore`] on Redis.
//!
//! # How the pass path stays local
//!
//! A shared limiter does not ask the store per call. It spends permits from a [`LeasePool`]: a
//! count of permits leased from the fleet-wide quota, with the time they lapse, packed in one
//! atomic word. Taking a permit is one compare-and-set on that word, as for a local limiter. When
//! the count falls to half a lease, the call that crossed the mark wakes the store's own
//! background task ([`LeasePool::wanted`]), which asks the fleet for the next lease while the
//! remaining half is spent; sync and async callers alike never wait on the network in the common
//! case. Only a call that finds the pool empty waits, for at most the store's
//! [`store_timeout`](SharedStore::store_timeout) (a sync call parks its thread, an async call
//! waits in its future): for the refill, or for the store's answer that the fleet is out of
//! permits (then it is refused with `RateLimitExceeded`, `retry_after` from the store), or, when
//! the store does not answer in time, for nothing: the call is decided on the instance's local
//! limiter.
//!
//! # Degraded mode
//!
//! When the store cannot be reached (down, slow, restarted), it marks the pool
//! [degraded](LeasePool::degrade): the limiter then decides every call on its local state alone
//! (the instance's own GCRA, `permits` per `period` *per process*), publishes
//! [`SharedStateEvent::Degraded`], and the store keeps trying in the background; on its first
//! success it [recovers](LeasePool::recover) the pool, which publishes
//! [`SharedStateEvent::Recovered`]. A caller never sees the store's errors.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use atomic_waker::AtomicWaker;

use crate::clock::{Timer, nanos};
use crate::events::{Hub, Listener};

/// An engine that shares policy state between processes (`resilience4cata-redis`'s `RedisStore`).
///
/// A registry holds one ([`RegistryBuilder::shared_state`](crate::RegistryBuilder::shared_state))
/// and hands it the [`LeasePool`] of every rate limiter built with `shared = true`; the store
/// refills each pool from its own background task, never on a caller's thread.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use resilience4cata::Registry;
/// use resilience4cata::shared::{BreakerLink, LeasePool, SharedStore, SlotPool};
///
/// /// A "fleet" of one process that grants every lease in full: shows the contract only.
/// #[derive(Debug)]
/// struct Generous;
/// impl SharedStore for Generous {
///     fn store_timeout(&self) -> Duration {
///         Duration::from_millis(25)
///     }
///     fn share_rate_limiter(&self, pool: Arc<LeasePool>) {
///         std::thread::spawn(move || loop {
///             pool.wait_wanted_blocking();
///             pool.grant(pool.wanted_permits(), Duration::ZERO);
///         });
///     }
///     fn share_circuit_breaker(&self, _link: Arc<BreakerLink>) {
///         // A fleet of one: nothing to publish, nothing comes in.
///     }
///     fn share_bulkhead(&self, pool: Arc<SlotPool>) {
///         pool.grant(pool.max_concurrent_calls()); // every slot, for good
///     }
/// }
///
/// let registry = Registry::builder()
///     .shared_state(Generous)
///     .rate_limiter_instance("prices", |r| r.shared(true).permits(10))
///     .build()?;
/// let limiter = resilience4cata::Pipeline::builder(&registry, "prices")
///     .rate_limiter_with(|r| r)
///     .build::<(), std::io::Error>()?;
/// assert!(limiter.execute(|| Ok(())).is_ok());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait SharedStore: Send + Sync + fmt::Debug + 'static {
    /// The longest a decision waits for this store before it is taken on local state.
    fn store_timeout(&self) -> Duration;

    /// Starts sharing a rate limiter: called once, when the instance is built. The store keeps
    /// `pool` and refills it whenever [`LeasePool::wanted`] says so, from its own background task.
    fn share_rate_limiter(&self, pool: Arc<LeasePool>);

    /// Starts sharing a bulkhead: called once, when the instance is built. The store keeps `pool`
    /// and takes, returns and renews its fleet slots from its own background task.
    fn share_bulkhead(&self, pool: Arc<SlotPool>);

    /// Starts sharing a circuit breaker: called once, when the instance is built. The store
    /// publishes the breaker's Opens ([`BreakerLink::work`]), applies the fleet's
    /// ([`BreakerLink::open_remotely`]) and grants half-open probes ([`BreakerLink::grant_probes`]).
    fn share_circuit_breaker(&self, link: Arc<BreakerLink>);
}

/// Declared with the other events (`events/shared_state.rs`), so the event machinery never reads
/// the store; this path stays the public one.
pub use crate::events::SharedStateEvent;

/// Where [`SharedStateEvent`]s go: the registry's listeners and subscribers.
pub(crate) struct SharedPublisher {
    listeners: Box<[Listener<SharedStateEvent>]>,
    hub: Arc<Hub>,
}

impl SharedPublisher {
    pub(crate) fn new(listeners: &crate::events::Listeners) -> Self {
        SharedPublisher { listeners: listeners.shared_state.as_slice().into(), hub: Arc::clone(&listeners.hub) }
    }

    /// Moves `degraded` to `to`, publishing `Degraded` / `Recovered` only on a change.
    fn set_degraded(&self, degraded: &AtomicBool, to: bool, instance: &Arc<str>) {
        if degraded.swap(to, Ordering::AcqRel) != to {
            let instance = Arc::clone(instance);
            self.emit(if to {
                SharedStateEvent::Degraded { instance }
            } else {
                SharedStateEvent::Recovered { instance }
            });
        }
    }

    fn emit(&self, event: SharedStateEvent) {
        #[cfg(feature = "tracing")]
        tracing::event!(target: "resilience4cata", tracing::Level::WARN, event = ?event);
        for listener in self.listeners.iter() {
            listener(&event);
        }
        if self.hub.has_subscribers() {
            self.hub.publish(&crate::events::AnyEvent::SharedState(event));
        }
    }
}

/// Low bits of the pool word: the permits in hand; high bits: when they lapse, in units of
/// 2^`SHIFT` ns (about a millisecond) of the registry's clock.
const SHIFT: u32 = 20;
const COUNT: u64 = (1 << SHIFT) - 1;

/// The wake-ups between callers and a store's task: a refill wanted (callers → store), an answer
/// given (store → waiting callers).
struct Signal {
    /// Set when the store should act, cleared by the store when it takes the request.
    wanted: AtomicBool,
    store_waker: AtomicWaker,
    store_thread: Mutex<bool>,
    store_signal: Condvar,
    /// Bumped by every answer of the store; callers waiting for one park on `answered`.
    answers: Mutex<u64>,
    answered: Condvar,
    async_waiters: Mutex<Vec<Waker>>,
}

impl Signal {
    fn new(wanted: bool) -> Self {
        Signal {
            wanted: AtomicBool::new(wanted),
            store_waker: AtomicWaker::new(),
            store_thread: Mutex::new(false),
            store_signal: Condvar::new(),
            answers: Mutex::new(0),
            answered: Condvar::new(),
            async_waiters: Mutex::new(Vec::new()),
        }
    }

    fn wanted(&self) -> impl Future<Output = ()> + Send + '_ {
        std::future::poll_fn(move |cx: &mut Context<'_>| {
            if self.wanted.swap(false, Ordering::AcqRel) {
                return Poll::Ready(());
            }
            self.store_waker.register(cx.waker());
            if self.wanted.swap(false, Ordering::AcqRel) { Poll::Ready(()) } else { Poll::Pending }
        })
    }

    fn wait_wanted_blocking(&self) {
        let mut pending = self.store_thread.lock().unwrap_or_else(PoisonError::into_inner);
        while !self.wanted.swap(false, Ordering::AcqRel) {
            *pending = false;
            pending = self
                .store_signal
                .wait_timeout(pending, Duration::from_millis(50))
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Asks the store to act (once until it takes the request).
    fn want(&self) {
        if !self.wanted.swap(true, Ordering::AcqRel) {
            self.store_waker.wake();
            *self.store_thread.lock().unwrap_or_else(PoisonError::into_inner) = true;
            self.store_signal.notify_one();
        }
    }

    /// Wakes every caller waiting for the store.
    fn answer(&self) {
        *self.answers.lock().unwrap_or_else(PoisonError::into_inner) += 1;
        self.answered.notify_all();
        let waiters = std::mem::take(&mut *self.async_waiters.lock().unwrap_or_else(PoisonError::into_inner));
        waiters.into_iter().for_each(Waker::wake);
    }

    /// Asks the store to act and parks up to `timeout` for `decide` to have an answer.
    fn wait_sync(&self, timeout: Duration, decide: impl Fn() -> Option<Answer>) -> Answer {
        self.want();
        let deadline = Instant::now() + timeout;
        let mut answers = self.answers.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if let Some(answer) = decide() {
                return answer;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Answer::Local;
            }
            let seen = *answers;
            let (guard, _) = self
                .answered
                .wait_timeout_while(answers, left, |count| *count == seen)
                .unwrap_or_else(PoisonError::into_inner);
            answers = guard;
        }
    }

    /// The async form of [`wait_sync`](Self::wait_sync): waits in the future, woken by the store's
    /// answer or by the registry's timer.
    async fn wait_async(&self, timer: &Timer, timeout: Duration, decide: impl Fn() -> Option<Answer>) -> Answer {
        self.want();
        let deadline = Instant::now() + timeout;
        let mut alarm = std::pin::pin!(timer.sleep_async(timeout));
        std::future::poll_fn(|cx: &mut Context<'_>| {
            if let Some(answer) = decide() {
                return Poll::Ready(answer);
            }
            self.async_waiters.lock().unwrap_or_else(PoisonError::into_inner).push(cx.waker().clone());
            if let Some(answer) = decide() {
                return Poll::Ready(answer);
            }
            if Instant::now() >= deadline || alarm.as_mut().poll(cx).is_ready() {
                return Poll::Ready(Answer::Local);
            }
            Poll::Pending
        })
        .await
    }
}

/// What a shared limiter found in its pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Take {
    /// A leased permit: the call may go.
    Taken,
    /// Nothing in hand.
    Empty,
}

/// What a call that found the pool empty learned within the store timeout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Answer {
    /// A refill came: the call took a permit.
    Permit,
    /// The fleet is out of permits for this long (nanoseconds).
    Exhausted(u64),
    /// No answer in time, or the pool is degraded: decide locally.
    Local,
}

/// The permits one process has leased from a shared rate limiter's fleet-wide quota, spent by the
/// pass path with local atomics and refilled by the store's background task.
///
/// The store's side of the contract: wait for [`wanted`](Self::wanted) (async) or
/// [`wait_wanted_blocking`](Self::wait_wanted_blocking), ask the fleet for
/// [`wanted_permits`](Self::wanted_permits), and answer with [`grant`](Self::grant) (zero permits
/// with the time until the fleet has one, when it has none); on trouble call
/// [`degrade`](Self::degrade), and [`recover`](Self::recover) when the store answers again.
pub struct LeasePool {
    instance: Arc<str>,
    permits: u32,
    period: Duration,
    lease: u32,
    /// Permits in hand (low bits) and when they lapse (high bits).
    word: AtomicU64,
    /// Registry-clock time until which the fleet said it has no permit (0: no such answer).
    exhausted_until: AtomicU64,
    degraded: AtomicBool,
    signal: Signal,
    store_timeout: Duration,
    timer: Arc<Timer>,
    events: SharedPublisher,
}

impl fmt::Debug for LeasePool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeasePool")
            .field("instance", &self.instance)
            .field("permits", &self.permits)
            .field("period", &self.period)
            .field("lease", &self.lease)
            .field("in_hand", &(self.word.load(Ordering::Relaxed) & COUNT))
            .field("degraded", &self.is_degraded())
            .finish_non_exhaustive()
    }
}

impl LeasePool {
    pub(crate) fn new(
        instance: Arc<str>,
        config: &crate::rate_limiter::RateLimiterConfig,
        store_timeout: Duration,
        timer: Arc<Timer>,
        events: SharedPublisher,
    ) -> Self {
        LeasePool {
            instance,
            permits: config.permits,
            period: config.period,
            lease: config.lease(),
            word: AtomicU64::new(0),
            exhausted_until: AtomicU64::new(0),
            degraded: AtomicBool::new(false),
            signal: Signal::new(true), // the first lease, before the first call
            store_timeout,
            timer,
            events,
        }
    }

    /// The instance id (the store's key is made from it).
    pub fn instance(&self) -> &str {
        &self.instance
    }

    /// The fleet-wide quota: `permits` per [`period`](Self::period).
    pub fn permits(&self) -> u32 {
        self.permits
    }

    /// The period of the quota; leased permits lapse one period after they are granted.
    pub fn period(&self) -> Duration {
        self.period
    }

    /// Permits per lease (`lease`, default `max(1, permits / 10)`).
    pub fn lease(&self) -> u32 {
        self.lease
    }

    /// Whether the pool decides on local state because the store could not be reached.
    pub fn is_degraded(&self) -> bool {
        self.degraded.load(Ordering::Relaxed)
    }

    /// Permits in hand now (lapsed ones do not count).
    pub fn in_hand(&self) -> u32 {
        let word = self.word.load(Ordering::Relaxed);
        if (word >> SHIFT) <= self.timer.now() >> SHIFT { 0 } else { (word & COUNT) as u32 }
    }

    /// How many permits to ask the fleet for: enough to hold one lease again (at least one).
    pub fn wanted_permits(&self) -> u32 {
        self.lease.saturating_sub(self.in_hand()).max(1)
    }

    /// Waits until a refill is wanted, and takes the request (for the store's async task).
    pub fn wanted(&self) -> impl Future<Output = ()> + Send + '_ {
        self.signal.wanted()
    }

    /// The blocking form of [`wanted`](Self::wanted), for a store that refills from a thread.
    pub fn wait_wanted_blocking(&self) {
        self.signal.wait_wanted_blocking();
    }

    /// The store's answer to a request: `permits` granted (they lapse one period from now), or
    /// none, the fleet having its next permit after `retry_after`.
    pub fn grant(&self, permits: u32, retry_after: Duration) {
        let now = self.timer.now();
        if permits == 0 {
            self.exhausted_until.store(now.saturating_add(nanos(retry_after)).max(1), Ordering::Relaxed);
        } else {
            self.exhausted_until.store(0, Ordering::Relaxed);
            let lapse = now.saturating_add(nanos(self.period)) >> SHIFT;
            let mut word = self.word.load(Ordering::Relaxed);
            loop {
                let live = if (word >> SHIFT) > now >> SHIFT { word & COUNT } else { 0 };
                let count = (live + u64::from(permits)).min(COUNT);
                let new = (lapse << SHIFT) | count;
                match self.word.compare_exchange_weak(word, new, Ordering::Release, Ordering::Relaxed) {
                    Ok(_) => break,
                    Err(current) => word = current,
                }
            }
        }
        self.signal.answer();
    }

    /// The store could not answer: the pool decides locally until [`recover`](Self::recover).
    /// Publishes [`SharedStateEvent::Degraded`] once per outage.
    pub fn degrade(&self) {
        self.events.set_degraded(&self.degraded, true, &self.instance);
        self.signal.answer();
    }

    /// The store answers again: the pool is shared again. Publishes
    /// [`SharedStateEvent::Recovered`] if it was degraded.
    pub fn recover(&self) {
        self.events.set_degraded(&self.degraded, false, &self.instance);
    }

    /// The pass path: one leased permit at `now` (coarse), one compare-and-set. The call that
    /// leaves half a lease in hand asks for the next one.
    #[inline]
    pub(crate) fn try_take(&self, now: u64) -> Take {
        let mut word = self.word.load(Ordering::Acquire);
        loop {
            let count = word & COUNT;
            if count == 0 || (word >> SHIFT) <= now >> SHIFT {
                return Take::Empty;
            }
            match self.word.compare_exchange_weak(word, word - 1, Ordering::Acquire, Ordering::Acquire) {
                Ok(_) => {
                    if count - 1 == u64::from(self.lease / 2) {
                        self.signal.want();
                    }
                    return Take::Taken;
                }
                Err(current) => word = current,
            }
        }
    }

    /// What a call that found the pool empty can decide now, without waiting.
    fn answer_now(&self, now: u64) -> Option<Answer> {
        if self.is_degraded() {
            return Some(Answer::Local);
        }
        if self.try_take(now) == Take::Taken {
            return Some(Answer::Permit);
        }
        let until = self.exhausted_until.load(Ordering::Relaxed);
        (until > now).then(|| Answer::Exhausted(until - now))
    }

    /// Past the pass path, sync: asks for a refill and parks up to the store timeout for it.
    pub(crate) fn wait_sync(&self) -> Answer {
        self.signal.wait_sync(self.store_timeout, || self.answer_now(self.timer.now()))
    }

    /// Past the pass path, async: asks for a refill and waits in the future up to the store
    /// timeout (on the system's monotonic time, as the network is).
    pub(crate) async fn wait_async(&self) -> Answer {
        self.signal.wait_async(&self.timer, self.store_timeout, || self.answer_now(self.timer.now())).await
    }
}

/// What a [`BreakerLink`] can do to its breaker: open it for the rest of a fleet-wide Open.
pub(crate) trait RemoteOpen: Send + Sync {
    /// Opens (from Closed or HalfOpen) so that the wait ends `remaining` from now; not published
    /// back to the fleet.
    fn open_remotely(&self, remaining: Duration);

    /// Whether the breaker is half-open now.
    fn is_half_open(&self) -> bool;
}

/// The link between one shared circuit breaker and the store: the breaker's local Opens go out
/// (`opened`), the fleet's Opens come in (`open_remotely`), and half-open probes are granted
/// fleet-wide (`probes_wanted`, `grant_probes`).
///
/// Each process keeps its own window: only the transition to Open is shared. A breaker that goes
/// half-open lets a probe through only with a fleet-wide probe permit in hand, so at most
/// `permitted_calls_in_half_open` probes run in the whole fleet; while the store is degraded the
/// local cap alone applies.
pub struct BreakerLink {
    instance: Arc<str>,
    wait_in_open: Duration,
    permitted: u32,
    /// Registry-clock time of a local Open not yet published (0: none).
    opened_at: AtomicU64,
    probes_wanted: AtomicBool,
    probes: AtomicU64,
    /// Probes the fleet granted this process in the current half-open state.
    granted: AtomicU64,
    degraded: AtomicBool,
    store_waker: AtomicWaker,
    breaker: std::sync::OnceLock<std::sync::Weak<dyn RemoteOpen>>,
    events: SharedPublisher,
}

impl fmt::Debug for BreakerLink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BreakerLink").field("instance", &self.instance).finish_non_exhaustive()
    }
}

impl BreakerLink {
    pub(crate) fn new(instance: Arc<str>, wait_in_open: Duration, permitted: u32, events: SharedPublisher) -> Self {
        BreakerLink {
            instance,
            wait_in_open,
            permitted,
            opened_at: AtomicU64::new(0),
            probes_wanted: AtomicBool::new(false),
            probes: AtomicU64::new(0),
            granted: AtomicU64::new(0),
            degraded: AtomicBool::new(false),
            store_waker: AtomicWaker::new(),
            breaker: std::sync::OnceLock::new(),
            events,
        }
    }

    /// Connects the link to its breaker's shared state, once.
    pub(crate) fn attach(&self, breaker: std::sync::Weak<dyn RemoteOpen>) {
        let _ = self.breaker.set(breaker);
    }

    /// The instance id.
    pub fn instance(&self) -> &str {
        &self.instance
    }

    /// How long an Open lasts (the published key expires after it).
    pub fn wait_in_open(&self) -> Duration {
        self.wait_in_open
    }

    /// The fleet-wide cap on half-open probes.
    pub fn permitted_calls_in_half_open(&self) -> u32 {
        self.permitted
    }

    /// Whether the link works on local state alone because the store could not be reached.
    pub fn is_degraded(&self) -> bool {
        self.degraded.load(Ordering::Relaxed)
    }

    /// Waits until there is something to send: a local Open to publish (`true`) or half-open
    /// probes to claim (`false`), and takes it (for the store's task).
    pub fn work(&self) -> impl Future<Output = bool> + Send + '_ {
        std::future::poll_fn(move |cx: &mut Context<'_>| {
            for attempt in 0..2 {
                if self.opened_at.swap(0, Ordering::AcqRel) != 0 {
                    return Poll::Ready(true);
                }
                if self.probes_wanted.swap(false, Ordering::AcqRel) {
                    return Poll::Ready(false);
                }
                if attempt == 0 {
                    self.store_waker.register(cx.waker());
                }
            }
            Poll::Pending
        })
    }

    /// Half-open probes to claim from the fleet (this breaker's own cap).
    pub fn probes_wanted(&self) -> u32 {
        self.permitted
    }

    /// The fleet's answer to a probe claim: this process may run `probes` probes in this half-open
    /// state (zero: other processes probe; the claim is made again on the next half-open).
    pub fn grant_probes(&self, probes: u32) {
        let probes = u64::from(probes.min(self.permitted));
        self.granted.store(probes, Ordering::Release);
        self.probes.store(probes, Ordering::Release);
    }

    /// Whether the breaker is half-open without a probe granted: the store should claim again
    /// (after the fleet's probe round has expired).
    pub fn needs_probes(&self) -> bool {
        self.granted.load(Ordering::Acquire) == 0
            && self.breaker.get().and_then(std::sync::Weak::upgrade).is_some_and(|b| b.is_half_open())
    }

    /// The probes whose outcomes decide this process's half-open state: the fleet's grant, or
    /// the local cap while degraded.
    pub(crate) fn probe_quota(&self, local: u64) -> u64 {
        if self.is_degraded() { local } else { self.granted.load(Ordering::Acquire).clamp(1, local) }
    }

    /// Another process opened the breaker: open here too, for `remaining` (the rest of its wait).
    pub fn open_remotely(&self, remaining: Duration) {
        if let Some(breaker) = self.breaker.get().and_then(std::sync::Weak::upgrade) {
            breaker.open_remotely(remaining.min(self.wait_in_open));
        }
    }

    /// The store could not be reached: probes are capped locally only. Publishes
    /// [`SharedStateEvent::Degraded`] once per outage.
    pub fn degrade(&self) {
        self.events.set_degraded(&self.degraded, true, &self.instance);
    }

    /// The store answers again. Publishes [`SharedStateEvent::Recovered`] if it was degraded.
    pub fn recover(&self) {
        self.events.set_degraded(&self.degraded, false, &self.instance);
    }

    /// The breaker opened on its own window (or reopened after probes): publish it.
    pub(crate) fn opened(&self, at: u64) {
        self.opened_at.store(at.max(1), Ordering::Release);
        self.store_waker.wake();
    }

    /// The breaker went half-open: claim probes from the fleet (none in hand until granted).
    pub(crate) fn half_opened(&self) {
        self.probes.store(0, Ordering::Release);
        self.granted.store(0, Ordering::Release);
        self.probes_wanted.store(true, Ordering::Release);
        self.store_waker.wake();
    }

    /// A fleet-wide probe permit, taken by a half-open call (always granted while degraded).
    pub(crate) fn take_probe(&self) -> bool {
        self.is_degraded()
            || self.probes.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1)).is_ok()
    }
}

/// The fleet-wide slots one process holds for a shared bulkhead: spent and given back with local
/// atomics, taken from and returned to the fleet by the store's task, and kept alive by it (each
/// slot is a lease that expires after `lease_ttl` unless renewed, so a crashed process frees its
/// slots within `lease_ttl`).
///
/// The store's side: wait for [`wanted`](Self::wanted), take [`wanted_slots`](Self::wanted_slots)
/// from the fleet and [`grant`](Self::grant) them (zero when the fleet is full), return
/// [`surplus`](Self::surplus) slots and confirm with [`returned`](Self::returned), renew the held
/// ones every `lease_ttl / 3`, and report slots found expired with [`lost`](Self::lost).
pub struct SlotPool {
    instance: Arc<str>,
    max: u32,
    lease: u32,
    lease_ttl: Duration,
    /// Held but unused slots (low 32 bits) and slots lost while in use (high 32 bits): a slot given
    /// back pays the debt first.
    spare: AtomicU64,
    /// Slots held from the fleet, in use or not.
    held: AtomicU64,
    /// The fleet had no slot at its last answer.
    full: AtomicBool,
    degraded: AtomicBool,
    signal: Signal,
    store_timeout: Duration,
    timer: Arc<Timer>,
    events: SharedPublisher,
}

impl fmt::Debug for SlotPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SlotPool")
            .field("instance", &self.instance)
            .field("held", &self.held())
            .field("spare", &self.spare())
            .field("degraded", &self.is_degraded())
            .finish_non_exhaustive()
    }
}

const LOW: u64 = u32::MAX as u64;

impl SlotPool {
    pub(crate) fn new(
        instance: Arc<str>,
        config: &crate::bulkhead::BulkheadConfig,
        store_timeout: Duration,
        timer: Arc<Timer>,
        events: SharedPublisher,
    ) -> Self {
        SlotPool {
            instance,
            max: config.max_concurrent_calls,
            lease: config.lease(),
            lease_ttl: config.lease_ttl,
            spare: AtomicU64::new(0),
            held: AtomicU64::new(0),
            full: AtomicBool::new(false),
            degraded: AtomicBool::new(false),
            signal: Signal::new(true),
            store_timeout,
            timer,
            events,
        }
    }

    /// The instance id (the store's key is made from it).
    pub fn instance(&self) -> &str {
        &self.instance
    }

    /// The fleet-wide cap (`max_concurrent_calls`).
    pub fn max_concurrent_calls(&self) -> u32 {
        self.max
    }

    /// Slots taken from the fleet at a time (`lease`, default `max(1, max_concurrent_calls / 10)`).
    pub fn lease(&self) -> u32 {
        self.lease
    }

    /// How long a slot lease lives without renewal (`lease_ttl`).
    pub fn lease_ttl(&self) -> Duration {
        self.lease_ttl
    }

    /// Slots held from the fleet, in use or not.
    pub fn held(&self) -> u32 {
        u32::try_from(self.held.load(Ordering::Acquire)).unwrap_or(u32::MAX)
    }

    /// Held slots not in use.
    pub fn spare(&self) -> u32 {
        (self.spare.load(Ordering::Acquire) & LOW) as u32
    }

    /// Whether the bulkhead decides on local state because the store could not be reached.
    pub fn is_degraded(&self) -> bool {
        self.degraded.load(Ordering::Relaxed)
    }

    /// Waits until the store should act (slots wanted or to return), and takes the request.
    pub fn wanted(&self) -> impl Future<Output = ()> + Send + '_ {
        self.signal.wanted()
    }

    /// The blocking form of [`wanted`](Self::wanted), for a store that works from a thread.
    pub fn wait_wanted_blocking(&self) {
        self.signal.wait_wanted_blocking();
    }

    /// Slots to take from the fleet: enough to have one lease spare (at least one).
    pub fn wanted_slots(&self) -> u32 {
        self.lease.saturating_sub(self.spare()).max(1)
    }

    /// Spare slots beyond two leases, to give back to the fleet.
    pub fn surplus(&self) -> u32 {
        self.spare().saturating_sub(self.lease.saturating_mul(2))
    }

    /// The fleet's answer: `slots` more held (zero: the fleet is full).
    pub fn grant(&self, slots: u32) {
        self.full.store(slots == 0, Ordering::Release);
        if slots > 0 {
            self.held.fetch_add(u64::from(slots), Ordering::AcqRel);
            self.spare.fetch_add(u64::from(slots), Ordering::AcqRel);
        }
        self.signal.answer();
    }

    /// Takes up to `slots` spare slots out of the pool to return them; the store returns the
    /// number taken to the fleet.
    pub fn returned(&self, slots: u32) -> u32 {
        let mut taken = 0;
        let _ = self.spare.fetch_update(Ordering::AcqRel, Ordering::Acquire, |word| {
            taken = (word & LOW).min(u64::from(slots));
            Some(word - taken)
        });
        self.held.fetch_sub(taken, Ordering::AcqRel);
        taken as u32
    }

    /// `slots` held slots were found expired in the store (a pause longer than `lease_ttl`): they
    /// leave the spare ones first, then are owed by the calls using them.
    pub fn lost(&self, slots: u32) {
        let slots = u64::from(slots);
        let _ = self.spare.fetch_update(Ordering::AcqRel, Ordering::Acquire, |word| {
            let from_spare = (word & LOW).min(slots);
            let debt = (word >> 32) + slots - from_spare;
            Some((debt << 32) | ((word & LOW) - from_spare))
        });
        self.held.fetch_sub(slots.min(self.held.load(Ordering::Acquire)), Ordering::AcqRel);
    }

    /// The store could not answer: the bulkhead decides locally until [`recover`](Self::recover).
    /// Publishes [`SharedStateEvent::Degraded`] once per outage.
    pub fn degrade(&self) {
        self.events.set_degraded(&self.degraded, true, &self.instance);
        self.signal.answer();
    }

    /// The store answers again. Publishes [`SharedStateEvent::Recovered`] if it was degraded.
    pub fn recover(&self) {
        self.events.set_degraded(&self.degraded, false, &self.instance);
    }

    /// A fleet slot for a call (one compare-and-set); the call that leaves half a lease spare asks
    /// for more.
    pub(crate) fn try_take(&self) -> bool {
        let taken =
            self.spare.fetch_update(Ordering::AcqRel, Ordering::Acquire, |word| (word & LOW > 0).then(|| word - 1));
        match taken {
            Ok(word) => {
                if (word & LOW) - 1 == u64::from(self.lease / 2) {
                    self.signal.want();
                }
                true
            }
            Err(_) => false,
        }
    }

    /// A call that held a fleet slot ended: the slot is spare again (or pays a debt).
    pub(crate) fn give_back(&self) {
        let word = self.spare.fetch_update(Ordering::AcqRel, Ordering::Acquire, |word| {
            Some(if word >> 32 > 0 { word - (1 << 32) } else { word + 1 })
        });
        if word.is_ok_and(|w| w >> 32 == 0 && (w & LOW) + 1 > u64::from(self.lease.saturating_mul(2))) {
            self.signal.want(); // a surplus to return
        }
    }

    fn answer_now(&self) -> Option<Answer> {
        if self.is_degraded() {
            return Some(Answer::Local);
        }
        if self.try_take() {
            return Some(Answer::Permit);
        }
        self.full.load(Ordering::Acquire).then_some(Answer::Exhausted(0))
    }

    /// No spare slot: asks the fleet and parks up to the store timeout for its answer.
    pub(crate) fn wait_sync(&self) -> Answer {
        self.full.store(false, Ordering::Release);
        self.signal.wait_sync(self.store_timeout, || self.answer_now())
    }

    /// The async form of [`wait_sync`](Self::wait_sync).
    pub(crate) async fn wait_async(&self) -> Answer {
        self.full.store(false, Ordering::Release);
        self.signal.wait_async(&self.timer, self.store_timeout, || self.answer_now()).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::{Clock, ManualClock};
    use crate::rate_limiter::RateLimiterConfig;

    fn pool(clock: &ManualClock, permits: u32, lease: u32) -> LeasePool {
        let config = RateLimiterConfig { permits, shared: true, lease: Some(lease), ..Default::default() };
        let timer = Arc::new(Clock::from(clock).into_timer());
        let listeners = crate::events::Listeners::default();
        LeasePool::new(Arc::from("p"), &config, Duration::from_millis(25), timer, SharedPublisher::new(&listeners))
    }

    #[test]
    fn leased_permits_are_spent_then_the_pool_is_empty() {
        let clock = ManualClock::new();
        let pool = pool(&clock, 100, 10);
        assert_eq!(pool.try_take(0), Take::Empty, "nothing leased yet");
        pool.grant(10, Duration::ZERO);
        assert_eq!(pool.in_hand(), 10);
        let taken = (0..20).filter(|_| pool.try_take(0) == Take::Taken).count();
        assert_eq!(taken, 10);
    }

    #[test]
    fn half_a_lease_left_asks_for_the_next_one_once() {
        let clock = ManualClock::new();
        let pool = pool(&clock, 100, 10);
        assert!(pool.signal.wanted.swap(false, Ordering::AcqRel), "the first lease is wanted at once");
        pool.grant(10, Duration::ZERO);
        for _ in 0..4 {
            pool.try_take(0);
        }
        assert!(!pool.signal.wanted.load(Ordering::Acquire), "6 in hand: not yet");
        pool.try_take(0);
        assert!(pool.signal.wanted.load(Ordering::Acquire), "5 in hand: half a lease");
        assert_eq!(pool.wanted_permits(), 5, "enough to hold one lease again");
    }

    #[test]
    fn unspent_permits_lapse_with_the_period() {
        let clock = ManualClock::new();
        let pool = pool(&clock, 100, 10);
        pool.grant(10, Duration::ZERO);
        clock.advance(Duration::from_millis(1_100));
        let now = nanos(clock.elapsed());
        assert_eq!(pool.try_take(now), Take::Empty);
        assert_eq!(pool.in_hand(), 0);
        pool.grant(3, Duration::ZERO);
        assert_eq!(pool.in_hand(), 3, "lapsed permits are not carried into a new lease");
    }

    #[test]
    fn an_empty_pool_waits_for_the_store_and_learns_the_fleet_is_out() {
        let clock = ManualClock::new();
        let pool = Arc::new(pool(&clock, 100, 10));
        let store = {
            let pool = Arc::clone(&pool);
            std::thread::spawn(move || {
                pool.wait_wanted_blocking();
                pool.grant(0, Duration::from_millis(40));
            })
        };
        assert_eq!(pool.wait_sync(), Answer::Exhausted(40_000_000));
        store.join().unwrap();
    }

    #[test]
    fn no_answer_within_the_store_timeout_decides_locally() {
        let clock = ManualClock::new();
        let pool = pool(&clock, 100, 10);
        let started = Instant::now();
        assert_eq!(pool.wait_sync(), Answer::Local);
        assert!(started.elapsed() >= Duration::from_millis(25));
    }

    #[test]
    fn degraded_and_recovered_are_published_once_per_outage() {
        let seen: Arc<Mutex<Vec<SharedStateEvent>>> = Arc::default();
        let mut listeners = crate::events::Listeners::default();
        let sink = Arc::clone(&seen);
        listeners.shared_state.push(Arc::new(move |e: &SharedStateEvent| sink.lock().unwrap().push(e.clone())));
        let clock = ManualClock::new();
        let config = RateLimiterConfig { shared: true, ..Default::default() };
        let timer = Arc::new(Clock::from(&clock).into_timer());
        let pool =
            LeasePool::new(Arc::from("p"), &config, Duration::from_millis(25), timer, SharedPublisher::new(&listeners));
        pool.degrade();
        pool.degrade();
        assert_eq!(pool.wait_sync(), Answer::Local, "degraded: decided locally at once");
        pool.recover();
        pool.recover();
        let instance: Arc<str> = Arc::from("p");
        assert_eq!(
            *seen.lock().unwrap(),
            [SharedStateEvent::Degraded { instance: Arc::clone(&instance) }, SharedStateEvent::Recovered { instance }]
        );
    }
}
