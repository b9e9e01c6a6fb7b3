//! The programmatic pipeline: the same policies as `#[resilient]`, for code that cannot be annotated
//! (a closure, a third-party client, a tower service).
//!
//! ```
//! use std::time::Duration;
//! use resilience4cata::{Pipeline, Registry};
//!
//! let registry = Registry::builder().build()?;
//! let stock = Pipeline::builder(&registry, "inventory")
//!     .retry_with(|r| r.max_attempts(3).delay(Duration::from_millis(100)))
//!     .build::<u32, std::io::Error>()?;
//! let units = stock.execute(|| Ok(7))?;
//! # assert_eq!(units, 7);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Why a pipeline behaves exactly like generated code
//! A pipeline holds the very runtime objects a generated wrapper holds, built by the same registry
//! calls under the pipeline's id, and its `execute` is the generated code written once,
//! generically: the retry loop (start the call, run an attempt, judge the outcome, ask the retry
//! whether to go again) around the inner layers (ask each policy object for its permit, slot or
//! deadline, turn a refusal into `E` with `E::from_rejection`, call inward). Every decision
//! (attempt counting, backoff, jitter, `max_duration`, the retry budget, permits, slots, deadlines,
//! events) is taken by those objects, so there is no second implementation of any policy.
//! Consequences:
//! - **Ids and sharing.** Every policy of a pipeline takes the pipeline's id as its instance id: a
//!   pipeline built with id `"catalog"` and a method with `#[retry(name = "catalog", …)]` share one
//!   instance (one retry budget), must resolve the same configuration (else `R4C-REG-008`), and
//!   appear once in `registry.snapshot()`.
//! - **Configuration.** `.retry()`, `.retry_config("name")` and `.retry_with(|r| …)` compose and rank
//!   as a method's attributes do: above the named configuration, below the registry's
//!   `retry_instance(id, …)`. Everything is resolved once, by [`PipelineBuilder::build`]; calls never
//!   consult configuration.
//! - **Order.** Policies nest in the default order of the generated code, whatever order the builder
//!   calls come in: retry → circuit breaker → rate limiter → adaptive limit → timeout → bulkhead →
//!   the call, unless [`PipelineBuilder::order`] changes it (as `#[policy_order]` does; see below). Every
//!   retry attempt passes the breaker (and is recorded), takes its own permit and gets its own
//!   timeout; an open breaker stops the retries at once; calls the breaker refuses take no permit;
//!   the bulkhead slot is held only while the call runs, never during a backoff.
//! - **Error types.** The builder's type-state ([`Plain`] → [`Rejecting`] → [`AsyncOnly`]) asks
//!   `build` for `E: ResilienceError` exactly when a policy that can refuse calls is present (as
//!   `#[resilient]` does for a method), and makes a pipeline with a timeout async-only: its type is
//!   `Pipeline<T, E, AsyncOnly>`, written [`AsyncPipeline<T, E>`] where a type must be spelled
//!   out (a struct field), and `execute` on it is a `[R4C-SIG-020]` compile error.
//! - **Scopes.** [`PipelineBuilder::scope`] gives a pipeline instances of its own, as a scoped
//!   wrapper has: its id becomes `<scope>/<id>` (`host-a/prices`), so the same pipeline built for
//!   two hosts shares no breaker, and `[instances."host-a/prices"]` configures one host's.
//! - **Cost.** A successful call allocates nothing, reads no clock and consults the retry not at
//!   all; async calls are not boxed.
//!
//! # A non-default order
//! [`PipelineBuilder::order`] takes [`Policy`] names, outermost first, with the rules of
//! `#[policy_order]` (SPEC §6): the listed policies the pipeline has nest in the listed order, the
//! others keep their default relative order inside them, a listed policy the pipeline does not have
//! is ignored, and a name twice or `Policy::Fallback` anywhere but first is `R4C-REG-001` from
//! `build`. A pipeline whose resulting order is the default one runs the default code. A reordered
//! one runs each layer as one step of a chain: blocking calls through a recursive call behind a
//! `&mut dyn FnMut` (one indirect call per layer, no allocation), async calls through one generic
//! `async fn` over the steps calling itself, each depth but the innermost call **boxed** (one allocation per layer
//! entered, per attempt for the layers inside a retry): the price of choosing the nesting at run
//! time. `#[policy_order]` chooses it at compile time and costs nothing.
//!
//! # Rules over `E`
//! The builder does not know `T` and `E`, so the rules that depend on them are closures set on the
//! typed [`Pipeline`] that `build` returns: [`retry_on`](Pipeline::retry_on),
//! [`abort_on`](Pipeline::abort_on), [`classifier`](Pipeline::classifier),
//! [`on_exhausted_result`](Pipeline::on_exhausted_result), and the breaker's
//! [`record_on`](Pipeline::record_on) and [`ignore_on`](Pipeline::ignore_on), and the fallback,
//! [`fallback`](Pipeline::fallback) / [`fallback_async`](Pipeline::fallback_async), applied once to
//! the final `Err` (the outermost layer, as `#[fallback]` is) when it matches
//! [`fallback_apply_on`](Pipeline::fallback_apply_on) and not
//! [`fallback_skip_on`](Pipeline::fallback_skip_on). They are stored behind `Arc`s so a
//! pipeline stays `Clone + Send + Sync` for every `T` and `E`, and are called only after an attempt
//! fails (a classifier after every attempt, as in generated code).
//!
//! # Which forms see a nested open breaker
//! A `Rejection::CallNotPermitted` coming out of a nested wrapper or pipeline is never retried. A
//! generated method finds it by autoref specialisation on its concrete `E`; a pipeline is generic, so
//! it finds it only where `E: ResilienceError` is required:
//!
//! | form | finds a nested `CallNotPermitted` |
//! |---|---|
//! | `#[resilient]` method, concrete `E` implementing `ResilienceError` | yes |
//! | `#[resilient]` method whose `E` is generic or an associated type | only if that `E: ResilienceError` is required there |
//! | pipeline with a circuit breaker, rate limiter, bulkhead or timeout (`build` requires `E: ResilienceError`) | yes |
//! | retry-only pipeline after [`detect_rejections`](Pipeline::detect_rejections) | yes |
//! | retry-only pipeline without it (any `E`) | no: every `Err` its rules accept is retried |
//! | tower layer (`Pipeline::layer`, feature `tower`, requires `E: ResilienceError`) | yes |
#![cfg_attr(
    feature = "tower",
    doc = r#"
