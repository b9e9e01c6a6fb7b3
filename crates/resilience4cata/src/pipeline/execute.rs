//! [`Pipeline`]: the generated retry loop written once, generically, over the same policy objects.

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use super::fallback::Fallback;
use super::guards::{Guards, Reserved};
use super::order::Steps;
use super::rules::{Decide, Rules};
use super::typestate::{AsyncOnly, Blocking, SyncOrAsync};
use crate::bulkhead::policy::SlotWatch;
use crate::durations::CallTimer;
use crate::hedge::policy::HedgePolicy;
use crate::registry::Registry;
use crate::retry::Verdict;
use crate::retry::policy::{RetryCall, RetryPolicy};
use crate::{Rejection, ResilienceError};

/// Policies applied to calls that cannot be annotated: the programmatic twin of `#[resilient]`.
///
/// A pipeline drives the same runtime objects as the generated code, in the same order, under the
/// pipeline's id: a pipeline built with id `"inventory"` shares its instances with every method
/// whose policy has `name = "inventory"`, publishes the same events and appears in the same
/// snapshots. It is `Clone` (a few reference counts), `Send` and `Sync` for every `T` and `E`: build
/// it once and use it from any number of threads and tasks.
///
/// `M` is [`SyncOrAsync`] (the default: [`execute`](Self::execute) and
/// [`execute_async`](Self::execute_async)) or, for a pipeline with a timeout,
/// [`AsyncOnly`](super::AsyncOnly) (`execute_async` only).
///
/// ```
/// use std::time::Duration;
/// use resilience4cata::{Pipeline, Registry};
///
/// let registry = Registry::builder().build()?;
/// let stock = Pipeline::builder(&registry, "inventory")
///     .retry_with(|r| r.max_attempts(3).delay(Duration::ZERO))
///     .build::<u32, String>()?;
///
/// let mut calls = 0;
/// let units = stock.execute(|| {
///     calls += 1;
///     if calls < 3 { Err("inventory down".to_owned()) } else { Ok(7) }
/// });
/// assert_eq!((units, calls), (Ok(7), 3));
/// # Ok::<(), resilience4cata::RegistryError>(())
/// ```
pub struct Pipeline<T, E, M = SyncOrAsync> {
    id: Arc<str>,
    pub(super) retry: Option<RetryPolicy>,
    /// In the retry's place (a pipeline has one or the other): async calls only.
    hedge: Option<HedgePolicy>,
    /// The policies inside the retry; present only where `E: ResilienceError` was required.
    pub(super) guards: Option<Guards<E>>,
    /// Whether the registry's clock can wait inside a future; if not, async calls wait blocking.
    pub(super) async_waits: bool,
    pub(super) rules: Rules<T, E>,
    /// A non-default order (`PipelineBuilder::order`); `None` runs the default order's code.
    order: Option<Steps>,
    /// Set by `fallback` / `fallback_async`; applied to the final `Err`.
    pub(super) fallback: Option<Fallback<T, E>>,
    /// For `fallback`, which builds its event publisher after `build`.
    pub(super) registry: Registry,
    /// Times calls and attempts under the pipeline's id (zero-sized without the feature `durations`).
    timer: CallTimer,
    /// The injection point innermost, around the closure (feature `chaos`; set by `build`).
    #[cfg(feature = "chaos")]
    pub(super) chaos: Option<super::chaos::ChaosSite<E>>,
    mode: PhantomData<fn() -> M>,
}

/// A pipeline that offers only `execute_async` (it has a timeout, a hedge or an async fallback):
/// `Pipeline<T, E, AsyncOnly>`, named without the mode. Use it where a pipeline's type is written
/// out (a struct field, a function's return type); `let` bindings infer the mode.
///
/// ```
/// use std::time::Duration;
/// use resilience4cata::{AsyncPipeline, Pipeline, Registry, RegistryError};
///
/// struct SearchClient {
///     search: AsyncPipeline<u32, std::io::Error>,
/// }
///
/// fn client(registry: &Registry) -> Result<SearchClient, RegistryError> {
///     let search = Pipeline::builder(registry, "search")
///         .timeout_with(|t| t.duration(Duration::from_millis(200)))
///         .build()?;
///     Ok(SearchClient { search })
/// }
///
/// let client = client(&Registry::builder().build()?)?;
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// assert_eq!(client.search.execute_async(|| async { Ok(4) }).await.unwrap(), 4);
/// # });
/// # Ok::<(), RegistryError>(())
/// ```
pub type AsyncPipeline<T, E> = Pipeline<T, E, AsyncOnly>;

