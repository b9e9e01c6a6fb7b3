//! Keyed instances for the generated code (SPEC §15, the contract in docs/keyed.md): one
//! constructor per keyable policy, its facade with `for_key`, and the key argument's probe.

use std::borrow::Borrow;
use std::fmt::Debug;
use std::hash::Hash;
use std::sync::Arc;

use super::Site;
use crate::error::RegistryError;
use crate::kit::{KeyRef, KeyedCore, KeyedView};
use crate::registry::{Registered, Registry};
use crate::rejection::Rejection;

/// What a key's looked-up type must be: hashed and compared borrowed, made owned (`ToOwned`) only
/// for a new key, whose owned form is kept, shown in events by its `Debug` text, and shared
/// between threads.
#[diagnostic::on_unimplemented(
    message = "[R4C-SIG-050] `{Self}` cannot be a key: a key is looked up as `Q: Hash + Eq + ToOwned` and kept as `Q::Owned: Hash + Eq + Debug + Send + Sync + 'static`",
    label = "this key expression",
    note = "use an owned value or a reference to one of these (`&str`, `u64`, `(u32, String)`, …)"
)]
pub trait KeyType: Hash + Eq + ToOwned<Owned = Self::Kept> {
    /// The owned form kept for a new key.
    type Kept: Borrow<Self> + Hash + Eq + Debug + Send + Sync + 'static;
}

#[diagnostic::do_not_recommend]
impl<Q> KeyType for Q
where
    Q: ?Sized + Hash + Eq + ToOwned,
    Q::Owned: Borrow<Q> + Hash + Eq + Debug + Send + Sync + 'static,
{
    type Kept = Q::Owned;
}

/// The key expression's value, for the probe: `(&KeyArg(expr)).key_arg()` is `expr` itself when it
/// is a reference `&Q` (looked up as `Q`), and `&expr` otherwise (looked up as its own type).
/// Bring [`KeyByRef`] and [`KeyByValue`] into scope (`use …::{KeyByRef as _, KeyByValue as _}`).
#[derive(Debug)]
pub struct KeyArg<T>(pub T);

/// The probe's first choice: a reference key, looked up as what it points to.
pub trait KeyByRef<'a> {
    type Key: ?Sized + 'a;
    fn key_arg(&self) -> &'a Self::Key;
}

impl<'a, Q: ?Sized> KeyByRef<'a> for KeyArg<&'a Q> {
    type Key = Q;

    #[inline(always)]
    fn key_arg(&self) -> &'a Q {
        self.0
    }
}

/// The probe's fallback (one autoref further): any other value, looked up as itself.
pub trait KeyByValue<'a> {
    type Key: 'a;
    fn key_arg(&self) -> &'a Self::Key;
}

impl<'a, V: 'a> KeyByValue<'a> for &'a KeyArg<V> {
    type Key = V;

    #[inline(always)]
    fn key_arg(&self) -> &'a V {
        &self.0
    }
}

/// `key_arg!(expr)`: the key argument `for_key` takes, by the probe above (a reference is looked
/// up as what it points to, any other value as itself).
#[macro_export]
#[doc(hidden)]
macro_rules! __r4c_key_arg {
    ($key:expr) => {
        match $crate::__private::KeyArg($key) {
            ref __r4c_key_arg => {
                #[allow(unused_imports)]
                use $crate::__private::{KeyByRef as _, KeyByValue as _};
                __r4c_key_arg.key_arg()
            }
        }
    };
}

