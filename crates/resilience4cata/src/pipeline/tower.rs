//! A pipeline as a `tower::Layer`: the same policy objects around any cloneable service.
//!
//! Design: tower needs a nameable `Service::Future`, and on stable Rust the future of an `async fn`
//! cannot be named, so [`ResponseFuture`] is written by hand. It takes no decision of its own: the
//! outcome of each attempt is judged by the pipeline's rules (the same function `execute` uses) and
//! the retry policy object counts, decides, publishes and waits, exactly as for `execute_async`.
//! The future only sequences what those calls say: attempt → judge → wait → ready → attempt.
//!
//! What it allocates: nothing on a successful first attempt, nothing when the retry gives up, and
//! nothing for a zero wait. A non-zero wait between attempts is one boxed future (the registry
//! clock's sleep borrows the policy, and the response future must own what it waits on); that box
//! is the only allocation, and it sits next to a timer registration that costs far more.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use pin_project_lite::pin_project;
use tower_layer::Layer;
use tower_service::Service;

use super::Pipeline;
use crate::ResilienceError;
use crate::retry::policy::{RetryCall, RetryPolicy};

impl<T, E: ResilienceError> Pipeline<T, E> {
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
    pub fn layer(&self) -> PipelineLayer<T, E> {
        PipelineLayer { pipeline: self.clone().detect_rejections() }
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
/// - **cost**: see the module docs of `resilience4cata::pipeline` — nothing is boxed unless the
///   retry waits a non-zero time.
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
pub struct PipelineLayer<T, E> {
    pipeline: Pipeline<T, E>,
}

impl<T, E> Clone for PipelineLayer<T, E> {
    fn clone(&self) -> Self {
        PipelineLayer { pipeline: self.pipeline.clone() }
    }
}

impl<T, E> fmt::Debug for PipelineLayer<T, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PipelineLayer").field("pipeline", &self.pipeline).finish()
    }
}

impl<S, T, E> Layer<S> for PipelineLayer<T, E> {
    type Service = PipelineService<S, T, E>;

    fn layer(&self, inner: S) -> Self::Service {
        PipelineService { inner, pipeline: self.pipeline.clone() }
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
pub struct PipelineService<S, T, E> {
    inner: S,
    pipeline: Pipeline<T, E>,
}

impl<S: Clone, T, E> Clone for PipelineService<S, T, E> {
    fn clone(&self) -> Self {
        PipelineService { inner: self.inner.clone(), pipeline: self.pipeline.clone() }
    }
}

impl<S: fmt::Debug, T, E> fmt::Debug for PipelineService<S, T, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PipelineService").field("inner", &self.inner).field("pipeline", &self.pipeline).finish()
    }
}

impl<S, Req, T, E> Service<Req> for PipelineService<S, T, E>
where
    S: Service<Req, Response = T, Error = E> + Clone,
    Req: Clone,
    E: ResilienceError,
{
    type Response = T;
    type Error = E;
    type Future = ResponseFuture<S, Req, T, E>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), E>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Req) -> Self::Future {
        let call = self.pipeline.retry_policy().map(RetryPolicy::start);
        let Some(max_attempts) = self.pipeline.retry_policy().map(max_attempts).filter(|&n| n > 1) else {
            return ResponseFuture::new(self.pipeline.clone(), call, self.inner.call(request), None);
        };
        let first = self.inner.call(request.clone());
        let later = Later { service: self.inner.clone(), request: Some(request), max_attempts };
        ResponseFuture::new(self.pipeline.clone(), call, first, Some(later))
    }
}

/// Attempts a call can make: 1 without a retry or with it disabled.
fn max_attempts(retry: &RetryPolicy) -> u32 {
    let config = retry.config();
    if config.enabled { config.max_attempts } else { 1 }
}

/// What the attempts after the first need: a service to drive ready, and the original request.
struct Later<S, Req> {
    service: S,
    request: Option<Req>,
    max_attempts: u32,
}

impl<S, Req: Clone> Later<S, Req> {
    /// The request for attempt `number`: a clone, or the original for the last possible attempt.
    fn request(&mut self, number: u32) -> Req {
        let original = if number >= self.max_attempts { self.request.take() } else { self.request.clone() };
        original.expect("the retry grants an attempt only while attempts remain, and the last one takes the original")
    }
}

type Wait = Pin<Box<dyn Future<Output = bool> + Send>>;

/// Where a [`ResponseFuture`] stands.
enum Phase<T, E> {
    /// `attempt` holds an attempt in flight.
    Calling,
    /// Waiting before the next attempt; `failed` is returned if the wait is interrupted.
    Waiting { wait: Wait, failed: Result<T, E> },
    /// Waiting for the service to be ready for the next attempt.
    Readying,
    /// The outcome was returned.
    Done,
}