impl<T, E, M> Clone for Pipeline<T, E, M> {
    fn clone(&self) -> Self {
        Pipeline {
            id: Arc::clone(&self.id),
            retry: self.retry.clone(),
            hedge: self.hedge.clone(),
            guards: self.guards.clone(),
            async_waits: self.async_waits,
            rules: self.rules.clone(),
            order: self.order,
            fallback: self.fallback.clone(),
            registry: self.registry.clone(),
            timer: self.timer.clone(),
            #[cfg(feature = "chaos")]
            chaos: self.chaos.clone(),
            mode: PhantomData,
        }
    }
}

impl<T, E, M> fmt::Debug for Pipeline<T, E, M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pipeline")
            .field("id", &self.id)
            .field("retry", &self.retry.as_ref().map(RetryPolicy::instance))
            .field("hedge", &self.hedge.as_ref().map(HedgePolicy::instance))
            .field("guards", &self.guards)
            .field("rules", &self.rules)
            .field("fallback", &self.fallback)
            .finish()
    }
}

impl<T, E, M> Pipeline<T, E, M> {
    pub(super) fn from_parts(
        registry: Registry,
        id: Arc<str>,
        retry: Option<RetryPolicy>,
        guards: Option<Guards<E>>,
        async_waits: bool,
        order: Option<Steps>,
    ) -> Self {
        let rules = Rules::default();
        let fallback = None;
        let timer = registry.call_timer(&id);
        Pipeline {
            id,
            retry,
            hedge: None,
            guards,
            async_waits,
            rules,
            order,
            fallback,
            registry,
            timer,
            #[cfg(feature = "chaos")]
            chaos: None,
            mode: PhantomData,
        }
    }

    /// The same pipeline in another mode (an async fallback makes it `AsyncOnly`).
    pub(super) fn into_mode<M2>(self) -> Pipeline<T, E, M2> {
        let Pipeline {
            id,
            retry,
            hedge,
            guards,
            async_waits,
            rules,
            order,
            fallback,
            registry,
            timer,
            #[cfg(feature = "chaos")]
            chaos,
            mode: _,
        } = self;
        Pipeline {
            id,
            retry,
            hedge,
            guards,
            async_waits,
            rules,
            order,
            fallback,
            registry,
            timer,
            #[cfg(feature = "chaos")]
            chaos,
            mode: PhantomData,
        }
    }

    /// Adds the hedge `build` resolved (a pipeline has a retry or a hedge, never both).
    pub(super) fn with_hedge(mut self, hedge: Option<HedgePolicy>) -> Self {
        self.hedge = hedge;
        self
    }

    /// The pipeline's id: the instance id of each of its policies.
    ///
    /// ```
    /// # use resilience4cata::{Pipeline, Registry};
    /// # let registry = Registry::builder().build()?;
    /// let pipeline = Pipeline::builder(&registry, "prices").build::<u32, String>()?;
    /// assert_eq!(pipeline.id(), "prices");
    /// # Ok::<(), resilience4cata::RegistryError>(())
    /// ```
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Retries only the errors `f` accepts (default: every `Err`), like `retry_on = <pattern>`.
    /// Replaces a [`classifier`](Self::classifier), which cannot be combined with it.
    ///
    /// ```
    /// use std::io::{Error, ErrorKind};
    /// use resilience4cata::{Pipeline, Registry};
    ///
    /// let registry = Registry::builder().build()?;
    /// let files = Pipeline::builder(&registry, "files")
    ///     .retry()
    ///     .build::<Vec<u8>, Error>()?
    ///     .retry_on(|e| e.kind() == ErrorKind::TimedOut);
    /// let mut calls = 0;
    /// let _ = files.execute(|| { calls += 1; Err(Error::from(ErrorKind::NotFound)) });
    /// assert_eq!(calls, 1); // not retryable
    /// # Ok::<(), resilience4cata::RegistryError>(())
    /// ```
    ///
    /// Like every consuming method of the pipeline and its builder, it is `#[must_use]`: the rule
    /// is on the pipeline it returns, so dropping that one is an error under `deny(unused_must_use)`.
    ///
    /// ```compile_fail
    /// #![deny(unused_must_use)]
    /// # use resilience4cata::{Pipeline, Registry};
    /// # let registry = Registry::builder().build().unwrap();
    /// let files = Pipeline::builder(&registry, "files").retry().build::<u32, std::io::Error>().unwrap();
    /// files.retry_on(|_| true);
    /// ```
    #[must_use = "the rule is on the returned pipeline; this one is consumed"]
    pub fn retry_on(mut self, f: impl Fn(&E) -> bool + Send + Sync + 'static) -> Self {
        self.rules.decide = match self.rules.decide {
            Decide::Patterns { abort_on, .. } => Decide::Patterns { retry_on: Some(Arc::new(f)), abort_on },
            Decide::Classifier { .. } => Decide::Patterns { retry_on: Some(Arc::new(f)), abort_on: None },
        };
        self
    }

