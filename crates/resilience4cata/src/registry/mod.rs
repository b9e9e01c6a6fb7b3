//! The registry: configuration layers, event listeners, the clock, and every live policy instance.
//!
//! Build it once at start-up, share it (it is a cheap `Arc` clone), wrap every dependency with it.
//! Its configuration changes after [`RegistryBuilder::build`] only through a live update
//! (`update_config`, `update_toml`, `update_file`, `watch_file`; SPEC §16, `live.rs`), which keeps
//! every instance's state.

#[cfg(feature = "serde")]
pub(crate) mod config_file;
mod keyed;
mod layer;
mod live;
mod policies;
mod readings;

use std::fmt;
use std::sync::Arc;

pub use layer::UnusedConfig;
pub(crate) use layer::{Configs, Instances, Usage};
pub use live::ConfigChange;
#[cfg(all(feature = "serde", feature = "tokio"))]
pub use live::ConfigWatch;
use live::Segments;
#[cfg(feature = "serde")]
pub(crate) use policies::PolicyConfigs;
pub use policies::RegistrySnapshot;
pub(crate) use policies::{Registered, Stores};

/// The faces compose the policies through the registry: the kit and the list, as they see them.
pub(crate) use crate::kit::{Inner, Layer};
pub(crate) use crate::policy_list::{for_each_pipeline_policy, for_each_policy};

use crate::clock::Clock;
use crate::durations::{CallTimer, DurationStore};
use crate::error::{RegistryError, codes};
use crate::events::{Event, Listeners};
use crate::fleet::Fleet;
use crate::kit::no_shared_store;
use crate::shared::{Routed, SharedStore};

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
    parts: Arc<Parts>,
}

/// What a built registry holds: the build context every policy reads, and each kind's store.
struct Parts {
    /// Shared with keyed instances, which make their keys' states from it (SPEC §15).
    inner: Arc<Inner>,
    stores: Stores,
    /// The call and attempt histograms (filled only with the feature `durations`).
    durations: DurationStore,
    /// The configuration as the builder gave it, segment by segment: what a live update replaces
    /// the file's segment of; held by one update at a time.
    #[cfg_attr(not(feature = "serde"), allow(dead_code))] // reached through a live update (feature `serde`)
    segments: std::sync::Mutex<Segments>,
}

impl Registry {
    /// Starts a registry on the system clock with built-in defaults.
    pub fn builder() -> RegistryBuilder {
        RegistryBuilder::default()
    }

    pub(crate) fn inner(&self) -> &Inner {
        &self.parts.inner
    }

    /// The build context, shared (a keyed instance keeps it to make its keys' states).
    pub(crate) fn inner_arc(&self) -> Arc<Inner> {
        Arc::clone(&self.parts.inner)
    }

    /// Every policy kind's configuration layers and live instances.
    pub(crate) fn stores(&self) -> &Stores {
        &self.parts.stores
    }

    /// Every policy instance built so far, with its resolved configuration and current state.
    pub fn snapshot(&self) -> RegistrySnapshot {
        RegistrySnapshot::of(&self.parts.stores, self.parts.durations.snapshots())
    }

    /// The timer of the calls and attempts of `id` (a method's derived id or a pipeline's id):
    /// zero-sized and a no-op without the feature `durations`.
    pub(crate) fn call_timer(&self, id: &str) -> CallTimer {
        self.parts.durations.timer(&self.parts.inner.timer, id)
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
        self.parts.inner.listeners.hub.subscribe(capacity)
    }

    /// Interrupts every pending wait between retry attempts, and every later one (sticky): those
    /// calls give up with `GiveUpReason::Interrupted` and return their last failure. Waits for a
    /// rate limiter permit or a bulkhead slot end the same way, with the policy's refusal; a
    /// running attempt's timeout is left alone.
    pub fn shutdown(&self) {
        self.parts.inner.timer.shut_down();
    }

    /// The named configurations and instance overrides (from builder calls or configuration
    /// files) that no wrapper or pipeline has resolved so far, ordered by policy: call it once
    /// every wrapper is built to catch a misspelt `config = "…"` or instance id, which are
    /// otherwise accepted silently. See [`UnusedConfig`].
    pub fn unused_config(&self) -> Vec<UnusedConfig> {
        self.parts.stores.unused()
    }

