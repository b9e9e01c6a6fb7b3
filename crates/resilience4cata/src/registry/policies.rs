//! The policy set, declared once.
//!
//! Each policy kind implements [`PolicyKind`] (the kit, `kit/kind.rs`) beside its facade
//! (`<policy>/policy.rs`): its configuration builder, shared state, event, snapshot, and how an
//! instance is checked and made. [`for_each_policy!`] (`policy_list.rs`, on the ground floor) holds
//! the one list of the policies; every per-policy piece of the registry follows from it: the registry's stores and the builder's configuration layers
//! ([`registry_parts!`] below), the `x_defaults` / `x` / `x_instance` builder trio, the handle
//! lookups, the snapshot lists, the listener table and [`AnyEvent`](crate::events::AnyEvent)
//! (`events.rs`), the configuration-file tables (`config_file.rs`) and the `__private` constructors.
//! Adding a policy is its own module, one `impl PolicyKind`, and one line in the list.

use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use super::keyed::{Keys, keyed_and_unkeyed};
use super::layer::{SiteRecord, conflicting};
use super::{Configs, Instances, Registry, UnusedConfig, Usage};
use crate::durations::DurationsSnapshot;
use crate::error::RegistryError;
use crate::events::Publisher;
use crate::kit::Inner;
use crate::kit::{ConfigOf, Fixed, KeyedView, PolicyKind};
use crate::policy_list::Policy;
use crate::policy_list::for_each_policy;

/// Where the registry keeps a policy kind: implemented for every policy of the list by
/// [`registry_parts!`], so a `PolicyKind` outside the list cannot be built.
pub(crate) trait Registered: PolicyKind {
    /// The kind's configuration layers and live instances in `registry`.
    fn store(registry: &Registry) -> &Store<Self>;

    /// The one way an instance comes to be, for the generated code (`__private`) and pipelines
    /// alike: admit the call site, resolve `name` (else `id`) through the layers over `attrs`
    /// (`R4C-REG-004`, `R4C-REG-003`), check, then find the shared state or make it
    /// (`R4C-REG-008` if the id resolves differently elsewhere).
    fn build(
        registry: &Registry,
        id: &str,
        name: Option<&str>,
        config: Option<&str>,
        is_async: bool,
        attrs: Self::Builder,
    ) -> Result<Self, RegistryError> {
        Self::build_as(registry, id, name, config, is_async, attrs, false)
    }

    /// [`build`](Self::build), for a keyed site (`keyed`: the instance registered under the id is
    /// the keyed instance's, whose keys the caller keeps) or an unkeyed one, which a keyed
    /// instance of the same id refuses (`R4C-REG-008`).
    fn build_as(
        registry: &Registry,
        id: &str,
        name: Option<&str>,
        config: Option<&str>,
        is_async: bool,
        attrs: Self::Builder,
        keyed: bool,
    ) -> Result<Self, RegistryError> {
        Self::admit(id, is_async)?;
        let inner = registry.inner();
        let id = name.unwrap_or(id);
        let store = Self::store(registry);
        if !keyed && store.keys.get(id).is_some() {
            return Err(keyed_and_unkeyed(Self::NAME, id, false));
        }
        store.usage.note(id, config);
        // Held until the instance is in the table: a live update waits, so it re-resolves this
        // instance too, or this resolution sees the update's layers.
        let configs = store.configs();
        let resolved = configs.resolve(id, config, &attrs)?;
        Self::check(inner, id, is_async, &resolved)?;
        let site = SiteRecord { config: config.map(str::to_owned), attrs, is_async };
        let state = store.instances.get_or_create(Self::NAME, id, resolved, site, |instance, config| {
            let events = Publisher::new(&inner.listeners, &instance);
            match keyed && inner.shared.is_some() {
                // A keyed site's registered instance: its keys link to the fleet, it does not.
                true => Self::new_state(&inner.unshared(), instance, config, events),
                false => Self::new_state(inner, instance, config, events),
            }
        })?;
        Ok(Self::from_state(state))
    }
}

/// One policy kind's configuration layers and live instances.
pub(crate) struct Store<P: PolicyKind> {
    /// Replaced whole by a live update; read (never on a call's path) when an instance is built.
    configs: RwLock<Configs<P::Builder>>,
    pub(crate) instances: Instances<ConfigOf<P>, P::State, P::Builder>,
    usage: Usage,
    /// The keyed instances among `instances` (SPEC §15).
    pub(crate) keys: Keys<P>,
}