    /// Never retries the errors `f` accepts (default: none), like `abort_on = <pattern>`; it wins
    /// over [`retry_on`](Self::retry_on). Replaces a [`classifier`](Self::classifier).
    ///
    /// ```
    /// use std::io::{Error, ErrorKind};
    /// use resilience4cata::{Pipeline, Registry};
    ///
    /// let registry = Registry::builder().build()?;
    /// let files = Pipeline::builder(&registry, "files")
    ///     .retry()
    ///     .build::<Vec<u8>, Error>()?
    ///     .abort_on(|e| e.kind() == ErrorKind::NotFound);
    /// let mut calls = 0;
    /// let _ = files.execute(|| { calls += 1; Err(Error::from(ErrorKind::NotFound)) });
    /// assert_eq!(calls, 1);
    /// # Ok::<(), resilience4cata::RegistryError>(())
    /// ```
    #[must_use = "the rule is on the returned pipeline; this one is consumed"]
    pub fn abort_on(mut self, f: impl Fn(&E) -> bool + Send + Sync + 'static) -> Self {
        self.rules.decide = match self.rules.decide {
            Decide::Patterns { retry_on, .. } => Decide::Patterns { retry_on, abort_on: Some(Arc::new(f)) },
            Decide::Classifier { .. } => Decide::Patterns { retry_on: None, abort_on: Some(Arc::new(f)) },
        };
        self
    }

    /// Sets the wait before the next attempt from the failure (SPEC §7.1, "Delay from the
    /// failure"), like `#[retry(delay_from = path)]`: `f(error, attempt, computed)` gets the `Err`
    /// of a retryable attempt, its number (from 1) and the wait the backoff computed (after
    /// jitter), and returns the wait to use, or `None` to give up (`NotRetryable`). It runs only
    /// when another attempt is allowed (after the `max_attempts` check); its wait is not capped by
    /// `max_delay`, and then meets `max_duration`, the budget and shutdown like any wait. With a
    /// hook, the hook alone decides; without one, a rate limiter's `RateLimitExceeded` waits at
    /// least its `retry_after` (detected where the pipeline requires `E: ResilienceError`).
    ///
    /// ```
    /// use std::time::Duration;
    /// use resilience4cata::testing::{self, ManualClock};
    /// use resilience4cata::{Jitter, Pipeline};
    ///
    /// #[derive(Debug, PartialEq)]
    /// enum HttpError { TooManyRequests { retry_after: Option<Duration> }, Server }
    ///
    /// let clock = ManualClock::new();
    /// let registry = testing::registry(&clock).build()?;
    /// let api = Pipeline::builder(&registry, "api")
    ///     .retry_with(|r| r.max_attempts(3).delay(Duration::from_millis(100)).jitter(Jitter::None))
    ///     .build::<u32, HttpError>()?
    ///     .delay_from(|e, _attempt, computed| match e {
    ///         HttpError::TooManyRequests { retry_after } => Some(retry_after.unwrap_or(computed)),
    ///         HttpError::Server => Some(computed),
    ///     });
    /// let mut calls = 0;
    /// let result = api.execute(|| {
    ///     calls += 1;
    ///     match calls {
    ///         1 => Err(HttpError::TooManyRequests { retry_after: Some(Duration::from_secs(2)) }),
    ///         2 => Err(HttpError::Server),
    ///         _ => Ok(7),
    ///     }
    /// });
    /// assert_eq!(result, Ok(7));
    /// assert_eq!(clock.elapsed(), Duration::from_millis(2_000 + 200)); // the server's 2 s, then the backoff's 200 ms
    /// # Ok::<(), resilience4cata::RegistryError>(())
    /// ```
    pub fn delay_from(mut self, f: impl Fn(&E, u32, Duration) -> Option<Duration> + Send + Sync + 'static) -> Self {
        self.rules.delay_from = Some(Arc::new(f));
        self
    }

