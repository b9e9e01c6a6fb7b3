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
            link: FleetLink::new(parts.instance, parts.events),
            wait_in_open,
            permitted,
            opened_at: AtomicU64::new(0),
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