/// One keyed facade and its constructor per keyable policy.
macro_rules! keyed {
    ($($constructor:ident: $keyed:ident over $module:ident::$policy:ident($builder:ident);)*) => {$(
        #[doc = concat!("A keyed `", stringify!($module), "` instance (SPEC §15): one state per key value, found \
            per call with [`for_key`](Self::for_key).")]
        #[derive(Clone)]
        pub struct $keyed {
            core: Arc<KeyedCore<crate::$module::policy::$policy>>,
        }

        impl $keyed {
            /// The key's own facade, held for the call: an existing key is found without allocating
            /// and without a lock held after return; a new key is made (it may allocate, and at
            /// `max_keys` evict the least recently used key at rest), or refused with
            /// `Rejection::KeysExhausted` when none is at rest.
            #[inline]
            pub fn for_key<Q>(&self, key: &Q) -> Result<KeyRef<'_, crate::$module::policy::$policy>, Rejection>
            where
                Q: ?Sized + KeyType,
            {
                self.core.for_key(key)
            }

            /// The instance id.
            pub fn instance(&self) -> &str {
                &self.core.instance
            }
        }

        impl ::std::fmt::Debug for $keyed {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.debug_struct(stringify!($keyed)).field("instance", &self.instance()).finish_non_exhaustive()
            }
        }

        #[doc = concat!("Builds (or finds, when shared by name) the keyed `", stringify!($module), "` instance of one method.")]
        pub fn $constructor(
            registry: &Registry,
            site: Site<'_>,
            attrs: crate::$module::$builder,
        ) -> Result<$keyed, RegistryError> {
            Ok($keyed { core: keyed_core::<crate::$module::policy::$policy>(registry, site.into(), attrs)? })
        }

        impl $keyed {
            /// Builds the keyed instance of a site whose named configuration is known only at run
            /// time (a keyed pipeline's `…_config(name)`).
            pub(crate) fn build(
                registry: &Registry,
                site: KeyedSite<'_>,
                attrs: crate::$module::$builder,
            ) -> Result<$keyed, RegistryError> {
                Ok($keyed { core: keyed_core::<crate::$module::policy::$policy>(registry, site, attrs)? })
            }
        }
    )*};
}

keyed! {
    keyed_rate_limiter: KeyedRateLimiterPolicy over rate_limiter::RateLimiterPolicy(RateLimiterConfigBuilder);
    keyed_circuit_breaker: KeyedCircuitBreakerPolicy over circuit_breaker::CircuitBreakerPolicy(CircuitBreakerConfigBuilder);
    keyed_bulkhead: KeyedBulkheadPolicy over bulkhead::BulkheadPolicy(BulkheadConfigBuilder);
    keyed_adaptive_limit: KeyedAdaptiveLimitPolicy over adaptive_limit::AdaptiveLimitPolicy(AdaptiveLimitConfigBuilder);
}

/// A keyed site as the registry's store takes it: id, `name`, named configuration, async.
pub(crate) type KeyedSite<'a> = (&'a str, Option<&'a str>, Option<&'a str>, bool);

impl<'a> From<Site<'a>> for KeyedSite<'a> {
    fn from(site: Site<'a>) -> Self {
        (site.id, site.name, site.config, site.is_async)
    }
}

/// The keyed instance of a site: resolved and checked like an unkeyed one, registered under its
/// id, its keys kept beside it.
fn keyed_core<P: Registered + crate::kit::KeyedKind>(
    registry: &Registry,
    site: KeyedSite<'_>,
    attrs: P::Builder,
) -> Result<Arc<KeyedCore<P>>, RegistryError>
where
    crate::kit::ConfigOf<P>: Send,
{
    let store = P::store(registry);
    let inner = registry.inner_arc();
    // `shared = true` works per key (SPEC §15): each key's state builds its own fleet link, named
    // by the key's text, as an unkeyed instance builds one (`new_state`).
    let make = |instance: Arc<str>, config: crate::kit::ConfigOf<P>| -> Result<Arc<dyn KeyedView<P>>, RegistryError> {
        Ok(Arc::new(KeyedCore::<P>::new(instance, &inner, config)))
    };
    let view = store.keyed(registry, site, attrs, make)?;
    Ok(view.as_any().downcast::<KeyedCore<P>>().unwrap_or_else(|_| unreachable!("one kind per store")))
}
