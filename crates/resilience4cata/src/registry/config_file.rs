//! External configuration (feature `serde`): the same key tree as the builders, in TOML or inside an
//! application's own serde configuration.
//!
//! ```toml
//! [defaults.retry]
//! delay = "50ms"
//! [configs.external.retry]
//! max_attempts = 5
//! [instances."shop::inventory::InventoryApi::stock".retry]
//! jitter = "none"          # enums are case-insensitive
//! ```
//! Keys are the attribute keys (snake_case), durations are strings of the attribute grammar, enums are
//! case-insensitive. An unknown key or a bad value is an error naming the key path and the line
//! (`R4C-CFG-…`), never ignored. Files and builder calls apply in the order they are given, key by
//! key, into the same layers (registry defaults, named configurations, instance overrides).

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use serde::de::{self, Deserializer, Visitor};

use super::{Configs, PolicyConfigs};
use crate::circuit_breaker::WindowType;
use crate::error::{RegistryError, codes};
use crate::kit::{KeyProblem, Layer};
use crate::policy_list::for_each_policy;
use crate::retry::{Backoff, Jitter};

/// The policy sections of one level of the key tree (`[defaults.<policy>]`, …), and how they merge
/// into the builder's layers: one field per policy of the list.
macro_rules! policy_tables {
    ($({ $module:ident: $policy:ident($builder:ident, $($types:tt)*), $($rest:tt)* })*) => {
        /// The policy sections of one level of the key tree (`[defaults.<policy>]`, …).
        #[derive(Clone, Debug, Default, serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        #[non_exhaustive]
        pub struct PolicyTables {
            $(
                #[doc = concat!("`[….", stringify!($module), "]`")]
                #[serde(default)]
                pub $module: Option<crate::$module::$builder>,
            )*
        }

        impl PolicyTables {
            fn merge_into(self, targets: &mut PolicyConfigs, level: &Level) {
                $(merge_into(&mut targets.$module, level, self.$module);)*
            }

            /// The first key of these sections set out of range on its own: `(policy, key, why)`.
            fn check_keys(&self) -> Result<(), (&'static str, KeyProblem)> {
                $(check_section(&self.$module)?;)*
                Ok(())
            }
        }
    };
}
for_each_policy!(policy_tables);

/// A whole configuration: `defaults`, named `configs` and per-id `instances`. Deserialize it from
/// any serde format (it can sit inside an application's own configuration) and hand it to
/// `RegistryBuilder::config`; or let `RegistryBuilder::config_toml` / `config_file` parse TOML.
///
/// ```
/// use resilience4cata::{Registry, RegistryConfig};
///
/// let config: RegistryConfig = toml::from_str("[configs.external.retry]\nmax_attempts = 5\n").unwrap();
/// let registry = Registry::builder().config(config).build()?;
/// # Ok::<(), resilience4cata::RegistryError>(())
/// ```
#[derive(Clone, Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct RegistryConfig {
    /// Registry defaults per policy.
    #[serde(default)]
    pub defaults: PolicyTables,
    /// Named configurations, chosen with `config = "name"`.
    #[serde(default)]
    pub configs: BTreeMap<String, PolicyTables>,
    /// Overrides per instance id.
    #[serde(default)]
    pub instances: BTreeMap<String, PolicyTables>,
}

/// Which layer one level of the key tree feeds.
enum Level {
    Defaults,
    Named(String),
    Instance(String),
}

fn merge_into<B: Layer>(configs: &mut Configs<B>, level: &Level, builder: Option<B>) {
    let Some(builder) = builder else { return };
    let slot = match level {
        Level::Defaults => &mut configs.defaults,
        Level::Named(name) => configs.named.entry(name.clone()).or_default(),
        Level::Instance(id) => configs.instances.entry(id.clone()).or_default(),
    };
    slot.merge(&builder);
}

/// A section's first key set out of range on its own: `(policy, key, why)`.
fn check_section<B: Layer>(section: &Option<B>) -> Result<(), (&'static str, KeyProblem)> {
    section.as_ref().map_or(Ok(()), |b| b.check_keys().map_err(|problem| (B::POLICY, problem)))
}

/// The same key tree down to each key's value, with where the value is in the text: read again
/// only to point at an out-of-range value.
type SpannedKeys = BTreeMap<String, toml::Spanned<toml::Value>>;

