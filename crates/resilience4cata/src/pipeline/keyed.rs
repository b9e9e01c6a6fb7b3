//! [`KeyedPipeline`]: a pipeline whose breaker, rate limiter, adaptive limit and bulkhead keep one
//! state per key, chosen per call (SPEC §15, docs/keyed.md).
//!
//! A keyed pipeline is an ordinary [`Pipeline`] (the *template*: retry or hedge, timeout, rules,
//! fallback, order) whose keyable guards are left out, beside the keyed instances of those
//! policies ([`KeyedSet`]). A call looks its key up once in each keyed policy, first thing (inside
//! the fallback, outside the retry, as the generated code does), holds it to the end of the call,
//! and runs the template with the key's own facades in its guard slots: every rule, event and
//! figure of the unkeyed pipeline holds per key, from the same code.

use std::borrow::Borrow;
use std::fmt;
use std::future::Future;
use std::hash::Hash;
use std::marker::PhantomData;

use super::builder::{PipelineBuilder, Rejections, faults_of};
use super::execute::{Pipeline, find_rejection};
use super::keyed_set::{Holds, KeyedSet};
use super::typestate::{AsyncOnly, Blocking, Hedged, Keyed, Plain, Rejecting, SyncOrAsync, Unkeyed};
use crate::error::{RegistryError, codes};
use crate::rejection::ResilienceError;

/// A pipeline with one state per key (SPEC §15): per API key, per client address, per tenant, per
/// downstream host. Built with [`PipelineBuilder::keyed`]; run with
/// [`execute_for`](Self::execute_for) and [`execute_async_for`](Self::execute_async_for).
///
/// Its circuit breaker, rate limiter, adaptive limit and bulkhead are *keyed*: each distinct key
/// behaves exactly as its own instance of the policy, with the resolved configuration, its own
/// events (their `key` is the key's `Debug` text), and its own handle
/// (`registry.rate_limiter(id).unwrap().key("\"tenant-a\"")`). The retry, hedge, timeout and
/// fallback are not keyed. At most `max_keys` keys are kept per policy (default 10,000): a new key
/// at the cap replaces the least recently used key at rest, or, when none is, the call is refused
/// with [`Rejection::KeysExhausted`](crate::Rejection::KeysExhausted) without running (fail closed: a flood of keys never resets a
/// limit). That refusal is never retried and reaches the fallback like any refusal.
///
/// `K` is the owned key type (`Hash + Eq + Clone + Debug + Send + Sync + 'static`); a call takes
/// `&K` or anything `K` borrows as (`&str` for a `String` key), and allocates nothing for a key
/// it already has (one read lock taken and released per keyed policy, one reference count held).
/// Each call also clones the pipeline's handles for itself (a few reference counts, no
/// allocation), where an unkeyed pipeline uses its own.
///
/// ```
/// use std::time::Duration;
/// use resilience4cata::testing::{self, ManualClock};
/// use resilience4cata::{Pipeline, Rejection, ResilienceError};
///
/// let clock = ManualClock::new();
/// let registry = testing::registry(&clock).build()?;
/// let per_key = Pipeline::builder(&registry, "api")
///     .keyed::<String>()
///     .rate_limiter_with(|r| r.permits(1).period(Duration::from_secs(1)).max_wait(Duration::ZERO))
///     .build::<u32, std::io::Error>()?;
/// assert_eq!(per_key.execute_for("key-a", || Ok(1))?, 1);
/// let refused = per_key.execute_for("key-a", || Ok(2)).unwrap_err();
/// assert!(matches!(refused.rejection(), Some(Rejection::RateLimitExceeded { .. })));
/// assert_eq!(per_key.execute_for("key-b", || Ok(3))?, 3); // another key, its own permit
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct KeyedPipeline<K, T, E, M = SyncOrAsync> {
    /// Everything but the keyed policies, run per call with the key's facades filled in.
    template: Pipeline<T, E, M>,
    keys: KeyedSet,
    key: PhantomData<fn(&K)>,
}

