//! The registry: configuration layers, event listeners, the clock, and every live policy instance.
//!
//! Build it once at start-up, share it (it is a cheap `Arc` clone), wrap every dependency with it.
//! It is immutable after [`RegistryBuilder::build`]: changing a value means building a new registry.

#[cfg(feature = "serde")]
pub(crate) mod config_file;
mod layer;
mod policies;

use std::fmt;
use std::sync::Arc;

pub(crate) use layer::{Configs, Instances, Layer, layered_builder};
pub use policies::RegistrySnapshot;
pub(crate) use policies::{
    PolicyConfigs, PolicyKind, Registered, Stores, for_each_event_only, for_each_policy, policy_handle, policy_kind,
};

use crate::clock::{Clock, Timer};
use crate::error::{RegistryError, codes};
use crate::events::{Event, Listeners};

/// Holds configuration, listeners, the clock and the state of every policy instance.
///
/// ```
/// use std::time::Duration;
/// use resilience4cata::Registry;
///
/// let registry = Registry::builder()
///     .retry_defaults(|r| r.delay(Duration::from_millis(50)))           // every retry
///     .retry("external", |r| r.max_attempts(5))                         // config = "external"
///     .retry_instance("shop::InventoryApi::stock", |r| r.max_attempts(2)) // one instance
///     .build()?;
/// assert!(registry.snapshot().retries().is_empty()); // nothing wrapped yet
/// # Ok::<(), resilience4cata::RegistryError>(())
/// ```
#[derive(Clone)]
pub struct Registry {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) timer: Arc<Timer>,
    pub(crate) seed: u64,
    pub(crate) listeners: Listeners,
    pub(crate) stores: Stores,
}

impl Inner {
    /// `R4C-REG-010` unless the clock can wait inside a future (needed by `why`).
    pub(crate) fn require_async_clock(&self, id: &str, why: &str) -> Result<(), RegistryError> {
        if self.timer.can_sleep_async() {
            return Ok(());
        }
        Err(RegistryError::new(
            codes::NO_ASYNC_CLOCK,
            Some(id),
            format!(
                "{why}, but the registry's clock cannot sleep in a future: enable the `tokio` feature or build \
                 the registry on a clock that can"
            ),
        ))
    }
}

impl Registry {
    /// Starts a registry on the system clock with built-in defaults.
    pub fn builder() -> RegistryBuilder {
        RegistryBuilder::default()
    }

    pub(crate) fn inner(&self) -> &Inner {
        &self.inner
    }

    /// Every policy instance built so far, with its resolved configuration and current state.
    pub fn snapshot(&self) -> RegistrySnapshot {
        RegistrySnapshot::of(&self.inner.stores)
    }

    /// Attaches a subscriber to this built registry: a bounded, lossy stream of every event any of
    /// its policies publishes from now on. Each subscriber buffers up to `capacity` events (at
    /// least one); when it falls behind, the oldest are dropped and counted in
    /// [`Subscription::lost`]. Publishers never wait for a subscriber, and while none is attached
    /// publishing costs one relaxed atomic load more than it would without this method.
    ///
    /// ```
    /// use resilience4cata::events::AnyEvent;
    /// use resilience4cata::{Pipeline, Registry, RetryEvent};
    ///
    /// let registry = Registry::builder().build()?;
    /// let mut events = registry.subscribe(64);
    /// let pipeline = Pipeline::builder(&registry, "fetch").retry_with(|r| r.max_attempts(1)).build::<(), &str>()?;
    /// let _ = pipeline.execute(|| Err("down"));
    /// match events.try_recv() {
    ///     Some(AnyEvent::Retry(RetryEvent::GaveUp { attempts, .. })) => assert_eq!(attempts, 1),
    ///     other => panic!("unexpected {other:?}"),
    /// }
    /// drop(events); // unsubscribes
    /// # Ok::<(), resilience4cata::RegistryError>(())
    /// ```
    ///
    /// [`Subscription::lost`]: crate::events::Subscription::lost
    pub fn subscribe(&self, capacity: usize) -> crate::events::Subscription {
        self.inner.listeners.hub.subscribe(capacity)
    }

    /// Interrupts every pending wait between retry attempts, and every later one (sticky): those
    /// calls give up with `GiveUpReason::Interrupted` and return their last failure. Waits for a
    /// rate limiter permit or a bulkhead slot end the same way, with the policy's refusal; a
    /// running attempt's timeout is left alone.
    pub fn shutdown(&self) {
        self.inner.timer.shut_down();
    }

