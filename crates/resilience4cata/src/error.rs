//! Configuration errors found when a registry, wrapper or pipeline is built: never at call time,
//! never a panic.

use std::fmt;
use std::sync::Arc;

/// Every run-time error code this crate emits, each with a section in `docs/errors.md`.
pub mod codes {
    /// An invalid combination of policies on one method or pipeline (e.g. retry and hedge).
    pub const INVALID_COMBINATION: &str = "R4C-REG-001";
    /// A resolved value is out of range or inconsistent (e.g. `max_delay < delay`).
    pub const INVALID_VALUE: &str = "R4C-REG-003";
    /// `config = "name"` names a configuration the registry does not have for that policy.
    pub const UNKNOWN_CONFIG: &str = "R4C-REG-004";
    /// Two users of one instance id resolved different configurations.
    pub const CONFLICTING_INSTANCE: &str = "R4C-REG-008";
    /// An async wait is needed but the registry's clock cannot sleep asynchronously.
    pub const NO_ASYNC_CLOCK: &str = "R4C-REG-010";
    /// `shared = true` on a registry that was given no shared store.
    pub const NO_SHARED_STORE: &str = "R4C-REG-011";
    /// `Registry::check_unused_config`: configuration for ids or names nothing has resolved.
    pub const UNUSED_CONFIG: &str = "R4C-REG-012";
    /// A configuration file cannot be read or is not valid TOML.
    pub const CONFIG_SYNTAX: &str = "R4C-CFG-001";
    /// A configuration file has a key the library does not know.
    pub const CONFIG_UNKNOWN_KEY: &str = "R4C-CFG-002";
    /// A configuration file has a value of the wrong type or grammar.
    pub const CONFIG_BAD_VALUE: &str = "R4C-CFG-003";
    /// A configuration file has a value out of range on its own (`max_attempts = 0`).
    pub const CONFIG_OUT_OF_RANGE: &str = "R4C-CFG-004";
    /// A live update changes `shared` or `lease` of an instance that exists.
    pub const CONFIG_FIXED_KEY: &str = "R4C-CFG-005";
    /// A live update changes a key whose live change is not supported yet (the adaptive limit's
    /// algorithm and its tuning).
    pub const CONFIG_NOT_LIVE: &str = "R4C-CFG-006";
}

/// A configuration problem found when building a registry, a wrapper or a pipeline.
///
/// `Display` starts with the code in brackets, then the instance id when there is one:
///
/// ```
/// use std::time::Duration;
/// use resilience4cata::{Registry, resilient};
///
/// #[resilient]
/// pub trait Prices {
///     #[retry(name = "prices")]
///     fn price(&self, sku: &str) -> Result<u32, std::io::Error>;
/// }
///
/// struct Backend;
/// impl Prices for Backend {
///     fn price(&self, _sku: &str) -> Result<u32, std::io::Error> { Ok(3) }
/// }
///
/// let registry = Registry::builder()
///     .retry_instance("prices", |r| r.delay(Duration::from_secs(20)))
///     .build()?;
/// let err = ResilientPrices::new(Backend, &registry).err().unwrap();
/// assert_eq!(err.code(), "R4C-REG-003");
/// assert_eq!(err.instance(), Some("prices"));
/// assert!(err.to_string().starts_with("[R4C-REG-003] prices:"));
/// # Ok::<(), resilience4cata::RegistryError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegistryError {
    code: &'static str,
    instance: Option<Arc<str>>,
    message: String,
}

impl RegistryError {
    pub(crate) fn new(code: &'static str, instance: Option<&str>, message: impl Into<String>) -> Self {
        RegistryError { code, instance: instance.map(Arc::from), message: message.into() }
    }

    /// The code, e.g. `"R4C-REG-003"`; `docs/errors.md` has a section for each.
    pub fn code(&self) -> &str {
        self.code
    }

    /// The policy instance concerned, if any.
    pub fn instance(&self) -> Option<&str> {
        self.instance.as_deref()
    }

    /// The readable explanation, without the code.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for RegistryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.instance {
            Some(id) => write!(f, "[{}] {}: {}", self.code, id, self.message),
            None => write!(f, "[{}] {}", self.code, self.message),
        }
    }
}

impl std::error::Error for RegistryError {}

/// `R4C-REG-001` for a policy that only async methods can have (`why` says what a blocking call
/// cannot do), checked before anything is resolved.
pub(crate) fn async_only(id: &str, is_async: bool, why: &str) -> Result<(), RegistryError> {
    match is_async {
        true => Ok(()),
        false => Err(RegistryError::new(codes::INVALID_COMBINATION, Some(id), why)),
    }
}

/// The `admit` and `check` of a policy only async methods can have (a hedge, a timeout), written
/// once, inside its `policy_kind!`: `R4C-REG-001` on a blocking method before anything is resolved
/// (`blocking`: what a blocking call cannot do), then, when the resolved configuration is
/// enabled, `R4C-REG-010` unless the registry's clock can wait in a future (`waits`: what the
/// method does in one). `Inner`, `RegistryError` and the config type are the caller's imports.
macro_rules! async_only_policy {
    ($config:ty, blocking: $blocking:literal, waits: $waits:literal $(,)?) => {
        fn admit(id: &str, is_async: bool) -> Result<(), RegistryError> {
            $crate::error::async_only(id, is_async, $blocking)
        }

        fn check(inner: &Inner, id: &str, _: bool, c: &$config) -> Result<(), RegistryError> {
            inner.require_async_clock_if(c.enabled, id, $waits)
        }
    };
}
pub(crate) use async_only_policy;