impl<K, T, E, M> Clone for KeyedPipeline<K, T, E, M> {
    fn clone(&self) -> Self {
        KeyedPipeline { template: self.template.clone(), keys: self.keys.clone(), key: PhantomData }
    }
}

impl<K, T, E, M> fmt::Debug for KeyedPipeline<K, T, E, M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyedPipeline").field("template", &self.template).field("keys", &self.keys).finish()
    }
}

impl<'r> PipelineBuilder<'r, Plain, Unkeyed> {
    /// Makes the pipeline keyed by `K` (SPEC §15): call it right after [`Pipeline::builder`], then
    /// add policies as usual; `build::<T, E>()` returns a [`KeyedPipeline`]. Its circuit breaker,
    /// rate limiter, adaptive limit and bulkhead keep one state per key; its retry, hedge, timeout
    /// and fallback are not keyed. A keyed pipeline needs at least one keyable policy (else
    /// `build` fails with `R4C-REG-001`), and one id keyed here and unkeyed elsewhere (a method,
    /// another pipeline) is `R4C-REG-008`.
    ///
    /// ```
    /// use resilience4cata::{Pipeline, Registry};
    ///
    /// let registry = Registry::builder().build()?;
    /// let hosts = Pipeline::builder(&registry, "hosts")
    ///     .keyed::<String>()
    ///     .retry()
    ///     .circuit_breaker()
    ///     .build::<u32, std::io::Error>()?;
    /// assert_eq!(hosts.execute_for("a.example", || Ok(7))?, 7);
    ///
    /// let unkeyed = Pipeline::builder(&registry, "hosts").circuit_breaker().build::<u32, std::io::Error>();
    /// assert_eq!(unkeyed.unwrap_err().code(), "R4C-REG-008");
    /// let nothing_keyed = Pipeline::builder(&registry, "plain").keyed::<u64>().retry().build::<u32, String>();
    /// assert_eq!(nothing_keyed.unwrap_err().code(), "R4C-REG-001");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use = "the builder is consumed; use the keyed builder it returns"]
    pub fn keyed<K>(self) -> PipelineBuilder<'r, Plain, Keyed<K>>
    where
        K: Hash + Eq + Clone + fmt::Debug + Send + Sync + 'static,
    {
        self.into_keyed()
    }
}

/// `R4C-REG-001`: a keyed pipeline without a policy a key could pick.
fn nothing_keyed<T, E, M>(pipeline: &Pipeline<T, E, M>) -> RegistryError {
    RegistryError::new(
        codes::INVALID_COMBINATION,
        Some(pipeline.id()),
        "a keyed pipeline needs a circuit breaker, rate limiter, adaptive limit or bulkhead (the policies a key \
         picks); retry, hedge, timeout and fallback are never keyed: drop `.keyed()` or add one",
    )
}

impl<K, T, E, M> KeyedPipeline<K, T, E, M> {
    /// The resolved parts, checked: a keyed pipeline has at least one keyed policy.
    fn new(template: Pipeline<T, E, M>, keys: KeyedSet) -> Result<Self, RegistryError> {
        match keys.any() {
            true => Ok(KeyedPipeline { template, keys, key: PhantomData }),
            false => Err(nothing_keyed(&template)),
        }
    }

    /// The pipeline's id: the instance id of each of its policies, keyed or not.
    ///
    /// ```
    /// # use resilience4cata::{Pipeline, Registry};
    /// # let registry = Registry::builder().build()?;
    /// let tenants = Pipeline::builder(&registry, "tenants").keyed::<u32>().bulkhead().build::<(), std::io::Error>()?;
    /// assert_eq!(tenants.id(), "tenants");
    /// # Ok::<(), resilience4cata::RegistryError>(())
    /// ```
    pub fn id(&self) -> &str {
        self.template.id()
    }

