//! The two adapters that sit around [`Pipeline::layer`](resilience4cata::Pipeline::layer) in a
//! tonic client stack, outermost first:
//!
//! ```text
//! generated client ─ Replay ─ PipelineService (retry, breaker, timeout) ─ GrpcAttempt ─ Channel
//!    http::Request<tonic Body>   http::Request<Bytes>, one copy per attempt   http::Request<tonic Body>
//! ```
//!
//! - [`Replay`] reads the request body (a unary call's one encoded message) into `Bytes`, so the
//!   pipeline can copy the request for each attempt (`http::Request<Bytes>` is `Clone`: no
//!   `clone_request` hook needed), and hands the final failure back as the `tonic::Status` the
//!   generated client returns (an open breaker becomes `UNAVAILABLE`, a timeout
//!   `DEADLINE_EXCEEDED`, see [`codes`] for the table).
//! - [`GrpcAttempt`] is one attempt: it tells the server the attempt's deadline in
//!   `grpc-timeout`, sends the request, and turns a response that carries a non-OK
//!   `grpc-status` in its headers (the "trailers-only" answer a server gives to a call that fails
//!   before any message, as a unary error always does) into an `Err`, so the policies see it.
//!
//! Limits: the layer judges the headers, so a status sent in trailers after a message (a stream
//! that fails half-way) goes back to the caller unjudged; and [`Replay`] buffers the whole
//! request, so it is for unary and server-streaming calls, not client-streaming or bidirectional
//! ones (their request is a stream that cannot be sent twice).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use tonic::body::Body;
use tonic::{Code, Status, TimeoutExpired};
use tower::{Layer, Service};

use crate::codes::{self, GrpcError};
use crate::deadline;

/// A boxed response future of the adapters (they await a body or map an outcome).
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = Result<T, GrpcError>> + Send>>;

/// Makes [`Replay`] services: put it outside `pipeline.layer()`, with [`AttemptLayer`] inside.
///
/// The stack of the module docs, around a stand-in for a tonic `Channel` that answers
/// `UNAVAILABLE` (a trailers-only response) and then `OK`:
///
/// ```
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicU32, Ordering};
/// use std::time::Duration;
/// use resilience4cata::{Pipeline, Registry};
/// use resilience4cata_grpc_example::layers::{AttemptLayer, ReplayLayer};
/// use resilience4cata_grpc_example::{GrpcError, GrpcResponse, with_grpc_rules};
/// use tonic::body::Body;
/// use tower::{ServiceBuilder, ServiceExt, service_fn};
///
/// let calls = Arc::new(AtomicU32::new(0));
/// let seen = Arc::clone(&calls);
/// let channel = service_fn(move |request: http::Request<Body>| {
///     let status = if seen.fetch_add(1, Ordering::SeqCst) == 0 { "14" } else { "0" };
///     let told = request.headers()["grpc-timeout"].clone();
///     async move {
///         assert_eq!(told, "1S");
///         Ok::<_, std::convert::Infallible>(http::Response::builder().header("grpc-status", status).body(Body::empty()).unwrap())
///     }
/// });
///
/// let registry = Registry::builder().build()?;
/// let pipeline = Pipeline::builder(&registry, "inventory")
///     .retry_with(|r| r.delay(Duration::from_millis(1)))
///     .build::<GrpcResponse, GrpcError>()?;
/// let service = ServiceBuilder::new()
///     .layer(ReplayLayer)
///     .layer(with_grpc_rules(pipeline).layer())
///     .layer(AttemptLayer::with_deadline(Duration::from_secs(1)))
///     .service(channel);
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let response = service.oneshot(http::Request::new(Body::empty())).await.unwrap();
/// assert_eq!(response.headers()["grpc-status"], "0");
/// # });
/// assert_eq!(calls.load(Ordering::SeqCst), 2); // UNAVAILABLE was retried
/// # Ok::<(), resilience4cata::RegistryError>(())
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct ReplayLayer;

