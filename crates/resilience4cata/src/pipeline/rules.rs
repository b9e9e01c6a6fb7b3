//! The closures over `E` a typed pipeline carries, and the one function that turns an attempt's
//! outcome into what the retry needs to know: the generated code's `match` on `retry_on`/`abort_on`
//! patterns and its classifier call, written once for every `E`.
//!
//! Everything here is consulted only after a failure (or, with a classifier, after every attempt,
//! as the generated code calls its classifier): the success path of a pipeline without a
//! classifier reads one `Option` and returns.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::Rejection;
use crate::retry::Verdict;
use crate::retry::policy::{Failure, RetryCall, RetryPolicy};

pub(super) type Predicate<E> = Arc<dyn Fn(&E) -> bool + Send + Sync>;
pub(super) type Classifier<T, E> = Arc<dyn Fn(&Result<T, E>) -> Verdict + Send + Sync>;
pub(super) type Exhausted<T, E> = Arc<dyn Fn(T) -> Result<T, E> + Send + Sync>;
/// `<E as ResilienceError>::rejection`, captured where `E: ResilienceError` is known.
pub(super) type FindRejection<E> = for<'a> fn(&'a E) -> Option<&'a Rejection>;
/// `.delay_from(|e, attempt, computed| …)`: the wait before the next attempt, from the failure.
pub(super) type DelayFrom<E> = Arc<dyn Fn(&E, u32, Duration) -> Option<Duration> + Send + Sync>;

/// How a retry tells a retryable failure from the rest.
pub(super) enum Decide<T, E> {
    /// `retry_on` (default: every `Err`) and `abort_on` (default: none); `abort_on` wins.
    Patterns { retry_on: Option<Predicate<E>>, abort_on: Option<Predicate<E>> },
    /// A classifier decides on `Ok` and `Err` alike; a rejected `Ok` may be mapped when given back.
    Classifier { classify: Classifier<T, E>, on_exhausted: Option<Exhausted<T, E>> },
}

/// The typed pipeline's rules over `E` (and `T`, for a classifier).
pub(super) struct Rules<T, E> {
    pub(super) decide: Decide<T, E>,
    /// Finds a nested breaker's refusal in `E`; `None` when `E: ResilienceError` was not required.
    pub(super) find_rejection: Option<FindRejection<E>>,
    /// The `delay_from` hook, which alone decides the wait of a retryable `Err` when set.
    pub(super) delay_from: Option<DelayFrom<E>>,
}

impl<T, E> Clone for Decide<T, E> {
    fn clone(&self) -> Self {
        match self {
            Decide::Patterns { retry_on, abort_on } => {
                Decide::Patterns { retry_on: retry_on.clone(), abort_on: abort_on.clone() }
            }
            Decide::Classifier { classify, on_exhausted } => {
                Decide::Classifier { classify: Arc::clone(classify), on_exhausted: on_exhausted.clone() }
            }
        }
    }
}

impl<T, E> Clone for Rules<T, E> {
    fn clone(&self) -> Self {
        Rules { decide: self.decide.clone(), find_rejection: self.find_rejection, delay_from: self.delay_from.clone() }
    }
}

impl<T, E> fmt::Debug for Rules<T, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let decide = match &self.decide {
            Decide::Patterns { retry_on, abort_on } => {
                format!("patterns(retry_on: {}, abort_on: {})", retry_on.is_some(), abort_on.is_some())
            }
            Decide::Classifier { on_exhausted, .. } => format!("classifier(on_exhausted: {})", on_exhausted.is_some()),
        };
        f.debug_struct("Rules")
            .field("decide", &decide)
            .field("detects_rejections", &self.find_rejection.is_some())
            .field("delay_from", &self.delay_from.is_some())
            .finish()
    }
}

impl<T, E> Default for Rules<T, E> {
    fn default() -> Self {
        Rules { decide: Decide::Patterns { retry_on: None, abort_on: None }, find_rejection: None, delay_from: None }
    }
}

