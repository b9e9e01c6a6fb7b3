//! The demo's registry and its tenants: the listeners that narrate the breakers and note what
//! each tenant's policies do during a phase, and the per-instance overrides that scale every
//! duration of the policies with the script's time.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use resilience4cata::adaptive_limit::AdaptiveLimitEvent;
use resilience4cata::circuit_breaker::CircuitBreakerEvent;
use resilience4cata::{Registry, RegistryError};

use super::story::{Tally, TenantReport, Watch};
use super::{Narrator, breaker_state, price_id};

/// One tenant: its instances' id, how its calls ended and what its policies did this phase.
#[derive(Debug)]
pub(crate) struct Tenant {
    pub(crate) name: &'static str,
    id: String,
    pub(crate) tally: Tally,
    watch: Watch,
    /// The timeout's `timed_out` (attempts, since built) when the last phase ended.
    timed_out_before: AtomicU64,
    /// Chaos's injected faults (since built) when the last phase ended.
    faults_before: AtomicU64,
}

impl Tenant {
    pub(crate) fn new(name: &'static str) -> Tenant {
        let (tally, watch, timed_out_before) = (Tally::default(), Watch::default(), AtomicU64::new(0));
        Tenant { name, id: price_id(name), tally, watch, timed_out_before, faults_before: AtomicU64::new(0) }
    }

    /// Starts counting afresh (a script starts).
    pub(crate) fn restart(&self, registry: &Registry) {
        self.tally.take();
        self.watch.restart(self.limit(registry));
        self.timed_out_before.store(self.timed_out(registry), Ordering::Relaxed);
        self.faults_before.store(self.faults(registry), Ordering::Relaxed);
    }

    /// The phase that ends, and counting afresh for the next.
    pub(crate) fn report(&self, registry: &Registry) -> TenantReport {
        let limit = self.limit(registry);
        let (breaker_moves, lowest_limit) = self.watch.restart(limit);
        let timed_out = self.timed_out(registry);
        let faults = self.faults(registry);
        TenantReport {
            chaos_faults: faults.saturating_sub(self.faults_before.swap(faults, Ordering::Relaxed)),
            counts: self.tally.take(),
            breaker_moves,
            breaker: breaker_state(registry, &self.id),
            lowest_limit: lowest_limit.min(limit),
            limit,
            attempts_timed_out: timed_out.saturating_sub(self.timed_out_before.swap(timed_out, Ordering::Relaxed)),
        }
    }

    /// Faults chaos injected into this tenant's calls since its injection point was built.
    fn faults(&self, registry: &Registry) -> u64 {
        registry.snapshot().chaos().iter().find(|c| *c.instance == *self.id).map_or(0, |c| c.faults)
    }

    fn limit(&self, registry: &Registry) -> u32 {
        registry.adaptive_limit(&self.id).map_or(0, |l| l.snapshot().limit)
    }

    /// Attempts the timeout cut off since it was built (the dashboard's timeout card).
    fn timed_out(&self, registry: &Registry) -> u64 {
        let snapshot = registry.snapshot();
        snapshot.timeouts().iter().filter(|t| *t.instance == *self.id).map(|t| t.timed_out).sum()
    }
}

/// The registry: system clock, breaker transitions narrated, each tenant's breaker moves and
/// limit changes noted, and (when the time is scaled) every duration of the policies scaled with
/// it, through per-instance overrides that win over the trait's attributes.
pub(crate) fn registry(scale: f64, tenants: &[Arc<Tenant>], narrate: Narrator) -> Result<Registry, RegistryError> {
    let built = Arc::new(OnceLock::<Registry>::new());
    let mut builder = Registry::builder()
        .listen({
            let (built, tenants) = (Arc::clone(&built), tenants.to_vec());
            move |e: &CircuitBreakerEvent| {
                let CircuitBreakerEvent::StateTransition { instance, from, to, .. } = e else { return };
                let Some(tenant) = tenants.iter().find(|t| *t.id == **instance) else { return };
                tenant.watch.breaker_moved(*to);
                let handle = built.get().and_then(|r: &Registry| r.circuit_breaker(instance));
                let refused = handle.map_or(0, |b| b.snapshot().not_permitted_calls);
                narrate(format!("   {} breaker: {from:?} -> {to:?} ({refused} calls refused so far)", tenant.name));
            }
        })
        .listen({
            let tenants = tenants.to_vec();
            move |e: &AdaptiveLimitEvent| {
                if let AdaptiveLimitEvent::LimitChanged { instance, to, .. } = e
                    && let Some(tenant) = tenants.iter().find(|t| *t.id == **instance)
                {
                    tenant.watch.limit_moved(*to);
                }
            }
        });
    if scale != 1.0 {
        let ms = |n: f64| Duration::from_secs_f64(n * scale / 1000.0);
        for tenant in tenants {
            builder = builder
                .retry_instance(&tenant.id, |r| r.delay(ms(100.0)))
                .circuit_breaker_instance(&tenant.id, |c| c.wait_in_open(ms(5000.0)).slow_call_duration(ms(500.0)))
                .adaptive_limit_instance(&tenant.id, |a| a.latency_timeout(ms(500.0)))
                .timeout_instance(&tenant.id, |t| t.duration(ms(1000.0)));
        }
    }
    let registry = builder.build()?;
    let _ = built.set(registry.clone());
    Ok(registry)
}
