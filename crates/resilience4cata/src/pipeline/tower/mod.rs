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
//! - a pipeline with a fallback ([`Pipeline::fallback`] / [`Pipeline::fallback_async`]): the final
//!   `Err` goes to it with the attempt count, as in `execute_async`; a sync fallback allocates
//!   nothing, an async one is the future the pipeline boxes once per fallback call, awaited by the
//!   response future in a phase of its own;
//! - a pipeline with a rate limiter, timeout or bulkhead: one boxed future per attempt as well,
//!   which runs the pipeline's own attempt code (their waits, deadlines and slots borrow their
//!   policies, so the same reason applies). This is the one place a pipeline boxes; `execute` and
//!   `execute_async` never do.
//!
//! Backpressure (opt-in, `backpressure.rs`): `poll_ready` reserves the rate limiter's permit and
//! the bulkhead's slot for the service's next call (owned, so they live in the service between
//! `poll_ready` and `call`), and `call` hands them to the first attempt through the same attempt
//! code (`Guards::run_async` uses what was reserved instead of asking).

mod backpressure;
mod future;
mod keyed;

use std::fmt;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use tower_layer::Layer;
use tower_service::Service;

use self::backpressure::Backpressure;
pub use self::future::ResponseFuture;
use self::future::{Attempt, Later, max_attempts};
pub use self::keyed::{KeyBy, KeyedPipelineLayer, KeyedResponseFuture, KeyedService, NoKeyBy};
use super::Pipeline;
use super::guards::Reserved;
use super::typestate::SyncOrAsync;
use crate::ResilienceError;
use crate::retry::policy::RetryPolicy;

/// How a [`PipelineService`] copies a request for another attempt (feature `tower`), as tower's
/// retry `Policy::clone_request`: `Some(copy)` lets the call go on, `None` makes the attempt that
/// receives the original the call's last (the retry is not asked after it). A closure given to
/// [`PipelineLayer::clone_request`] is one; so is a type of your own:
///
/// ```
/// use resilience4cata::pipeline::CloneRequest;
///
/// /// Copies uploads smaller than 1 MiB; bigger ones are sent once.
/// #[derive(Clone)]
/// struct SmallOnly;
///
/// impl CloneRequest<Vec<u8>> for SmallOnly {
///     fn clone_request(&self, body: &Vec<u8>) -> Option<Vec<u8>> {
///         (body.len() < 1 << 20).then(|| body.clone())
///     }
/// }
///
/// assert_eq!(SmallOnly.clone_request(&vec![1, 2]), Some(vec![1, 2]));
/// assert_eq!(SmallOnly.clone_request(&vec![0; 2 << 20]), None);
/// ```
pub trait CloneRequest<Req> {
    /// A copy of `request` for another attempt, or `None` when it cannot be copied (a streaming
    /// body).
    fn clone_request(&self, request: &Req) -> Option<Req>;
}

/// The default [`CloneRequest`]: `Req: Clone` (feature `tower`).
///
/// ```
/// use resilience4cata::pipeline::{ByClone, CloneRequest};
/// assert_eq!(ByClone.clone_request(&"GET /stock".to_owned()), Some("GET /stock".to_owned()));
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct ByClone;

impl<Req: Clone> CloneRequest<Req> for ByClone {
    #[inline]
    fn clone_request(&self, request: &Req) -> Option<Req> {
        Some(request.clone())
    }
}

/// A [`CloneRequest`] from a closure, set with [`PipelineLayer::clone_request`] (feature `tower`),
/// which shows it in use. Its type names the closure; to name it in a struct field, give
/// `clone_request` a function pointer ([`CloneFn`]).
#[derive(Clone, Copy)]
pub struct CloneWith<F>(F);

impl<F> fmt::Debug for CloneWith<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("CloneWith(..)")
    }
}

/// A [`CloneWith`] holding a function pointer, so a service using it can be named (feature
/// `tower`): give [`PipelineLayer::clone_request`] a `fn` (or a closure that captures nothing)
/// cast to `fn(&Req) -> Option<Req>`. [`ResilientService`] shows one stored in a struct field.
pub type CloneFn<Req> = CloneWith<fn(&Req) -> Option<Req>>;