#[derive(serde::Deserialize)]
struct SpanTree {
    #[serde(default)]
    defaults: BTreeMap<String, SpannedKeys>,
    #[serde(default)]
    configs: BTreeMap<String, BTreeMap<String, SpannedKeys>>,
    #[serde(default)]
    instances: BTreeMap<String, BTreeMap<String, SpannedKeys>>,
}

/// The line of byte `offset` of `text` (1-based); `get` because an offset is not trusted to fall
/// on a character boundary.
fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes().get(..offset.min(text.len())).map_or(0, |b| b.iter().filter(|&&c| c == b'\n').count()) + 1
}

impl RegistryConfig {
    /// `R4C-CFG-004` for the first value out of range on its own, with its key path and line.
    pub(crate) fn check_ranges(&self, text: &str, origin: &str) -> Result<(), RegistryError> {
        let sections = std::iter::once((None, "defaults", &self.defaults))
            .chain(self.configs.iter().map(|(name, t)| (Some(name.as_str()), "configs", t)))
            .chain(self.instances.iter().map(|(id, t)| (Some(id.as_str()), "instances", t)));
        for (name, level, tables) in sections {
            let Err((policy, (key, message))) = tables.check_keys() else { continue };
            let line = toml::from_str::<SpanTree>(text).ok().and_then(|tree| {
                let policies = match name {
                    None => Some(&tree.defaults),
                    Some(name) if level == "configs" => tree.configs.get(name),
                    Some(id) => tree.instances.get(id),
                }?;
                Some(line_of(text, policies.get(policy)?.get(key)?.span().start))
            });
            let path: Vec<&str> = [Some(level), name, Some(policy), Some(key)].into_iter().flatten().collect();
            let at = line.map_or_else(|| origin.to_owned(), |l| format!("{origin}:{l}"));
            return Err(RegistryError::new(
                codes::CONFIG_OUT_OF_RANGE,
                None,
                format!("{at}: `{}` {message}", path.join(".")),
            ));
        }
        Ok(())
    }

    /// Parses TOML, reporting the key path and line of the first problem: its syntax
    /// (`R4C-CFG-001`), an unknown key (`R4C-CFG-002`), a value of the wrong type or grammar
    /// (`R4C-CFG-003`), or out of range on its own (`R4C-CFG-004`).
    pub(crate) fn from_toml(text: &str, origin: &str) -> Result<Self, RegistryError> {
        let config = Self::parse_toml(text, origin)?;
        config.check_ranges(text, origin)?;
        Ok(config)
    }

    fn parse_toml(text: &str, origin: &str) -> Result<Self, RegistryError> {
        let deserializer = toml::Deserializer::new(text);
        serde_path_to_error::deserialize(deserializer).map_err(|e| {
            let path = e.path().to_string();
            let inner = e.into_inner();
            let message = inner.message().to_owned();
            let line = inner.span().map(|s| line_of(text, s.start));
            let code = if message.starts_with("unknown field") {
                codes::CONFIG_UNKNOWN_KEY
            } else if path == "." || path.is_empty() {
                codes::CONFIG_SYNTAX
            } else {
                codes::CONFIG_BAD_VALUE
            };
            let at = line.map(|l| format!("{origin}:{l}")).unwrap_or_else(|| origin.to_owned());
            let key = if path == "." || path.is_empty() { String::new() } else { format!(" `{path}`") };
            RegistryError::new(code, None, format!("{at}:{key} {message}"))
        })
    }

    /// Merges every section into the builder's layers, key by key.
    pub(crate) fn apply(self, targets: &mut PolicyConfigs) {
        self.defaults.merge_into(targets, &Level::Defaults);
        for (name, tables) in self.configs {
            tables.merge_into(targets, &Level::Named(name));
        }
        for (id, tables) in self.instances {
            tables.merge_into(targets, &Level::Instance(id));
        }
    }
}

/// A value of a configuration key: how it is read from a config file.
pub(crate) trait FromConfig: Sized {
    fn from_config<'de, D: Deserializer<'de>>(d: D) -> Result<Self, D::Error>;
}

/// `deserialize_with` for every `Option<T>` key of a layered builder.
pub(crate) fn optional<'de, D: Deserializer<'de>, T: FromConfig>(d: D) -> Result<Option<T>, D::Error> {
    T::from_config(d).map(Some)
}

