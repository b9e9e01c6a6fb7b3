//! resilience4cata's tower layer in a tonic gRPC client: retry on `UNAVAILABLE` only, a circuit
//! breaker that counts server faults only, and the pipeline's timeout as each attempt's gRPC
//! deadline, announced to the server in `grpc-timeout`. The guide is `docs/guides/grpc.md`; the
//! runnable example `cargo run -p resilience4cata-grpc-example --example grpc`.
//!
//! ```
//! use std::time::Duration;
//! use resilience4cata::{Pipeline, Registry};
//! use resilience4cata_grpc_example::{GrpcError, GrpcResponse, resilient_channel, with_grpc_rules};
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let deadline = Duration::from_millis(500);
//! let registry = Registry::builder().build()?;
//! let pipeline = Pipeline::builder(&registry, "inventory")
//!     .retry_with(|r| r.max_attempts(3).delay(Duration::from_millis(50)))
//!     .circuit_breaker_with(|c| c.window_size(20).minimum_calls(10))
//!     .timeout_with(|t| t.duration(deadline))
//!     .build::<GrpcResponse, GrpcError>()?;
//! // connect_lazy: the connection is made by the first call (a Channel needs a tokio runtime).
//! let channel = tonic::transport::Endpoint::from_static("http://127.0.0.1:50051").connect_lazy();
//! let channel = resilient_channel(channel, &with_grpc_rules(pipeline), Some(deadline));
//! // `InventoryClient::new(channel)`: any generated client takes it.
//! # let _ = channel;
//! # Ok::<(), resilience4cata::RegistryError>(())
//! # }).unwrap();
//! ```
//!
//! The generated client and the scripted server of the example and the tests exist only when
//! `protoc` was found at build time (cfg `r4c_protoc`, set by `build.rs`).
#![forbid(unsafe_code)]
#![warn(missing_docs, missing_debug_implementations)]

pub mod codes;
pub mod deadline;
#[cfg(r4c_protoc)]
pub mod demo;
pub mod layers;
#[cfg(r4c_protoc)]
pub mod server;

/// The code `protoc` generated from `proto/inventory.proto` (package `inventory.v1`).
#[cfg(r4c_protoc)]
#[allow(missing_docs, missing_debug_implementations, clippy::all, clippy::pedantic)]
pub mod proto {
    tonic::include_proto!("inventory.v1");
}

use std::time::Duration;

use bytes::Bytes;
use resilience4cata::Pipeline;
use resilience4cata::pipeline::ResilientService;
use tower::Layer;

pub use crate::codes::GrpcError;
use crate::layers::{AttemptLayer, GrpcAttempt, Replay, ReplayLayer};

/// What a tonic `Channel` answers: the pipeline's `T`.
pub type GrpcResponse = http::Response<tonic::body::Body>;

/// A channel (or any service a generated client can take) behind the three layers:
/// [`Replay`], the pipeline's, and [`GrpcAttempt`].
pub type ResilientChannel<S = tonic::transport::Channel> =
    Replay<ResilientService<GrpcAttempt<S>, http::Request<Bytes>>>;

/// Sets a gRPC pipeline's rules: retry only `UNAVAILABLE` ([`codes::is_retryable`]), record as
/// breaker failures only server faults ([`codes::is_server_fault`]).
///
/// ```
/// use resilience4cata::{Pipeline, Registry};
/// use resilience4cata_grpc_example::{GrpcError, GrpcResponse, with_grpc_rules};
///
/// let registry = Registry::builder().build()?;
/// let pipeline = with_grpc_rules(Pipeline::builder(&registry, "inventory").retry().build::<GrpcResponse, GrpcError>()?);
/// # let _ = pipeline;
/// # Ok::<(), resilience4cata::RegistryError>(())
/// ```
pub fn with_grpc_rules<T, M>(pipeline: Pipeline<T, GrpcError, M>) -> Pipeline<T, GrpcError, M> {
    pipeline.retry_on(codes::is_retryable).record_on(codes::is_server_fault)
}

/// Wraps `inner` (a tonic `Channel`) in `pipeline`, with `deadline` (the pipeline's timeout)
/// announced to the server: the same as
/// `ServiceBuilder::new().layer(ReplayLayer).layer(pipeline.layer()).layer(AttemptLayer::with_deadline(d)).service(inner)`,
/// with a nameable type.
///
/// ```
/// use resilience4cata::{Pipeline, Registry};
/// use resilience4cata_grpc_example::{GrpcError, GrpcResponse, ResilientChannel, resilient_channel};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let registry = Registry::builder().build()?;
/// let pipeline = Pipeline::builder(&registry, "inventory").retry().build::<GrpcResponse, GrpcError>()?;
/// let channel = tonic::transport::Endpoint::from_static("http://127.0.0.1:1").connect_lazy();
/// let channel: ResilientChannel = resilient_channel(channel, &pipeline, None);
/// # let _ = channel;
/// # Ok::<(), resilience4cata::RegistryError>(())
/// # }).unwrap();
/// ```
pub fn resilient_channel<S, M>(
    inner: S,
    pipeline: &Pipeline<GrpcResponse, GrpcError, M>,
    deadline: Option<Duration>,
) -> ResilientChannel<S>
where
    GrpcAttempt<S>: tower::Service<http::Request<Bytes>, Response = GrpcResponse, Error = GrpcError>,
{
    let attempt = match deadline {
        Some(deadline) => AttemptLayer::with_deadline(deadline),
        None => AttemptLayer::default(),
    };
    ReplayLayer.layer(pipeline.layer().layer(attempt.layer(inner)))
}
