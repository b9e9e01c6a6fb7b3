//! Shared state across processes: the store trait a registry holds, [`SharedStateEvent`], and what
//! every policy's fleet link shares. Each link lives with its policy and is re-exported here: the
//! lease pool a shared rate limiter spends from ([`LeasePool`]), the slot pool of a shared bulkhead
//! ([`SlotPool`]), and the link a shared circuit breaker publishes and learns Opens through
//! ([`BreakerLink`]).
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
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use atomic_waker::AtomicWaker;

pub use crate::bulkhead::shared::SlotPool;
pub use crate::circuit_breaker::shared::BreakerLink;
use crate::clock::Timer;
use crate::events::{Hub, Listener, Listeners};
pub use crate::rate_limiter::shared::LeasePool;

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

/// An event of the shared state of one instance: it left the fleet for its local state, or came
/// back. Listen with `listen(|e: &SharedStateEvent| …)`; subscribers get it as
/// [`AnyEvent::SharedState`](crate::events::AnyEvent::SharedState).
///
/// ```
/// use std::sync::Arc;
/// use resilience4cata::shared::SharedStateEvent;
///
/// let e = SharedStateEvent::Degraded { instance: Arc::from("prices") };
/// assert_eq!(e.instance(), "prices");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize), serde(tag = "kind"))]
#[non_exhaustive]
pub enum SharedStateEvent {
    /// The store could not be reached in time: the instance decides on its local state alone.
    Degraded {
        /// The instance id.
        instance: Arc<str>,
    },
    /// The store answered again: the instance is shared again.
    Recovered {
        /// The instance id.
        instance: Arc<str>,
    },
}

impl SharedStateEvent {
    /// The instance id.
    pub fn instance(&self) -> &str {
        match self {
            SharedStateEvent::Degraded { instance } | SharedStateEvent::Recovered { instance } => instance,
        }
    }
}

/// Where [`SharedStateEvent`]s go: the registry's listeners and subscribers.
pub(crate) struct SharedPublisher {
    listeners: Box<[Listener<SharedStateEvent>]>,
    hub: Arc<Hub>,
}