    /// Sets the rules over `E` and the fallback, which the untyped builder cannot hold: `f` gets
    /// the keyed pipeline's unkeyed part as a [`Pipeline`] and returns it with its rules
    /// ([`retry_on`](Pipeline::retry_on), [`record_on`](Pipeline::record_on),
    /// [`fallback`](Pipeline::fallback), …), exactly as on an unkeyed pipeline. Keep that part
    /// inside `f`: its own `execute` would run without the keyed policies.
    ///
    /// ```
    /// use resilience4cata::{Pipeline, Registry};
    ///
    /// let registry = Registry::builder().retry_defaults(|r| r.delay(std::time::Duration::ZERO)).build()?;
    /// let per_tenant = Pipeline::builder(&registry, "reports")
    ///     .keyed::<String>()
    ///     .retry()
    ///     .bulkhead()
    ///     .build::<u32, std::io::Error>()?
    ///     .rules(|p| p.retry_on(|e| e.kind() == std::io::ErrorKind::TimedOut).fallback(|_| Ok(0)));
    /// let mut calls = 0;
    /// let answer = per_tenant.execute_for("t1", || { calls += 1; Err(std::io::Error::other("down")) });
    /// assert_eq!((answer?, calls), (0, 1)); // not retried, answered by the fallback
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use = "the rules are on the returned pipeline; this one is consumed"]
    pub fn rules<M2>(self, f: impl FnOnce(Pipeline<T, E, M>) -> Pipeline<T, E, M2>) -> KeyedPipeline<K, T, E, M2> {
        KeyedPipeline { template: f(self.template), keys: self.keys, key: PhantomData }
    }

    /// The call's own pipeline: the template with the held keys' facades in its guard slots.
    #[inline]
    fn for_call(&self, holds: &Holds<'_>) -> Pipeline<T, E, M> {
        let mut call = self.template.clone();
        if let Some(guards) = &mut call.guards {
            holds.fill(&mut guards.set);
        }
        call
    }

    /// A keyed layer's pipeline: every mode runs async there.
    #[cfg(feature = "tower")]
    pub(super) fn for_layer(&self) -> KeyedPipeline<K, T, E, SyncOrAsync>
    where
        E: ResilienceError,
    {
        let template = self.template.clone().detect_rejections().into_mode();
        KeyedPipeline { template, keys: self.keys.clone(), key: PhantomData }
    }
}