impl<S> Layer<S> for ReplayLayer {
    type Service = Replay<S>;

    fn layer(&self, inner: S) -> Replay<S> {
        Replay { inner }
    }
}

/// Buffers a request's body so each attempt can resend it, and returns failures as
/// `tonic::Status` (module docs).
#[derive(Clone, Debug)]
pub struct Replay<S> {
    inner: S,
}

impl<S, B> Service<http::Request<Body>> for Replay<S>
where
    S: Service<http::Request<Bytes>, Response = http::Response<B>, Error = GrpcError> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = http::Response<B>;
    type Error = GrpcError;
    type Future = BoxFuture<http::Response<B>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), GrpcError>> {
        self.inner.poll_ready(cx).map_err(|e| Box::new(codes::into_status(e)) as GrpcError)
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        // The ready service goes with the call; a clone waits for the next `poll_ready`.
        let spare = self.inner.clone();
        let mut ready = std::mem::replace(&mut self.inner, spare);
        Box::pin(async move {
            let (parts, body) = request.into_parts();
            let bytes = body.collect().await.map_err(|status| Box::new(status) as GrpcError)?.to_bytes();
            let outcome = ready.call(http::Request::from_parts(parts, bytes)).await;
            outcome.map_err(|e| Box::new(codes::into_status(e)) as GrpcError)
        })
    }
}

/// Makes [`GrpcAttempt`] services: put it inside `pipeline.layer()`, with the pipeline's
/// timeout as the deadline it announces.
#[derive(Clone, Copy, Debug, Default)]
pub struct AttemptLayer {
    deadline: Option<Duration>,
}

impl AttemptLayer {
    /// Attempts that announce `deadline` (the pipeline's timeout) in `grpc-timeout`, or the
    /// caller's own deadline when that is shorter.
    ///
    /// ```
    /// use std::time::Duration;
    /// use resilience4cata_grpc_example::layers::AttemptLayer;
    ///
    /// let layer = AttemptLayer::with_deadline(Duration::from_millis(500));
    /// # let _ = layer;
    /// ```
    pub fn with_deadline(deadline: Duration) -> Self {
        AttemptLayer { deadline: Some(deadline) }
    }
}

impl<S> Layer<S> for AttemptLayer {
    type Service = GrpcAttempt<S>;

    fn layer(&self, inner: S) -> GrpcAttempt<S> {
        GrpcAttempt { inner, deadline: self.deadline }
    }
}

/// One attempt of a call: announces the deadline, sends, and turns a non-OK status into an `Err`
/// (module docs).
#[derive(Clone, Debug)]
pub struct GrpcAttempt<S> {
    inner: S,
    deadline: Option<Duration>,
}

impl<S, B> Service<http::Request<Bytes>> for GrpcAttempt<S>
where
    S: Service<http::Request<Body>, Response = http::Response<B>>,
    S::Error: Into<GrpcError>,
    S::Future: Send + 'static,
{
    type Response = http::Response<B>;
    type Error = GrpcError;
    type Future = BoxFuture<http::Response<B>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), GrpcError>> {
        self.inner.poll_ready(cx).map_err(|e| Box::new(transport_status(e.into())) as GrpcError)
    }

    fn call(&mut self, mut request: http::Request<Bytes>) -> Self::Future {
        if let Some(deadline) = self.deadline {
            announce(request.headers_mut(), deadline);
        }
        let sent = self.inner.call(request.map(|bytes| Body::new(Full::new(bytes))));
        Box::pin(async move {
            let response = sent.await.map_err(|e| Box::new(transport_status(e.into())) as GrpcError)?;
            match status_of(&response) {
                Some(status) => Err(Box::new(status) as GrpcError),
                None => Ok(response),
            }
        })
    }
}