impl SharedPublisher {
    pub(crate) fn new(listeners: &Listeners) -> Self {
        SharedPublisher { listeners: listeners.shared_state.as_slice().into(), hub: Arc::clone(&listeners.hub) }
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

/// Permits or slots a shared policy takes from the fleet at a time, the rule every shared policy's
/// `lease()` follows: `lease` when set, else a tenth of the fleet-wide cap `total` (at least one).
#[inline]
pub(crate) fn lease_or_tenth(lease: Option<u32>, total: u32) -> u32 {
    lease.unwrap_or((total / 10).max(1))
}

/// What a policy's fleet link is built from: its instance, the store's timeout, the registry's
/// timer, and where its [`SharedStateEvent`]s go (see [`link`]).
pub(crate) struct LinkParts {
    pub(crate) instance: Arc<str>,
    pub(crate) store_timeout: Duration,
    pub(crate) timer: Arc<Timer>,
    pub(crate) events: SharedPublisher,
}

/// A policy's fleet link ([`LeasePool`], [`SlotPool`], [`BreakerLink`]): built by [`link`] and
/// handed to the store once.
pub(crate) trait Link: Sized {
    /// Hands the link to `store`: the [`SharedStore`] method for its policy.
    fn hand_to(store: &dyn SharedStore, link: Arc<Self>);
}

/// The shared-state wiring every shared policy does alike when its instance is built: when the
/// instance is `shared` and `enabled` and the registry has a `store`, builds its link with `new`,
/// hands it to the store, and returns it for the instance's state; otherwise `None`.
pub(crate) fn link<L: Link>(
    store: Option<&dyn SharedStore>,
    (enabled, shared): (bool, bool),
    instance: &Arc<str>,
    timer: &Arc<Timer>,
    listeners: &Listeners,
    new: impl FnOnce(LinkParts) -> L,
) -> Option<Arc<L>> {
    let store = store.filter(|_| shared && enabled)?;
    let link = Arc::new(new(LinkParts {
        instance: Arc::clone(instance),
        store_timeout: store.store_timeout(),
        timer: Arc::clone(timer),
        events: SharedPublisher::new(listeners),
    }));
    L::hand_to(store, Arc::clone(&link));
    Some(link)
}

/// What every fleet link holds and does alike: its instance, whether the store is out of reach
/// (degraded: the policy decides on local state alone), and where `Degraded` / `Recovered` go.
pub(crate) struct FleetLink {
    instance: Arc<str>,
    degraded: AtomicBool,
    events: SharedPublisher,
}

impl FleetLink {
    pub(crate) fn new(instance: Arc<str>, events: SharedPublisher) -> Self {
        FleetLink { instance, degraded: AtomicBool::new(false), events }
    }

    /// The instance id.
    #[inline]
    pub(crate) fn instance(&self) -> &str {
        &self.instance
    }

    /// Whether the policy decides on local state because the store could not be reached.
    #[inline]
    pub(crate) fn is_degraded(&self) -> bool {
        self.degraded.load(Ordering::Relaxed)
    }

    /// The store could not be reached: publishes [`SharedStateEvent::Degraded`] once per outage.
    pub(crate) fn degrade(&self) {
        self.set_degraded(true);
    }

    /// The store answers again: publishes [`SharedStateEvent::Recovered`] if it was degraded.
    pub(crate) fn recover(&self) {
        self.set_degraded(false);
    }

    /// Moves `degraded` to `to`, publishing `Degraded` / `Recovered` only on a change.
    fn set_degraded(&self, to: bool) {
        if self.degraded.swap(to, Ordering::AcqRel) != to {
            let instance = Arc::clone(&self.instance);
            self.events.emit(if to {
                SharedStateEvent::Degraded { instance }
            } else {
                SharedStateEvent::Recovered { instance }
            });
        }
    }
}

/// What the two pools a store refills ([`LeasePool`], [`SlotPool`]) hold and do alike: the
/// [`FleetLink`], the wake-ups between callers and the store's task, and the wait of a call that
/// found its pool empty (up to the store's timeout).
pub(crate) struct FleetPool {
    pub(crate) link: FleetLink,
    pub(crate) signal: Signal,
    store_timeout: Duration,
    pub(crate) timer: Arc<Timer>,
}

impl FleetPool {
    /// A pool that wants its first refill at once, before the first call.
    pub(crate) fn new(parts: LinkParts) -> Self {
        FleetPool {
            link: FleetLink::new(parts.instance, parts.events),
            signal: Signal::new(true),
            store_timeout: parts.store_timeout,
            timer: parts.timer,
        }
    }

    /// Whether the pool decides on local state because the store could not be reached.
    #[inline]
    pub(crate) fn is_degraded(&self) -> bool {
        self.link.is_degraded()
    }

    /// Waits until the store should act, and takes the request (for the store's async task).
    pub(crate) fn wanted(&self) -> impl Future<Output = ()> + Send + '_ {
        self.signal.wanted()
    }

    /// The blocking form of [`wanted`](Self::wanted), for a store that works from a thread.
    pub(crate) fn wait_wanted_blocking(&self) {
        self.signal.wait_wanted_blocking();
    }

    /// The store could not answer: the pool decides locally until it recovers, and the callers
    /// waiting for the store are woken to do so. Publishes [`SharedStateEvent::Degraded`] once per
    /// outage.
    pub(crate) fn degrade(&self) {
        self.link.degrade();
        self.signal.answer();
    }

    /// The store answers again. Publishes [`SharedStateEvent::Recovered`] if it was degraded.
    pub(crate) fn recover(&self) {
        self.link.recover();
    }

    /// Asks the store to act and parks up to the store timeout for `decide` to have an answer.
    pub(crate) fn wait_sync(&self, decide: impl Fn() -> Option<Answer>) -> Answer {
        self.signal.wait_sync(self.store_timeout, decide)
    }

    /// The async form of [`wait_sync`](Self::wait_sync): waits in the future up to the store
    /// timeout (on the system's monotonic time, as the network is).
    pub(crate) async fn wait_async(&self, decide: impl Fn() -> Option<Answer>) -> Answer {
        self.signal.wait_async(&self.timer, self.store_timeout, decide).await
    }
}

/// The wake-ups between callers and a store's task: a refill wanted (callers → store), an answer
/// given (store → waiting callers).
pub(crate) struct Signal {
    /// Set when the store should act, cleared by the store when it takes the request.
    pub(crate) wanted: AtomicBool,
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
    pub(crate) fn want(&self) {
        if !self.wanted.swap(true, Ordering::AcqRel) {
            self.store_waker.wake();
            *self.store_thread.lock().unwrap_or_else(PoisonError::into_inner) = true;
            self.store_signal.notify_one();
        }
    }

