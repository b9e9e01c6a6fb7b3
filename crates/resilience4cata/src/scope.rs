//! Building a generated wrapper with a scope, and reading back the instance ids it uses.
//!
//! (The rules are on [`WrapperBuilder`], where users read them.)

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use crate::error::{RegistryError, codes};
use crate::registry::Registry;

/// What a generated wrapper implements so [`WrapperBuilder`](crate::WrapperBuilder) can build it.
pub trait Build: Sized {
    /// What the wrapper wraps: the delegate.
    type Input;
    /// Resolves every policy instance; `scope` prefixes every derived id.
    fn build(input: Self::Input, registry: &Registry, scope: Option<Arc<str>>) -> Result<Self, RegistryError>;
}

/// Builds a generated `Resilient<Trait>` wrapper: `ResilientApi::builder(delegate, &registry)`,
/// optionally [`scope`](Self::scope)d, then [`build`](Self::build). `ResilientApi::new(delegate,
/// &registry)` is the same builder without a scope.
///
/// # When instances are shared
/// A policy instance (a breaker's window, a limiter's permits, a bulkhead's slots, a retry budget)
/// is found by its id in the registry. Ids are derived from where the policy is declared,
/// `<module_path>::<Trait>::<method>`, so **two wrappers of one trait on one registry share every
/// instance** — right for two handles on one backend, wrong for two backends: a dead host A would
/// open the breaker host B uses. A *scope* gives a wrapper instances of its own: its derived ids
/// become `<scope>/<derived id>`. An explicit `name = "…"` is never scoped: naming is how methods,
/// wrappers and pipelines share an instance on purpose.
///
/// | built with | derived id | `name = "prices"` |
/// |---|---|---|
/// | `ResilientApi::new(d, &registry)` | `shop::Api::get` | `prices` |
/// | `ResilientApi::builder(d, &registry).scope("host-a").build()` | `host-a/shop::Api::get` | `prices` |
///
/// Scoped ids are ids like any other: per-instance configuration (`circuit_breaker_instance(
/// "host-a/shop::Api::get", …)`, or `[instances."host-a/shop::Api::get"]` in a file) and handles
/// (`registry.circuit_breaker("host-a/shop::Api::get")`) use them as written. `wrapper.ids()`
/// gives them without spelling them, and the generated `ResilientApiIds::scoped("host-a")` (or
/// `unscoped()`) before the wrapper is built, to configure it; `Registry::check_unused_config`
/// reports configuration whose id no instance has.
///
/// ```
/// use resilience4cata::{Registry, resilient};
///
/// #[resilient]
/// pub trait Api {
///     #[circuit_breaker]
///     fn get(&self, path: &str) -> Result<String, std::io::Error>;
/// }
///
/// struct Host(&'static str);
/// impl Api for Host {
///     fn get(&self, path: &str) -> Result<String, std::io::Error> { Ok(format!("{}{path}", self.0)) }
/// }
///
/// let registry = Registry::builder().build()?;
/// let a = ResilientApi::builder(Host("a"), &registry).scope("host-a").build()?;
/// let b = ResilientApi::builder(Host("b"), &registry).scope("host-b").build()?;
/// let a_id = a.ids().get.circuit_breaker().unwrap().to_owned();
/// assert_eq!(a_id, format!("host-a/{}::Api::get", module_path!()));
/// assert!(registry.circuit_breaker(&a_id).is_some());                 // one breaker per host
/// assert_ne!(a.ids().get.circuit_breaker(), b.ids().get.circuit_breaker());
/// assert_eq!(ResilientApiIds::scoped("host-a"), a.ids()); // the same ids, nothing built
/// # Ok::<(), resilience4cata::RegistryError>(())
/// ```
#[must_use = "a builder does nothing until `build` is called"]
pub struct WrapperBuilder<'r, W: Build> {
    input: W::Input,
    registry: &'r Registry,
    scope: Option<Arc<str>>,
}

impl<'r, W: Build> WrapperBuilder<'r, W> {
    pub(crate) fn new(input: W::Input, registry: &'r Registry) -> Self {
        WrapperBuilder { input, registry, scope: None }
    }

    /// Gives the wrapper instances of its own: every derived id becomes `<scope>/<derived id>`
    /// (ids set with `name = "…"` stay shared). Typically one scope per backend host.
    pub fn scope(mut self, scope: impl Into<Arc<str>>) -> Self {
        self.scope = Some(scope.into());
        self
    }

