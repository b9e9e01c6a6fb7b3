//! The policies inside the retry, around each attempt, in the generated code's order (docs/architecture.md,
//! "The path of one call"):
//! circuit breaker → rate limiter → adaptive limit → timeout → bulkhead → the caller's call. Each one is the
//! generated layer written once for every `E`: ask the policy object, turn its refusal into `E`
//! with `E::from_rejection`, call inward, and (breaker) record the classified outcome.

use std::fmt;
use std::future::Future;

use super::rules::{FindRejection, Predicate};
use crate::Rejection;
use crate::adaptive_limit::policy::{AdaptiveLimitPermit, AdaptiveLimitPolicy, LimitOutcome};
use crate::bulkhead::policy::{BulkheadPolicy, OwnedBulkheadPermit, SlotWatch};
use crate::circuit_breaker::policy::{CircuitBreakerPolicy, Outcome};
use crate::rate_limiter::policy::{RateLimiterPolicy, ReservedPermit};
use crate::timeout::policy::TimeoutPolicy;

/// What a tower service under backpressure took in `poll_ready` for its next call's first attempt
/// (a rate limiter permit, a bulkhead slot); empty everywhere else. What the attempt does not use
/// (the breaker refused it) is given back as it drops.
#[derive(Debug, Default)]
pub(super) struct Reserved {
    pub(super) permit: Option<ReservedPermit>,
    pub(super) slot: Option<OwnedBulkheadPermit>,
}

/// The inner policies of a pipeline that has at least one, and how to put their refusals into `E`
/// (captured by `build`, where `E: ResilienceError` is required).
pub(super) struct Guards<E> {
    pub(super) circuit_breaker: Option<CircuitBreakerPolicy>,
    pub(super) rate_limiter: Option<RateLimiterPolicy>,
    pub(super) adaptive_limit: Option<AdaptiveLimitPolicy>,
    pub(super) timeout: Option<TimeoutPolicy>,
    pub(super) bulkhead: Option<BulkheadPolicy>,
    pub(super) wrap: fn(Rejection) -> E,
    pub(super) find: FindRejection<E>,
    /// The breaker's `record_on` (default: every `Err`) and `ignore_on` (default: none).
    pub(super) record_on: Option<Predicate<E>>,
    pub(super) ignore_on: Option<Predicate<E>>,
    /// The adaptive limit's `drop_on` (default: every `Err`); `ignore_on` serves it too.
    pub(super) drop_on: Option<Predicate<E>>,
}

impl<E> Clone for Guards<E> {
    fn clone(&self) -> Self {
        Guards {
            circuit_breaker: self.circuit_breaker.clone(),
            rate_limiter: self.rate_limiter.clone(),
            adaptive_limit: self.adaptive_limit.clone(),
            timeout: self.timeout.clone(),
            bulkhead: self.bulkhead.clone(),
            wrap: self.wrap,
            find: self.find,
            record_on: self.record_on.clone(),
            ignore_on: self.ignore_on.clone(),
            drop_on: self.drop_on.clone(),
        }
    }
}

impl<E> fmt::Debug for Guards<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Guards")
            .field("circuit_breaker", &self.circuit_breaker.as_ref().map(CircuitBreakerPolicy::instance))
            .field("rate_limiter", &self.rate_limiter.as_ref().map(RateLimiterPolicy::instance))
            .field("adaptive_limit", &self.adaptive_limit.as_ref().map(AdaptiveLimitPolicy::instance))
            .field("timeout", &self.timeout.as_ref().map(TimeoutPolicy::instance))
            .field("bulkhead", &self.bulkhead.as_ref().map(BulkheadPolicy::instance))
            .field("record_on", &self.record_on.is_some())
            .field("ignore_on", &self.ignore_on.is_some())
            .field("drop_on", &self.drop_on.is_some())
            .finish()
    }
}

