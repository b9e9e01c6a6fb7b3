//! A keyed pipeline as a `tower::Layer` (SPEC §15): the request names its key
//! ([`KeyedPipelineLayer::key_by`]), and each call runs through
//! [`KeyedPipeline::execute_async_for`] with it.
//!
//! The key is known only once the request is: [`Service::poll_ready`] cannot reserve a keyed
//! permit or slot, so a keyed layer applies its keyed policies inside the call (the *refusal*
//! mode of [`PipelineLayer`](super::PipelineLayer)) and its `poll_ready` is the inner service's.
//! A layer of a keyed pipeline without `key_by` is a different type ([`NoKeyBy`]) that does not
//! implement `tower::Layer`: it cannot wrap a service.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tower_layer::Layer;
use tower_service::Service;

use crate::ResilienceError;
use crate::pipeline::KeyedPipeline;

/// The future of a [`KeyedService`] (feature `tower`): one box per call, which owns the key, its
/// holds and the call's pipeline.
pub type KeyedResponseFuture<T, E> = Pin<Box<dyn Future<Output = Result<T, E>> + Send + 'static>>;

/// The key function of a keyed layer is not set yet: [`KeyedPipelineLayer::key_by`] sets it, and
/// only then is the layer a `tower::Layer` (feature `tower`).
///
/// ```
/// use resilience4cata::pipeline::{KeyedPipelineLayer, NoKeyBy};
/// use resilience4cata::{Pipeline, Registry};
///
/// let registry = Registry::builder().build()?;
/// let layer: KeyedPipelineLayer<String, u32, std::io::Error, NoKeyBy> =
///     Pipeline::builder(&registry, "api").keyed::<String>().rate_limiter().build()?.layer();
/// # let _ = layer;
/// # Ok::<(), resilience4cata::RegistryError>(())
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct NoKeyBy;

/// The key function set by [`KeyedPipelineLayer::key_by`] (feature `tower`).
///
/// ```
/// use resilience4cata::pipeline::{KeyBy, KeyedPipelineLayer};
/// use resilience4cata::{Pipeline, Registry};
///
/// fn tenant(request: &(String, u32)) -> String {
///     request.0.clone()
/// }
/// let registry = Registry::builder().build()?;
/// let layer: KeyedPipelineLayer<String, u32, std::io::Error, KeyBy<fn(&(String, u32)) -> String>> =
///     Pipeline::builder(&registry, "api").keyed::<String>().bulkhead().build()?.layer().key_by(tenant as fn(&_) -> _);
/// # let _ = layer;
/// # Ok::<(), resilience4cata::RegistryError>(())
/// ```
#[derive(Clone, Copy)]
pub struct KeyBy<F>(F);

impl<F> fmt::Debug for KeyBy<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("KeyBy(..)")
    }
}

impl<K, T, E: ResilienceError, M> KeyedPipeline<K, T, E, M> {
    /// This keyed pipeline as a tower layer, once [`key_by`](KeyedPipelineLayer::key_by) says how
    /// a request names its key (feature `tower`). Without `key_by` the layer's type does not
    /// implement `tower::Layer`, so a keyed layer that forgets its key does not compile:
    ///
    /// ```compile_fail
    /// use resilience4cata::{Pipeline, Registry};
    /// use tower::Layer;
    ///
    /// let registry = Registry::builder().build().unwrap();
    /// let keyed = Pipeline::builder(&registry, "api").keyed::<String>().rate_limiter().build::<u32, std::io::Error>().unwrap();
    /// let service = keyed.layer().layer(tower::service_fn(|n: u32| async move { Ok::<_, std::io::Error>(n) }));
    /// ```
    ///
    /// With it:
    ///
    /// ```
    /// use std::time::Duration;
    /// use resilience4cata::{Pipeline, Registry, Rejection, ResilienceError};
    /// use tower::{Layer, ServiceExt};
    ///
    /// let registry = Registry::builder().build()?;
    /// let per_user = Pipeline::builder(&registry, "api")
    ///     .keyed::<String>()
    ///     .rate_limiter_with(|r| r.permits(1).period(Duration::from_secs(60)).max_wait(Duration::ZERO))
    ///     .build::<String, std::io::Error>()?;
    /// let layer = per_user.layer().key_by(|(user, _): &(String, String)| user.clone());
    /// let service = layer.layer(tower::service_fn(|(_, body): (String, String)| async move { Ok::<_, std::io::Error>(body) }));
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let ask = |user: &str| service.clone().oneshot((user.to_owned(), "hi".to_owned()));
    /// assert_eq!(ask("ann").await.unwrap(), "hi");
    /// assert!(matches!(ask("ann").await.unwrap_err().rejection(), Some(Rejection::RateLimitExceeded { .. })));
    /// assert_eq!(ask("bob").await.unwrap(), "hi"); // bob's own permit
    /// # });
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn layer(&self) -> KeyedPipelineLayer<K, T, E, NoKeyBy> {
        KeyedPipelineLayer { pipeline: Arc::new(self.for_layer()), key_by: NoKeyBy }
    }
}