    /// Whether [`shutdown`](Registry::shutdown) was called.
    pub fn is_shut_down(&self) -> bool {
        self.inner.timer.is_shut_down()
    }
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registry").field("snapshot", &self.snapshot()).finish_non_exhaustive()
    }
}

/// Configures a [`Registry`]: defaults, named configurations and per-instance overrides for each
/// policy, the clock, and event listeners.
#[must_use]
#[derive(Default)]
pub struct RegistryBuilder {
    /// The first configuration-file problem, reported by `build`.
    error: Option<RegistryError>,
    clock: Clock,
    seed: Option<u64>,
    listeners: Listeners,
    /// Configured through the `x_defaults` / `x` / `x_instance` trio of each policy (`policies.rs`).
    policies: PolicyConfigs,
}

impl fmt::Debug for RegistryBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RegistryBuilder").field("clock", &self.clock).finish_non_exhaustive()
    }
}

/// Applies a chaining closure to the layer stored under `key`, creating it unset first.
pub(crate) fn edit<B: Layer>(slot: &mut B, f: impl FnOnce(B) -> B) {
    *slot = f(std::mem::take(slot));
}

impl RegistryBuilder {
    /// The clock every policy reads and waits on (default: [`Clock::system`]).
    pub fn clock(mut self, clock: impl Into<Clock>) -> Self {
        self.clock = clock.into();
        self
    }

    /// Fixes the seed of the jitter generators, so jittered waits repeat run after run.
    pub fn jitter_seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// Registers a listener for one event type, called synchronously on the thread that publishes.
    /// The type is taken from the closure: `listen(|e: &RetryEvent| …)`.
    pub fn listen<E: Event>(mut self, listener: impl Fn(&E) + Send + Sync + 'static) -> Self {
        <E as crate::events::sealed::Sealed>::listeners_of(&mut self.listeners).push(Arc::new(listener));
        self
    }

    /// Merges an external configuration (feature `serde`) into the layers, key by key, in call
    /// order with the builder methods.
    #[cfg(feature = "serde")]
    pub fn config(mut self, config: config_file::RegistryConfig) -> Self {
        config.apply(&mut self.policies);
        self
    }

    /// Parses TOML configuration (feature `serde`) and merges it like [`config`](Self::config). A
    /// problem (`R4C-CFG-…`, naming the key path and line) is returned by [`build`](Self::build).
    ///
    /// ```
    /// use resilience4cata::Registry;
    ///
    /// let err = Registry::builder().config_toml("[defaults.retry]\nmax_attempts = \"3\"\n").build().unwrap_err();
    /// assert_eq!(err.code(), "R4C-CFG-003");
    /// assert!(err.to_string().contains("config:2: `defaults.retry.max_attempts`"), "{err}");
    /// ```
    #[cfg(feature = "serde")]
    pub fn config_toml(self, text: &str) -> Self {
        self.config_from(text, "config")
    }

    /// Reads and merges a TOML file (feature `serde`); see [`config_toml`](Self::config_toml).
    #[cfg(feature = "serde")]
    pub fn config_file(self, path: impl AsRef<std::path::Path>) -> Self {
        let path = path.as_ref();
        match std::fs::read_to_string(path) {
            Ok(text) => self.config_from(&text, &path.display().to_string()),
            Err(e) => self.fail(RegistryError::new(
                crate::error::codes::CONFIG_SYNTAX,
                None,
                format!("{}: cannot read: {e}", path.display()),
            )),
        }
    }

    #[cfg(feature = "serde")]
    fn config_from(self, text: &str, origin: &str) -> Self {
        match config_file::RegistryConfig::from_toml(text, origin) {
            Ok(config) => self.config(config),
            Err(e) => self.fail(e),
        }
    }

    #[cfg(feature = "serde")]
    fn fail(mut self, error: RegistryError) -> Self {
        self.error.get_or_insert(error);
        self
    }

    /// Builds the registry, or returns the first configuration-file error. Policy values are
    /// checked when a wrapper or pipeline resolves them.
    pub fn build(self) -> Result<Registry, RegistryError> {
        if let Some(error) = self.error {
            return Err(error);
        }
        let timer = Arc::new(self.clock.into_timer());
        let inner = Inner {
            timer,
            seed: self.seed.unwrap_or_else(|| fastrand::u64(..)),
            listeners: self.listeners,
            stores: self.policies.into_stores(),
        };
        Ok(Registry { inner: Arc::new(inner) })
    }
}
