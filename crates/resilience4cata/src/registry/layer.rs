//! The registry's side of layered configuration: each policy kind's layers (defaults, named,
//! per instance) over its [`Layer`] builder, the table of live instances shared by id, and what no
//! resolution has used.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

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
    /// Overlays `over` on these layers: its defaults on the defaults, each named configuration and
    /// instance override on the one of the same name (a later segment of the builder, or the file).
    pub(crate) fn overlay(&mut self, over: &Configs<B>) {
        self.defaults.merge(&over.defaults);
        for (name, layer) in &over.named {
            self.named.entry(name.clone()).or_default().merge(layer);
        }
        for (id, layer) in &over.instances {
            self.instances.entry(id.clone()).or_default().merge(layer);
        }
    }

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

/// The live instances of one policy kind, by id, with the configuration each was built from and
/// the call sites that use it (what a live update re-resolves, SPEC §16).
#[derive(Debug)]
pub(crate) struct Instances<C, S, B> {
    map: Mutex<InstanceMap<C, S, B>>,
}

/// One user of an instance: the named configuration it chose, its attributes (or a pipeline's
/// `_with` overrides) and whether it is async; enough to resolve it again after an update.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct SiteRecord<B> {
    pub(crate) config: Option<String>,
    pub(crate) attrs: B,
    pub(crate) is_async: bool,
}

/// One live instance: its resolved configuration, its shared state, the sites that use it.
#[derive(Debug)]
pub(crate) struct Entry<C, S, B> {
    pub(crate) config: C,
    pub(crate) state: Arc<S>,
    pub(crate) sites: Vec<SiteRecord<B>>,
}

/// Instance id -> entry.
pub(crate) type InstanceMap<C, S, B> = BTreeMap<Arc<str>, Entry<C, S, B>>;

impl<C, S, B> Default for Instances<C, S, B> {
    fn default() -> Self {
        Instances { map: Mutex::new(BTreeMap::new()) }
    }
}

impl<C: PartialEq + fmt::Debug + Clone, S, B: PartialEq> Instances<C, S, B> {
    /// The instance `id`, created by `make` on first use; a later user must bring the same config.
    pub(crate) fn get_or_create(
        &self,
        policy: &str,
        id: &str,
        config: C,
        site: SiteRecord<B>,
        make: impl FnOnce(Arc<str>, C) -> S,
    ) -> Result<Arc<S>, RegistryError> {
        let mut map = self.lock();
        if let Some(entry) = map.get_mut(id) {
            if entry.config != config {
                return Err(conflicting(policy, id, &config, &entry.config));
            }
            if !entry.sites.contains(&site) {
                entry.sites.push(site);
            }
            return Ok(Arc::clone(&entry.state));
        }
        let key: Arc<str> = Arc::from(id);
        let state = Arc::new(make(Arc::clone(&key), config.clone()));
        map.insert(key, Entry { config, state: Arc::clone(&state), sites: vec![site] });
        Ok(state)
    }

    /// The table itself, for a live update (which holds it while it plans and applies).
    pub(crate) fn lock(&self) -> MutexGuard<'_, InstanceMap<C, S, B>> {
        self.map.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The instance `id`, if built.
    pub(crate) fn get(&self, id: &str) -> Option<Arc<S>> {
        self.lock().get(id).map(|e| Arc::clone(&e.state))
    }
}

/// `R4C-REG-008`: two users of one id resolve differently.
pub(crate) fn conflicting<C: fmt::Debug>(policy: &str, id: &str, config: &C, existing: &C) -> RegistryError {
    RegistryError::new(
        codes::CONFLICTING_INSTANCE,
        Some(id),
        format!(
            "this {policy} instance is shared by name but resolves differently here: \
             {config:?} vs. {existing:?}; give both users the same attributes"
        ),
    )
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