/// One instance a live update changes: its id, its state and its new configuration.
#[cfg_attr(not(feature = "serde"), allow(dead_code))] // reached through a live update (feature `serde`)
pub(crate) type Planned<P> = (Arc<str>, Arc<<P as PolicyKind>::State>, ConfigOf<P>);

impl<P: PolicyKind> Store<P> {
    pub(crate) fn new(configs: Configs<P::Builder>) -> Self {
        Store {
            configs: RwLock::new(configs),
            instances: Instances::default(),
            usage: Usage::default(),
            keys: Keys::default(),
        }
    }

    /// The layers, read.
    pub(crate) fn configs(&self) -> RwLockReadGuard<'_, Configs<P::Builder>> {
        self.configs.read().unwrap_or_else(PoisonError::into_inner)
    }

    #[cfg_attr(not(feature = "serde"), allow(dead_code))] // reached through a live update (feature `serde`)
    fn configs_mut(&self) -> RwLockWriteGuard<'_, Configs<P::Builder>> {
        self.configs.write().unwrap_or_else(PoisonError::into_inner)
    }

    /// The named configurations and instance overrides no resolution has used so far.
    fn unused(&self) -> Vec<UnusedConfig> {
        self.usage.unused(&self.configs())
    }

    /// Every live instance of this kind resolved again over `next` (SPEC §16): each of its sites
    /// as at build, checked, all sites agreeing (`R4C-REG-008`), no fixed key changed
    /// (`R4C-CFG-005`). The instances whose values differ, or the first problem; nothing changes.
    #[cfg_attr(not(feature = "serde"), allow(dead_code))] // reached through a live update (feature `serde`)
    fn plan(&self, inner: &Inner, next: &Configs<P::Builder>) -> Result<Vec<Planned<P>>, RegistryError> {
        let map = self.instances.lock();
        let mut changed = Vec::new();
        for (id, entry) in map.iter() {
            let mut resolved: Option<ConfigOf<P>> = None;
            for site in &entry.sites {
                let config = next.resolve(id, site.config.as_deref(), &site.attrs)?;
                // Before the site's checks: a fixed key is named as such, also where the check
                // would refuse the value for another reason (`shared` without a store).
                if let Some(fixed) = P::fixed_key(&entry.config, &config) {
                    return Err(fixed_key_changed(P::NAME, id, fixed));
                }
                P::check(inner, id, site.is_async, &config)?;
                match &resolved {
                    Some(first) if *first != config => return Err(conflicting(P::NAME, id, &config, first)),
                    Some(_) => {}
                    None => resolved = Some(config),
                }
            }
            let Some(config) = resolved else { continue };
            if config == entry.config {
                continue;
            }
            P::check_live(&entry.state, &config)?;
            changed.push((Arc::clone(id), Arc::clone(&entry.state), config));
        }
        Ok(changed)
    }

    /// Applies a plan: the table's configuration first (what a later user of the id must agree
    /// with), then the state.
    #[cfg_attr(not(feature = "serde"), allow(dead_code))] // reached through a live update (feature `serde`)
    fn apply(&self, planned: Vec<Planned<P>>, changed: &mut Vec<(Arc<str>, Policy)>, policy: Policy) {
        {
            let mut map = self.instances.lock();
            for (id, _, config) in &planned {
                if let Some(entry) = map.get_mut(id) {
                    entry.config = config.clone();
                }
            }
        }
        // The table's lock released: a listener of what `reconfigure` publishes (an adaptive
        // limit's `LimitChanged`) may read snapshots and handles.
        for (id, state, config) in planned {
            if let Some(keyed) = self.keys.get(&id) {
                keyed.reconfigure(&config);
            }
            P::reconfigure(&state, config);
            changed.push((id, policy));
        }
    }

    /// Every instance's snapshot, ordered by id.
    pub(crate) fn snapshots(&self) -> Vec<P::Snapshot> {
        let all: Vec<_> = self.instances.lock().iter().map(|(id, e)| (Arc::clone(id), Arc::clone(&e.state))).collect();
        all.iter().map(|(id, state)| self.snapshot(id, state)).collect()
    }

    /// One instance's snapshot: a keyed instance's as a whole (SPEC §15).
    pub(crate) fn snapshot(&self, id: &str, state: &P::State) -> P::Snapshot {
        let registered = P::snapshot(state);
        match self.keys.get(id) {
            Some(keyed) => keyed.snapshot(registered),
            None => registered,
        }
    }

    /// A keyed site's instance: the keyed instance `id` (made on first use with the resolved
    /// configuration), after the site resolved and agreed like any other.
    pub(crate) fn keyed(
        &self,
        registry: &Registry,
        site: (&str, Option<&str>, Option<&str>, bool),
        attrs: P::Builder,
        make: impl FnOnce(Arc<str>, ConfigOf<P>) -> Result<Arc<dyn KeyedView<P>>, RegistryError>,
    ) -> Result<Arc<dyn KeyedView<P>>, RegistryError>
    where
        P: Registered,
    {
        let (id, name, config, is_async) = site;
        let instance = name.unwrap_or(id);
        let existed = self.instances.get(instance).is_some();
        if let Some(keyed) = self.keys.get(instance) {
            P::build_as(registry, id, name, config, is_async, attrs, true)?;
            return Ok(keyed);
        }
        if existed {
            return Err(keyed_and_unkeyed(P::NAME, instance, true));
        }
        P::build_as(registry, id, name, config, is_async, attrs, true)?;
        let (key, resolved) = {
            let map = self.instances.lock();
            let (key, entry) = map.get_key_value(instance).expect("built above");
            (Arc::clone(key), entry.config.clone())
        };
        Ok(self.keys.insert(Arc::clone(&key), make(key, resolved)?))
    }
}

