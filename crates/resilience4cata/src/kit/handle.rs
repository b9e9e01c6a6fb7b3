//! The macro a keyable policy declares its public handle with ([`policy_handle!`]): the instance
//! id, its snapshot, and a keyed instance's keys (SPEC §15). Above `keyed_core.rs`, whose
//! [`KeyedView`](super::KeyedView) it names.

/// A policy's public handle: the instance id and its snapshot. Manual controls go in an `impl` of
/// the policy's own.
macro_rules! policy_handle {
    ($(#[$meta:meta])* $handle:ident for $policy:ty => $snapshot:ty) => {
        $(#[$meta])*
        #[derive(Clone)]
        pub struct $handle {
            state: ::std::sync::Arc<<$policy as $crate::kit::PolicyKind>::State>,
            /// The instance's keys, when it is keyed (SPEC §15).
            keys: ::std::option::Option<::std::sync::Arc<dyn $crate::kit::KeyedView<$policy>>>,
        }

        impl $handle {
            /// The handle of one live instance (the registry's lookup), with its keys if keyed.
            pub(crate) fn of_instance(
                state: ::std::sync::Arc<<$policy as $crate::kit::PolicyKind>::State>,
                keys: ::std::option::Option<::std::sync::Arc<dyn $crate::kit::KeyedView<$policy>>>,
            ) -> Self {
                $handle { state, keys }
            }

            /// The instance id.
            pub fn instance(&self) -> &str {
                &self.state.instance
            }

            /// The configuration and the instance's live state; of a keyed instance (SPEC §15),
            /// the instance as a whole, with its `keys`, `evicted` and `keys_exhausted`.
            pub fn snapshot(&self) -> $snapshot {
                let registered = <$policy as $crate::kit::PolicyKind>::snapshot(&self.state);
                match &self.keys {
                    Some(keys) => keys.snapshot(registered),
                    None => registered,
                }
            }

            /// A keyed instance's keys (SPEC §15), most recently used first, at most `n`, each
            /// with its key text (its `Debug` form) and its own snapshot; empty when unkeyed.
            /// Shown on a rate limiter; the four keyable policies' handles have the same methods.
            ///
            /// ```
            /// use resilience4cata::{Pipeline, Registry};
            ///
            /// let registry = Registry::builder().build()?;
            /// Pipeline::builder(&registry, "unkeyed").rate_limiter().build::<u32, std::io::Error>()?;
            /// let handle = registry.rate_limiter("unkeyed").unwrap();
            /// assert!(handle.keys(10).is_empty()); // an unkeyed instance has no keys
            /// assert_eq!(handle.snapshot().keys, 0);
            /// # Ok::<(), resilience4cata::RegistryError>(())
            /// ```
            pub fn keys(&self, n: usize) -> Vec<(::std::sync::Arc<str>, $snapshot)> {
                let Some(keys) = &self.keys else { return Vec::new() };
                keys.recent(n)
                    .into_iter()
                    .map(|(text, state)| (text, <$policy as $crate::kit::PolicyKind>::snapshot(&state)))
                    .collect()
            }

            /// A handle on one key of a keyed instance alone, by its key text (the key's `Debug`
            /// form: a `&str` key reads with its quotes, `"\"a.example\""`), with the policy's
            /// manual controls; `None` for an unknown key or an unkeyed instance.
            ///
            /// ```
            /// use resilience4cata::{Pipeline, Registry};
            ///
            /// let registry = Registry::builder().build()?;
            /// Pipeline::builder(&registry, "hosts").circuit_breaker().build::<u32, std::io::Error>()?;
            /// let handle = registry.circuit_breaker("hosts").unwrap();
            /// assert!(handle.key("\"a.example\"").is_none()); // unkeyed: no key to find
            /// # Ok::<(), resilience4cata::RegistryError>(())
            /// ```
            pub fn key(&self, text: &str) -> Option<$handle> {
                let state = self.keys.as_ref()?.by_text(text)?;
                Some($handle { state, keys: None })
            }
        }

        impl ::std::fmt::Debug for $handle {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.debug_struct(stringify!($handle)).field("instance", &self.instance()).finish_non_exhaustive()
            }
        }
    };
}
pub(crate) use policy_handle;