impl<E> Guards<E> {
    /// The breaker, when it is the only inner policy: the tower adapter then runs each attempt
    /// unboxed, with an owned permit, as [`run_async`](Self::run_async) would.
    #[cfg(feature = "tower")]
    pub(super) fn only_breaker(&self) -> Option<&CircuitBreakerPolicy> {
        let limits = self.rate_limiter.is_some()
            || self.adaptive_limit.is_some()
            || self.timeout.is_some()
            || self.bulkhead.is_some();
        self.circuit_breaker.as_ref().filter(|_| !limits)
    }

    /// A refusal as `E`.
    #[cfg(feature = "tower")]
    pub(super) fn refuse(&self, rejection: Rejection) -> E {
        (self.wrap)(rejection)
    }

    /// One blocking attempt: the breaker's permit, then a rate limiter permit (the thread may wait
    /// up to the limiter's `max_wait`), then a bulkhead slot held while `attempt` runs; the breaker
    /// records the outcome. A timeout is never here: it makes a pipeline async-only.
    #[inline]
    pub(super) fn run<T>(&self, attempt: impl FnOnce() -> Result<T, E>) -> Result<T, E> {
        let Some(breaker) = &self.circuit_breaker else {
            return self.limited(attempt);
        };
        let permit = breaker.acquire().map_err(self.wrap)?;
        let result = self.limited(attempt);
        permit.record_result(&result, |e| self.classify_err(e));
        result
    }

    #[inline]
    fn limited<T>(&self, attempt: impl FnOnce() -> Result<T, E>) -> Result<T, E> {
        if let Some(limiter) = &self.rate_limiter {
            limiter.acquire().map_err(self.wrap)?;
        }
        let permit = match &self.adaptive_limit {
            Some(limit) => Some(limit.acquire().map_err(self.wrap)?),
            None => None,
        };
        let outcome = self.bulkheaded_sync(attempt);
        self.sample(permit, &outcome);
        outcome
    }

    #[inline]
    fn bulkheaded_sync<T>(&self, attempt: impl FnOnce() -> Result<T, E>) -> Result<T, E> {
        let Some(bulkhead) = &self.bulkhead else {
            return attempt();
        };
        let slot = bulkhead.acquire().map_err(self.wrap)?;
        let outcome = attempt();
        drop(slot);
        outcome
    }

    /// The generated breaker layer's classification: `Ok` is a success; an `Err` is judged by its
    /// rejection first (a local refusal is not recorded, a timeout or a nested open breaker is a
    /// failure), then `ignore_on` (not recorded), then `record_on` (a failure); else a success.
    pub(super) fn classify<T>(&self, outcome: &Result<T, E>) -> Outcome {
        match outcome {
            Ok(_) => Outcome::Success,
            Err(e) => self.classify_err(e),
        }
    }

    /// Hands the attempt's outcome to the adaptive limit with its slot, classified as the
    /// generated layer does: an inner timeout is a drop, a local refusal is ignored, then
    /// `ignore_on`, then `drop_on` (default: every `Err`).
    #[inline]
    pub(super) fn sample<T>(&self, permit: Option<AdaptiveLimitPermit<'_>>, outcome: &Result<T, E>) {
        let Some(permit) = permit else { return };
        permit.finish(match outcome {
            Ok(_) => LimitOutcome::Success,
            Err(e) => LimitOutcome::of_error(
                (self.find)(e),
                || self.ignore_on.as_ref().is_some_and(|ignored| ignored(e)),
                || self.drop_on.as_ref().is_none_or(|dropped| dropped(e)),
            ),
        });
    }

    fn classify_err(&self, e: &E) -> Outcome {
        Outcome::of_error(
            (self.find)(e),
            || self.ignore_on.as_ref().is_some_and(|ignored| ignored(e)),
            || self.record_on.as_ref().is_none_or(|recorded| recorded(e)),
        )
    }