    /// Records as a breaker failure only the errors `f` accepts (default: every `Err`), like the
    /// breaker's `record_on = <pattern>`; any other `Err` counts as a success. Refusals carried in
    /// `E` are judged first, as in generated code: a local refusal (rate limiter, bulkhead) is not
    /// recorded, a timeout or a nested open breaker is a failure. Only a pipeline with a circuit
    /// breaker records anything; elsewhere this has no effect.
    ///
    /// ```
    /// use resilience4cata::circuit_breaker::State;
    /// use resilience4cata::{Pipeline, Registry};
    /// use std::io::{Error, ErrorKind};
    ///
    /// let registry = Registry::builder().build()?;
    /// let prices = Pipeline::builder(&registry, "prices")
    ///     .circuit_breaker_with(|c| c.window_size(2).minimum_calls(2))
    ///     .build::<u32, Error>()?
    ///     .record_on(|e| e.kind() == ErrorKind::TimedOut);
    /// for _ in 0..2 {
    ///     let _ = prices.execute(|| Err(Error::from(ErrorKind::NotFound))); // not a breaker failure
    /// }
    /// assert_eq!(registry.circuit_breaker("prices").unwrap().state(), State::Closed);
    /// # Ok::<(), resilience4cata::RegistryError>(())
    /// ```
    #[must_use = "the rule is on the returned pipeline; this one is consumed"]
    pub fn record_on(mut self, f: impl Fn(&E) -> bool + Send + Sync + 'static) -> Self {
        if let Some(guards) = &mut self.guards {
            guards.record_on = Some(Arc::new(f));
        }
        self
    }

    /// Leaves the errors `f` accepts out of the breaker's window (default: none), like the
    /// breaker's `ignore_on = <pattern>`; it wins over [`record_on`](Self::record_on), and an
    /// ignored half-open probe gives its permit back. It serves an adaptive limit too: an ignored
    /// error is not a sample (and wins over [`drop_on`](Self::drop_on)). Only a pipeline with a
    /// circuit breaker or an adaptive limit records anything; elsewhere this has no effect.
    ///
    /// ```
    /// use resilience4cata::{Pipeline, Registry};
    /// use std::io::{Error, ErrorKind};
    ///
    /// let registry = Registry::builder().build()?;
    /// let prices = Pipeline::builder(&registry, "prices")
    ///     .circuit_breaker()
    ///     .build::<u32, Error>()?
    ///     .ignore_on(|e| e.kind() == ErrorKind::InvalidInput);
    /// let _ = prices.execute(|| Err(Error::from(ErrorKind::InvalidInput)));
    /// assert_eq!(registry.circuit_breaker("prices").unwrap().snapshot().buffered_calls, 0);
    /// # Ok::<(), resilience4cata::RegistryError>(())
    /// ```
    #[must_use = "the rule is on the returned pipeline; this one is consumed"]
    pub fn ignore_on(mut self, f: impl Fn(&E) -> bool + Send + Sync + 'static) -> Self {
        if let Some(guards) = &mut self.guards {
            guards.ignore_on = Some(Arc::new(f));
        }
        self
    }