impl<T, E> Rules<T, E> {
    /// Whether every `Ok` is accepted as it is (no classifier), so the success path can return it
    /// without consulting anything else.
    #[inline(always)]
    pub(super) fn accepts_every_ok(&self) -> bool {
        matches!(self.decide, Decide::Patterns { .. })
    }

    /// `None`: the outcome is accepted and returned. `Some(failure)`: ask the retry.
    #[inline]
    pub(super) fn judge(&self, outcome: &Result<T, E>) -> Option<Failure> {
        match (&self.decide, outcome) {
            (Decide::Patterns { .. }, Ok(_)) => None,
            (Decide::Patterns { retry_on, abort_on }, Err(e)) => Some(self.judge_err(e, retry_on, abort_on)),
            (Decide::Classifier { classify, .. }, _) => self.classified(classify, outcome),
        }
    }

    /// The generated code's `if`: an open breaker's refusal, then `abort_on`, then `retry_on`, each
    /// consulted only if the previous one did not decide. What is not retried gives up as
    /// `Refused` when it is a policy's refusal, else `NotRetryable`.
    #[cold]
    fn judge_err(&self, e: &E, retry_on: &Option<Predicate<E>>, abort_on: &Option<Predicate<E>>) -> Failure {
        let not_retryable = self.is_call_not_permitted(e)
            || abort_on.as_ref().is_some_and(|abort| abort(e))
            || retry_on.as_ref().is_some_and(|retry| !retry(e));
        if not_retryable {
            Failure::not_retried(self.find_rejection.and_then(|find| find(e)))
        } else {
            Failure::Retryable
        }
    }

    /// The generated code's classifier round: `Success` accepts the outcome (whatever it is),
    /// `Retry` is retryable unless it is an open breaker's refusal (given up as `Refused`), `Fail`
    /// gives up.
    fn classified(&self, classify: &Classifier<T, E>, outcome: &Result<T, E>) -> Option<Failure> {
        match classify(outcome) {
            Verdict::Success => None,
            Verdict::Retry => match outcome {
                Err(e) if self.is_call_not_permitted(e) => Some(Failure::Refused),
                _ => Some(Failure::Retryable),
            },
            Verdict::Fail => Some(Failure::ClassifierFailed),
        }
    }

    /// The retry's answer for a judged failure (SPEC §7.1, "Delay from the failure"): the
    /// `delay_from` hook decides the wait of an `Err`; without one, a rate limiter's refusal (found
    /// where `E: ResilienceError` was required) waits at least its `retry_after`, and any other
    /// failure takes the retry's usual path, zero-wait quick path included.
    #[inline]
    pub(super) fn next_wait(
        &self,
        retry: &RetryPolicy,
        call: &mut RetryCall,
        failure: Failure,
        outcome: &Result<T, E>,
    ) -> Option<Duration> {
        match (outcome, &self.delay_from) {
            (Err(e), Some(hook)) => retry.decide_with(call, failure, |attempt, computed| hook(e, attempt, computed)),
            (Err(e), None) => {
                let rejection = self.find_rejection.and_then(|find| find(e));
                match retry.retry_now_from(call, failure, rejection) {
                    true => Some(Duration::ZERO),
                    false => retry.decide_from(call, failure, rejection),
                }
            }
            (Ok(_), _) => retry.decide_from(call, failure, None),
        }
    }

    /// An open breaker's refusal, found only where `E: ResilienceError` was required.
    pub(super) fn is_call_not_permitted(&self, e: &E) -> bool {
        self.find_rejection.and_then(|find| find(e)).is_some_and(Rejection::is_call_not_permitted)
    }

    /// The outcome handed back when the retry gave up: a rejected `Ok` goes through
    /// `on_exhausted_result` when there is one.
    pub(super) fn give_back(&self, outcome: Result<T, E>) -> Result<T, E> {
        match (&self.decide, outcome) {
            (Decide::Classifier { on_exhausted: Some(map), .. }, Ok(value)) => map(value),
            (_, outcome) => outcome,
        }
    }
}