/// `R4C-CFG-005`: a key that cannot change on a live instance.
/// `R4C-CFG-005` / `R4C-CFG-006`: a key that cannot change on a live instance.
#[cfg_attr(not(feature = "serde"), allow(dead_code))] // reached through a live update (feature `serde`)
fn fixed_key_changed(policy: &str, id: &str, fixed: Fixed) -> RegistryError {
    let (code, key, why) = match fixed {
        Fixed::Placement(key) => {
            (crate::error::codes::CONFIG_FIXED_KEY, key, "it decides where the instance keeps its state")
        }
        Fixed::NotLive(key) => {
            (crate::error::codes::CONFIG_NOT_LIVE, key, "a live update does not rebuild what it shapes yet")
        }
    };
    RegistryError::new(
        code,
        Some(id),
        format!(
            "`{key}` of {policy} instance `{id}` cannot change while the instance exists ({why}); \
             change it with a restart (ids no instance uses yet take it when built). Nothing changed"
        ),
    )
}

/// The pipeline list's modules and facades, in its order, for the test that holds it to
/// [`for_each_policy!`](crate::policy_list::for_each_policy).
#[cfg(test)]
macro_rules! pipeline_listed {
    (retry: $retry:tt hedge: $hedge:tt guards: [$($guard:tt)*]) => {
        pipeline_listed!(@each $retry $hedge $($guard)*);
    };
    (@each $({ $module:ident: $policy:ident($builder:ident) as $variant:ident, $($rest:tt)* })*) => {
        const PIPELINE_LISTED: &[[&str; 3]] = &[$([stringify!($module), stringify!($builder), stringify!($policy)]),*];
    };
}

#[cfg(test)]
crate::policy_list::for_each_pipeline_policy!(pipeline_listed);