impl FromConfig for bool {
    fn from_config<'de, D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        serde::Deserialize::deserialize(d)
    }
}

/// A name (`fault = "Unavailable"`).
impl FromConfig for String {
    fn from_config<'de, D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        serde::Deserialize::deserialize(d)
    }
}

/// A seed.
impl FromConfig for u64 {
    fn from_config<'de, D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        serde::Deserialize::deserialize(d)
    }
}

impl FromConfig for u32 {
    fn from_config<'de, D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        serde::Deserialize::deserialize(d)
    }
}

/// Floats accept integers too (`budget_percent = 20`).
impl FromConfig for f64 {
    fn from_config<'de, D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Number;
        impl Visitor<'_> for Number {
            type Value = f64;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a number")
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<f64, E> {
                Ok(v)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<f64, E> {
                Ok(v as f64)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<f64, E> {
                Ok(v as f64)
            }
        }
        d.deserialize_any(Number)
    }
}

/// Durations are strings of the attribute grammar: `"250ms"`, `"1m30s"`, `"PT2S"`, `"0"`.
impl FromConfig for Duration {
    fn from_config<'de, D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text: String = serde::Deserialize::deserialize(d)?;
        resilience4cata_duration::parse(&text).map_err(de::Error::custom)
    }
}

/// Case-insensitive enum values from their variant names.
macro_rules! config_enum {
    ($ty:ty { $($name:literal => $variant:expr),* $(,)? }) => {
        impl $crate::registry::config_file::FromConfig for $ty {
            fn from_config<'de, D: ::serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let text: String = ::serde::Deserialize::deserialize(d)?;
                $(if text.eq_ignore_ascii_case($name) { return Ok($variant); })*
                Err(::serde::de::Error::custom(format!(
                    "`{text}` is not one of {}", [$($name),*].join(", ")
                )))
            }
        }
    };
}
#[allow(unused_imports)] // for the enums of other policies
pub(crate) use config_enum;

config_enum!(Backoff { "fixed" => Backoff::Fixed, "exponential" => Backoff::Exponential });
config_enum!(Jitter { "full" => Jitter::Full, "equal" => Jitter::Equal, "none" => Jitter::None });
config_enum!(crate::adaptive_limit::Algorithm {
    "aimd" => crate::adaptive_limit::Algorithm::Aimd,
    "gradient2" => crate::adaptive_limit::Algorithm::Gradient2,
    "vegas" => crate::adaptive_limit::Algorithm::Vegas,
});
config_enum!(WindowType { "count" => WindowType::Count, "time" => WindowType::Time });

#[cfg(test)]
mod tests {
    use super::*;
    use crate::circuit_breaker::CircuitBreakerConfigBuilder;
    use crate::retry::RetryConfigBuilder;

    fn err(text: &str) -> RegistryError {
        RegistryConfig::from_toml(text, "app.toml").unwrap_err()
    }

    /// The error `text` gives: `code`, and a message naming each of `says`.
    fn err_saying(text: &str, code: &str, says: &[&str]) -> RegistryError {
        let e = err(text);
        assert_eq!(e.code(), code, "{e}");
        for part in says {
            assert!(e.to_string().contains(part), "names {part:?}: {e}");
        }
        e
    }

    #[test]
    fn parses_the_key_tree() {
        let c = RegistryConfig::from_toml(
            "[defaults.retry]\nenabled = true\ndelay = \"50ms\"\njitter = \"NONE\"\n\
             [configs.external.retry]\nmax_attempts = 5\nbudget_percent = 20\n\
             [instances.\"shop::inventory::InventoryApi::stock\".retry]\nbackoff = \"fixed\"\n",
            "app.toml",
        )
        .unwrap();
        let d = c.defaults.retry.unwrap();
        assert_eq!(d, RetryConfigBuilder::new().enabled(true).delay(Duration::from_millis(50)).jitter(Jitter::None));
        assert_eq!(c.configs["external"].retry, Some(RetryConfigBuilder::new().max_attempts(5).budget_percent(20.0)));
        assert_eq!(
            c.instances["shop::inventory::InventoryApi::stock"].retry,
            Some(RetryConfigBuilder::new().backoff(Backoff::Fixed))
        );
    }

