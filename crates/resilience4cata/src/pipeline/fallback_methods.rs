//! A typed pipeline's fallback, as users set it: [`Pipeline::fallback`], [`Pipeline::fallback_async`]
//! and the predicates choosing which errors it answers. What the pipeline keeps and applies is
//! `fallback.rs`.

use std::future::Future;
use std::sync::Arc;

use super::execute::{AsyncPipeline, Pipeline};
use super::fallback::{Applied, AsyncFn, Call, Fallback};
use super::typestate::AsyncOnly;
use crate::FallbackContext;
use crate::fallback::policy::FallbackPolicy;

impl<T, E, M> Pipeline<T, E, M> {
    /// Answers a failed call with `f`, like `#[fallback(method = …)]`: once, after every other
    /// policy gave up, with the final error (a policy's refusal included) in a
    /// [`FallbackContext`] that also holds the attempts started (a refused one included; 1 without
    /// a retry) and the pipeline's id. `f`'s result is the call's result; an `Ok` never reaches it.
    /// Which errors it answers is chosen by [`fallback_apply_on`](Self::fallback_apply_on) and
    /// [`fallback_skip_on`](Self::fallback_skip_on) (default: every `Err`), as `#[fallback(apply_on
    /// = …, skip_on = …)]` does; `f` can still pass one through with `Err(ctx.into_error())`.
    /// Publishes `FallbackEvent::Applied` (instance: the pipeline's id) when someone listens and
    /// `f` runs. Replaces an earlier `fallback` or `fallback_async` (and keeps the rules).
    ///
    /// ```
    /// use std::time::Duration;
    /// use resilience4cata::{FallbackContext, Pipeline, Registry};
    ///
    /// let registry = Registry::builder().retry_defaults(|r| r.delay(Duration::ZERO)).build()?;
    /// let prices = Pipeline::builder(&registry, "prices")
    ///     .retry_with(|r| r.max_attempts(3))
    ///     .build::<u32, String>()?
    ///     .fallback(|ctx: FallbackContext<String>| Ok(ctx.attempts() * 100)) // cached
    ///     .fallback_skip_on(|e: &String| e == "unknown sku");
    /// assert_eq!(prices.execute(|| Err("down".to_owned())), Ok(300));
    /// assert_eq!(prices.execute(|| Err("unknown sku".to_owned())), Err("unknown sku".to_owned()));
    /// # Ok::<(), resilience4cata::RegistryError>(())
    /// ```
    pub fn fallback(mut self, f: impl Fn(FallbackContext<E>) -> Result<T, E> + Send + Sync + 'static) -> Self {
        self.fallback_mut().call = Some(Call::Sync(Arc::new(f)));
        self
    }

    /// Falls back only on the errors `f` accepts (default: every `Err`), like `#[fallback(apply_on =
    /// <pattern>)]`; any other error is the call's result, unchanged, and publishes nothing.
    /// [`fallback_skip_on`](Self::fallback_skip_on) wins over it. Works with
    /// [`fallback`](Self::fallback) and [`fallback_async`](Self::fallback_async), set before or
    /// after them; a later call replaces an earlier one. Called only when a call ends in `Err`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use resilience4cata::{FallbackContext, Pipeline, Registry};
    ///
    /// #[derive(Debug, PartialEq)]
    /// enum PriceError { Down, UnknownSku }
    ///
    /// let registry = Registry::builder().build()?;
    /// let prices = Pipeline::builder(&registry, "prices")
    ///     .build::<u32, PriceError>()?
    ///     .fallback(|_: FallbackContext<PriceError>| Ok(100)) // the cached price
    ///     .fallback_apply_on(|e| matches!(e, PriceError::Down));
    /// assert_eq!(prices.execute(|| Err(PriceError::Down)), Ok(100));
    /// assert_eq!(prices.execute(|| Err(PriceError::UnknownSku)), Err(PriceError::UnknownSku));
    /// # Ok::<(), resilience4cata::RegistryError>(())
    /// ```
    pub fn fallback_apply_on(mut self, f: impl Fn(&E) -> bool + Send + Sync + 'static) -> Self {
        self.fallback_mut().apply_on = Some(Arc::new(f));
        self
    }

    /// Never falls back on the errors `f` accepts, like `#[fallback(skip_on = <pattern>)]`: they are
    /// the call's result, unchanged, and publish nothing. Wins over
    /// [`fallback_apply_on`](Self::fallback_apply_on). Works with [`fallback`](Self::fallback) and
    /// [`fallback_async`](Self::fallback_async), set before or after them; a later call replaces
    /// an earlier one. Called only when a call ends in `Err`.
    ///
    /// ```
    /// use resilience4cata::{FallbackContext, Pipeline, Registry};
    ///
    /// let registry = Registry::builder().build()?;
    /// let quotes = Pipeline::builder(&registry, "quotes")
    ///     .build::<String, std::io::Error>()?
    ///     .fallback_skip_on(|e: &std::io::Error| e.kind() == std::io::ErrorKind::NotFound)
    ///     .fallback_async(|_: FallbackContext<std::io::Error>| async { Ok("stale quote".to_owned()) });
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let down = quotes.execute_async(|| async { Err(std::io::Error::other("down")) }).await;
    /// assert_eq!(down.unwrap(), "stale quote");
    /// let unknown = quotes.execute_async(|| async { Err(std::io::ErrorKind::NotFound.into()) }).await;
    /// assert_eq!(unknown.unwrap_err().kind(), std::io::ErrorKind::NotFound);
    /// # });
    /// # Ok::<(), resilience4cata::RegistryError>(())
    /// ```
    pub fn fallback_skip_on(mut self, f: impl Fn(&E) -> bool + Send + Sync + 'static) -> Self {
        self.fallback_mut().skip_on = Some(Arc::new(f));
        self
    }

    /// The async form of [`fallback`](Self::fallback): `f` returns a future, awaited by
    /// [`execute_async`](Self::execute_async) (and the tower layer). The pipeline becomes
    /// `AsyncOnly` (an [`AsyncPipeline<T, E>`](AsyncPipeline)), so a blocking `execute` is a compile error (`[R4C-SIG-020]`). The future is
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
    pub fn fallback_async<F, Fut>(self, f: F) -> AsyncPipeline<T, E>
    where
        F: Fn(FallbackContext<E>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<T, E>> + Send + 'static,
    {
        let call: AsyncFn<T, E> = Arc::new(move |context| Box::pin(f(context)));
        let mut pipeline = self.into_mode::<AsyncOnly>();
        pipeline.fallback_mut().call = Some(Call::Async(call));
        pipeline
    }

    /// The stored fallback, made (without a closure, answering every error) if there was none.
    fn fallback_mut(&mut self) -> &mut Fallback<T, E> {
        if self.fallback.is_none() {
            let policy = FallbackPolicy::build(self.registry.inner(), self.id());
            self.fallback = Some(Fallback { policy, call: None, apply_on: None, skip_on: None });
        }
        self.fallback.as_mut().expect("set just above")
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
