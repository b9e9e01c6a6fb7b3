//! A chaos instance's shared state: the configuration in force (as atomics the injection point
//! reads, and whole for snapshots), the instance's sequence of draws, and its counts.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use super::{ChaosConfig, ChaosEvent, ChaosSnapshot};
use crate::clock::{Timer, nanos};
use crate::error::{RegistryError, codes};
use crate::events::{Publisher, publish};

/// One error type of a method (or pipeline) that injects under this id: its name for messages, and
/// whether it has a unit variant of a given name.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ErrorType {
    pub(crate) name: &'static str,
    pub(crate) has: fn(&str) -> bool,
}

/// A chaos instance's shared state: one per injection point id.
#[derive(Debug)]
pub(crate) struct ChaosState {
    pub(crate) instance: Arc<str>,
    pub(super) timer: Arc<Timer>,
    events: Publisher<ChaosEvent>,
    /// The registry's seed mixed with the id: the sequence's seed when the configuration has none.
    default_seed: u64,
    /// The one word the pass path reads.
    enabled: AtomicBool,
    /// `rate × 2^53`: a draw's top 53 bits below it inject.
    fault_threshold: AtomicU64,
    latency_threshold: AtomicU64,
    latency_nanos: AtomicU64,
    seed: AtomicU64,
    /// Draws so far: draw `n` is a function of the seed and `n` alone, so a seed repeats its sequence.
    draws: AtomicU64,
    faults: AtomicU64,
    latencies: AtomicU64,
    config: Mutex<ChaosConfig>,
    fault: Mutex<Option<Arc<str>>>,
    error_types: Mutex<Vec<ErrorType>>,
}

/// How many chaos instances of every registry of the process are enabled: what the pass path
/// reads (one relaxed load of a static, one branch), so an injection point whose instance is off
/// costs nothing more while no instance anywhere injects; the instance's own switch is read only
/// past it.
static ENABLED_ANYWHERE: AtomicUsize = AtomicUsize::new(0);

/// Whether any chaos instance of the process is enabled.
#[inline(always)]
pub(crate) fn enabled_anywhere() -> bool {
    ENABLED_ANYWHERE.load(Ordering::Relaxed) != 0
}

/// `rate` (0–1) as a threshold on 53-bit draws: 1.0 is above every draw, 0.0 below none.
fn threshold(rate: f64) -> u64 {
    (rate.clamp(0.0, 1.0) * (1u64 << 53) as f64) as u64
}

/// SplitMix64's finalizer: a well-mixed 64-bit value of `x`.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// FNV-1a of the id, so instances of one registry draw different sequences.
fn hash_id(id: &str) -> u64 {
    id.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// What one call is injected with: a delay before the delegate and/or a fault instead of it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Draw {
    pub(crate) fault: bool,
    pub(crate) latency: u64,
}

impl ChaosState {
    pub(crate) fn new(
        instance: Arc<str>,
        config: ChaosConfig,
        timer: Arc<Timer>,
        registry_seed: u64,
        events: Publisher<ChaosEvent>,
    ) -> Self {
        let default_seed = mix(registry_seed ^ hash_id(&instance));
        let state = ChaosState {
            instance,
            timer,
            events,
            default_seed,
            enabled: AtomicBool::new(false),
            fault_threshold: AtomicU64::new(0),
            latency_threshold: AtomicU64::new(0),
            latency_nanos: AtomicU64::new(0),
            seed: AtomicU64::new(default_seed),
            draws: AtomicU64::new(0),
            faults: AtomicU64::new(0),
            latencies: AtomicU64::new(0),
            config: Mutex::new(ChaosConfig::default()),
            fault: Mutex::new(None),
            error_types: Mutex::new(Vec::new()),
        };
        state.apply(config);
        state
    }

    /// Puts `config` in force: the values first, the switch last.
    pub(crate) fn apply(&self, config: ChaosConfig) {
        self.fault_threshold.store(threshold(config.fault_rate), Ordering::Relaxed);
        self.latency_threshold.store(threshold(config.latency_rate), Ordering::Relaxed);
        self.latency_nanos.store(nanos(config.latency), Ordering::Relaxed);
        let seed = config.seed.map_or(self.default_seed, mix);
        if self.seed.swap(seed, Ordering::Relaxed) != seed {
            self.draws.store(0, Ordering::Relaxed); // a new seed starts its sequence from the top
        }
        *self.fault.lock().unwrap_or_else(PoisonError::into_inner) = config.fault.as_deref().map(Arc::from);
        let enabled = config.enabled;
        *self.config.lock().unwrap_or_else(PoisonError::into_inner) = config;
        match (self.enabled.swap(enabled, Ordering::Release), enabled) {
            (false, true) => _ = ENABLED_ANYWHERE.fetch_add(1, Ordering::Relaxed),
            (true, false) => _ = ENABLED_ANYWHERE.fetch_sub(1, Ordering::Relaxed),
            _ => {}
        }
    }

