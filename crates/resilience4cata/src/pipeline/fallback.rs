//! A typed pipeline's fallback: [`Pipeline::fallback`] and [`Pipeline::fallback_async`], applied
//! once to the final `Err` of `execute`, `execute_async` and the tower layer.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use super::Pipeline;
use super::typestate::AsyncOnly;
use crate::FallbackContext;
use crate::fallback::policy::FallbackPolicy;

/// A boxed async fallback result: the closure's future, type-erased so the pipeline keeps its type.
pub(super) type Falling<T, E> = Pin<Box<dyn Future<Output = Result<T, E>> + Send>>;

type SyncFn<T, E> = Arc<dyn Fn(FallbackContext<E>) -> Result<T, E> + Send + Sync>;
type AsyncFn<T, E> = Arc<dyn Fn(FallbackContext<E>) -> Falling<T, E> + Send + Sync>;

/// What `.fallback` / `.fallback_async` stored: the event publisher under the pipeline's id, and the
/// closure.
pub(super) struct Fallback<T, E> {
    policy: FallbackPolicy,
    call: Call<T, E>,
}

enum Call<T, E> {
    Sync(SyncFn<T, E>),
    Async(AsyncFn<T, E>),
}

/// What to do with a failure: the answer at once, or a future to await.
pub(super) enum Applied<T, E> {
    Now(Result<T, E>),
    Later(Falling<T, E>),
}

impl<T, E> Clone for Fallback<T, E> {
    fn clone(&self) -> Self {
        let call = match &self.call {
            Call::Sync(f) => Call::Sync(Arc::clone(f)),
            Call::Async(f) => Call::Async(Arc::clone(f)),
        };
        Fallback { policy: self.policy.clone(), call }
    }
}

impl<T, E> fmt::Debug for Fallback<T, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let form = match self.call {
            Call::Sync(_) => "sync",
            Call::Async(_) => "async",
        };
        f.debug_struct("Fallback").field("instance", &self.policy.instance()).field("form", &form).finish()
    }
}

impl<T, E> Fallback<T, E> {
    /// Publishes `Applied` and calls the closure; an async closure's future is handed back.
    #[cold]
    pub(super) fn apply(&self, error: E, attempts: u32) -> Applied<T, E> {
        let context = self.policy.apply(error, attempts);
        match &self.call {
            Call::Sync(f) => Applied::Now(f(context)),
            Call::Async(f) => Applied::Later(f(context)),
        }
    }

    /// The sync form only: [`Pipeline::fallback_async`] makes a pipeline `AsyncOnly`, so a blocking
    /// `execute` never meets an async fallback.
    pub(super) fn apply_blocking(&self, error: E, attempts: u32) -> Result<T, E> {
        match self.apply(error, attempts) {
            Applied::Now(result) => result,
            Applied::Later(_) => unreachable!("an async fallback makes the pipeline AsyncOnly: no `execute`"),
        }
    }
}

impl<T, E, M> Pipeline<T, E, M> {
    /// Answers a failed call with `f`, like `#[fallback(method = …)]`: once, after every other
    /// policy gave up, with the final error (a policy's refusal included) in a
    /// [`FallbackContext`] that also holds the attempts started (a refused one included; 1 without
    /// a retry) and the pipeline's id. `f`'s result is the call's result; an `Ok` never reaches it.
    /// `f` decides which errors it answers: return `Err(ctx.into_error())` to pass one through.
    /// Publishes `FallbackEvent::Applied` (instance: the pipeline's id) when someone listens.
    /// Replaces an earlier `fallback` or `fallback_async`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use resilience4cata::{FallbackContext, Pipeline, Registry};
    ///
    /// let registry = Registry::builder().retry_defaults(|r| r.delay(Duration::ZERO)).build()?;
    /// let prices = Pipeline::builder(&registry, "prices")
    ///     .retry_with(|r| r.max_attempts(3))
    ///     .build::<u32, String>()?
    ///     .fallback(|ctx: FallbackContext<String>| match ctx.error().as_str() {
    ///         "unknown sku" => Err(ctx.into_error()),
    ///         _ => Ok(ctx.attempts() * 100), // cached
    ///     });
    /// assert_eq!(prices.execute(|| Err("down".to_owned())), Ok(300));
    /// assert_eq!(prices.execute(|| Err("unknown sku".to_owned())), Err("unknown sku".to_owned()));
    /// # Ok::<(), resilience4cata::RegistryError>(())
    /// ```
    pub fn fallback(mut self, f: impl Fn(FallbackContext<E>) -> Result<T, E> + Send + Sync + 'static) -> Self {
        self.fallback = Some(Fallback { policy: self.fallback_policy(), call: Call::Sync(Arc::new(f)) });
        self
    }

    /// The async form of [`fallback`](Self::fallback): `f` returns a future, awaited by
    /// [`execute_async`](Self::execute_async) (and the tower layer). The pipeline becomes
    /// `AsyncOnly`, so a blocking `execute` is a compile error (`[R4C-SIG-020]`). The future is
    /// boxed once per fallback call (a pipeline's type cannot name it); the success path and
    /// calls that do not fall back allocate nothing.
    ///
    /// ```
    /// use resilience4cata::{FallbackContext, Pipeline, Registry};
    ///
    /// let registry = Registry::builder().build()?;
    /// let quotes = Pipeline::builder(&registry, "quotes")
    ///     .build::<String, std::io::Error>()?
    ///     .fallback_async(|ctx: FallbackContext<std::io::Error>| async move {
    ///         Ok(format!("stale quote after {} attempt(s)", ctx.attempts()))
    ///     });
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let quote = quotes.execute_async(|| async { Err(std::io::Error::other("down")) }).await;
    /// assert_eq!(quote.unwrap(), "stale quote after 1 attempt(s)");
    /// # });
    /// # Ok::<(), resilience4cata::RegistryError>(())
    /// ```
    pub fn fallback_async<F, Fut>(self, f: F) -> Pipeline<T, E, AsyncOnly>
    where
        F: Fn(FallbackContext<E>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<T, E>> + Send + 'static,
    {
        let call: AsyncFn<T, E> = Arc::new(move |context| Box::pin(f(context)));
        let mut pipeline = self.into_mode::<AsyncOnly>();
        pipeline.fallback = Some(Fallback { policy: pipeline.fallback_policy(), call: Call::Async(call) });
        pipeline
    }

    fn fallback_policy(&self) -> FallbackPolicy {
        match &self.fallback {
            Some(existing) => existing.policy.clone(),
            None => FallbackPolicy::build(&self.registry, self.id()),
        }
    }

    /// The outcome of a call that ended: an `Err` goes to the fallback, if any (blocking form).
    #[inline(always)]
    pub(super) fn finish(&self, outcome: Result<T, E>, attempts: u32) -> Result<T, E> {
        match (outcome, &self.fallback) {
            (Err(error), Some(fallback)) => fallback.apply_blocking(error, attempts),
            (outcome, _) => outcome,
        }
    }

    /// The outcome of a call that ended: an `Err` goes to the fallback, if any (async form).
    #[inline(always)]
    pub(super) async fn finish_async(&self, outcome: Result<T, E>, attempts: u32) -> Result<T, E> {
        match (outcome, &self.fallback) {
            (Err(error), Some(fallback)) => match fallback.apply(error, attempts) {
                Applied::Now(result) => result,
                Applied::Later(future) => future.await,
            },
            (outcome, _) => outcome,
        }
    }

    #[cfg(feature = "tower")]
    pub(super) fn fallback_of(&self) -> Option<&Fallback<T, E>> {
        self.fallback.as_ref()
    }
}