impl<K, T, E: ResilienceError, M> KeyedPipeline<K, T, E, M>
where
    K: Hash + Eq + Clone + fmt::Debug + Send + Sync + 'static,
{
    /// Runs `f` through the pipeline for `key`, as [`Pipeline::execute`] runs it: the key is
    /// looked up once in each keyed policy and held until the call ends (across every retry), and
    /// each keyed policy judges the call on that key's own state. A key that cannot be made (every
    /// policy table full of keys in use, `Rejection::KeysExhausted`) refuses the call without
    /// calling `f`; the refusal is not retried and goes to the fallback, if any. An existing key
    /// allocates nothing. Not offered with a timeout, a hedge or an async fallback
    /// (`[R4C-SIG-020]`).
    ///
    /// ```
    /// use resilience4cata::circuit_breaker::State;
    /// use resilience4cata::{Pipeline, Registry};
    ///
    /// let registry = Registry::builder().build()?;
    /// let hosts = Pipeline::builder(&registry, "hosts")
    ///     .keyed::<String>()
    ///     .circuit_breaker_with(|c| c.window_size(2).minimum_calls(2))
    ///     .build::<u32, std::io::Error>()?;
    /// for _ in 0..2 {
    ///     let _ = hosts.execute_for("down.example", || Err(std::io::Error::other("refused")));
    /// }
    /// let breaker = registry.circuit_breaker("hosts").unwrap();
    /// assert_eq!(breaker.key("\"down.example\"").unwrap().state(), State::Open);
    /// assert_eq!(hosts.execute_for("up.example", || Ok(5))?, 5); // its own breaker, closed
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn execute_for<Q, F>(&self, key: &Q, f: F) -> Result<T, E>
    where
        Q: ?Sized + Hash + Eq + ToOwned<Owned = K>,
        K: Borrow<Q>,
        F: FnMut() -> Result<T, E>,
        M: Blocking,
    {
        let holds = match self.keys.hold(key) {
            Ok(holds) => holds,
            Err(refusal) => return self.template.finish(Err(E::from_rejection(refusal)), 1),
        };
        self.for_call(&holds).execute(f)
    }

    /// Runs the futures `f` makes through the pipeline for `key`, as
    /// [`Pipeline::execute_async`] runs them, with the key looked up and held as in
    /// [`execute_for`](Self::execute_for): once, when the returned future is first polled, until
    /// the call ends. Nothing is boxed; an existing key allocates nothing.
    ///
    /// ```
    /// use std::time::Duration;
    /// use resilience4cata::{Pipeline, Registry, Rejection, ResilienceError};
    ///
    /// let registry = Registry::builder().build()?;
    /// let tenants = Pipeline::builder(&registry, "tenants")
    ///     .keyed::<u64>()
    ///     .timeout_with(|t| t.duration(Duration::from_secs(1)))
    ///     .bulkhead_with(|b| b.max_concurrent_calls(1).max_wait(Duration::ZERO))
    ///     .build::<u32, std::io::Error>()?;
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let nested = tenants.execute_async_for(&7, || async {
    ///     // Tenant 7's only slot is taken by this call; tenant 8 has its own.
    ///     let again = tenants.execute_async_for(&7, || async { Ok(0) }).await;
    ///     assert!(matches!(again.unwrap_err().rejection(), Some(Rejection::BulkheadFull { .. })));
    ///     tenants.execute_async_for(&8, || async { Ok(8) }).await
    /// });
    /// assert_eq!(nested.await.unwrap(), 8);
    /// # });
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn execute_async_for<Q, F, Fut>(&self, key: &Q, f: F) -> Result<T, E>
    where
        Q: ?Sized + Hash + Eq + ToOwned<Owned = K>,
        K: Borrow<Q>,
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        let holds = match self.keys.hold(key) {
            Ok(holds) => holds,
            Err(refusal) => return self.template.finish_async(Err(E::from_rejection(refusal)), 1).await,
        };
        self.for_call(&holds).execute_async(f).await
    }
}

/// The keyed builds, one per type-state, as the unkeyed ones: a keyable policy makes the builder
/// [`Rejecting`] at least, so `E: ResilienceError`.
impl<K> PipelineBuilder<'_, Plain, Keyed<K>> {
    /// Fails with `R4C-REG-001`: a keyed pipeline with only a retry has nothing a key could pick.
    /// Add a circuit breaker, rate limiter, adaptive limit or bulkhead.
    ///
    /// ```
    /// use resilience4cata::{Pipeline, Registry};
    ///
    /// let registry = Registry::builder().build()?;
    /// let err = Pipeline::builder(&registry, "plain").keyed::<u64>().retry().build::<u32, String>().unwrap_err();
    /// assert_eq!(err.code(), "R4C-REG-001");
    /// # Ok::<(), resilience4cata::RegistryError>(())
    /// ```
    pub fn build<T, E>(self) -> Result<KeyedPipeline<K, T, E>, RegistryError> {
        let (template, keys) = self.resolve_keyed(true, false, None, None)?;
        KeyedPipeline::new(template, keys)
    }
}

impl<K> PipelineBuilder<'_, Hedged, Keyed<K>> {
    /// Fails with `R4C-REG-001`, as [`PipelineBuilder::<Plain, Keyed<K>>::build`](PipelineBuilder::build):
    /// a hedge is not keyed.
    ///
    /// ```
    /// use resilience4cata::{Pipeline, Registry};
    ///
    /// let registry = Registry::builder().build()?;
    /// let err = Pipeline::builder(&registry, "h").keyed::<u64>().hedge().build::<u32, String>().unwrap_err();
    /// assert_eq!(err.code(), "R4C-REG-001");
    /// # Ok::<(), resilience4cata::RegistryError>(())
    /// ```
    pub fn build<T, E>(self) -> Result<KeyedPipeline<K, T, E, AsyncOnly>, RegistryError> {
        let (template, keys) = self.resolve_keyed(true, true, None, None)?;
        KeyedPipeline::new(template, keys)
    }
}