    #[test]
    fn parses_circuit_breaker_sections() {
        let c = RegistryConfig::from_toml(
            "[defaults.circuit_breaker]\nwindow_type = \"TIME\"\nslow_call_duration = \"2s\"\n\
             [instances.\"shop::inventory::InventoryApi::stock\".circuit_breaker]\nminimum_calls = 20\n\
             failure_rate_threshold = 25\n",
            "app.toml",
        )
        .unwrap();
        assert_eq!(
            c.defaults.circuit_breaker,
            Some(
                CircuitBreakerConfigBuilder::new()
                    .window_type(WindowType::Time)
                    .slow_call_duration(Duration::from_secs(2))
            )
        );
        assert_eq!(
            c.instances["shop::inventory::InventoryApi::stock"].circuit_breaker,
            Some(CircuitBreakerConfigBuilder::new().minimum_calls(20).failure_rate_threshold(25.0))
        );
        assert_eq!(err("[defaults.circuit_breaker]\nwindow_type = \"sliding\"\n").code(), "R4C-CFG-003");
        assert_eq!(err("[defaults.circuit_breaker]\nwindow = 3\n").code(), "R4C-CFG-002");
    }

    #[test]
    fn unknown_key_names_path_and_line() {
        // `max_attempts`: the valid keys are listed.
        err_saying(
            "[defaults.retry]\ndelay = \"1s\"\nmax_attemps = 3\n",
            "R4C-CFG-002",
            &["app.toml:3", "defaults.retry", "max_attempts"],
        );
    }

    #[test]
    fn bad_values_name_path_and_line() {
        err_saying(
            "[configs.x.retry]\n\ndelay = \"10 parsecs\"\n",
            "R4C-CFG-003",
            &["app.toml:3", "configs.x.retry.delay"],
        );
        assert_eq!(err("[defaults.retry]\njitter = \"sometimes\"\n").code(), "R4C-CFG-003");
        assert_eq!(err("[defaults.retry]\nmax_attempts = \"three\"\n").code(), "R4C-CFG-003");
    }

    #[test]
    fn out_of_range_values_name_path_and_line() {
        err_saying(
            "[defaults.retry]\ndelay = \"1s\"\nmax_attempts = 0\n",
            "R4C-CFG-004",
            &["app.toml:3: `defaults.retry.max_attempts`", "at least 1"],
        );
        err_saying(
            "[configs.slow.circuit_breaker]\nminimum_calls = 5\n\nfailure_rate_threshold = 0\n",
            "R4C-CFG-004",
            &["app.toml:4: `configs.slow.circuit_breaker.failure_rate_threshold`"],
        );
        let e = err("[instances]\n\"shop::Api::get\".bulkhead.max_concurrent_calls = 0\n");
        assert!(e.to_string().contains("app.toml:2: `instances.shop::Api::get.bulkhead.max_concurrent_calls`"), "{e}");
        let e = err("[defaults]\nrate_limiter = { permits = 3, period = \"0\" }\n");
        assert!(e.to_string().contains("app.toml:2: `defaults.rate_limiter.period`"), "{e}");
        let e = err("[instances.\"a::B::c\".timeout]\nduration = \"0\"\n");
        assert_eq!((e.code(), e.instance()), ("R4C-CFG-004", None));
        let e = err("[defaults.retry]\nbudget_window = \"100ms\"\n");
        assert!(e.to_string().contains("`defaults.retry.budget_window`"), "{e}");
    }

    #[test]
    fn rules_between_keys_wait_for_resolution() {
        // Another layer may raise `delay`'s partner: `max_delay < delay` is judged per instance.
        assert!(RegistryConfig::from_toml("[defaults.retry]\nmax_delay = \"10ms\"\n", "app.toml").is_ok());
    }

    #[test]
    fn non_ascii_durations_are_bad_values_not_panics() {
        for text in ["1µs", "€5s", "PT1€", "5é"] {
            err_saying(
                &format!("[defaults.retry]\ndelay = \"{text}\"\n"),
                "R4C-CFG-003",
                &["app.toml:2: `defaults.retry.delay`"],
            );
        }
    }

    #[test]
    fn unknown_policy_and_syntax_errors() {
        assert_eq!(err("[defaults.retri]\n").code(), "R4C-CFG-002");
        assert_eq!(err("[defaults.retry\n").code(), "R4C-CFG-001");
    }
}
