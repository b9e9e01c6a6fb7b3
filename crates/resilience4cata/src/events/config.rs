//! The events of a live configuration update (SPEC §16): what changed, or why a file was refused.

use std::sync::Arc;

use crate::error::RegistryError;
use crate::policy_list::Policy;

/// An event of a live configuration update (`Registry::update_config` and its siblings, feature
/// `serde`, or a watched file): listen with `listen(|e: &ConfigEvent| …)`; subscribers get it as
/// [`AnyEvent::Config`](crate::events::AnyEvent::Config).
///
/// ```
/// use std::sync::Arc;
/// use resilience4cata::{ConfigEvent, Policy};
///
/// let e = ConfigEvent::Changed { instance: Arc::from("prices"), policy: Policy::RateLimiter };
/// assert_eq!(e.instance(), "prices");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigEvent {
    /// An instance's resolved values changed and apply from its next call or decision on; its
    /// state was kept. Published once per instance and policy.
    Changed {
        /// The instance id.
        instance: Arc<str>,
        /// The policy whose values changed.
        policy: Policy,
    },
    /// A watched file (`Registry::watch_file`, features `serde` + `tokio`) could not be applied:
    /// the running configuration is unchanged. The error has the code, the key path and the line.
    Rejected {
        /// Why (`R4C-CFG-…`, `R4C-REG-…`).
        error: RegistryError,
    },
}

impl ConfigEvent {
    /// The instance id (`Changed`), or the instance the error names (`Rejected`; empty when the
    /// error names none, e.g. a syntax error).
    pub fn instance(&self) -> &str {
        match self {
            ConfigEvent::Changed { instance, .. } => instance,
            ConfigEvent::Rejected { error } => error.instance().unwrap_or(""),
        }
    }
}

/// With feature `serde`: `{"kind":"Changed","instance":…,"changed_policy":"rate_limiter"}` or
/// `{"kind":"Rejected","instance":…,"code":"R4C-CFG-004","message":…}` (in an `AnyEvent`,
/// `"policy"` is `"config"`, so the changed policy has a name of its own).
#[cfg(feature = "serde")]
impl serde::Serialize for ConfigEvent {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        match self {
            ConfigEvent::Changed { instance, policy } => {
                let mut s = serializer.serialize_struct("ConfigEvent", 3)?;
                s.serialize_field("kind", "Changed")?;
                s.serialize_field("instance", &**instance)?;
                s.serialize_field("changed_policy", policy)?;
                s.end()
            }
            ConfigEvent::Rejected { error } => {
                let mut s = serializer.serialize_struct("ConfigEvent", 4)?;
                s.serialize_field("kind", "Rejected")?;
                s.serialize_field("instance", error.instance().unwrap_or(""))?;
                s.serialize_field("code", error.code())?;
                s.serialize_field("message", error.message())?;
                s.end()
            }
        }
    }
}