impl<Req, F: Fn(&Req) -> Option<Req>> CloneRequest<Req> for CloneWith<F> {
    #[inline]
    fn clone_request(&self, request: &Req) -> Option<Req> {
        (self.0)(request)
    }
}

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
    ///
    /// The layer runs only async calls, whatever the pipeline's mode, so it drops the mode: a
    /// pipeline with a timeout ([`AsyncPipeline`](super::AsyncPipeline)) gives the same layer type
    /// as one without, and the services it makes are [`ResilientService<S, Req>`](ResilientService).
    pub fn layer(&self) -> PipelineLayer<T, E> {
        let pipeline = self.clone().detect_rejections().into_mode::<SyncOrAsync>();
        PipelineLayer { pipeline: Arc::new(pipeline), cloner: ByClone, backpressure: false }
    }
}

/// A `tower::Layer` that applies a [`Pipeline`] to a service (feature `tower`); made by
/// [`Pipeline::layer`].
///
/// `M` is always [`SyncOrAsync`] for a layer `Pipeline::layer` made (the layer runs async calls
/// only, so the pipeline's mode does not matter to it); the parameter stays so that types written
/// with it still name a type. The services it makes are named [`ResilientService<S, Req>`].
///
/// The wrapped service must be `Service<Req, Response = T, Error = E> + Clone` with `Req: Clone`
/// (or a [`clone_request`](PipelineLayer::clone_request) hook for requests that are not always
/// cloneable) and `E: ResilienceError` (so a nested open breaker's refusal is found and never
/// retried):
/// - **readiness**: `poll_ready` is the inner service's (after the reservations of
///   [`backpressure`](PipelineLayer::backpressure), when asked for). The first attempt is sent to the instance
///   the caller drove ready; each later attempt first waits for a clone of the service to be ready.
///   An error from that readiness check is that attempt's outcome, judged like any other.
/// - **requests**: cloned at most once per attempt, and never when only one attempt is possible
///   (no retry, retry disabled, or `max_attempts = 1`); the last possible attempt consumes the
///   original request. The service is cloned once per call, only when a retry is possible. With
///   a `clone_request` hook, a request it cannot copy gets one attempt, and the retry is not
///   asked after it.
/// - **backpressure**, two modes:
///   - *refusal* (the default, the SPEC's): `poll_ready` reserves nothing; a bulkhead or rate
///     limiter in the pipeline waits up to its `max_wait` inside the call, then refuses it
///     (`BulkheadFull`, `RateLimitExceeded { retry_after }` in `E`), exactly as a `#[resilient]`
///     method does. Pick it in a client: the caller gets a fast, typed refusal it can report,
///     fall back from or retry after `retry_after`.
///   - *readiness* ([`backpressure`](PipelineLayer::backpressure)): `poll_ready` is `Pending`
///     until the service holds the rate limiter's next permit (reserved at once, ready when its
///     time comes on the registry's clock) and a bulkhead slot (in the bulkhead's arrival-order
///     queue), then it is the inner service's readiness; `max_wait` does not bound these waits,
///     as in tower's `RateLimit` and `ConcurrencyLimit`. The call's first attempt uses what was
///     reserved; later attempts (retries) take their own as in the default mode. What the call
///     does not use is given back: a service dropped ready or while waiting, a first attempt the
///     breaker refuses (a call the breaker refuses takes no permit, as always). A clone starts
///     unreserved. A hedged pipeline does not use the reservation yet: it is given back as the
///     call starts, and each hedged attempt takes its own. A `call` without a ready `poll_ready`
///     does not panic (unlike `ConcurrencyLimit`): its first attempt asks the policies itself.
///     Pick it in a server or
///     behind `tower::buffer`/`balance`/`load_shed`, where "not ready" is what queues or sheds
///     load; bound the wait with tower's `timeout` or `load_shed` in front.
///   - compared with putting `tower::limit::ConcurrencyLimit` / `RateLimit` outside the layer:
///     the limits here are the registry's instances (shared by id with every wrapper and
///     pipeline, with their events, snapshots and configuration); the rate limiter is GCRA
///     (a burst of `permits`, then one permit every `period / permits`) rather than a fixed
///     window; a waiting bulkhead place is FIFO. After `Registry::shutdown`, a wait for a permit
///     ends in `RateLimitExceeded` as the readiness error; a wait for a slot is woken only by a
///     slot freeing, and is then refused with `BulkheadFull` unless the slot reached it. On the
///     system clock without the `tokio` feature nothing can time a wait in `poll_ready`, so only
///     the bulkhead slot is reserved there and the rate limiter acts inside the call.
/// - **order**: the layer drives the retry itself, around one attempt at a time, so a pipeline
///   reordered with [`PipelineBuilder::order`](crate::PipelineBuilder::order) keeps its order among
///   the other policies, but a policy ordered *outside* the retry runs once per attempt here, as if
///   listed just inside it (use `execute_async` for a policy that must span the retried call).
/// - **cost**: the response future is a hand-written state machine (an `async fn` future cannot be
///   named on stable Rust) that takes no decision of its own. With a retry and/or a circuit breaker,
///   a call allocates nothing unless the retry waits a non-zero time between attempts (that wait is
///   one boxed future: the registry clock's sleep borrows the policy); the breaker's permit is an
///   owned one (a reference count up and down). With a rate limiter, timeout or bulkhead, each
///   attempt is one boxed future running the pipeline's own attempt code, for the same reason.
///   `execute` and `execute_async` never box. Readiness backpressure adds, per call, a
///   compare-and-set and a reference count per reserving policy, and no allocation unless a
///   rate limiter permit must be waited for (its timer, one box).
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
pub struct PipelineLayer<T, E, M = SyncOrAsync, C = ByClone> {
    pipeline: Arc<Pipeline<T, E, M>>,
    cloner: C,
    backpressure: bool,
}