/// Writes `deadline` into `grpc-timeout`, unless the caller's own (set with
/// `tonic::Request::set_timeout`) is shorter.
fn announce(headers: &mut http::HeaderMap, deadline: Duration) {
    let callers = headers.get(deadline::GRPC_TIMEOUT).and_then(deadline::parse);
    if callers.is_none_or(|own| own > deadline) {
        headers.insert(deadline::GRPC_TIMEOUT, deadline::encode(deadline));
    }
}

/// The failure a response's headers carry: a non-OK `grpc-status`, or a non-200 HTTP status
/// without one (a proxy's answer).
fn status_of<B>(response: &http::Response<B>) -> Option<Status> {
    match Status::from_header_map(response.headers()) {
        Some(status) if status.code() == Code::Ok => None,
        Some(status) => Some(status),
        None => codes::http_status(response.status()),
    }
}

/// tonic's reading of a transport error (a refused connection is `UNAVAILABLE`), except that
/// the channel's own expiry of `grpc-timeout` is `DEADLINE_EXCEEDED` (tonic says `CANCELLED`):
/// the channel enforces the deadline this layer announced, and either clock may fire first.
fn transport_status(error: GrpcError) -> Status {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(&*error);
    while let Some(e) = source {
        if e.is::<TimeoutExpired>() {
            return Status::deadline_exceeded(error.to_string());
        }
        source = e.source();
    }
    Status::from_error(error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shorter_deadline_is_announced() {
        let mut headers = http::HeaderMap::new();
        announce(&mut headers, Duration::from_millis(300));
        assert_eq!(headers[deadline::GRPC_TIMEOUT], "300m");
        announce(&mut headers, Duration::from_millis(500)); // the 300 ms already there are kept
        assert_eq!(headers[deadline::GRPC_TIMEOUT], "300m");
        announce(&mut headers, Duration::from_millis(100));
        assert_eq!(headers[deadline::GRPC_TIMEOUT], "100m");
    }

    #[test]
    fn statuses_in_headers() {
        let ok = http::Response::builder().header("grpc-status", "0").body(()).unwrap();
        assert!(status_of(&ok).is_none());
        let unavailable = http::Response::builder().header("grpc-status", "14").body(()).unwrap();
        assert_eq!(status_of(&unavailable).unwrap().code(), Code::Unavailable);
        let headers_first = http::Response::new(()); // 200 without grpc-status: the status comes in trailers
        assert!(status_of(&headers_first).is_none());
        let proxy = http::Response::builder().status(503).body(()).unwrap();
        assert_eq!(status_of(&proxy).unwrap().code(), Code::Unavailable);
    }

    /// A request body that fails at once, as a client-side stream that errors would.
    struct FailingBody;

    impl http_body::Body for FailingBody {
        type Data = Bytes;
        type Error = Status;

        fn poll_frame(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<http_body::Frame<Bytes>, Status>>> {
            Poll::Ready(Some(Err(Status::data_loss("the body broke"))))
        }
    }

    #[test]
    fn a_body_that_fails_is_returned_as_its_status_without_a_call() {
        let never = tower::service_fn(|_: http::Request<Bytes>| async {
            panic!("a request whose body could not be read is not sent");
            #[allow(unreachable_code)]
            Ok::<http::Response<()>, GrpcError>(http::Response::new(()))
        });
        let mut replay = ReplayLayer.layer(never);
        let request = http::Request::new(Body::new(FailingBody));
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let error = runtime.block_on(replay.call(request)).unwrap_err();
        let status = error.downcast_ref::<Status>().expect("the body's own status, not a box of it");
        assert_eq!((status.code(), status.message()), (Code::DataLoss, "the body broke"));
    }

    #[test]
    fn the_channels_expiry_is_deadline_exceeded() {
        assert_eq!(transport_status(Box::new(TimeoutExpired(()))).code(), Code::DeadlineExceeded);
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        assert_eq!(transport_status(Box::new(tonic::ConnectError(Box::new(refused)))).code(), Code::Unavailable);
    }
}