# tower
With the `tower` feature, [`Pipeline::layer`] turns a pipeline into a `tower::Layer`; see
[`PipelineLayer`] for what it needs of the service and the request, and what it allocates. The
service it makes is named [`ResilientService<S, Req>`](ResilientService) (a struct field can hold
it, no box needed)."#
)]

mod builder;
#[cfg(feature = "chaos")]
mod chaos;
mod execute;
mod fallback;
mod fallback_methods;
mod guards;
mod keyed;
mod keyed_set;
mod order;
mod preset;
mod reordered;
mod rules;
#[cfg(feature = "tower")]
mod tower;
mod typestate;

pub use builder::PipelineBuilder;
pub use execute::{AsyncPipeline, Pipeline};
pub use keyed::{AsyncKeyedPipeline, KeyedPipeline};
pub use order::Policy;
pub use preset::Preset;
pub(crate) use preset::{PresetLayers, sealed::PresetParts};
#[cfg(feature = "tower")]
pub use tower::{
    ByClone, CloneFn, CloneRequest, CloneWith, KeyBy, KeyedPipelineLayer, KeyedResponseFuture, KeyedService, NoKeyBy,
    PipelineLayer, PipelineService, ResilientService, ResponseFuture,
};
pub use typestate::{AsyncOnly, Blocking, BuilderTypestate, Hedged, Keyed, Plain, Rejecting, SyncOrAsync, Unkeyed};
