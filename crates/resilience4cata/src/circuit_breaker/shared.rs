//! The circuit breaker's fleet link: the [`BreakerLink`] a shared breaker publishes its Opens
//! through, learns the fleet's from, and takes half-open probe permits from (see
//! [`crate::shared`] for the store and the degraded mode).

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use atomic_waker::AtomicWaker;

use crate::fleet::{FleetLink, LinkParts};

/// What a [`BreakerLink`] can do to its breaker: open it for the rest of a fleet-wide Open.
pub(crate) trait RemoteOpen: Send + Sync {
    /// Opens (from Closed or HalfOpen) so that the wait ends `remaining` from now; not published
    /// back to the fleet.
    fn open_remotely(&self, remaining: Duration);

    /// Whether the breaker is half-open now.
    fn is_half_open(&self) -> bool;

    /// How long the breaker stays open on its own decision (`None`: not open, or open because
    /// the fleet said so).
    fn open_left(&self) -> Option<Duration>;

    /// Another process closed the breaker after successful probes: close here too (from Open or
    /// HalfOpen, with an empty window); not published back.
    fn close_remotely(&self);
}

/// What a shared breaker has to tell the fleet, taken by the store with [`BreakerLink::work`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BreakerWork {
    /// The breaker opened on its own window (or reopened after failed probes) and is still open
    /// for this long: publish it ([`BreakerLink::published`] when done; [`BreakerLink::unpublished`]
    /// when the store could not, so it is published when the store returns, if still current).
    Open(Duration),
    /// The breaker closed after successful probes: publish it (the same two answers).
    Closed,
    /// The breaker went half-open: claim probes ([`BreakerLink::grant_probes`]).
    Probes,
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
    /// The instance, the degraded flag and where its events go, as in every fleet link.
    link: FleetLink,
    wait_in_open: Duration,
    permitted: u32,
    /// Registry-clock time of a local Open not yet published (0: none).
    opened_at: AtomicU64,
    /// A local Close (after successful probes) not yet published.
    closed: AtomicBool,
    probes_wanted: AtomicBool,
    probes: AtomicU64,
    /// Probes the fleet granted this process in the current half-open state.
    granted: AtomicU64,
    store_waker: AtomicWaker,
    breaker: std::sync::OnceLock<std::sync::Weak<dyn RemoteOpen>>,
}

impl fmt::Debug for BreakerLink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BreakerLink").field("instance", &self.instance()).finish_non_exhaustive()
    }
}

impl BreakerLink {
    pub(crate) fn new(parts: LinkParts, wait_in_open: Duration, permitted: u32) -> Self {
        BreakerLink {
            link: FleetLink::new(&parts, crate::events::SharedPolicy::CircuitBreaker),
            wait_in_open,
            permitted,
            opened_at: AtomicU64::new(0),
            closed: AtomicBool::new(false),
            probes_wanted: AtomicBool::new(false),
            probes: AtomicU64::new(0),
            granted: AtomicU64::new(0),
            store_waker: AtomicWaker::new(),
            breaker: std::sync::OnceLock::new(),
        }
    }

    /// Connects the link to its breaker's shared state, once.
    pub(crate) fn attach(&self, breaker: std::sync::Weak<dyn RemoteOpen>) {
        let _ = self.breaker.set(breaker);
    }

    /// The instance id.
    pub fn instance(&self) -> &str {
        self.link.instance()
    }

    /// The key's text when this is one key's breaker of a keyed instance (SPEC §15; `None`
    /// unkeyed): the store keeps each key's Open and probe round apart, and tells the fleet which
    /// key opened.
    pub fn key(&self) -> Option<&str> {
        self.link.key()
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
        self.link.is_degraded()
    }

    /// Waits until there is something to send, and takes it (for the store's task): an Open
    /// still current, a Close, or probes to claim. An Open that is no longer current (the breaker
    /// moved on, or its wait is over) is dropped here, never published late.
    pub fn work(&self) -> impl Future<Output = BreakerWork> + Send + '_ {
        std::future::poll_fn(move |cx: &mut Context<'_>| {
            for attempt in 0..2 {
                if let Some(work) = self.next_work() {
                    return Poll::Ready(work);
                }
                if attempt == 0 {
                    self.store_waker.register(cx.waker());
                }
            }
            Poll::Pending
        })
    }

    /// The next thing to send, if any (see [`work`](Self::work)).
    fn next_work(&self) -> Option<BreakerWork> {
        if self.opened_at.swap(0, Ordering::AcqRel) != 0
            && let Some(left) = self.breaker().and_then(|b| b.open_left())
        {
            return Some(BreakerWork::Open(left));
        }
        if self.closed.swap(false, Ordering::AcqRel) {
            return Some(BreakerWork::Closed);
        }
        self.probes_wanted.swap(false, Ordering::AcqRel).then_some(BreakerWork::Probes)
    }

    /// The store published what [`work`](Self::work) gave it: the link is shared (publishes
    /// `Recovered` after an outage).
    pub fn published(&self) {
        self.recover();
    }

    /// The store could not publish `work`: the link degrades and keeps it, so the store publishes
    /// it when it answers again (an Open only if still current then).
    pub fn unpublished(&self, work: BreakerWork) {
        match work {
            BreakerWork::Open(_) => {
                let _ = self.opened_at.compare_exchange(0, 1, Ordering::AcqRel, Ordering::Acquire);
            }
            BreakerWork::Closed => self.closed.store(true, Ordering::Release),
            BreakerWork::Probes => self.probes_wanted.store(true, Ordering::Release),
        }
        self.degrade();
    }

    /// Whether something waits to be published (an Open or a Close the store could not send yet).
    pub fn has_pending(&self) -> bool {
        self.opened_at.load(Ordering::Acquire) != 0 || self.closed.load(Ordering::Acquire)
    }

    fn breaker(&self) -> Option<std::sync::Arc<dyn RemoteOpen>> {
        self.breaker.get().and_then(std::sync::Weak::upgrade)
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

    /// Another process closed the breaker after successful probes: close here too, unless this
    /// process has an Open of its own not yet published (that one is newer news for the fleet).
    pub fn close_remotely(&self) {
        if self.opened_at.load(Ordering::Acquire) == 0
            && let Some(breaker) = self.breaker()
        {
            breaker.close_remotely();
        }
    }

    /// Another process opened the breaker: open here too, for `remaining` (the rest of its wait).
    pub fn open_remotely(&self, remaining: Duration) {
        if let Some(breaker) = self.breaker.get().and_then(std::sync::Weak::upgrade) {
            breaker.open_remotely(remaining.min(self.wait_in_open));
        }
    }

    /// The store could not be reached: probes are capped locally only. Publishes
    /// [`SharedStateEvent::Degraded`](crate::shared::SharedStateEvent::Degraded) once per outage.
    pub fn degrade(&self) {
        self.link.degrade();
    }

    /// The store answers again. Publishes [`SharedStateEvent::Recovered`](crate::shared::SharedStateEvent::Recovered) if it was degraded.
    pub fn recover(&self) {
        self.link.recover();
    }

    /// The breaker opened on its own window (or reopened after probes): publish it.
    pub(crate) fn opened(&self, at: u64) {
        self.closed.store(false, Ordering::Release);
        self.opened_at.store(at.max(1), Ordering::Release);
        self.store_waker.wake();
    }

    /// The breaker closed after successful probes: publish it, so the processes still open or
    /// half-open without a probe close too.
    pub(crate) fn closed(&self) {
        self.opened_at.store(0, Ordering::Release);
        self.closed.store(true, Ordering::Release);
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