    /// `R4C-REG-003` unless `config`'s fault is a unit variant of every error type injecting here
    /// (what a live update asks before [`apply`](Self::apply)).
    #[cfg_attr(not(feature = "serde"), allow(dead_code))] // live updates come with `serde`
    pub(crate) fn check_fault(&self, config: &ChaosConfig) -> Result<(), RegistryError> {
        let types = self.error_types.lock().unwrap_or_else(PoisonError::into_inner);
        types.iter().try_for_each(|t| check_fault_of(&self.instance, config, *t))
    }

    /// Adds a user of this id with error type `t`, refused (`R4C-REG-003`) if the fault in force
    /// is not one of its unit variants.
    pub(crate) fn admit(&self, t: ErrorType) -> Result<(), RegistryError> {
        let config = self.config.lock().unwrap_or_else(PoisonError::into_inner).clone();
        check_fault_of(&self.instance, &config, t)?;
        let mut types = self.error_types.lock().unwrap_or_else(PoisonError::into_inner);
        if !types.iter().any(|known| known.name == t.name) {
            types.push(t);
        }
        Ok(())
    }

    /// Whether injection is on: one relaxed load.
    #[inline(always)]
    pub(crate) fn is_enabled(&self) -> bool {
        self.enabled.load(Ordering::Relaxed)
    }

    /// The next draw of the sequence; `None` when it injects nothing.
    #[cold]
    #[inline(never)]
    pub(crate) fn draw(&self) -> Option<Draw> {
        let n = self.draws.fetch_add(1, Ordering::Relaxed);
        let seed = self.seed.load(Ordering::Relaxed);
        let fault_draw = mix(seed.wrapping_add(n.wrapping_mul(2))) >> 11;
        let latency_draw = mix(seed.wrapping_add(n.wrapping_mul(2)).wrapping_add(1)) >> 11;
        let fault = fault_draw < self.fault_threshold.load(Ordering::Relaxed);
        let latency = match latency_draw < self.latency_threshold.load(Ordering::Relaxed) {
            true => self.latency_nanos.load(Ordering::Relaxed),
            false => 0,
        };
        (fault || latency > 0).then_some(Draw { fault, latency })
    }

    /// A delay starts: counted and published now, even if a timeout cuts it short.
    pub(super) fn latency_started(&self, latency: u64) -> Duration {
        self.latencies.fetch_add(1, Ordering::Relaxed);
        let latency = Duration::from_nanos(latency);
        publish!(self.events, |m| m.latency_injected(), || ChaosEvent::LatencyInjected {
            instance: Arc::clone(&self.instance),
            latency
        });
        latency
    }

    /// The fault in force, `make`d into the caller's error type; `None` (nothing injected) when
    /// it names no variant `make` knows.
    pub(super) fn make_fault<E>(&self, make: fn(&str) -> Option<E>) -> Option<E> {
        let name = self.fault.lock().unwrap_or_else(PoisonError::into_inner).clone()?;
        make(&name)
    }

    /// A fault was injected: counted and published.
    pub(super) fn fault_injected(&self) {
        self.faults.fetch_add(1, Ordering::Relaxed);
        publish!(self.events, |m| m.fault_injected(), || ChaosEvent::FaultInjected {
            instance: Arc::clone(&self.instance)
        });
    }

    pub(crate) fn snapshot(&self) -> ChaosSnapshot {
        ChaosSnapshot {
            instance: Arc::clone(&self.instance),
            config: self.config.lock().unwrap_or_else(PoisonError::into_inner).clone(),
            faults: self.faults.load(Ordering::Relaxed),
            latencies: self.latencies.load(Ordering::Relaxed),
        }
    }
}

impl Drop for ChaosState {
    fn drop(&mut self) {
        if *self.enabled.get_mut() {
            ENABLED_ANYWHERE.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

/// `R4C-REG-003`: `config` names a fault `t` has no unit variant of (checked whether or not
/// injection is enabled).
fn check_fault_of(instance: &str, config: &ChaosConfig, t: ErrorType) -> Result<(), RegistryError> {
    match config.fault.as_deref() {
        Some(name) if !(t.has)(name) => Err(RegistryError::new(
            codes::INVALID_VALUE,
            Some(instance),
            format!(
                "chaos fault \"{name}\" is not a unit variant of `{}`: name a unit variant of the method's error \
                 type (`#[derive(ResilienceError)]` makes them constructible by name; an error type without \
                 one cannot be injected as a fault, use `latency` alone)",
                t.name
            ),
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chaos_thresholds_bound_every_draw() {
        assert_eq!(threshold(0.0), 0);
        assert!(threshold(1.0) > (u64::MAX >> 11));
        assert_eq!(threshold(0.5), 1 << 52);
    }
}
