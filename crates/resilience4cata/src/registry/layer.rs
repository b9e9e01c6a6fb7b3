//! The machinery every policy kind plugs into: layered configuration with "unset" keys, and the
//! table of live instances shared by id.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use crate::error::{RegistryError, codes};

/// A policy's configuration builder: one `Option` per key, so a layer overrides only what it sets.
pub(crate) trait Layer: Clone + Default + fmt::Debug + Send + Sync + 'static {
    /// The resolved, validated configuration.
    type Config: Clone + PartialEq + fmt::Debug + Send + Sync + 'static;
    /// The policy's name in messages and config files (`"retry"`, `"circuit_breaker"`).
    const POLICY: &'static str;

    /// Overlays `over` on `self`: every key `over` sets wins.
    fn merge(&mut self, over: &Self);

    /// Fills unset keys with the built-in defaults and validates (`R4C-REG-003`).
    fn resolve(&self, instance: &str) -> Result<Self::Config, RegistryError>;

    /// The first key this layer sets to a value out of range on its own (`max_attempts = 0`), with
    /// the reason; rules between keys (`max_delay < delay`) wait for [`resolve`](Self::resolve),
    /// since another layer may complete them. A configuration file reports it as `R4C-CFG-004`.
    #[cfg_attr(not(feature = "serde"), allow(dead_code))] // read by configuration files
    fn check_keys(&self) -> Result<(), KeyProblem>;
}

/// A key whose value is out of range on its own, and why.
pub(crate) type KeyProblem = (&'static str, String);

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

/// Makes a policy's layered configuration builder `$builder` for its resolved `$config`: one
/// `Option` per key, a chaining setter named after each key, `overlay` and `fill` (unset keys from
/// `$config::default()`); with feature `serde` it also derives the config-file `Deserialize`
/// (unknown keys refused). The trailing `layer` clause (optional) implements [`Layer`] for it, the same glue
/// for every policy: `merge` overlays, `check_keys` runs `values` (the rules each value follows on
/// its own, `fn(&$config) -> Result<(), KeyProblem>`), `resolve` fills, runs `values` and then
/// `between` (the rules between keys, `fn(&$config) -> Result<(), String>`, if any) and turns a
/// broken rule into `R4C-REG-003`; or `resolve` is given whole (`|builder, instance| …`).
macro_rules! layered_builder {
    ($(#[$meta:meta])* $builder:ident => $config:ident { $($(#[$kdoc:meta])* $key:ident : $ty:ty),* $(,)? }
     layer $policy:literal { values: $values:path $(, between: $between:path)? $(, resolve: $resolve:expr)? $(,)? }) => {
        layered_builder! { $(#[$meta])* $builder => $config { $($(#[$kdoc])* $key: $ty),* } }

        impl $crate::registry::Layer for $builder {
            type Config = $config;
            const POLICY: &'static str = $policy;

            fn merge(&mut self, over: &Self) {
                self.overlay(over);
            }

            fn resolve(&self, instance: &str) -> Result<$config, $crate::error::RegistryError> {
                layered_builder!(@resolve self, instance, $values $(, between $between)? $(, resolve $resolve)?)
            }

            fn check_keys(&self) -> Result<(), $crate::registry::KeyProblem> {
                $values(&self.fill())
            }
        }
    };
    ($(#[$meta:meta])* $builder:ident => $config:ident { $($(#[$kdoc:meta])* $key:ident : $ty:ty),* $(,)? }) => {
        $(#[$meta])*
        #[derive(Clone, Debug, Default, PartialEq)]
        #[cfg_attr(feature = "serde", derive(serde::Deserialize), serde(deny_unknown_fields))]
        pub struct $builder {
            $(
                #[cfg_attr(feature = "serde", serde(default, deserialize_with = "crate::registry::config_file::optional"))]
                $key: Option<$ty>,
            )*
        }

        impl $builder {
            /// A builder with every key unset.
            pub fn new() -> Self {
                Self::default()
            }

            $(
                $(#[$kdoc])*
                #[must_use]
                pub fn $key(mut self, value: $ty) -> Self {
                    self.$key = Some(value);
                    self
                }
            )*

            fn overlay(&mut self, over: &Self) {
                $(if over.$key.is_some() { self.$key = over.$key.clone(); })*
            }

            fn fill(&self) -> $config {
                let mut config = $config::default();
                $(if let Some(v) = &self.$key { config.$key = v.clone().into(); })*
                config
            }
        }
    };
    (@resolve $builder:ident, $instance:ident, $values:path, resolve $resolve:expr) => {
        ($resolve)($builder, $instance)
    };
    (@resolve $builder:ident, $instance:ident, $values:path $(, between $between:path)?) => {{
        let config = $builder.fill();
        let checked = $values(&config).map_err(|(_, message)| message) $(.and_then(|()| $between(&config)))?;
        match checked {
            Ok(()) => Ok(config),
            Err(message) => Err($crate::error::RegistryError::new(
                $crate::error::codes::INVALID_VALUE,
                Some($instance),
                message,
            )),
        }
    }};
}
#[allow(unused_imports)]
pub(crate) use layered_builder;