    /// Counts as an adaptive limit drop only the errors `f` accepts (default: every `Err`), like
    /// `drop_on = <pattern>`; any other `Err` is a success sample. [`ignore_on`](Self::ignore_on)
    /// serves the adaptive limit too (an ignored error is not a sample) and wins over this; an
    /// inner timeout is always a drop and a local refusal never a sample. Only a pipeline with an
    /// adaptive limit takes samples; elsewhere this has no effect.
    ///
    /// ```
    /// use resilience4cata::{Pipeline, Registry};
    /// use std::io::{Error, ErrorKind};
    ///
    /// let registry = Registry::builder().build()?;
    /// let search = Pipeline::builder(&registry, "search")
    ///     .adaptive_limit()
    ///     .build::<u32, Error>()?
    ///     .drop_on(|e| e.kind() == ErrorKind::TimedOut);
    /// let _ = search.execute(|| Err(Error::from(ErrorKind::NotFound))); // a success sample
    /// assert_eq!(registry.adaptive_limit("search").unwrap().snapshot().limit, 20);
    /// let _ = search.execute(|| Err(Error::from(ErrorKind::TimedOut))); // a drop
    /// assert_eq!(registry.adaptive_limit("search").unwrap().snapshot().limit, 18);
    /// # Ok::<(), resilience4cata::RegistryError>(())
    /// ```
    pub fn drop_on(mut self, f: impl Fn(&E) -> bool + Send + Sync + 'static) -> Self {
        if let Some(guards) = &mut self.guards {
            guards.drop_on = Some(Arc::new(f));
        }
        self
    }

    /// Lets `f` decide on every attempt's result, `Ok` and `Err` alike, like `classifier = path`.
    /// A classifier and `retry_on`/`abort_on` cannot be combined (the attributes reject the pair at
    /// compile time): the later call replaces the other kind. An open breaker's refusal is never
    /// retried, whatever the classifier says (when the pipeline can see it, see
    /// [`detect_rejections`](Self::detect_rejections)).
    ///
    /// ```
    /// use resilience4cata::{Pipeline, Registry, Verdict};
    ///
    /// let registry = Registry::builder().retry_defaults(|r| r.delay(std::time::Duration::ZERO)).build()?;
    /// let poll = Pipeline::builder(&registry, "poll")
    ///     .retry()
    ///     .build::<u32, String>()?
    ///     .classifier(|r| match r { Ok(0) => Verdict::Retry, Ok(_) => Verdict::Success, Err(_) => Verdict::Fail });
    /// let mut n = 0;
    /// assert_eq!(poll.execute(|| { n += 1; Ok(n - 1) }), Ok(1)); // the first `Ok(0)` was retried
    /// # Ok::<(), resilience4cata::RegistryError>(())
    /// ```
    #[must_use = "the rule is on the returned pipeline; this one is consumed"]
    pub fn classifier(mut self, f: impl Fn(&Result<T, E>) -> Verdict + Send + Sync + 'static) -> Self {
        let on_exhausted = match self.rules.decide {
            Decide::Classifier { on_exhausted, .. } => on_exhausted,
            Decide::Patterns { .. } => None,
        };
        self.rules.decide = Decide::Classifier { classify: Arc::new(f), on_exhausted };
        self
    }

    /// Maps an `Ok` the [`classifier`](Self::classifier) still rejects when the retry gives up,
    /// like `on_exhausted_result = path`. Call it after `classifier`: without a classifier no `Ok`
    /// is ever rejected, so it has nothing to map and is not kept (the attributes reject it at
    /// compile time).
    ///
    /// ```
    /// use resilience4cata::{Pipeline, Registry, Verdict};
    ///
    /// let registry = Registry::builder().retry_defaults(|r| r.delay(std::time::Duration::ZERO)).build()?;
    /// let poll = Pipeline::builder(&registry, "poll")
    ///     .retry()
    ///     .build::<u32, String>()?
    ///     .classifier(|r| if matches!(r, Ok(0)) { Verdict::Retry } else { Verdict::Success })
    ///     .on_exhausted_result(|_| Err("still empty".to_owned()));
    /// assert_eq!(poll.execute(|| Ok(0)), Err("still empty".to_owned()));
    /// # Ok::<(), resilience4cata::RegistryError>(())
    /// ```
    #[must_use = "the rule is on the returned pipeline; this one is consumed"]
    pub fn on_exhausted_result(mut self, f: impl Fn(T) -> Result<T, E> + Send + Sync + 'static) -> Self {
        if let Decide::Classifier { on_exhausted, .. } = &mut self.rules.decide {
            *on_exhausted = Some(Arc::new(f));
        }
        self
    }