/// A keyed pipeline's tower layer (feature `tower`), made by [`KeyedPipeline::layer`]; a
/// `tower::Layer` once [`key_by`](Self::key_by) is set (`F` = [`KeyBy`]).
///
/// What the services it makes do, against the unkeyed [`PipelineLayer`](super::PipelineLayer):
/// - **key**: `key_by(&request)` runs once per call, in `call`; the key is looked up in every
///   keyed policy and held until the call's future ends. `Rejection::KeysExhausted` (every key of
///   a full table in use) is the call's error (or goes to the fallback), never retried.
/// - **readiness**: `poll_ready` is the inner service's, and nothing else: the key is not known
///   before `call`, so no permit or slot can be reserved for it. The keyed rate limiter and
///   bulkhead wait up to their `max_wait` inside the call and then refuse it
///   (`RateLimitExceeded { retry_after }`, `BulkheadFull` in `E`); a server answers those `429`
///   (see `docs/guides/server-limits.md`). There is no readiness backpressure mode: to shed load
///   before the key is known, put an unkeyed limit (a `PipelineLayer` with `backpressure()`, or
///   tower's `ConcurrencyLimit`) in front.
/// - **attempts**: the first attempt goes to the service instance the caller drove ready; each
///   later one (a retry, a hedge) to a clone, driven ready first. The request is cloned once per
///   attempt (`Req: Clone`; the unkeyed layer's `clone_request` hook is not offered here yet).
/// - **cost**: one boxed future per call (it owns the key and its holds), besides what the
///   pipeline's own `execute_async_for` costs; no allocation per attempt.
///
/// ```
/// use resilience4cata::{Pipeline, Registry};
/// use tower::Layer;
///
/// let registry = Registry::builder().build()?;
/// let keyed = Pipeline::builder(&registry, "api").keyed::<u32>().bulkhead().build::<u32, std::io::Error>()?;
/// let service = keyed.layer().key_by(|n: &u32| n % 10).layer(tower::service_fn(|n: u32| async move { Ok::<_, std::io::Error>(n) }));
/// # let _ = service;
/// # Ok::<(), resilience4cata::RegistryError>(())
/// ```
pub struct KeyedPipelineLayer<K, T, E, F = NoKeyBy> {
    pipeline: Arc<KeyedPipeline<K, T, E>>,
    key_by: F,
}

impl<K, T, E> KeyedPipelineLayer<K, T, E, NoKeyBy> {
    /// How a request names its key: `f(&request)` once per call (an API key header, the client's
    /// address, a tenant id). Only a layer with it wraps services.
    ///
    /// ```
    /// use resilience4cata::{Pipeline, Registry};
    /// use tower::Layer;
    ///
    /// let registry = Registry::builder().build()?;
    /// let keyed = Pipeline::builder(&registry, "api").keyed::<String>().rate_limiter().build::<u32, std::io::Error>()?;
    /// let layer = keyed.layer().key_by(|(tenant, _): &(String, u32)| tenant.clone());
    /// let service = layer.layer(tower::service_fn(|(_, n): (String, u32)| async move { Ok::<_, std::io::Error>(n) }));
    /// # let _ = service;
    /// # Ok::<(), resilience4cata::RegistryError>(())
    /// ```
    pub fn key_by<Req, F>(self, f: F) -> KeyedPipelineLayer<K, T, E, KeyBy<F>>
    where
        F: Fn(&Req) -> K + Clone,
    {
        KeyedPipelineLayer { pipeline: self.pipeline, key_by: KeyBy(f) }
    }
}

