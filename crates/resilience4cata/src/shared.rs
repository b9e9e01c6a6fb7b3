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
//! (the instance's own GCRA, `permits` per `period` *per process*, continuing from what the
//! process was granted, with no burst saved up while the fleet decided), publishes
//! [`SharedStateEvent::Degraded`], and the store keeps trying in the background; on its first
//! success it [recovers](LeasePool::recover) the pool, which publishes
//! [`SharedStateEvent::Recovered`]. A caller never sees the store's errors.
//!
//! The machinery every link shares lives on a floor below the policies (`fleet.rs`); this module
//! is the public face above them: the [`SharedStore`] trait, which names every policy's link, and
//! the links' public paths.

use std::any::Any;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

pub use crate::bulkhead::shared::SlotPool;
pub use crate::circuit_breaker::shared::{BreakerLink, BreakerWork};
/// Declared with the other events (`events/shared_state.rs`), so the event machinery never reads
/// the store; this path stays the public one.
pub use crate::events::{SharedPolicy, SharedStateEvent};
use crate::fleet::Fleet;
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

/// The registry's store as the policies see it: each link a policy hands over goes to the
/// [`SharedStore`] method for its policy.
pub(crate) struct Routed(pub(crate) Arc<dyn SharedStore>);

impl Fleet for Routed {
    fn store_timeout(&self) -> Duration {
        self.0.store_timeout()
    }

    fn share(&self, link: Arc<dyn Any + Send + Sync>) {
        let link = match link.downcast::<LeasePool>() {
            Ok(pool) => return self.0.share_rate_limiter(pool),
            Err(link) => link,
        };
        let link = match link.downcast::<SlotPool>() {
            Ok(pool) => return self.0.share_bulkhead(pool),
            Err(link) => link,
        };
        match link.downcast::<BreakerLink>() {
            Ok(link) => self.0.share_circuit_breaker(link),
            Err(_) => debug_assert!(false, "a fleet link with no SharedStore method: add one to SharedStore and here"),
        }
    }
}
