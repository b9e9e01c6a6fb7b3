//! A pipeline as a `tower::Layer`: the same policy objects around any cloneable service.
//!
//! Design: tower needs a nameable `Service::Future`, and on stable Rust the future of an `async fn`
//! cannot be named, so [`ResponseFuture`] is written by hand. It takes no decision of its own: each
//! attempt's outcome is judged by the pipeline's rules (the function `execute` uses), the retry
//! policy object counts, decides, publishes and waits, and the inner policies run through the
//! pipeline's own attempt code. The future only sequences: attempt → judge → wait → ready → attempt.
//!
//! What it allocates, per call:
//! - a pipeline whose only policy is a retry (or none): nothing on a successful first attempt,
//!   nothing when the retry gives up, nothing for a zero wait; a non-zero wait between attempts is
//!   one boxed future (the registry clock's sleep borrows the policy, and the response future must
//!   own what it waits on), next to a timer registration that costs far more;
//! - a pipeline whose only inner policy is a circuit breaker: the same, unboxed; each attempt
//!   takes an owned permit (one reference count up and down), calls the service only if admitted,
//!   and records the outcome as the generated breaker layer does;
//! - a pipeline with a rate limiter, timeout or bulkhead: one boxed future per attempt as well,
//!   which runs the pipeline's own attempt code (their waits, deadlines and slots borrow their
//!   policies, so the same reason applies). This is the one place a pipeline boxes; `execute` and
//!   `execute_async` never do.

mod future;

use std::fmt;
use std::sync::Arc;
use std::task::{Context, Poll};

use tower_layer::Layer;
use tower_service::Service;

pub use self::future::ResponseFuture;
use self::future::{Attempt, Later, max_attempts};
use super::Pipeline;
use super::kind::SyncOrAsync;
use crate::ResilienceError;
use crate::retry::policy::RetryPolicy;

impl<T, E: ResilienceError, M> Pipeline<T, E, M> {
    /// This pipeline as a `tower::Layer` (feature `tower`). The layer shares the pipeline's
    /// instances; see [`PipelineLayer`] for what it needs of the service.
    ///
    /// ```
    /// use std::convert::Infallible;
    /// use resilience4cata::{Pipeline, Registry};
    /// use tower::{ServiceBuilder, ServiceExt, service_fn};
    ///
    /// let registry = Registry::builder().build()?;
    /// let pipeline = Pipeline::builder(&registry, "echo").retry().build::<String, std::io::Error>()?;
    /// let service = ServiceBuilder::new()
    ///     .layer(pipeline.layer())
    ///     .service(service_fn(|req: String| async move { Ok::<_, std::io::Error>(req) }));
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// assert_eq!(service.oneshot("hi".to_owned()).await.unwrap(), "hi");
    /// # });
    /// # Ok::<(), resilience4cata::RegistryError>(())
    /// ```
    pub fn layer(&self) -> PipelineLayer<T, E, M> {
        PipelineLayer { pipeline: Arc::new(self.clone().detect_rejections()) }
    }
}

/// A `tower::Layer` that applies a [`Pipeline`] to a service (feature `tower`); made by
/// [`Pipeline::layer`].
///
/// The wrapped service must be `Service<Req, Response = T, Error = E> + Clone` with `Req: Clone`
/// and `E: ResilienceError` (so a nested open breaker's refusal is found and never retried):
/// - **readiness**: `poll_ready` is the inner service's. The first attempt is sent to the instance
///   the caller drove ready; each later attempt first waits for a clone of the service to be ready.
///   An error from that readiness check is that attempt's outcome, judged like any other.
/// - **requests**: cloned at most once per attempt, and never when only one attempt is possible
///   (no retry, retry disabled, or `max_attempts = 1`); the last possible attempt consumes the
///   original request. The service is cloned once per call, only when a retry is possible.
/// - **cost**: the response future is a hand-written state machine (an `async fn` future cannot be
///   named on stable Rust) that takes no decision of its own. With a retry and/or a circuit breaker,
///   a call allocates nothing unless the retry waits a non-zero time between attempts (that wait is
///   one boxed future: the registry clock's sleep borrows the policy); the breaker's permit is an
///   owned one (a reference count up and down). With a rate limiter, timeout or bulkhead, each
///   attempt is one boxed future running the pipeline's own attempt code, for the same reason.
///   `execute` and `execute_async` never box.
///
/// ```
/// use resilience4cata::{Pipeline, Registry};
/// use tower::Layer;
///
/// let registry = Registry::builder().build()?;
/// let layer = Pipeline::builder(&registry, "inner").retry().build::<u32, std::io::Error>()?.layer();
/// let service = layer.layer(tower::service_fn(|n: u32| async move { Ok::<_, std::io::Error>(n) }));
/// # let _ = service;
/// # Ok::<(), resilience4cata::RegistryError>(())
/// ```
pub struct PipelineLayer<T, E, M = SyncOrAsync> {
    pipeline: Arc<Pipeline<T, E, M>>,
}