impl<K, T, E, F: Clone> Clone for KeyedPipelineLayer<K, T, E, F> {
    fn clone(&self) -> Self {
        KeyedPipelineLayer { pipeline: Arc::clone(&self.pipeline), key_by: self.key_by.clone() }
    }
}

impl<K, T, E, F> fmt::Debug for KeyedPipelineLayer<K, T, E, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyedPipelineLayer").field("pipeline", &self.pipeline).finish_non_exhaustive()
    }
}

impl<S, K, T, E, F: Clone> Layer<S> for KeyedPipelineLayer<K, T, E, KeyBy<F>> {
    type Service = KeyedService<S, K, T, E, F>;

    fn layer(&self, inner: S) -> Self::Service {
        KeyedService { inner, pipeline: Arc::clone(&self.pipeline), key_by: self.key_by.0.clone() }
    }
}

/// A service wrapped by a keyed layer (feature `tower`): see [`KeyedPipelineLayer`] for what it
/// does per call.
///
/// ```
/// use resilience4cata::pipeline::KeyedService;
/// use resilience4cata::{Pipeline, Registry};
/// use tower::{Layer, ServiceExt};
///
/// let registry = Registry::builder().build()?;
/// let keyed = Pipeline::builder(&registry, "api").keyed::<u32>().bulkhead().build::<u32, std::io::Error>()?;
/// let service = keyed.layer().key_by(|n: &u32| n % 2).layer(tower::service_fn(|n: u32| async move { Ok::<_, std::io::Error>(n * 2) }));
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// assert_eq!(service.oneshot(21).await.unwrap(), 42);
/// # });
/// # Ok::<(), resilience4cata::RegistryError>(())
/// ```
pub struct KeyedService<S, K, T, E, F> {
    inner: S,
    pipeline: Arc<KeyedPipeline<K, T, E>>,
    key_by: F,
}

impl<S: Clone, K, T, E, F: Clone> Clone for KeyedService<S, K, T, E, F> {
    fn clone(&self) -> Self {
        KeyedService { inner: self.inner.clone(), pipeline: Arc::clone(&self.pipeline), key_by: self.key_by.clone() }
    }
}

impl<S: fmt::Debug, K, T, E, F> fmt::Debug for KeyedService<S, K, T, E, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyedService")
            .field("inner", &self.inner)
            .field("pipeline", &self.pipeline)
            .finish_non_exhaustive()
    }
}

impl<S, Req, K, T, E, F> Service<Req> for KeyedService<S, K, T, E, F>
where
    S: Service<Req, Response = T, Error = E> + Clone + Send + 'static,
    S::Future: Send + 'static,
    Req: Clone + Send + 'static,
    K: std::hash::Hash + Eq + Clone + fmt::Debug + Send + Sync + 'static,
    F: Fn(&Req) -> K,
    T: Send + 'static,
    E: ResilienceError + Send + 'static,
{
    type Response = T;
    type Error = E;
    type Future = KeyedResponseFuture<T, E>;

    /// The inner service's readiness only: the key is not known yet (see [`KeyedPipelineLayer`]).
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), E>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Req) -> Self::Future {
        let key = (self.key_by)(&request);
        let spare = self.inner.clone();
        let ready = std::mem::replace(&mut self.inner, spare.clone());
        let pipeline = Arc::clone(&self.pipeline);
        Box::pin(async move {
            let mut first = Some(ready);
            let attempt = move || {
                let service = first.take().unwrap_or_else(|| spare.clone());
                call_ready(service, request.clone())
            };
            pipeline.execute_async_for(&key, attempt).await
        })
    }
}

/// One attempt: drive `service` ready (an error there is the attempt's outcome), then call it.
async fn call_ready<S: Service<Req>, Req>(mut service: S, request: Req) -> Result<S::Response, S::Error> {
    std::future::poll_fn(|cx| service.poll_ready(cx)).await?;
    service.call(request).await
}
