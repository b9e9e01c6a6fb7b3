//! The keyed policies of a keyed pipeline (SPEC §15), and one call's holds on its key: looked up
//! once per call, before the retry, in nesting order, and held until the call ends (so a key is in
//! flight, never evicted, across the retries). Each hold puts its key's own facade into the
//! call's guard set, where an unkeyed pipeline keeps the instance's.

use std::fmt;

use super::guards::GuardSet;
use crate::__private::{
    KeyRef, KeyType, KeyedAdaptiveLimitPolicy, KeyedBulkheadPolicy, KeyedCircuitBreakerPolicy, KeyedRateLimiterPolicy,
};
use crate::adaptive_limit::policy::AdaptiveLimitPolicy;
use crate::bulkhead::policy::BulkheadPolicy;
use crate::circuit_breaker::policy::CircuitBreakerPolicy;
use crate::rate_limiter::policy::RateLimiterPolicy;
use crate::rejection::Rejection;

/// The keyable policies of a keyed pipeline, in nesting order (retry and hedge, timeout and
/// fallback are never keyed).
#[derive(Clone, Default)]
pub(super) struct KeyedSet {
    pub(super) circuit_breaker: Option<KeyedCircuitBreakerPolicy>,
    pub(super) rate_limiter: Option<KeyedRateLimiterPolicy>,
    pub(super) adaptive_limit: Option<KeyedAdaptiveLimitPolicy>,
    pub(super) bulkhead: Option<KeyedBulkheadPolicy>,
}

impl fmt::Debug for KeyedSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyedSet")
            .field("circuit_breaker", &self.circuit_breaker.is_some())
            .field("rate_limiter", &self.rate_limiter.is_some())
            .field("adaptive_limit", &self.adaptive_limit.is_some())
            .field("bulkhead", &self.bulkhead.is_some())
            .finish()
    }
}

/// One call's holds on its key, one per keyed policy: while they live the key is in flight.
pub(super) struct Holds<'a> {
    circuit_breaker: Option<KeyRef<'a, CircuitBreakerPolicy>>,
    rate_limiter: Option<KeyRef<'a, RateLimiterPolicy>>,
    adaptive_limit: Option<KeyRef<'a, AdaptiveLimitPolicy>>,
    bulkhead: Option<KeyRef<'a, BulkheadPolicy>>,
}

impl KeyedSet {
    /// Whether the pipeline has any keyed policy.
    pub(super) fn any(&self) -> bool {
        self.circuit_breaker.is_some()
            || self.rate_limiter.is_some()
            || self.adaptive_limit.is_some()
            || self.bulkhead.is_some()
    }

    /// The key's state in every keyed policy, in nesting order: an existing key allocates nothing;
    /// a new one may, and is refused with `KeysExhausted` when a policy's table is full of keys
    /// that are not at rest (the holds already taken are dropped with the refusal).
    #[inline]
    pub(super) fn hold<Q: ?Sized + KeyType>(&self, key: &Q) -> Result<Holds<'_>, Rejection> {
        Ok(Holds {
            circuit_breaker: self.circuit_breaker.as_ref().map(|p| p.for_key(key)).transpose()?,
            rate_limiter: self.rate_limiter.as_ref().map(|p| p.for_key(key)).transpose()?,
            adaptive_limit: self.adaptive_limit.as_ref().map(|p| p.for_key(key)).transpose()?,
            bulkhead: self.bulkhead.as_ref().map(|p| p.for_key(key)).transpose()?,
        })
    }
}

impl Holds<'_> {
    /// Puts each held key's facade (a reference count, no allocation) in the call's guard set.
    #[inline]
    pub(super) fn fill(&self, set: &mut GuardSet) {
        if let Some(held) = &self.circuit_breaker {
            set.circuit_breaker = Some(CircuitBreakerPolicy::clone(held));
        }
        if let Some(held) = &self.rate_limiter {
            set.rate_limiter = Some(RateLimiterPolicy::clone(held));
        }
        if let Some(held) = &self.adaptive_limit {
            set.adaptive_limit = Some(AdaptiveLimitPolicy::clone(held));
        }
        if let Some(held) = &self.bulkhead {
            set.bulkhead = Some(BulkheadPolicy::clone(held));
        }
    }
}
