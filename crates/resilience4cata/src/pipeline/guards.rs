//! The policies inside the retry, around each attempt, in the generated code's order (SPEC §6):
//! rate limiter → timeout → bulkhead → the caller's call. Each one is the generated layer written
//! once for every `E`: ask the policy object, turn its refusal into `E` with
//! `E::from_rejection`, and call inward.

use std::fmt;
use std::future::Future;

use crate::Rejection;
use crate::bulkhead::policy::BulkheadPolicy;
use crate::rate_limiter::policy::RateLimiterPolicy;
use crate::timeout::policy::TimeoutPolicy;

/// The inner policies of a pipeline that has at least one, and how to put their refusals into `E`
/// (captured by `build`, where `E: ResilienceError` is required).
pub(super) struct Guards<E> {
    pub(super) rate_limiter: Option<RateLimiterPolicy>,
    pub(super) timeout: Option<TimeoutPolicy>,
    pub(super) bulkhead: Option<BulkheadPolicy>,
    pub(super) wrap: fn(Rejection) -> E,
}

impl<E> Clone for Guards<E> {
    fn clone(&self) -> Self {
        Guards {
            rate_limiter: self.rate_limiter.clone(),
            timeout: self.timeout.clone(),
            bulkhead: self.bulkhead.clone(),
            wrap: self.wrap,
        }
    }
}

impl<E> fmt::Debug for Guards<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Guards")
            .field("rate_limiter", &self.rate_limiter.as_ref().map(RateLimiterPolicy::instance))
            .field("timeout", &self.timeout.as_ref().map(TimeoutPolicy::instance))
            .field("bulkhead", &self.bulkhead.as_ref().map(BulkheadPolicy::instance))
            .finish()
    }
}

impl<E> Guards<E> {
    /// One blocking attempt: a permit (the thread may wait up to the limiter's `max_wait`), then a
    /// bulkhead slot held while `attempt` runs. A timeout is never here: it makes a pipeline
    /// async-only.
    pub(super) fn run<T>(&self, attempt: impl FnOnce() -> Result<T, E>) -> Result<T, E> {
        if let Some(limiter) = &self.rate_limiter {
            limiter.acquire().map_err(self.wrap)?;
        }
        let Some(bulkhead) = &self.bulkhead else {
            return attempt();
        };
        let slot = bulkhead.acquire().map_err(self.wrap)?;
        let outcome = attempt();
        drop(slot);
        outcome
    }

    /// One async attempt: a permit, then the timeout around the bulkhead slot and the call. Waits
    /// block no thread, unless the registry's clock cannot wait in a future (`waits_async` false,
    /// see `Pipeline::execute_async`), in which case they block as in [`run`](Self::run).
    pub(super) async fn run_async<T, Fut>(&self, attempt: impl FnOnce() -> Fut, waits_async: bool) -> Result<T, E>
    where
        Fut: Future<Output = Result<T, E>>,
    {
        if let Some(limiter) = &self.rate_limiter {
            let permit = if waits_async { limiter.acquire_async().await } else { limiter.acquire() };
            permit.map_err(self.wrap)?;
        }
        match &self.timeout {
            None => self.bulkheaded(attempt, waits_async).await,
            Some(timeout) => match timeout.run(self.bulkheaded(attempt, waits_async)).await {
                Ok(outcome) => outcome,
                Err(rejection) => Err((self.wrap)(rejection)),
            },
        }
    }

    async fn bulkheaded<T, Fut>(&self, attempt: impl FnOnce() -> Fut, waits_async: bool) -> Result<T, E>
    where
        Fut: Future<Output = Result<T, E>>,
    {
        let Some(bulkhead) = &self.bulkhead else {
            return attempt().await;
        };
        let slot = if waits_async { bulkhead.acquire_async().await } else { bulkhead.acquire() };
        let slot = slot.map_err(self.wrap)?;
        let outcome = attempt().await;
        drop(slot);
        outcome
    }
}
