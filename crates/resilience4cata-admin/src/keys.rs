//! The busiest keys of every keyed instance (SPEC §15), for `/snapshot` and the dashboard's
//! keyed cards.
//!
//! A keyed instance is one entry of its policy's list in the registry's snapshot, describing the
//! instance as a whole (its `keys`, `evicted` and `keys_exhausted` besides the policy's figures).
//! Its keys are listed here: up to [`SHOWN`] per instance, most recently used first
//! (`handle.keys(n)`'s order, in which a refused call counts), each with its text and its own
//! snapshot. Most recently used rather than most in flight: a rate limiter has nothing in flight,
//! and the key an operator looks for is the one being called now, refused calls included (an
//! exhausted tenant, a host whose breaker is open), which an order by calls in flight would hide.

use std::collections::BTreeMap;
use std::sync::Arc;

use resilience4cata::{Registry, RegistrySnapshot};
use serde::Serialize;

/// Keys listed per keyed instance: what one card shows at a glance, and a bound on the page's
/// work whatever `max_keys` is.
pub(crate) const SHOWN: usize = 8;

/// One key: its text (the key's `Debug` form, cut at 256 bytes with `…` by the runtime) and its
/// own snapshot, as the runtime's `serde` feature writes it.
#[derive(Debug, Serialize)]
pub(crate) struct Key<S> {
    key: String,
    snapshot: S,
}

/// The listed keys of each keyed instance, by policy and instance id (instances without keys are
/// absent).
#[derive(Debug, Default, Serialize)]
pub(crate) struct Keys {
    rate_limiters: BTreeMap<String, Vec<Key<resilience4cata::rate_limiter::RateLimiterSnapshot>>>,
    circuit_breakers: BTreeMap<String, Vec<Key<resilience4cata::circuit_breaker::CircuitBreakerSnapshot>>>,
    bulkheads: BTreeMap<String, Vec<Key<resilience4cata::bulkhead::BulkheadSnapshot>>>,
    adaptive_limits: BTreeMap<String, Vec<Key<resilience4cata::adaptive_limit::AdaptiveLimitSnapshot>>>,
}

/// `/snapshot`: the registry's snapshot, field for field, and `keys`.
#[derive(Debug, Serialize)]
pub(crate) struct AdminSnapshot {
    #[serde(flatten)]
    pub(crate) registry: RegistrySnapshot,
    pub(crate) keys: Keys,
}

impl AdminSnapshot {
    /// The registry's snapshot now, and the busiest keys of its keyed instances.
    pub(crate) fn of(registry: &Registry) -> Self {
        let snapshot = registry.snapshot();
        let keys = Keys::of(registry, &snapshot);
        AdminSnapshot { registry: snapshot, keys }
    }
}

impl Keys {
    fn of(registry: &Registry, snapshot: &RegistrySnapshot) -> Self {
        Keys {
            rate_limiters: listed(snapshot.rate_limiters().iter().map(|s| (&s.instance, s.keys)), |id| {
                registry.rate_limiter(id).map(|h| h.keys(SHOWN))
            }),
            circuit_breakers: listed(snapshot.circuit_breakers().iter().map(|s| (&s.instance, s.keys)), |id| {
                registry.circuit_breaker(id).map(|h| h.keys(SHOWN))
            }),
            bulkheads: listed(snapshot.bulkheads().iter().map(|s| (&s.instance, s.keys)), |id| {
                registry.bulkhead(id).map(|h| h.keys(SHOWN))
            }),
            adaptive_limits: listed(snapshot.adaptive_limits().iter().map(|s| (&s.instance, s.keys)), |id| {
                registry.adaptive_limit(id).map(|h| h.keys(SHOWN))
            }),
        }
    }
}

/// The keys of every instance that has some (`(id, keys)` of the snapshot), read with `keys_of`.
fn listed<'a, S>(
    instances: impl Iterator<Item = (&'a Arc<str>, u32)>,
    keys_of: impl Fn(&str) -> Option<Vec<(Arc<str>, S)>>,
) -> BTreeMap<String, Vec<Key<S>>> {
    instances
        .filter(|(_, keys)| *keys > 0)
        .filter_map(|(id, _)| {
            let keys = keys_of(id)?.into_iter().map(|(key, snapshot)| Key { key: key.to_string(), snapshot }).collect();
            Some((id.to_string(), keys))
        })
        .collect()
}