pin_project! {
    /// The future of a [`PipelineService`] call (feature `tower`): attempts, waits between them, and
    /// the final outcome, with every decision taken by the pipeline's policy objects.
    pub struct ResponseFuture<S, Req, T, E>
    where
        S: Service<Req>,
    {
        #[pin]
        attempt: Option<S::Future>,
        phase: Phase<T, E>,
        call: Option<RetryCall>,
        later: Option<Later<S, Req>>,
        pipeline: Pipeline<T, E>,
    }
}

impl<S, Req, T, E> fmt::Debug for ResponseFuture<S, Req, T, E>
where
    S: Service<Req>,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let phase = match self.phase {
            Phase::Calling => "calling",
            Phase::Waiting { .. } => "waiting",
            Phase::Readying => "readying",
            Phase::Done => "done",
        };
        f.debug_struct("ResponseFuture")
            .field("pipeline", &self.pipeline.id())
            .field("phase", &phase)
            .field("attempts", &self.call.map(|c| c.attempts()))
            .finish()
    }
}

impl<S, Req, T, E> ResponseFuture<S, Req, T, E>
where
    S: Service<Req>,
{
    fn new(pipeline: Pipeline<T, E>, call: Option<RetryCall>, first: S::Future, later: Option<Later<S, Req>>) -> Self {
        ResponseFuture { attempt: Some(first), phase: Phase::Calling, call, later, pipeline }
    }
}

impl<S, Req, T, E> Future for ResponseFuture<S, Req, T, E>
where
    S: Service<Req, Response = T, Error = E>,
    Req: Clone,
{
    type Output = Result<T, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<T, E>> {
        let mut this = self.project();
        loop {
            let outcome = match this.phase {
                Phase::Calling => {
                    let attempt = this.attempt.as_mut().as_pin_mut().expect("an attempt is in flight while calling");
                    let outcome = ready!(attempt.poll(cx));
                    this.attempt.set(None);
                    outcome
                }
                Phase::Waiting { wait, .. } => {
                    let again = ready!(wait.as_mut().poll(cx));
                    let Phase::Waiting { failed, .. } = std::mem::replace(this.phase, Phase::Readying) else {
                        unreachable!("matched above")
                    };
                    if again {
                        continue;
                    }
                    *this.phase = Phase::Done;
                    return Poll::Ready(this.pipeline.rules().give_back(failed));
                }
                Phase::Readying => {
                    let later = this.later.as_mut().expect("only calls that may retry wait for readiness");
                    match ready!(later.service.poll_ready(cx)) {
                        Ok(()) => {
                            let number = this.call.map_or(1, |c| c.attempts() + 1);
                            let request = later.request(number);
                            this.attempt.set(Some(later.service.call(request)));
                            *this.phase = Phase::Calling;
                            continue;
                        }
                        Err(e) => Err(e), // this attempt's outcome: the service could not take it
                    }
                }
                Phase::Done => panic!("`ResponseFuture` polled after completion"),
            };
            match next(this.pipeline, this.call, outcome) {
                Next::Return(outcome) => {
                    *this.phase = Phase::Done;
                    return Poll::Ready(outcome);
                }
                Next::Wait(wait, failed) => *this.phase = Phase::Waiting { wait, failed },
                Next::Again => *this.phase = Phase::Readying,
            }
        }
    }
}

/// What follows an attempt's outcome.
enum Next<T, E> {
    Return(Result<T, E>),
    Wait(Wait, Result<T, E>),
    Again,
}

/// Judges an attempt as `execute_async` does and lets the retry decide; a zero wait (or a clock
/// that cannot wait in a future) is taken on the spot, a non-zero one becomes a boxed wait.
fn next<T, E>(pipeline: &Pipeline<T, E>, call: &mut Option<RetryCall>, outcome: Result<T, E>) -> Next<T, E> {
    let (Some(retry), Some(call)) = (pipeline.retry_policy(), call.as_mut()) else {
        return Next::Return(outcome);
    };
    let Some(failure) = pipeline.rules().judge(&outcome) else {
        return Next::Return(outcome);
    };
    match retry.next_wait(call, failure) {
        None => Next::Return(pipeline.rules().give_back(outcome)),
        Some(wait) if wait.is_zero() || !pipeline.waits_async() => {
            if retry.wait_blocking(call, wait) {
                Next::Again
            } else {
                Next::Return(pipeline.rules().give_back(outcome))
            }
        }
        Some(wait) => {
            let (retry, call) = (retry.clone(), *call);
            Next::Wait(Box::pin(async move { retry.wait_async(&call, wait).await }), outcome)
        }
    }
}