/// The registry's per-policy parts: stores, configuration layers, snapshot lists, builder trio,
/// handle lookups.
macro_rules! registry_parts {
    ($({ $module:ident: $policy:ident($builder:ident, $snapshot:ident), $event:ident => $variant:ident,
        $human:literal, $list:ident, [$defaults:ident, $named:ident, $instance:ident], [$($handle:ident)?] })*) => {
        $(use crate::$module::policy::$policy;)*
        $(use crate::$module::{$builder, $snapshot};)*
        $($(use crate::$module::$handle;)?)*

        /// Every policy kind's store.
        pub(crate) struct Stores {
            $(pub(crate) $module: Store<$policy>,)*
        }

        /// Every policy kind's configuration layers, as the builder collects them.
        #[derive(Clone, Debug, Default)]
        pub(crate) struct PolicyConfigs {
            $(pub(crate) $module: Configs<$builder>,)*
        }

        impl PolicyConfigs {
            /// Overlays `over`, key by key, on every kind's layers.
            pub(crate) fn overlay(&mut self, over: &PolicyConfigs) {
                $(self.$module.overlay(&over.$module);)*
            }

            pub(crate) fn into_stores(self) -> Stores {
                Stores { $($module: Store::new(self.$module),)* }
            }
        }

        impl Stores {
            /// Replaces every kind's layers with `next` and re-resolves every live instance, all or
            /// nothing (SPEC §16): the instances whose values changed, each with its policy.
                        #[cfg_attr(not(feature = "serde"), allow(dead_code))] // reached through a live update (feature `serde`)
pub(crate) fn reconfigure(&self, inner: &Inner, next: PolicyConfigs)
                -> Result<Vec<(Arc<str>, Policy)>, RegistryError>
            {
                // Every kind's layers, held in the list's order, so no instance is built half-way
                // through (builds take one kind's read lock).
                $(let mut $module = self.$module.configs_mut();)*
                let plans = ($(self.$module.plan(inner, &next.$module)?,)*);
                $(*$module = next.$module;)*
                // The guards held together, before the plans' names (a list may be named as its
                // module is: chaos's) shadow them.
                let guards = ($($module,)*);
                let ($($list,)*) = plans;
                let mut changed = Vec::new();
                $(self.$module.apply($list, &mut changed, Policy::$variant);)*
                drop(guards);
                Ok(changed)
            }

            /// What no wrapper or pipeline has resolved so far, in every policy (`Registry::unused_config`).
            pub(crate) fn unused(&self) -> Vec<UnusedConfig> {
                let mut unused = Vec::new();
                $(unused.extend(self.$module.unused());)*
                unused.sort();
                unused
            }
        }

        $(impl Registered for $policy {
            fn store(registry: &Registry) -> &Store<Self> {
                &registry.stores().$module
            }
        })*

        /// Every policy instance of a registry at one moment (`Registry::snapshot`).
        #[cfg_attr(feature = "serde", derive(serde::Serialize))]
        #[derive(Clone, Debug, PartialEq, Default)]
        #[non_exhaustive]
        pub struct RegistrySnapshot {
            $($list: Vec<$snapshot>,)*
            durations: Vec<DurationsSnapshot>,
        }

        impl RegistrySnapshot {
            pub(crate) fn of(stores: &Stores, durations: Vec<DurationsSnapshot>) -> Self {
                RegistrySnapshot { $($list: stores.$module.snapshots(),)* durations }
            }

            /// The call and attempt durations of every method and pipeline id, ordered by id
            /// (feature `durations`; empty without it). See [`crate::durations`].
            ///
            /// ```
            /// let registry = resilience4cata::Registry::builder().build()?;
            /// assert!(registry.snapshot().durations().is_empty()); // nothing timed yet
            /// # Ok::<(), resilience4cata::RegistryError>(())
            /// ```
            pub fn durations(&self) -> &[DurationsSnapshot] {
                &self.durations
            }

            $(
                #[doc = concat!("Every ", $human, " instance, ordered by id.")]
                ///
                /// ```
                /// let registry = resilience4cata::Registry::builder().build()?;
                #[doc = concat!("assert!(registry.snapshot().", stringify!($list), "().is_empty()); // nothing wrapped yet")]
                /// # Ok::<(), resilience4cata::RegistryError>(())
                /// ```
                pub fn $list(&self) -> &[$snapshot] {
                    &self.$list
                }
            )*
        }

        impl super::RegistryBuilder {
            $(
                #[doc = concat!("Overrides built-in ", $human, " defaults for every ", $human, " of this registry \
                    (see the [`", stringify!($module), "`](crate::", stringify!($module), ") module for each key).")]
                ///
                /// ```
                /// let registry = resilience4cata::Registry::builder()
                #[doc = concat!("    .", stringify!($defaults), "(|c| c.enabled(false))")]
                ///     .build()?;
                /// # Ok::<(), resilience4cata::RegistryError>(())
                /// ```
                pub fn $defaults(
                    mut self,
                    f: impl FnOnce($builder) -> $builder,
                ) -> Self {
                    super::edit(&mut self.policies.closures().$module.defaults, f);
                    self
                }

                #[doc = concat!("A named ", $human, " configuration, chosen with `#[", stringify!($module),
                    "(config = \"name\")]` or `.", stringify!($module), "_config(\"name\")` on a pipeline.")]
                ///
                /// ```
                /// let registry = resilience4cata::Registry::builder()
                #[doc = concat!("    .", stringify!($named), "(\"quiet\", |c| c.enabled(false))")]
                ///     .build()?;
                /// # Ok::<(), resilience4cata::RegistryError>(())
                /// ```
                pub fn $named(
                    mut self,
                    name: impl Into<String>,
                    f: impl FnOnce($builder) -> $builder,
                ) -> Self {
                    super::edit(self.policies.closures().$module.named.entry(name.into()).or_default(), f);
                    self
                }

                #[doc = concat!("Overrides for one ", $human, " instance id; they win over everything else.")]
                ///
                /// ```
                /// let registry = resilience4cata::Registry::builder()
                #[doc = concat!("    .", stringify!($instance), "(\"shop::InventoryApi::stock\", |c| c.enabled(false))")]
                ///     .build()?;
                /// # Ok::<(), resilience4cata::RegistryError>(())
                /// ```
                pub fn $instance(
                    mut self,
                    id: impl Into<String>,
                    f: impl FnOnce($builder) -> $builder,
                ) -> Self {
                    super::edit(self.policies.closures().$module.instances.entry(id.into()).or_default(), f);
                    self
                }
            )*
        }

        impl Registry {
            $($(
                #[doc = concat!("The ", $human, " instance `id` (its `name`, or the derived \
                    `<module_path>::<Trait>::<method>`), once a wrapper or pipeline has built it; see [`",
                    stringify!($handle), "`].")]
                pub fn $module(&self, id: &str) -> Option<$handle> {
                    let store = <$policy as Registered>::store(self);
                    store.instances.get(id).map(|state| $handle::of_instance(state, store.keys.get(id)))
                }
            )?)*
        }

        /// Each policy's attribute name, `__private` constructor, config builder and facade, in
        /// nesting order, for the test that holds the macro's list to this one.
        #[cfg(test)]
        pub(crate) const LISTED: &[[&str; 4]] =
            &[$([<$policy as PolicyKind>::NAME, stringify!($module), stringify!($builder), stringify!($policy)]),*];
    };
}