    /// [`unused_config`](Registry::unused_config) as an error, at the point you choose (typically
    /// once every wrapper, `<Type>Policies` and pipeline is built, before serving): `Ok(())` when
    /// every named configuration and instance override has been resolved, else `R4C-REG-012`
    /// listing them. An instance override for an id nothing builds (a misspelt id, a scope that
    /// differs) is otherwise silently ignored; naming ids with the generated
    /// `<Generated>Ids::scoped(…)` / `unscoped()` avoids the misspelling in the first place.
    ///
    /// ```
    /// use resilience4cata::{Registry, Rejection, ResilienceError, resilient};
    ///
    /// #[derive(Debug, ResilienceError)]
    /// pub enum StockError {
    ///     Down,
    ///     #[rejection]
    ///     Rejected(Rejection),
    /// }
    ///
    /// #[resilient]
    /// pub trait Stock {
    ///     #[circuit_breaker]
    ///     fn stock(&self, sku: &str) -> Result<u32, StockError>;
    /// }
    ///
    /// struct Backend;
    /// impl Stock for Backend {
    ///     fn stock(&self, _sku: &str) -> Result<u32, StockError> { Ok(1) }
    /// }
    ///
    /// let right = ResilientStockIds::scoped("host-a").stock.circuit_breaker().unwrap().to_owned();
    /// let registry = Registry::builder()
    ///     .circuit_breaker_instance(&right, |c| c.minimum_calls(2))
    ///     .circuit_breaker_instance("host-a/Stock::stock", |c| c.minimum_calls(2)) // misspelt
    ///     .build()?;
    /// let _stock = ResilientStock::builder(Backend, &registry).scope("host-a").build()?;
    /// let err = registry.check_unused_config().unwrap_err();
    /// assert_eq!(err.code(), "R4C-REG-012");
    /// assert!(err.message().contains("host-a/Stock::stock"));
    /// assert!(!err.message().contains(&right));
    /// # Ok::<(), resilience4cata::RegistryError>(())
    /// ```
    ///
    /// # Errors
    /// `R4C-REG-012` when [`unused_config`](Registry::unused_config) is not empty; the message
    /// names each unused entry.
    pub fn check_unused_config(&self) -> Result<(), RegistryError> {
        let unused = self.unused_config();
        if unused.is_empty() {
            return Ok(());
        }
        let entries: Vec<String> = unused
            .iter()
            .map(|u| match u {
                UnusedConfig::Named { policy, name } => {
                    format!("{policy} configuration \"{name}\" (no `config = \"{name}\"` chose it)")
                }
                UnusedConfig::Instance { policy, id } => {
                    format!("{policy} instance \"{id}\" (no instance has this id)")
                }
            })
            .collect();
        let message = format!(
            "configuration nothing has used: {}; check the spelling of the ids (`<Generated>Ids::scoped(…)` names them), \
             and that every wrapper and pipeline is built before this check",
            entries.join(", ")
        );
        Err(RegistryError::new(codes::UNUSED_CONFIG, None, message))
    }

    /// Whether [`shutdown`](Registry::shutdown) was called.
    pub fn is_shut_down(&self) -> bool {
        self.parts.inner.timer.is_shut_down()
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
    shared: Option<Arc<dyn SharedStore>>,
    /// Configured through the `x_defaults` / `x` / `x_instance` trio of each policy (`policies.rs`)
    /// and the configuration files, in call order (`live.rs`).
    policies: Segments,
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

/// The first layer of `configs` that sets `shared = true`: `Some(None)` for the defaults,
/// `Some(Some(name or id))` otherwise.
fn shared_in<B>(configs: &Configs<B>, sets: impl Fn(&B) -> bool) -> Option<Option<&str>> {
    std::iter::once((None, &configs.defaults))
        .chain(configs.named.iter().map(|(name, b)| (Some(name.as_str()), b)))
        .chain(configs.instances.iter().map(|(id, b)| (Some(id.as_str()), b)))
        .find(|(_, layer)| sets(layer))
        .map(|(at, _)| at)
}

impl RegistryBuilder {
    /// The store that instances configured with `shared = true` share their state through, with
    /// every process using the same store (see [`crate::shared`]). Without one, `shared = true`
    /// is `R4C-REG-011` at [`build`](Self::build):
    ///
    /// ```
    /// use resilience4cata::Registry;
    ///
    /// let err = Registry::builder().rate_limiter_instance("prices", |r| r.shared(true)).build().unwrap_err();
    /// assert_eq!((err.code(), err.instance()), ("R4C-REG-011", Some("prices")));
    /// ```
    pub fn shared_state(mut self, store: impl SharedStore) -> Self {
        self.shared = Some(Arc::new(store));
        self
    }

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
        self.policies.push_file(config);
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
    /// checked when a wrapper or pipeline resolves them, except `shared = true` without a
    /// [`shared_state`](Self::shared_state) store: `R4C-REG-011` here.
    pub fn build(self) -> Result<Registry, RegistryError> {
        if let Some(error) = self.error {
            return Err(error);
        }
        let policies = self.policies.merged();
        if self.shared.is_none()
            && let Some(at) = shared_in(&policies.rate_limiter, |l| l.sets_shared())
                .or_else(|| shared_in(&policies.circuit_breaker, |l| l.sets_shared()))
                .or_else(|| shared_in(&policies.bulkhead, |l| l.sets_shared()))
        {
            return Err(no_shared_store(at));
        }
        let timer = Arc::new(self.clock.into_timer());
        let inner = Inner {
            timer,
            seed: self.seed.unwrap_or_else(|| fastrand::u64(..)),
            listeners: self.listeners,
            shared: self.shared.map(|store| Arc::new(Routed(store)) as Arc<dyn Fleet>),
        };
        Ok(Registry {
            parts: Arc::new(Parts {
                inner: Arc::new(inner),
                stores: policies.into_stores(),
                durations: DurationStore::default(),
                segments: std::sync::Mutex::new(self.policies),
            }),
        })
    }
}