impl<T, E, M> PipelineLayer<T, E, M> {
    /// For requests that are not always cloneable (an `http::Request` with a streaming body): `f`
    /// copies a request for another attempt, or returns `None`, and then the attempt that takes
    /// the original is the call's last, as with tower's retry `Policy::clone_request`. A request
    /// `f` cannot copy before the first attempt makes a call of one attempt: the retry is not
    /// started, asked or counted for it (no `Retrying` or `GaveUp` event), while the inner
    /// policies (breaker, limiter, timeout, bulkhead) still apply. The service no longer needs
    /// `Req: Clone`.
    ///
    /// ```
    /// use resilience4cata::{Pipeline, Registry};
    /// use tower::{Layer, ServiceExt};
    ///
    /// /// A request whose body may be a one-shot stream.
    /// enum Body { Bytes(Vec<u8>), Stream(std::sync::mpsc::Receiver<Vec<u8>>) }
    ///
    /// let registry = Registry::builder().build()?;
    /// let layer = Pipeline::builder(&registry, "upload").retry().build::<usize, std::io::Error>()?.layer();
    /// let layer = layer.clone_request(|body: &Body| match body {
    ///     Body::Bytes(bytes) => Some(Body::Bytes(bytes.clone())),
    ///     Body::Stream(_) => None, // one attempt: a stream cannot be sent twice
    /// });
    /// let service = layer.layer(tower::service_fn(|body: Body| async move {
    ///     Ok::<_, std::io::Error>(match body { Body::Bytes(b) => b.len(), Body::Stream(_) => 0 })
    /// }));
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// assert_eq!(service.oneshot(Body::Bytes(vec![1, 2, 3])).await.unwrap(), 3);
    /// # });
    /// # Ok::<(), resilience4cata::RegistryError>(())
    /// ```
    pub fn clone_request<Req, F>(self, f: F) -> PipelineLayer<T, E, M, CloneWith<F>>
    where
        F: Fn(&Req) -> Option<Req> + Clone + Send + 'static,
    {
        PipelineLayer { pipeline: self.pipeline, cloner: CloneWith(f), backpressure: self.backpressure }
    }
}