for_each_policy!(registry_parts);

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::{LISTED, PIPELINE_LISTED};

    /// A policy in the registry's list but not in the pipeline's (or in another order, or with
    /// another builder or facade) fails here: the pipeline would silently lack it.
    #[test]
    fn the_pipeline_lists_every_policy_of_the_registry_in_the_same_order() {
        // Chaos (feature `chaos`) is configured only through configuration: no pipeline builder slot.
        let registry: Vec<[&str; 3]> = LISTED
            .iter()
            .filter(|[name, ..]| *name != "chaos")
            .map(|[_, module, builder, facade]| [*module, *builder, *facade])
            .collect();
        assert_eq!(PIPELINE_LISTED, registry.as_slice(), "for_each_pipeline_policy! vs for_each_policy!");
    }

    /// `field: "value"` in a macro-side `PolicySpec` source.
    fn spec_field<'a>(source: &'a str, field: &str) -> Option<&'a str> {
        let start = source.find(&format!("\n    {field}: \""))? + field.len() + 8;
        source[start..].split('"').next()
    }

    /// `name`, `runtime_fn`, `builder` and `field_ty` of a macro-side `PolicySpec` source: written
    /// out, or given by `policy_spec!(module, Prefix, …)` (the module name twice, then
    /// `<Prefix>ConfigBuilder` and `<Prefix>Policy`).
    fn spec_fields(source: &str) -> [Option<String>; 4] {
        if let Some(start) = source.find("policy_spec!(") {
            let mut args = source[start + "policy_spec!(".len()..].split(',').map(str::trim);
            let (module, prefix) = (args.next().unwrap(), args.next().unwrap());
            return [module.into(), module.into(), format!("{prefix}ConfigBuilder"), format!("{prefix}Policy")]
                .map(Some);
        }
        ["name", "runtime_fn", "builder", "field_ty"].map(|field| spec_field(source, field).map(str::to_string))
    }

    /// A policy half-registered (in the macro's `POLICIES` but not in `for_each_policy!`, or the
    /// other way round, or in another order, or with another constructor, builder or facade)
    /// fails here.
    #[test]
    fn the_macro_and_the_runtime_list_the_same_policies_in_the_same_order() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../resilience4cata-macros/src/policy");
        let index = std::fs::read_to_string(dir.join("mod.rs")).unwrap();
        let list = &index[index.find("POLICIES: &[&PolicySpec] = &[").unwrap()..];
        let list = &list[..list.find("];").unwrap()];
        let modules: Vec<&str> = list.lines().filter_map(|l| l.trim().strip_prefix('&')?.split("::").next()).collect();
        // The fallback, outermost, has no configuration (an empty builder) and is not in the list.
        let fallback: &[[&str; 4]] = &[["fallback", "fallback", "", "FallbackPolicy"]];
        // Chaos (feature `chaos`) is no attribute: the macro emits its injection point on its own.
        let expected: Vec<&[&str; 4]> = fallback.iter().chain(LISTED).filter(|[name, ..]| *name != "chaos").collect();
        let listed: Vec<&str> = expected.iter().map(|[name, ..]| *name).collect();
        assert_eq!(modules, listed, "policy/mod.rs POLICIES vs registry::for_each_policy!");
        for [name, constructor, builder, facade] in expected {
            let source = std::fs::read_to_string(dir.join(format!("{name}.rs"))).unwrap();
            assert_eq!(
                spec_fields(&source),
                [Some(*name), Some(*constructor), Some(*builder), Some(*facade)].map(|f| f.map(str::to_string)),
                "policy/{name}.rs"
            );
        }
    }
}
