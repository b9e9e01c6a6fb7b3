//! The bulkhead's fleet link: the [`SlotPool`] of fleet-wide slots a shared bulkhead holds (see
//! [`crate::shared`] for the store and the degraded mode).

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use super::BulkheadConfig;
use crate::fleet::{Answer, FleetPool, LinkParts};

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
    /// The link, the wake-ups and the wait, as in every pool a store refills.
    fleet: FleetPool,
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
}

impl fmt::Debug for SlotPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SlotPool")
            .field("instance", &self.instance())
            .field("held", &self.held())
            .field("spare", &self.spare())
            .field("degraded", &self.is_degraded())
            .finish_non_exhaustive()
    }
}

const LOW: u64 = u32::MAX as u64;

impl SlotPool {
    /// A pool that wants its first lease at once, before the first call.
    pub(crate) fn new(parts: LinkParts, config: &BulkheadConfig) -> Self {
        SlotPool {
            fleet: FleetPool::new(parts, crate::events::SharedPolicy::Bulkhead),
            max: config.max_concurrent_calls,
            lease: config.lease(),
            lease_ttl: config.lease_ttl,
            spare: AtomicU64::new(0),
            held: AtomicU64::new(0),
            full: AtomicBool::new(false),
        }
    }

    /// The instance id (the store's key is made from it).
    pub fn instance(&self) -> &str {
        self.fleet.link.instance()
    }

    /// The key's text when this pool is one key's of a keyed instance (SPEC §15; `None` unkeyed):
    /// the store keeps each key's fleet state under its own key.
    pub fn key(&self) -> Option<&str> {
        self.fleet.link.key()
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
        self.fleet.is_degraded()
    }

    /// Waits until the store should act (slots wanted or to return), and takes the request.
    pub fn wanted(&self) -> impl Future<Output = ()> + Send + '_ {
        self.fleet.wanted()
    }

    /// The blocking form of [`wanted`](Self::wanted), for a store that works from a thread.
    pub fn wait_wanted_blocking(&self) {
        self.fleet.wait_wanted_blocking();
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
        self.fleet.signal.answer();
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
    /// Publishes [`SharedStateEvent::Degraded`](crate::shared::SharedStateEvent::Degraded) once per outage.
    pub fn degrade(&self) {
        self.fleet.degrade();
    }

    /// The store answers again. Publishes [`SharedStateEvent::Recovered`](crate::shared::SharedStateEvent::Recovered) if it was degraded.
    pub fn recover(&self) {
        self.fleet.recover();
    }

    /// A fleet slot for a call (one compare-and-set); the call that leaves half a lease spare asks
    /// for more.
    pub(crate) fn try_take(&self) -> bool {
        let taken =
            self.spare.fetch_update(Ordering::AcqRel, Ordering::Acquire, |word| (word & LOW > 0).then(|| word - 1));
        match taken {
            Ok(word) => {
                if (word & LOW) - 1 == u64::from(self.lease / 2) {
                    self.fleet.signal.want();
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
            self.fleet.signal.want(); // a surplus to return
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
        self.fleet.wait_sync(|| self.answer_now())
    }

    /// The async form of [`wait_sync`](Self::wait_sync).
    pub(crate) async fn wait_async(&self) -> Answer {
        self.full.store(false, Ordering::Release);
        self.fleet.wait_async(|| self.answer_now()).await
    }
}
