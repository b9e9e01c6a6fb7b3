//! What every policy's fleet link shares, written once: [`FleetLink`] (the instance, the degraded
//! flag, `Degraded` / `Recovered` published once per outage), [`FleetPool`] (a `FleetLink` plus the
//! wake-ups between callers and the store's task, and the bounded wait of a call that found its
//! pool empty), [`link`] (the build-time wiring), [`Fleet`] (the store as the policies see it), the
//! lease rule and [`SharedPublisher`]. The links themselves live with their policies
//! (`rate_limiter/shared.rs`, `bulkhead/shared.rs`, `circuit_breaker/shared.rs`); the public face
//! of shared state, the [`SharedStore`](crate::shared::SharedStore) trait and the links' public
//! paths, is `shared.rs`, above the policies. See `shared.rs` for how it works.

use std::any::Any;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use atomic_waker::AtomicWaker;

use crate::clock::Timer;
use crate::events::{Hub, Listener, Listeners, SharedPolicy, SharedStateEvent};

/// Where [`SharedStateEvent`]s go: the registry's listeners and subscribers.
#[derive(Clone)]
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

/// What a policy's fleet link is built from: its instance (and, for one key of a keyed instance,
/// the key's text), the store's timeout, the registry's timer, and where its [`SharedStateEvent`]s
/// go (see [`link`]).
pub(crate) struct LinkParts {
    pub(crate) instance: Arc<str>,
    /// The key's text when the link is one key's of a keyed instance (SPEC §15): the store keeps
    /// that key's fleet state apart from the other keys'.
    pub(crate) key: Option<Arc<str>>,
    /// Where a key's link reports its outages (its keyed instance's [`Outage`]).
    pub(crate) outage: Option<Arc<Outage>>,
    pub(crate) store_timeout: Duration,
    pub(crate) timer: Arc<Timer>,
    pub(crate) events: SharedPublisher,
}

/// The registry's store as the policies see it: its timeout, and where a policy hands the fleet
/// link it built. The public [`SharedStore`](crate::shared::SharedStore) names every policy's link
/// type, so it sits above the policies (`shared.rs`, beside the registry); the registry wraps it
/// in [`Routed`](crate::shared::Routed), which gives each link to the store's method for its policy.
pub(crate) trait Fleet: Send + Sync {
    /// The longest a decision waits for the store before it is taken on local state.
    fn store_timeout(&self) -> Duration;

    /// Starts sharing `link`, a policy's fleet link: called once, when the instance is built.
    fn share(&self, link: Arc<dyn Any + Send + Sync>);

    /// The outage count the links built through this store report to (see [`Grouped`]): `None`,
    /// each link publishes its own `Degraded` / `Recovered`.
    fn outage(&self) -> Option<Arc<Outage>> {
        None
    }
}

/// How many links of one keyed instance are degraded (SPEC §15: each key has its own link). The
/// instance publishes `Degraded` when the first of them degrades and `Recovered` when the last
/// recovers, once per outage for the instance rather than once per key.
#[derive(Debug, Default)]
pub(crate) struct Outage(AtomicU32);

/// The store as one keyed instance's keys see it: the registry's store, and the instance's
/// [`Outage`] every key's link reports to.
pub(crate) struct Grouped {
    pub(crate) store: Arc<dyn Fleet>,
    pub(crate) outage: Arc<Outage>,
}

impl Fleet for Grouped {
    fn store_timeout(&self) -> Duration {
        self.store.store_timeout()
    }

    fn share(&self, link: Arc<dyn Any + Send + Sync>) {
        self.store.share(link);
    }

    fn outage(&self) -> Option<Arc<Outage>> {
        Some(Arc::clone(&self.outage))
    }
}

/// The shared-state wiring every shared policy does alike when its instance is built: when the
/// instance is `shared` and `enabled` and the registry has a `store`, builds its link with `new`,
/// hands it to the store, and returns it for the instance's state; otherwise `None`. `key` is the
/// key's text for one key of a keyed instance (`None` unkeyed).
pub(crate) fn link<L: Any + Send + Sync>(
    store: Option<&dyn Fleet>,
    (enabled, shared): (bool, bool),
    (instance, key): (&Arc<str>, Option<Arc<str>>),
    timer: &Arc<Timer>,
    listeners: &Listeners,
    new: impl FnOnce(LinkParts) -> L,
) -> Option<Arc<L>> {
    let store = store.filter(|_| shared && enabled)?;
    let link = Arc::new(new(LinkParts {
        instance: Arc::clone(instance),
        key,
        outage: store.outage(),
        store_timeout: store.store_timeout(),
        timer: Arc::clone(timer),
        events: SharedPublisher::new(listeners),
    }));
    store.share(Arc::clone(&link) as Arc<dyn Any + Send + Sync>);
    Some(link)
}

