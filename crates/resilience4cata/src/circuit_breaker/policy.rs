//! The breaker instance the generated code holds, the permit a call carries, and how an outcome is
//! classified.

use std::fmt;
use std::mem::ManuallyDrop;
use std::sync::Arc;

use super::shared::{BreakerLink, RemoteOpen};
pub use super::state::Outcome;
use super::state::{CircuitBreakerState, Ticket};
use super::{CircuitBreakerConfig, CircuitBreakerConfigBuilder, CircuitBreakerEvent, CircuitBreakerSnapshot};
use crate::error::RegistryError;
use crate::events::Publisher;
use crate::fleet;
use crate::kit::{Fixed, Inner, policy_kind};
use crate::rejection::Rejection;

/// The field the generated code keeps for one method's breaker.
#[derive(Clone)]
pub struct CircuitBreakerPolicy {
    state: Arc<CircuitBreakerState>,
}

impl fmt::Debug for CircuitBreakerPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CircuitBreakerPolicy").field("instance", &self.state.instance).finish_non_exhaustive()
    }
}

impl CircuitBreakerPolicy {
    pub(crate) fn new(state: Arc<CircuitBreakerState>) -> Self {
        if let Some(link) = &state.shared {
            let breaker: std::sync::Weak<dyn RemoteOpen> = Arc::downgrade(&state) as _;
            link.attach(breaker);
        }
        CircuitBreakerPolicy { state }
    }

    /// The instance id.
    pub fn instance(&self) -> &str {
        &self.state.instance
    }

    /// Admits a call (the permit must then record its outcome) or refuses it with
    /// `Rejection::CallNotPermitted`, in which case the method must not be called.
    ///
    /// Closed: one atomic load, no lock, no allocation, no clock read unless slow-call tracking is on.
    /// A breaker turned off by configuration (`enabled = false`) admits every call unrecorded; that
    /// is decided out of line, from a flag its state word carries, so a breaker turned on pays no
    /// test for it.
    #[inline]
    pub fn acquire(&self) -> Result<Permit<'_>, Rejection> {
        match self.state.acquire() {
            Ok(ticket) => Ok(Permit { state: &self.state, ticket }),
            Err(rejection) => Err(rejection),
        }
    }
}

impl CircuitBreakerPolicy {
    /// [`acquire`](Self::acquire) for a future that cannot borrow the policy (the pipeline's tower
    /// adapter): the permit holds its own reference to the breaker, at the cost of one reference
    /// count up and down per call. Same decision, same recording, same release on drop.
    #[cfg_attr(not(feature = "tower"), allow(dead_code))] // the pipeline's tower adapter
    pub(crate) fn acquire_owned(&self) -> Result<OwnedPermit, Rejection> {
        let permit = ManuallyDrop::new(self.acquire()?);
        Ok(OwnedPermit { state: Arc::clone(&self.state), ticket: permit.ticket })
    }
}

/// A [`Permit`] that owns its breaker; see [`CircuitBreakerPolicy::acquire_owned`].
#[cfg_attr(not(feature = "tower"), allow(dead_code))] // the pipeline's tower adapter
pub(crate) struct OwnedPermit {
    state: Arc<CircuitBreakerState>,
    ticket: Ticket,
}

#[cfg_attr(not(feature = "tower"), allow(dead_code))] // the pipeline's tower adapter
impl OwnedPermit {
    /// Records the call's outcome; the drop that follows releases nothing (an unguarded ticket).
    pub(crate) fn record(mut self, outcome: Outcome) {
        let ticket = std::mem::replace(&mut self.ticket, Ticket::UNGUARDED);
        self.state.record(ticket, outcome);
    }
}

impl Drop for OwnedPermit {
    fn drop(&mut self) {
        self.state.release(self.ticket);
    }
}

impl fmt::Debug for OwnedPermit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OwnedPermit").field("instance", &self.state.instance).finish_non_exhaustive()
    }
}

/// An admitted call. Record its outcome with [`record`](Permit::record); a permit dropped
/// unrecorded (a panic, a dropped future) records nothing and gives a half-open probe slot back.
#[must_use = "a permit records the call's outcome; dropping it records nothing"]
pub struct Permit<'a> {
    state: &'a CircuitBreakerState,
    ticket: Ticket,
}