    /// Resolves every policy instance, as `new` does.
    ///
    /// # Errors
    /// `R4C-REG-003` for an empty scope; otherwise the errors of `new`: an unknown named
    /// configuration (`R4C-REG-004`), an invalid resolved value (`R4C-REG-003`), a shared id
    /// resolving differently elsewhere (`R4C-REG-008`), an async method without an async clock
    /// (`R4C-REG-010`).
    pub fn build(self) -> Result<W, RegistryError> {
        if self.scope.as_deref() == Some("") {
            return Err(RegistryError::new(codes::INVALID_VALUE, None, "a scope must not be empty"));
        }
        W::build(self.input, self.registry, self.scope)
    }
}

impl<W: Build> fmt::Debug for WrapperBuilder<'_, W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WrapperBuilder").field("scope", &self.scope).finish_non_exhaustive()
    }
}

/// The instance ids one protected method uses, per policy (they differ where an attribute sets
/// `name`), scope included: a field of the generated `<Wrapper>Ids` that `wrapper.ids()` returns
/// (and `<Wrapper>Ids::scoped(scope)` / `unscoped()`, without building anything).
/// The ids are those of events, snapshots and `registry.circuit_breaker(id)`.
///
/// ```
/// use resilience4cata::{Registry, resilient};
///
/// #[resilient]
/// pub trait Prices {
///     #[retry]
///     #[circuit_breaker(name = "prices")]
///     fn price(&self, sku: &str) -> Result<u32, std::io::Error>;
/// }
///
/// struct Backend;
/// impl Prices for Backend {
///     fn price(&self, _sku: &str) -> Result<u32, std::io::Error> { Ok(3) }
/// }
///
/// let registry = Registry::builder().build()?;
/// let prices = ResilientPrices::builder(Backend, &registry).scope("eu").build()?;
/// let ids = prices.ids().price;
/// assert_eq!(ids.retry(), Some(format!("eu/{}::Prices::price", module_path!()).as_str()));
/// assert_eq!(ids.circuit_breaker(), Some("prices")); // named: shared, never scoped
/// assert_eq!(ids.get("circuit_breaker"), Some("prices"));
/// assert_eq!(ids.timeout(), None);
/// # Ok::<(), resilience4cata::RegistryError>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MethodIds {
    ids: Vec<(&'static str, Arc<str>)>,
}

impl MethodIds {
    /// The id of `policy` (its attribute's name: `"retry"`, `"circuit_breaker"`, …) on this
    /// method, `None` when the method does not use it.
    pub fn get(&self, policy: &str) -> Option<&str> {
        self.ids.iter().find(|(p, _)| *p == policy).map(|(_, id)| &**id)
    }

    /// Every `(policy, id)` of the method, outer policy first.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, &str)> {
        self.ids.iter().map(|(p, id)| (*p, &**id))
    }

    /// The retry's id.
    pub fn retry(&self) -> Option<&str> {
        self.get("retry")
    }

    /// The circuit breaker's id.
    pub fn circuit_breaker(&self) -> Option<&str> {
        self.get("circuit_breaker")
    }

    /// The rate limiter's id.
    pub fn rate_limiter(&self) -> Option<&str> {
        self.get("rate_limiter")
    }

    /// The bulkhead's id.
    pub fn bulkhead(&self) -> Option<&str> {
        self.get("bulkhead")
    }

    /// The timeout's id (always the derived one: a timeout has no `name`).
    pub fn timeout(&self) -> Option<&str> {
        self.get("timeout")
    }
}

impl FromIterator<(&'static str, Arc<str>)> for MethodIds {
    fn from_iter<I: IntoIterator<Item = (&'static str, Arc<str>)>>(iter: I) -> Self {
        MethodIds { ids: iter.into_iter().collect() }
    }
}

/// The id handed to a policy's constructor: `<scope>/<derived>` in a scope, `derived` otherwise.
pub(crate) fn scoped(scope: Option<&str>, derived: &'static str) -> Cow<'static, str> {
    match scope {
        Some(scope) => Cow::Owned(format!("{scope}/{derived}")),
        None => Cow::Borrowed(derived),
    }
}

/// The instance id a policy ends up with: its `name`, else its (scoped) derived id.
pub(crate) fn instance_id(scope: Option<&str>, derived: &'static str, name: Option<&'static str>) -> Arc<str> {
    match name {
        Some(name) => Arc::from(name),
        None => Arc::from(scoped(scope, derived)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scope_prefixes_derived_ids_and_never_names() {
        assert_eq!(scoped(None, "m::Api::get"), "m::Api::get");
        assert_eq!(scoped(Some("host-a"), "m::Api::get"), "host-a/m::Api::get");
        assert_eq!(&*instance_id(Some("host-a"), "m::Api::get", None), "host-a/m::Api::get");
        assert_eq!(&*instance_id(Some("host-a"), "m::Api::get", Some("shared")), "shared");
        assert_eq!(&*instance_id(None, "m::Api::get", None), "m::Api::get");
    }
}