    /// Wakes every caller waiting for the store.
    pub(crate) fn answer(&self) {
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

/// What a call that found its pool (of permits or of slots) empty learned within the store timeout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Answer {
    /// A refill came: the call took a permit.
    Permit,
    /// The fleet is out of permits for this long (nanoseconds).
    Exhausted(u64),
    /// No answer in time, or the pool is degraded: decide locally.
    Local,
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicU32;

    use super::*;
    use crate::clock::{Clock, ManualClock};

    #[test]
    fn a_lease_is_the_one_set_or_a_tenth_of_the_cap_and_never_zero() {
        assert_eq!(lease_or_tenth(None, 100), 10);
        assert_eq!(lease_or_tenth(None, 25), 2);
        assert_eq!(lease_or_tenth(None, 5), 1);
        assert_eq!(lease_or_tenth(None, 0), 1);
        assert_eq!(lease_or_tenth(Some(3), 100), 3);
    }

    /// A store that takes no link of a real policy: only the timeout is asked.
    #[derive(Debug)]
    struct Timeout;
    impl SharedStore for Timeout {
        fn store_timeout(&self) -> Duration {
            Duration::from_millis(7)
        }
        fn share_rate_limiter(&self, _: Arc<LeasePool>) {
            unreachable!()
        }
        fn share_bulkhead(&self, _: Arc<SlotPool>) {
            unreachable!()
        }
        fn share_circuit_breaker(&self, _: Arc<BreakerLink>) {
            unreachable!()
        }
    }

    static HANDED: AtomicU32 = AtomicU32::new(0);

    /// A link that counts how often it is handed to a store.
    struct Counted(FleetLink, Duration);
    impl Link for Counted {
        fn hand_to(_: &dyn SharedStore, _: Arc<Self>) {
            HANDED.fetch_add(1, Ordering::Relaxed);
        }
    }

    #[test]
    fn a_link_is_built_and_handed_to_the_store_once_only_for_a_shared_enabled_instance_with_a_store() {
        let timer = Arc::new(Clock::from(&ManualClock::new()).into_timer());
        let listeners = Listeners::default();
        let instance: Arc<str> = Arc::from("p");
        let build = |store: Option<&dyn SharedStore>, flags| {
            link(store, flags, &instance, &timer, &listeners, |parts| {
                Counted(FleetLink::new(parts.instance, parts.events), parts.store_timeout)
            })
        };
        assert!(build(None, (true, true)).is_none(), "no store");
        assert!(build(Some(&Timeout), (true, false)).is_none(), "not shared");
        assert!(build(Some(&Timeout), (false, true)).is_none(), "disabled");
        assert_eq!(HANDED.load(Ordering::Relaxed), 0);
        let built = build(Some(&Timeout), (true, true)).expect("shared, enabled, with a store");
        assert_eq!(HANDED.load(Ordering::Relaxed), 1);
        assert_eq!((built.0.instance(), built.1, built.0.is_degraded()), ("p", Duration::from_millis(7), false));
    }
}