impl<T, E, M, C> PipelineLayer<T, E, M, C> {
    /// Backpressure through `poll_ready`, as tower's `ConcurrencyLimit` and `RateLimit` apply it:
    /// a service made by this layer is ready only once it holds its next call's rate limiter
    /// permit and bulkhead slot, and that call's first attempt uses them. See
    /// [`PipelineLayer`]'s "backpressure" for the two modes and when to pick which.
    ///
    /// ```
    /// use std::task::{Context, Poll, Waker};
    /// use resilience4cata::{Pipeline, Registry};
    /// use tower::{Layer, Service, ServiceExt};
    ///
    /// let registry = Registry::builder().build()?;
    /// let pipeline = Pipeline::builder(&registry, "pool")
    ///     .bulkhead_with(|b| b.max_concurrent_calls(1))
    ///     .build::<u32, std::io::Error>()?;
    /// let backend = tower::service_fn(|n: u32| async move { Ok::<_, std::io::Error>(n) });
    /// let mut first = pipeline.layer().backpressure().layer(backend);
    /// let mut second = first.clone(); // a clone starts without a reservation
    /// let mut cx = Context::from_waker(Waker::noop());
    /// assert!(first.poll_ready(&mut cx).is_ready()); // holds the only slot
    /// assert!(second.poll_ready(&mut cx).is_pending()); // waits for it instead of being refused
    /// drop(first); // the reservation goes back with the service
    /// assert!(second.poll_ready(&mut cx).is_ready());
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// assert_eq!(second.call(7).await.unwrap(), 7);
    /// # });
    /// # Ok::<(), resilience4cata::RegistryError>(())
    /// ```
    pub fn backpressure(mut self) -> Self {
        self.backpressure = true;
        self
    }
}

impl<T, E, M, C: Clone> Clone for PipelineLayer<T, E, M, C> {
    fn clone(&self) -> Self {
        PipelineLayer {
            pipeline: Arc::clone(&self.pipeline),
            cloner: self.cloner.clone(),
            backpressure: self.backpressure,
        }
    }
}

impl<T, E, M, C> fmt::Debug for PipelineLayer<T, E, M, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PipelineLayer")
            .field("pipeline", &self.pipeline)
            .field("backpressure", &self.backpressure)
            .finish_non_exhaustive()
    }
}

impl<S, T, E, M, C: Clone> Layer<S> for PipelineLayer<T, E, M, C> {
    type Service = PipelineService<S, T, E, M, C>;

    fn layer(&self, inner: S) -> Self::Service {
        PipelineService {
            inner,
            pipeline: Arc::clone(&self.pipeline),
            cloner: self.cloner.clone(),
            backpressure: self.backpressure.then(Backpressure::default),
        }
    }
}

/// A service wrapped by a [`PipelineLayer`] (feature `tower`); [`ResilientService<S, Req>`]
/// names it from the inner service and the request alone.
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
pub struct PipelineService<S, T, E, M = SyncOrAsync, C = ByClone> {
    inner: S,
    /// Shared with every response future: one reference count up and down per call.
    pipeline: Arc<Pipeline<T, E, M>>,
    cloner: C,
    /// `Some` under [`PipelineLayer::backpressure`]: what `poll_ready` reserved for the next call.
    backpressure: Option<Backpressure>,
}

/// The service [`Pipeline::layer`] makes of `S` for requests `Req` (feature `tower`), named by
/// the inner service and the request: `T` and `E` are `S`'s response and error, and the
/// pipeline's mode does not appear (the layer runs async calls only, see [`Pipeline::layer`]).
/// `C` is how requests are copied: [`ByClone`] (the default) or, after
/// [`clone_request`](PipelineLayer::clone_request) with a function pointer, [`CloneFn<Req>`].
/// A struct field can hold it, so a client needs no `BoxService` (no allocation, no dynamic
/// call):
///
/// ```
/// use std::time::Duration;
/// use resilience4cata::pipeline::{CloneFn, ResilientService};
/// use resilience4cata::{Pipeline, Registry, RegistryError};
/// use tower::{Layer, Service, ServiceExt};
///
/// /// The backend: a plain tower service with a nameable type.
/// #[derive(Clone)]
/// struct Inventory;
///
/// impl Service<String> for Inventory {
///     type Response = u32;
///     type Error = std::io::Error;
///     type Future = std::future::Ready<Result<u32, std::io::Error>>;
///     fn poll_ready(&mut self, _: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), Self::Error>> {
///         std::task::Poll::Ready(Ok(()))
///     }
///     fn call(&mut self, sku: String) -> Self::Future {
///         std::future::ready(Ok(sku.len() as u32))
///     }
/// }
///
/// struct StockClient {
///     /// With a timeout, so the pipeline is async-only: the service's type does not say so.
///     stock: ResilientService<Inventory, String>,
///     /// Requests copied by a function, named through `CloneFn`.
///     reserve: ResilientService<Inventory, String, CloneFn<String>>,
/// }
///
/// fn copy_sku(sku: &String) -> Option<String> {
///     Some(sku.clone())
/// }
///
/// fn client(registry: &Registry) -> Result<StockClient, RegistryError> {
///     let stock = Pipeline::builder(registry, "stock")
///         .retry()
///         .timeout_with(|t| t.duration(Duration::from_secs(1)))
///         .build()?
///         .layer()
///         .layer(Inventory);
///     let reserve = Pipeline::builder(registry, "reserve")
///         .retry()
///         .build()?
///         .layer()
///         .clone_request(copy_sku as fn(&String) -> Option<String>)
///         .layer(Inventory);
///     Ok(StockClient { stock, reserve })
/// }
///
/// let client = client(&Registry::builder().build()?)?;
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// assert_eq!(client.stock.clone().oneshot("sku-1".to_owned()).await.unwrap(), 5);
/// assert_eq!(client.reserve.clone().oneshot("sku-22".to_owned()).await.unwrap(), 6);
/// # });
/// # Ok::<(), RegistryError>(())
/// ```
pub type ResilientService<S, Req, C = ByClone> =
    PipelineService<S, <S as Service<Req>>::Response, <S as Service<Req>>::Error, SyncOrAsync, C>;

