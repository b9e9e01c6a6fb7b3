//! The registry's side of layered configuration: each policy kind's layers (defaults, named,
//! per instance) over its [`Layer`] builder, the table of live instances shared by id, and what no
//! resolution has used.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use crate::error::{RegistryError, codes};
use crate::kit::Layer;

/// Registry defaults, named configurations and per-instance overrides of one policy kind.
#[derive(Clone, Debug, Default)]
pub(crate) struct Configs<B> {
    pub(crate) defaults: B,
    pub(crate) named: HashMap<String, B>,
    pub(crate) instances: HashMap<String, B>,
}

impl<B: Layer> Configs<B> {
    /// built-in < registry defaults < named config < attributes < instance override.
    pub(crate) fn resolve(&self, id: &str, config: Option<&str>, attrs: &B) -> Result<B::Config, RegistryError> {
        let mut layered = self.defaults.clone();
        if let Some(name) = config {
            let named = self.named.get(name).ok_or_else(|| unknown_config::<B>(id, name, &self.named))?;
            layered.merge(named);
        }
        layered.merge(attrs);
        if let Some(over) = self.instances.get(id) {
            layered.merge(over);
        }
        layered.resolve(id)
    }
}

fn unknown_config<B: Layer>(id: &str, name: &str, named: &HashMap<String, B>) -> RegistryError {
    let mut known: Vec<&str> = named.keys().map(String::as_str).collect();
    known.sort_unstable();
    let known = if known.is_empty() { "none".to_owned() } else { known.join(", ") };
    RegistryError::new(
        codes::UNKNOWN_CONFIG,
        Some(id),
        format!("no {} configuration named `{name}` (known: {known})", B::POLICY),
    )
}

/// The live instances of one policy kind, by id, with the configuration each was built from.
#[derive(Debug)]
pub(crate) struct Instances<C, S> {
    map: Mutex<InstanceMap<C, S>>,
}

/// Instance id -> (resolved configuration, shared state).
type InstanceMap<C, S> = BTreeMap<Arc<str>, (C, Arc<S>)>;

impl<C, S> Default for Instances<C, S> {
    fn default() -> Self {
        Instances { map: Mutex::new(BTreeMap::new()) }
    }
}

impl<C: PartialEq + fmt::Debug + Clone, S> Instances<C, S> {
    /// The instance `id`, created by `make` on first use; a later user must bring the same config.
    pub(crate) fn get_or_create(
        &self,
        policy: &str,
        id: &str,
        config: C,
        make: impl FnOnce(Arc<str>, C) -> S,
    ) -> Result<Arc<S>, RegistryError> {
        let mut map = self.map.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((existing, state)) = map.get(id) {
            if *existing != config {
                return Err(RegistryError::new(
                    codes::CONFLICTING_INSTANCE,
                    Some(id),
                    format!(
                        "this {policy} instance is shared by name but resolves differently here: \
                         {config:?} vs. {existing:?}; give both users the same attributes"
                    ),
                ));
            }
            return Ok(Arc::clone(state));
        }
        let key: Arc<str> = Arc::from(id);
        let state = Arc::new(make(Arc::clone(&key), config.clone()));
        map.insert(key, (config, Arc::clone(&state)));
        Ok(state)
    }

    /// The instance `id`, if built.
    pub(crate) fn get(&self, id: &str) -> Option<Arc<S>> {
        self.map.lock().unwrap_or_else(PoisonError::into_inner).get(id).map(|(_, s)| Arc::clone(s))
    }

    /// Every instance, ordered by id.
    pub(crate) fn all(&self) -> Vec<Arc<S>> {
        self.map.lock().unwrap_or_else(PoisonError::into_inner).values().map(|(_, s)| Arc::clone(s)).collect()
    }
}

/// A named configuration or instance override that no wrapper or pipeline has resolved so far
/// (`Registry::unused_config`): usually a typo in a `config = "…"` name or an instance id, or
/// configuration left behind by code that is gone.
///
/// ```
/// use resilience4cata::{Registry, UnusedConfig};
///
/// let registry = Registry::builder()
///     .retry("external", |r| r.max_attempts(5))
///     .retry_instance("shop::Api::get", |r| r.max_attempts(2))
///     .build()?;
/// // Nothing is wrapped yet: both are unused.
/// let unused = registry.unused_config();
/// assert!(unused.contains(&UnusedConfig::Named { policy: "retry", name: "external".into() }));
/// assert!(unused.contains(&UnusedConfig::Instance { policy: "retry", id: "shop::Api::get".into() }));
/// # Ok::<(), resilience4cata::RegistryError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum UnusedConfig {
    /// `registry.<policy>("name", …)` or `[configs.<name>.<policy>]`: no `config = "name"` chose it.
    Named {
        /// The policy section (`"retry"`, `"circuit_breaker"`, …).
        policy: &'static str,
        /// The configuration's name.
        name: String,
    },
    /// `<policy>_instance(id, …)` or `[instances."<id>".<policy>]`: no instance with this id was
    /// built.
    Instance {
        /// The policy section (`"retry"`, `"circuit_breaker"`, …).
        policy: &'static str,
        /// The instance id.
        id: String,
    },
}

/// Which named configurations and instance ids of one policy kind have been resolved.
#[derive(Debug, Default)]
pub(crate) struct Usage {
    named: Mutex<BTreeSet<String>>,
    ids: Mutex<BTreeSet<String>>,
}

impl Usage {
    /// Notes a resolution of `id` with `config`, whatever its outcome.
    pub(crate) fn note(&self, id: &str, config: Option<&str>) {
        if let Some(name) = config {
            self.named.lock().unwrap_or_else(PoisonError::into_inner).insert(name.to_owned());
        }
        self.ids.lock().unwrap_or_else(PoisonError::into_inner).insert(id.to_owned());
    }

    /// What `configs` declares that no resolution has used so far.
    pub(crate) fn unused<B: Layer>(&self, configs: &Configs<B>) -> Vec<UnusedConfig> {
        let named = self.named.lock().unwrap_or_else(PoisonError::into_inner);
        let ids = self.ids.lock().unwrap_or_else(PoisonError::into_inner);
        let names = configs.named.keys().filter(|n| !named.contains(*n));
        let overrides = configs.instances.keys().filter(|id| !ids.contains(*id));
        names
            .map(|name| UnusedConfig::Named { policy: B::POLICY, name: name.clone() })
            .chain(overrides.map(|id| UnusedConfig::Instance { policy: B::POLICY, id: id.clone() }))
            .collect()
    }
}