    /// Makes the retry find an open breaker's refusal ([`Rejection::CallNotPermitted`]) inside `E`
    /// and never retry it, also when it comes from a nested wrapper or pipeline.
    ///
    /// A pipeline cannot see `E`'s impls the way generated code sees a concrete type, so it finds
    /// nested refusals only where `E: ResilienceError` is required: in every pipeline with a policy
    /// that can refuse calls (circuit breaker, rate limiter, bulkhead, timeout: `build` requires the
    /// trait there and turns this on), in every tower
    /// layer (`Pipeline::layer`, feature `tower`, requires it too), and in a retry-only pipeline after this
    /// call. A retry-only pipeline without it retries every `Err` its rules accept.
    ///
    /// ```
    /// use resilience4cata::{Pipeline, Registry, Rejection, ResilienceError};
    ///
    /// let registry = Registry::builder().build()?;
    /// let outer = Pipeline::builder(&registry, "outer").retry().build::<u32, std::io::Error>()?.detect_rejections();
    /// let mut calls = 0;
    /// let _ = outer.execute(|| {
    ///     calls += 1;
    ///     Err(std::io::Error::from_rejection(Rejection::CallNotPermitted { instance: "inner".into() }))
    /// });
    /// assert_eq!(calls, 1);
    /// # Ok::<(), resilience4cata::RegistryError>(())
    /// ```
    #[must_use = "the rule is on the returned pipeline; this one is consumed"]
    pub fn detect_rejections(mut self) -> Self
    where
        E: ResilienceError,
    {
        self.rules.find_rejection = Some(find_rejection::<E>);
        self
    }

    /// Runs `f` through the pipeline: `f` is called once per attempt, on the caller's thread, and
    /// every wait (between attempts, for a rate limiter permit or a bulkhead slot) blocks this thread
    /// on the registry's clock. On giving up, the last outcome is returned unchanged, or, when it
    /// is an `Err` and the pipeline has a [`fallback`](Self::fallback), the fallback's answer. The success
    /// path allocates nothing and reads no clock. Not offered by a pipeline with a timeout
    /// (`M = AsyncOnly`, a `[R4C-SIG-020]` compile error): a blocking call cannot be cancelled.
    ///
    /// ```
    /// # use resilience4cata::{Pipeline, Registry};
    /// # let registry = Registry::builder().build()?;
    /// let pipeline = Pipeline::builder(&registry, "inventory").retry().build::<u32, String>()?;
    /// assert_eq!(pipeline.execute(|| Ok(7)), Ok(7));
    /// # Ok::<(), resilience4cata::RegistryError>(())
    /// ```
    #[inline]
    #[cfg_attr(any(feature = "durations", feature = "chaos"), allow(unused_mut))]
    pub fn execute<F>(&self, mut f: F) -> Result<T, E>
    where
        F: FnMut() -> Result<T, E>,
        M: Blocking,
    {
        // With the feature `chaos` (without it, this line does not exist), the injection point
        // innermost, around `f`, inside the attempt's timing.
        #[cfg(feature = "chaos")]
        let mut f = move || match &self.chaos {
            Some(chaos) => chaos.run(&mut f),
            None => f(),
        };
        // Timed only with the feature `durations` (without it, neither line exists): the call
        // around everything (recorded when `_call` drops), each attempt around `f` alone.
        #[cfg(feature = "durations")]
        let _call = self.timer.call();
        #[cfg(feature = "durations")]
        let mut f = move || self.timer.attempt(&mut f);
        if let Some(order) = &self.order {
            let mut attempts = 0;
            let outcome = self.run_steps(order.get(), &mut || {
                attempts += 1;
                f()
            });
            return self.finish(outcome, attempts.max(1));
        }
        let Some(retry) = &self.retry else {
            return self.finish(self.attempt(f), 1);
        };
        let mut call = retry.start();
        loop {
            let outcome = match self.attempt(&mut f) {
                // The generated `Ok(v) => break Ok(v)`: only the value moves, not the whole `Result`.
                Ok(value) if self.rules.accepts_every_ok() => return Ok(value),
                outcome => outcome,
            };
            let Some(failure) = self.rules.judge(&outcome) else {
                // Accepted by a classifier as it is: the fallback (for an `Err`) counts this attempt.
                return self.finish(outcome, call.attempts().saturating_add(1));
            };
            let again = match self.rules.next_wait(retry, &mut call, failure, &outcome) {
                Some(wait) => retry.wait_blocking(&call, wait),
                None => false,
            };
            if !again {
                return self.finish(self.rules.give_back(outcome), call.attempts());
            }
        }
    }