impl<T, E, M> Clone for PipelineLayer<T, E, M> {
    fn clone(&self) -> Self {
        PipelineLayer { pipeline: Arc::clone(&self.pipeline) }
    }
}

impl<T, E, M> fmt::Debug for PipelineLayer<T, E, M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PipelineLayer").field("pipeline", &self.pipeline).finish()
    }
}

impl<S, T, E, M> Layer<S> for PipelineLayer<T, E, M> {
    type Service = PipelineService<S, T, E, M>;

    fn layer(&self, inner: S) -> Self::Service {
        PipelineService { inner, pipeline: Arc::clone(&self.pipeline) }
    }
}

/// A service wrapped by a [`PipelineLayer`] (feature `tower`).
///
/// ```
/// use resilience4cata::{Pipeline, Registry};
/// use tower::{Layer, ServiceExt};
///
/// let registry = Registry::builder().build()?;
/// let layer = Pipeline::builder(&registry, "double").retry().build::<u32, std::io::Error>()?.layer();
/// let service = layer.layer(tower::service_fn(|n: u32| async move { Ok::<_, std::io::Error>(n * 2) }));
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// assert_eq!(service.oneshot(21).await.unwrap(), 42);
/// # });
/// # Ok::<(), resilience4cata::RegistryError>(())
/// ```
pub struct PipelineService<S, T, E, M = SyncOrAsync> {
    inner: S,
    /// Shared with every response future: one reference count up and down per call.
    pipeline: Arc<Pipeline<T, E, M>>,
}

impl<S: Clone, T, E, M> Clone for PipelineService<S, T, E, M> {
    fn clone(&self) -> Self {
        PipelineService { inner: self.inner.clone(), pipeline: Arc::clone(&self.pipeline) }
    }
}

impl<S: fmt::Debug, T, E, M> fmt::Debug for PipelineService<S, T, E, M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PipelineService").field("inner", &self.inner).field("pipeline", &self.pipeline).finish()
    }
}

impl<S, Req, T, E, M> Service<Req> for PipelineService<S, T, E, M>
where
    S: Service<Req, Response = T, Error = E> + Clone + Send + 'static,
    S::Future: Send + 'static,
    Req: Clone + Send + 'static,
    T: Send + 'static,
    E: ResilienceError + Send + 'static,
    M: 'static,
{
    type Response = T;
    type Error = E;
    type Future = ResponseFuture<S, Req, T, E, M>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), E>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Req) -> Self::Future {
        let pipeline = &self.pipeline;
        if pipeline.is_hedged() {
            let spare = self.inner.clone();
            let ready = std::mem::replace(&mut self.inner, spare);
            let attempt = Attempt::hedged(Arc::clone(pipeline), ready, request);
            return ResponseFuture::new(Arc::clone(pipeline), None, attempt, None);
        }
        let call = pipeline.retry_policy().map(RetryPolicy::start);
        let max_attempts = pipeline.retry_policy().map_or(1, max_attempts);
        let (first, later) = if max_attempts <= 1 {
            (Attempt::start(pipeline, &mut self.inner, request), None)
        } else {
            let first = Attempt::start(pipeline, &mut self.inner, request.clone());
            let service = first.keeps_service().then(|| self.inner.clone());
            (first, Some(Later { service, request: Some(request), max_attempts }))
        };
        ResponseFuture::new(Arc::clone(pipeline), call, first, later)
    }
}