impl<S: Clone, T, E, M, C: Clone> Clone for PipelineService<S, T, E, M, C> {
    /// A clone starts without a reservation, as tower expects of a clone of a ready service.
    fn clone(&self) -> Self {
        PipelineService {
            inner: self.inner.clone(),
            pipeline: Arc::clone(&self.pipeline),
            cloner: self.cloner.clone(),
            backpressure: self.backpressure.as_ref().map(|_| Backpressure::default()),
        }
    }
}

impl<S: fmt::Debug, T, E, M, C> fmt::Debug for PipelineService<S, T, E, M, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PipelineService")
            .field("inner", &self.inner)
            .field("pipeline", &self.pipeline)
            .finish_non_exhaustive()
    }
}

impl<S, Req, T, E, M, C> Service<Req> for PipelineService<S, T, E, M, C>
where
    S: Service<Req, Response = T, Error = E> + Clone + Send + 'static,
    S::Future: Send + 'static,
    C: CloneRequest<Req> + Clone,
    Req: Send + 'static,
    T: Send + 'static,
    E: ResilienceError + Send + 'static,
    M: 'static,
{
    type Response = T;
    type Error = E;
    type Future = ResponseFuture<S, Req, T, E, M, C>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), E>> {
        if let (Some(backpressure), Some(guards)) = (&mut self.backpressure, self.pipeline.guards()) {
            ready!(backpressure.poll_reserve(guards, self.pipeline.waits_async(), cx))?;
        }
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Req) -> Self::Future {
        let reserved = self.backpressure.as_mut().map_or_else(Reserved::default, Backpressure::take);
        let pipeline = &self.pipeline;
        if let Some(extra) = pipeline.hedged_attempts()
            && let Some(copies) = (0..extra).map(|_| self.cloner.clone_request(&request)).collect::<Option<Vec<_>>>()
        {
            let spare = self.inner.clone();
            let ready = std::mem::replace(&mut self.inner, spare);
            let attempt = Attempt::hedged(Arc::clone(pipeline), ready, request, copies);
            return ResponseFuture::new(Arc::clone(pipeline), None, attempt, None);
        }
        let max_attempts = pipeline.retry_policy().map_or(1, max_attempts);
        let copy = if max_attempts <= 1 { None } else { self.cloner.clone_request(&request) };
        let Some(copy) = copy else {
            // One attempt only: no retry, or a request that cannot be copied (then the retry is
            // not started, so a budget does not count the call).
            let call = if max_attempts <= 1 { pipeline.retry_policy().map(RetryPolicy::start) } else { None };
            let first = Attempt::start(pipeline, &mut self.inner, request, reserved);
            return ResponseFuture::new(Arc::clone(pipeline), call, first, None);
        };
        let call = pipeline.retry_policy().map(RetryPolicy::start);
        let first = Attempt::start(pipeline, &mut self.inner, copy, reserved);
        let service = first.keeps_service().then(|| self.inner.clone());
        let later = Later { service, request: Some(request), max_attempts, cloner: self.cloner.clone() };
        ResponseFuture::new(Arc::clone(pipeline), call, first, Some(later))
    }
}
