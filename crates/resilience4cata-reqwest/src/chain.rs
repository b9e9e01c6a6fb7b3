//! One host's pipelines, built from the middleware's recipe: which policies, which named
//! configuration and which overrides for each.
//!
//! A pipeline builder changes type as policies are added (a breaker or a bulkhead asks for an
//! error type that carries refusals, a timeout makes the pipeline async-only), so each optional
//! policy is added by a function whose bounds say which builder types it takes.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use reqwest::Response;
use resilience4cata::bulkhead::BulkheadConfigBuilder;
use resilience4cata::circuit_breaker::CircuitBreakerConfigBuilder;
use resilience4cata::pipeline::{AsyncOnly, BuilderTypestate, Plain, Rejecting};
use resilience4cata::retry::RetryConfigBuilder;
use resilience4cata::timeout::TimeoutConfigBuilder;
use resilience4cata::{AsyncPipeline, Pipeline, PipelineBuilder, Registry, RegistryError};

use crate::outcome::AttemptError;

/// What the caller asked of one policy: a named configuration of the registry, and overrides on
/// top of it (kept as the builder the caller's closure returned, replayed for every host).
#[derive(Clone, Debug, Default)]
pub(crate) struct Wanted<B> {
    pub(crate) config: Option<String>,
    pub(crate) overrides: B,
}

impl<B: Default> Wanted<B> {
    pub(crate) fn add(slot: &mut Option<Self>) -> &mut Self {
        slot.get_or_insert_with(Wanted::default)
    }

    pub(crate) fn with(slot: &mut Option<Self>, f: impl FnOnce(B) -> B) {
        let wanted = Self::add(slot);
        wanted.overrides = f(std::mem::take(&mut wanted.overrides));
    }
}

/// The policies of the middleware, as the caller chose them on the builder.
#[derive(Clone, Debug, Default)]
pub(crate) struct Recipe {
    pub(crate) retry: Option<Wanted<RetryConfigBuilder>>,
    pub(crate) circuit_breaker: Option<Wanted<CircuitBreakerConfigBuilder>>,
    pub(crate) timeout: Option<Wanted<TimeoutConfigBuilder>>,
    pub(crate) bulkhead: Option<Wanted<BulkheadConfigBuilder>>,
}

/// A built pipeline: without a timeout it is a `Pipeline`, with one an `AsyncPipeline`.
#[derive(Clone, Debug)]
pub(crate) enum Chain {
    Any(Pipeline<Response, AttemptError>),
    Async(AsyncPipeline<Response, AttemptError>),
}

impl Chain {
    pub(crate) async fn execute<F, Fut>(&self, f: F) -> Result<Response, AttemptError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<Response, AttemptError>>,
    {
        match self {
            Chain::Any(p) => p.execute_async(f).await,
            Chain::Async(p) => p.execute_async(f).await,
        }
    }
}

/// One host's pipelines: `retrying` for requests that can be sent again, `once` (the same
/// instances, no retry) for those that cannot; the same chain when there is no retry.
#[derive(Debug)]
pub(crate) struct HostChains {
    pub(crate) id: Arc<str>,
    pub(crate) retrying: Chain,
    pub(crate) once: Option<Chain>,
}

impl HostChains {
    /// Builds the pipelines of instance `id` on `registry`.
    pub(crate) fn build(registry: &Registry, id: &str, recipe: &Recipe) -> Result<Self, RegistryError> {
        let retrying = build_chain(registry, id, recipe, true)?;
        let once = match recipe.retry {
            Some(_) => Some(build_chain(registry, id, recipe, false)?),
            None => None,
        };
        Ok(HostChains { id: Arc::from(id), retrying, once })
    }

    /// The chain for a request that can (`true`) or cannot be sent twice.
    pub(crate) fn chain(&self, repeatable: bool) -> &Chain {
        match (&self.once, repeatable) {
            (Some(once), false) => once,
            _ => &self.retrying,
        }
    }
}