    /// One async attempt: the breaker's permit, a rate limiter permit, then the timeout around the
    /// bulkhead slot and the call; the breaker records the outcome (a dropped future records
    /// nothing, as in generated code). Waits block no thread, unless the registry's clock cannot
    /// wait in a future (`waits_async` false, see `Pipeline::execute_async`), in which case they
    /// block as in [`run`](Self::run). A permit or slot in `reserved` is used instead of asking
    /// the limiter or the bulkhead.
    pub(super) async fn run_async<T, Fut>(
        &self,
        attempt: impl FnOnce() -> Fut,
        waits_async: bool,
        reserved: Reserved,
    ) -> Result<T, E>
    where
        Fut: Future<Output = Result<T, E>>,
    {
        let Some(breaker) = &self.circuit_breaker else {
            return self.limited_async(attempt, waits_async, reserved).await;
        };
        let permit = breaker.acquire().map_err(self.wrap)?; // a refused attempt gives `reserved` back
        let result = self.limited_async(attempt, waits_async, reserved).await;
        permit.record_result(&result, |e| self.classify_err(e));
        result
    }

    async fn limited_async<T, Fut>(
        &self,
        attempt: impl FnOnce() -> Fut,
        waits_async: bool,
        reserved: Reserved,
    ) -> Result<T, E>
    where
        Fut: Future<Output = Result<T, E>>,
    {
        let Reserved { permit: reserved_permit, slot } = reserved;
        match (&self.rate_limiter, reserved_permit) {
            (_, Some(reserved)) => reserved.consume(),
            (Some(limiter), None) => {
                let permit = if waits_async { limiter.acquire_async().await } else { limiter.acquire() };
                permit.map_err(self.wrap)?;
            }
            (None, None) => {}
        }
        let permit = match &self.adaptive_limit {
            Some(limit) if waits_async => Some(limit.acquire_async().await.map_err(self.wrap)?),
            Some(limit) => Some(limit.acquire().map_err(self.wrap)?),
            None => None,
        };
        let outcome = match (&self.timeout, &self.bulkhead) {
            (None, _) => self.bulkheaded(attempt, waits_async, slot, None).await,
            // A wait for the slot inside the timeout is local queueing (SPEC §6): a deadline that
            // comes during it is the bulkhead's `BulkheadFull`, see `SlotWatch`.
            (Some(timeout), Some(bulkhead)) => {
                let watch = SlotWatch::new();
                let attempt = self.bulkheaded(attempt, waits_async, slot, Some(&watch));
                match timeout.run_watched(attempt, &watch, bulkhead).await {
                    Ok(outcome) => outcome,
                    Err(rejection) => Err((self.wrap)(rejection)),
                }
            }
            (Some(timeout), None) => match timeout.run(self.bulkheaded(attempt, waits_async, slot, None)).await {
                Ok(outcome) => outcome,
                Err(rejection) => Err((self.wrap)(rejection)),
            },
        };
        self.sample(permit, &outcome);
        outcome
    }

    /// The bulkhead's slot around the call: the one reserved by a tower service, or one acquired
    /// now, marking `watch` (the timeout's, when there is one outside) while it waits.
    async fn bulkheaded<T, Fut>(
        &self,
        attempt: impl FnOnce() -> Fut,
        waits_async: bool,
        reserved: Option<OwnedBulkheadPermit>,
        watch: Option<&SlotWatch>,
    ) -> Result<T, E>
    where
        Fut: Future<Output = Result<T, E>>,
    {
        let Some(bulkhead) = &self.bulkhead else {
            return attempt().await;
        };
        if let Some(slot) = reserved {
            let outcome = attempt().await;
            drop(slot);
            return outcome;
        }
        let slot = match (waits_async, watch) {
            (true, Some(watch)) => bulkhead.acquire_async_watched(watch).await,
            (true, None) => bulkhead.acquire_async().await,
            (false, _) => bulkhead.acquire(),
        };
        let slot = slot.map_err(self.wrap)?;
        let outcome = attempt().await;
        drop(slot);
        outcome
    }
}