/// `E`'s ways in and out, for a keyed build.
fn rejections<E: ResilienceError>() -> Option<Rejections<E>> {
    Some((E::from_rejection, find_rejection::<E>))
}

impl<K> PipelineBuilder<'_, Rejecting, Keyed<K>> {
    /// Resolves every policy once, the keyable ones as keyed instances under the pipeline's id;
    /// fails as the unkeyed `build` does, and with `R4C-REG-008` when the id is used unkeyed.
    ///
    /// ```
    /// use resilience4cata::{Pipeline, Registry};
    ///
    /// let registry = Registry::builder().build()?;
    /// let clients = Pipeline::builder(&registry, "clients").keyed::<std::net::IpAddr>().rate_limiter().build::<u32, std::io::Error>()?;
    /// let ip: std::net::IpAddr = "127.0.0.1".parse()?;
    /// assert_eq!(clients.execute_for(&ip, || Ok(1))?, 1);
    /// assert_eq!(registry.rate_limiter("clients").unwrap().snapshot().keys, 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn build<T, E: ResilienceError>(self) -> Result<KeyedPipeline<K, T, E>, RegistryError> {
        let (template, keys) = self.resolve_keyed(true, false, rejections::<E>(), Some(faults_of::<E>()))?;
        KeyedPipeline::new(template.detect_rejections(), keys)
    }
}

impl<K> PipelineBuilder<'_, AsyncOnly, Keyed<K>> {
    /// Resolves every policy once, as the [`Rejecting`] keyed `build` does; with a timeout (or a
    /// hedge beside a keyable policy) the pipeline runs only async calls
    /// ([`execute_async_for`](KeyedPipeline::execute_async_for)).
    ///
    /// ```
    /// use std::time::Duration;
    /// use resilience4cata::{Pipeline, Registry};
    ///
    /// let registry = Registry::builder().build()?;
    /// let search = Pipeline::builder(&registry, "search")
    ///     .keyed::<String>()
    ///     .timeout_with(|t| t.duration(Duration::from_millis(200)))
    ///     .rate_limiter()
    ///     .build::<u32, std::io::Error>()?;
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// assert_eq!(search.execute_async_for("user-1", || async { Ok(4) }).await.unwrap(), 4);
    /// # });
    /// # Ok::<(), resilience4cata::RegistryError>(())
    /// ```
    pub fn build<T, E: ResilienceError>(self) -> Result<KeyedPipeline<K, T, E, AsyncOnly>, RegistryError> {
        let (template, keys) = self.resolve_keyed(true, true, rejections::<E>(), Some(faults_of::<E>()))?;
        KeyedPipeline::new(template.detect_rejections(), keys)
    }
}

/// A keyed pipeline that offers only `execute_async_for` (a timeout, a hedge or an async
/// fallback), named without the mode, as [`AsyncPipeline`](super::AsyncPipeline) is.
///
/// ```
/// use std::time::Duration;
/// use resilience4cata::pipeline::AsyncKeyedPipeline;
/// use resilience4cata::{Pipeline, Registry};
///
/// struct Api {
///     per_client: AsyncKeyedPipeline<String, u32, std::io::Error>,
/// }
/// let registry = Registry::builder().build()?;
/// let per_client = Pipeline::builder(&registry, "api")
///     .keyed()
///     .timeout_with(|t| t.duration(Duration::from_secs(1)))
///     .rate_limiter()
///     .build()?;
/// let api = Api { per_client };
/// # let _ = api.per_client;
/// # Ok::<(), resilience4cata::RegistryError>(())
/// ```
pub type AsyncKeyedPipeline<K, T, E> = KeyedPipeline<K, T, E, AsyncOnly>;