    /// One blocking attempt through the policies inside the retry (the order of docs/architecture.md), innermost the caller's call.
    #[inline(always)]
    fn attempt(&self, f: impl FnOnce() -> Result<T, E>) -> Result<T, E> {
        match &self.guards {
            None => f(),
            Some(guards) => guards.run(f),
        }
    }

    /// Runs the futures `f` makes through the pipeline: `f` is called once per attempt, and the
    /// first attempt starts when the returned future is first polled. Waits between attempts block
    /// no thread. Dropping the returned future cancels the attempt or wait in progress, and no
    /// further attempt starts. Nothing is boxed; the success path allocates nothing.
    ///
    /// Should the registry run on the system clock without the `tokio` feature, its clock cannot
    /// wait inside a future: the waits (between attempts, for a permit or a slot) then block the
    /// polling thread. A wrapped async method reports `R4C-REG-010` instead; a pipeline cannot know
    /// at build whether it will be used synchronously, except with a timeout, whose `build` reports
    /// it.
    ///
    /// ```
    /// # use resilience4cata::{Pipeline, Registry};
    /// # let registry = Registry::builder().build()?;
    /// let pipeline = Pipeline::builder(&registry, "inventory").retry().build::<u32, String>()?;
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// assert_eq!(pipeline.execute_async(|| async { Ok(7) }).await, Ok(7));
    /// # });
    /// # Ok::<(), resilience4cata::RegistryError>(())
    /// ```
    #[cfg_attr(any(feature = "durations", feature = "chaos"), allow(unused_mut))]
    pub async fn execute_async<F, Fut>(&self, mut f: F) -> Result<T, E>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        // As in `execute`: the injection point only with the feature `chaos`.
        #[cfg(feature = "chaos")]
        let mut f = move || match &self.chaos {
            Some(chaos) => chaos.run_async(&mut f),
            None => super::chaos::ChaosAttempt::Pass { fut: f() },
        };
        // As in `execute`: nothing of it without the feature `durations`.
        #[cfg(feature = "durations")]
        let _call = self.timer.call();
        #[cfg(feature = "durations")]
        let mut f = move || self.timer.attempt_async(f());
        // A hedge is outermost whatever the order: each hedged attempt runs the steps (`attempt_async`).
        if let Some(hedge) = &self.hedge {
            let mut attempts = 0;
            let outcome = self.hedged(hedge, f, &mut attempts).await;
            return self.finish_async(outcome, attempts).await;
        }
        if let Some(order) = &self.order {
            let mut attempts = 0;
            let mut counted = || {
                attempts += 1;
                f()
            };
            let watch = SlotWatch::new();
            let cx = self.start_cx(order.get(), &watch);
            let outcome = self.run_steps_async(order.get(), &mut counted, &mut Reserved::default(), cx).await;
            return self.finish_async(outcome, attempts.max(1)).await;
        }
        let Some(retry) = &self.retry else {
            let outcome = self.attempt_async(f).await;
            return self.finish_async(outcome, 1).await;
        };
        let mut call = retry.start();
        loop {
            let outcome = match self.attempt_async(&mut f).await {
                Ok(value) if self.rules.accepts_every_ok() => return Ok(value),
                outcome => outcome,
            };
            let Some(failure) = self.rules.judge(&outcome) else {
                return self.finish_async(outcome, call.attempts().saturating_add(1)).await;
            };
            let again = match self.rules.next_wait(retry, &mut call, failure, &outcome) {
                Some(wait) => self.wait_async(retry, &call, wait).await,
                None => false,
            };
            if !again {
                return self.finish_async(self.rules.give_back(outcome), call.attempts()).await;
            }
        }
    }

    /// One async attempt through the policies inside the retry (the order of docs/architecture.md), innermost the caller's call.
    pub(super) async fn attempt_async<Fut: Future<Output = Result<T, E>>>(
        &self,
        f: impl FnOnce() -> Fut,
    ) -> Result<T, E> {
        self.attempt_reserved(f, Reserved::default()).await
    }

    /// Whether the injection point injects now (feature `chaos`): the tower adapter then runs the
    /// attempt through [`chaos_attempt`](Self::chaos_attempt). One relaxed load.
    #[cfg(all(feature = "chaos", feature = "tower"))]
    #[inline(always)]
    pub(super) fn chaos_on(&self) -> bool {
        self.chaos.as_ref().is_some_and(|chaos| chaos.is_on())
    }

    /// One async call of `f` through the injection point (feature `chaos`; the tower adapter's).
    #[cfg(all(feature = "chaos", feature = "tower"))]
    pub(super) fn chaos_attempt<Fut: Future<Output = Result<T, E>>>(
        &self,
        f: impl FnOnce() -> Fut,
    ) -> super::chaos::ChaosAttempt<'_, Fut, E> {
        match &self.chaos {
            Some(chaos) => chaos.run_async(f),
            None => super::chaos::ChaosAttempt::Pass { fut: f() },
        }
    }

    /// [`attempt_async`](Self::attempt_async) on a permit or slot already taken (tower backpressure).
    pub(super) async fn attempt_reserved<Fut: Future<Output = Result<T, E>>>(
        &self,
        f: impl FnOnce() -> Fut,
        mut reserved: Reserved,
    ) -> Result<T, E> {
        match (&self.guards, &self.order) {
            (None, _) => f().await,
            (Some(guards), None) => guards.run_async(f, self.async_waits, reserved).await,
            (Some(_), Some(order)) => {
                let mut once = Some(f);
                let mut call = || once.take().expect("no retry among the steps: one call")();
                let (steps, watch) = (order.without_retry(), SlotWatch::new());
                let cx = self.start_cx(steps.get(), &watch);
                self.run_steps_async(steps.get(), &mut call, &mut reserved, cx).await
            }
        }
    }

    /// The hedged form of `execute_async`: `f` is called as each attempt starts (several attempts
    /// may be alive at once), and each attempt passes the inner policies on its own.
    async fn hedged<F, Fut>(&self, hedge: &HedgePolicy, mut f: F, attempts: &mut u32) -> Result<T, E>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        let attempt = || {
            let call = f();
            self.attempt_async(move || call)
        };
        hedge.run_counting(attempts, attempt, |e| self.rules.is_call_not_permitted(e)).await
    }

    /// A zero wait (the quick path) and a clock that cannot wait in a future never await.
    pub(super) async fn wait_async(&self, retry: &RetryPolicy, call: &RetryCall, wait: Duration) -> bool {
        if self.async_waits && !wait.is_zero() {
            retry.wait_async(call, wait).await
        } else {
            retry.wait_blocking(call, wait)
        }
    }

    #[cfg(feature = "tower")]
    pub(super) fn retry_policy(&self) -> Option<&RetryPolicy> {
        self.retry.as_ref()
    }

    #[cfg(feature = "tower")]
    /// `max_hedged_attempts` of an enabled hedge: how many request copies a hedged call may need.
    pub(super) fn hedged_attempts(&self) -> Option<u32> {
        self.hedge.as_ref().and_then(HedgePolicy::extra_attempts)
    }

    #[cfg(feature = "tower")]
    pub(super) fn rules(&self) -> &Rules<T, E> {
        &self.rules
    }

    #[cfg(feature = "tower")]
    pub(super) fn waits_async(&self) -> bool {
        self.async_waits
    }

    #[cfg(feature = "tower")]
    pub(super) fn guards(&self) -> Option<&Guards<E>> {
        self.guards.as_ref()
    }
}

pub(super) fn find_rejection<E: ResilienceError>(e: &E) -> Option<&Rejection> {
    e.rejection()
}
