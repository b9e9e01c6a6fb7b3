//! A policy's layered configuration builder: one `Option` per key, so a layer overrides only what
//! it sets ([`Layer`]), and the macro that writes it ([`layered_builder!`]).

use std::fmt;

use crate::error::RegistryError;

/// A policy's configuration builder: one `Option` per key, so a layer overrides only what it sets.
pub(crate) trait Layer: Clone + Default + PartialEq + fmt::Debug + Send + Sync + 'static {
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

        impl $crate::kit::Layer for $builder {
            type Config = $config;
            const POLICY: &'static str = $policy;

            fn merge(&mut self, over: &Self) {
                self.overlay(over);
            }

            fn resolve(&self, instance: &str) -> Result<$config, $crate::error::RegistryError> {
                layered_builder!(@resolve self, instance, $values $(, between $between)? $(, resolve $resolve)?)
            }

            fn check_keys(&self) -> Result<(), $crate::kit::KeyProblem> {
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