/// What every fleet link holds and does alike: its instance, whether the store is out of reach
/// (degraded: the policy decides on local state alone), and where `Degraded` / `Recovered` go.
pub(crate) struct FleetLink {
    instance: Arc<str>,
    key: Option<Arc<str>>,
    /// The keyed instance's outage count this link reports to (`None`: it publishes alone).
    outage: Option<Arc<Outage>>,
    policy: SharedPolicy,
    degraded: AtomicBool,
    events: SharedPublisher,
}

impl FleetLink {
    pub(crate) fn new(parts: &LinkParts, policy: SharedPolicy) -> Self {
        let (instance, key, outage) = (Arc::clone(&parts.instance), parts.key.clone(), parts.outage.clone());
        FleetLink { instance, key, outage, policy, degraded: AtomicBool::new(false), events: parts.events.clone() }
    }

    /// The instance id.
    #[inline]
    pub(crate) fn instance(&self) -> &str {
        &self.instance
    }

    /// The key's text, for one key of a keyed instance (`None` unkeyed).
    #[inline]
    pub(crate) fn key(&self) -> Option<&str> {
        self.key.as_deref()
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

    /// Moves `degraded` to `to`, publishing `Degraded` / `Recovered` only on a change (of a keyed
    /// instance's key: only when it is the first key to degrade or the last to recover).
    fn set_degraded(&self, to: bool) {
        if self.degraded.swap(to, Ordering::AcqRel) != to && self.instance_changes(to) {
            let (instance, policy) = (Arc::clone(&self.instance), self.policy);
            self.events.emit(if to {
                SharedStateEvent::Degraded { instance, policy }
            } else {
                SharedStateEvent::Recovered { instance, policy }
            });
        }
    }

    /// Whether this link's change to `degraded` changes its instance's: always unkeyed; for a key,
    /// when it is the first of its instance's keys to degrade or the last to recover.
    fn instance_changes(&self, degraded: bool) -> bool {
        match &self.outage {
            None => true,
            Some(outage) if degraded => outage.0.fetch_add(1, Ordering::AcqRel) == 0,
            Some(outage) => outage.0.fetch_sub(1, Ordering::AcqRel) == 1,
        }
    }
}

impl Drop for FleetLink {
    /// A key's link dropped while degraded (its key evicted) leaves its instance's outage count.
    fn drop(&mut self) {
        if let Some(outage) = &self.outage
            && *self.degraded.get_mut()
        {
            outage.0.fetch_sub(1, Ordering::AcqRel);
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
    pub(crate) fn new(parts: LinkParts, policy: SharedPolicy) -> Self {
        FleetPool {
            link: FleetLink::new(&parts, policy),
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

    /// A store that counts the links handed to it: only the timeout is asked.
    struct Counting(AtomicU32);
    impl Fleet for Counting {
        fn store_timeout(&self) -> Duration {
            Duration::from_millis(7)
        }
        fn share(&self, link: Arc<dyn Any + Send + Sync>) {
            assert!(link.downcast::<Counted>().is_ok(), "the link built is the link handed");
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// A policy's link, for the wiring alone.
    struct Counted(FleetLink, Duration);

    #[test]
    fn a_link_is_built_and_handed_to_the_store_once_only_for_a_shared_enabled_instance_with_a_store() {
        let timer = Arc::new(Clock::from(&ManualClock::new()).into_timer());
        let listeners = Listeners::default();
        let instance: Arc<str> = Arc::from("p");
        let store = Counting(AtomicU32::new(0));
        let build = |store: Option<&dyn Fleet>, flags| {
            link(store, flags, (&instance, None), &timer, &listeners, |parts| {
                Counted(FleetLink::new(&parts, SharedPolicy::Bulkhead), parts.store_timeout)
            })
        };
        assert!(build(None, (true, true)).is_none(), "no store");
        assert!(build(Some(&store), (true, false)).is_none(), "not shared");
        assert!(build(Some(&store), (false, true)).is_none(), "disabled");
        assert_eq!(store.0.load(Ordering::Relaxed), 0);
        let built = build(Some(&store), (true, true)).expect("shared, enabled, with a store");
        assert_eq!(store.0.load(Ordering::Relaxed), 1);
        assert_eq!((built.0.instance(), built.1, built.0.is_degraded()), ("p", Duration::from_millis(7), false));
    }
}