impl Permit<'_> {
    /// Records the call's outcome.
    #[inline(always)]
    pub fn record(self, outcome: Outcome) {
        let this = ManuallyDrop::new(self);
        this.state.record(this.ticket, outcome);
    }

    /// Records an `Ok` as a success and an `Err` as `classify` says.
    #[inline]
    pub fn record_result<T, E>(self, result: &Result<T, E>, classify: impl FnOnce(&E) -> Outcome) {
        let outcome = match result {
            Ok(_) => Outcome::Success,
            Err(e) => classify(e),
        };
        self.record(outcome);
    }
}

impl Drop for Permit<'_> {
    #[inline]
    fn drop(&mut self) {
        self.state.release(self.ticket);
    }
}

impl fmt::Debug for Permit<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Permit").field("instance", &self.state.instance).finish_non_exhaustive()
    }
}
policy_kind! {
    CircuitBreakerPolicy {
        builder: CircuitBreakerConfigBuilder,
        state: CircuitBreakerState,
        event: CircuitBreakerEvent,
        snapshot: CircuitBreakerSnapshot,
        metrics: CircuitBreakerMetrics,
    }

    fn new_state(
        inner: &Inner,
        instance: Arc<str>,
        config: CircuitBreakerConfig,
        events: Publisher<CircuitBreakerEvent>,
    ) -> CircuitBreakerState {
        let (c, store) = (&config, inner.shared.as_deref());
        let link = fleet::link(store, (c.enabled, c.shared), (&instance, events.key()), &inner.timer, &inner.listeners, |parts| {
            BreakerLink::new(parts, c.wait_in_open, c.permitted_calls_in_half_open)
        });
        let state = CircuitBreakerState::new(Arc::clone(&instance), config, Arc::clone(&inner.timer), events);
        match link {
            Some(link) => state.with_link(link),
            None => state,
        }
    }

    fn reconfigure(state: &CircuitBreakerState, config: CircuitBreakerConfig) {
        state.reconfigure(config);
    }

    /// `shared` (SPEC §16); on a shared instance also what its fleet link took when it was built
    /// (`enabled`, `wait_in_open`, `permitted_calls_in_half_open`).
    fn fixed_key(old: &CircuitBreakerConfig, new: &CircuitBreakerConfig) -> Option<Fixed> {
        if old.shared != new.shared {
            return Some(Fixed::Placement("shared"));
        }
        if !old.shared {
            return None;
        }
        [
            ("enabled", old.enabled != new.enabled),
            ("wait_in_open", old.wait_in_open != new.wait_in_open),
            ("permitted_calls_in_half_open", old.permitted_calls_in_half_open != new.permitted_calls_in_half_open),
        ]
        .into_iter()
        .find_map(|(key, changed)| changed.then_some(Fixed::Placement(key)))
    }

    fn check(inner: &Inner, id: &str, _is_async: bool, c: &CircuitBreakerConfig) -> Result<(), RegistryError> {
        match c.shared {
            true => inner.require_shared_store(id),
            false => Ok(()),
        }
    }
}

impl crate::kit::AtRest for CircuitBreakerPolicy {
    fn at_rest(&self) -> bool {
        self.state.at_rest()
    }
}

/// Keyable (SPEC §15): the instance as a whole shows its most recently used key's state and window.
impl crate::kit::KeyedKind for CircuitBreakerPolicy {
    fn state(&self) -> &Arc<CircuitBreakerState> {
        &self.state
    }

    fn max_keys(config: &CircuitBreakerConfig) -> u32 {
        config.max_keys
    }

    fn key_metrics(config: &CircuitBreakerConfig) -> bool {
        config.key_metrics
    }

    fn whole(
        of: CircuitBreakerSnapshot,
        counts: crate::kit::KeyCounts,
        keys: &[CircuitBreakerSnapshot],
    ) -> CircuitBreakerSnapshot {
        let _ = keys;
        CircuitBreakerSnapshot { keys: counts.keys, evicted: counts.evicted, keys_exhausted: counts.exhausted, ..of }
    }
}