fn build_chain(registry: &Registry, id: &str, recipe: &Recipe, with_retry: bool) -> Result<Chain, RegistryError> {
    let mut builder = Pipeline::builder(registry, id);
    if let Some(retry) = recipe.retry.as_ref().filter(|_| with_retry) {
        builder = add_retry(builder, retry);
    }
    let guarded = match (&recipe.circuit_breaker, &recipe.bulkhead) {
        (None, None) => return with_timeout_plain(builder, recipe),
        (Some(breaker), None) => add_breaker(builder, breaker),
        (Some(breaker), Some(bulkhead)) => add_bulkhead(add_breaker(builder, breaker), bulkhead),
        (None, Some(bulkhead)) => add_bulkhead(builder, bulkhead),
    };
    match &recipe.timeout {
        Some(timeout) => Ok(Chain::Async(rules(add_timeout(guarded, timeout).build()?))),
        None => Ok(Chain::Any(rules(guarded.build()?))),
    }
}

/// No breaker, no bulkhead: a retry alone, or with a timeout.
fn with_timeout_plain(builder: PipelineBuilder<'_, Plain>, recipe: &Recipe) -> Result<Chain, RegistryError> {
    match &recipe.timeout {
        Some(timeout) => Ok(Chain::Async(rules(add_timeout(builder, timeout).build()?))),
        None => Ok(Chain::Any(rules(builder.build()?.detect_rejections()))),
    }
}

fn add_retry<'r>(builder: PipelineBuilder<'r, Plain>, w: &Wanted<RetryConfigBuilder>) -> PipelineBuilder<'r, Plain> {
    let builder = match &w.config {
        Some(name) => builder.retry_config(name.clone()),
        None => builder.retry(),
    };
    let overrides = w.overrides.clone();
    builder.retry_with(move |_| overrides)
}

fn add_breaker<'r>(
    builder: PipelineBuilder<'r, Plain>,
    w: &Wanted<CircuitBreakerConfigBuilder>,
) -> PipelineBuilder<'r, Rejecting> {
    let builder = match &w.config {
        Some(name) => builder.circuit_breaker_config(name.clone()),
        None => builder.circuit_breaker(),
    };
    let overrides = w.overrides.clone();
    builder.circuit_breaker_with(move |_| overrides)
}

fn add_bulkhead<'r, K>(
    builder: PipelineBuilder<'r, K>,
    w: &Wanted<BulkheadConfigBuilder>,
) -> PipelineBuilder<'r, Rejecting>
where
    K: BuilderTypestate<Rejecting = Rejecting>,
{
    let builder = match &w.config {
        Some(name) => builder.bulkhead_config(name.clone()),
        None => builder.bulkhead(),
    };
    let overrides = w.overrides.clone();
    builder.bulkhead_with(move |_| overrides)
}

fn add_timeout<'r, K>(
    builder: PipelineBuilder<'r, K>,
    w: &Wanted<TimeoutConfigBuilder>,
) -> PipelineBuilder<'r, AsyncOnly>
where
    K: BuilderTypestate<AsyncOnly = AsyncOnly>,
{
    let builder = match &w.config {
        Some(name) => builder.timeout_config(name.clone()),
        None => builder.timeout(),
    };
    let overrides = w.overrides.clone();
    builder.timeout_with(move |_| overrides)
}

/// The rules over the outcome (`outcome.rs`): what is retried, how long to wait, what the breaker
/// leaves out.
fn rules<M>(pipeline: Pipeline<Response, AttemptError, M>) -> Pipeline<Response, AttemptError, M> {
    pipeline
        .retry_on(AttemptError::retryable)
        .delay_from(|e: &AttemptError, _attempt: u32, computed: Duration| Some(e.retry_after().unwrap_or(computed)))
        .ignore_on(AttemptError::says_nothing_about_the_host)
}
