//! The breaker as a pipeline's [`Guard`]: a permit before the attempt, its outcome recorded after.

use std::convert::Infallible;
use std::future::Future;

use super::policy::{CircuitBreakerPolicy, Outcome};
use crate::guard::{ErrorOutcome, Guard, Inward, Judge};
use crate::rejection::Rejection;

impl ErrorOutcome for Outcome {
    const IGNORED: Self = Outcome::Ignored;
    const COUNTED: Self = Outcome::Failure;
    const SUCCESS: Self = Outcome::Success;

    #[inline]
    fn of_rejection(rejection: &Rejection) -> Option<Self> {
        Outcome::of_rejection(Some(rejection))
    }
}

/// The generated breaker layer's classification: `Ok` is a success; an `Err` is judged by its
/// rejection first (a local refusal is not recorded, a timeout or a nested open breaker is a
/// failure), then `ignore_on` (not recorded), then `record_on` (a failure); else a success.
#[cfg(feature = "tower")] // the pipeline's tower adapter
#[inline]
pub(crate) fn classify<T, E>(judge: &impl Judge<E>, outcome: &Result<T, E>) -> Outcome {
    match outcome {
        Ok(_) => Outcome::Success,
        Err(e) => classify_err(judge, e),
    }
}

#[inline]
fn classify_err<E>(judge: &impl Judge<E>, e: &E) -> Outcome {
    Outcome::of_error(judge.rejection(e), || judge.ignored(e), || judge.recorded(e))
}

impl<C: Inward> Guard<C> for CircuitBreakerPolicy {
    type Reserved = Infallible;

    #[inline]
    fn run<T, E>(&self, judge: &impl Judge<E>, call: impl FnOnce() -> Result<T, E>) -> Result<T, E> {
        let permit = self.acquire().map_err(|rejection| judge.refuse(rejection))?;
        let result = call();
        permit.record_result(&result, |e| classify_err(judge, e));
        result
    }
}

impl CircuitBreakerPolicy {
    /// [`Guard::run`]'s async twin (see [`Guard`] for why it is not a trait method).
    // Not an `async fn`: its future holds the captured arguments once, where an `async fn` kept
    // them apart from its locals, and a pipeline nested in another's attempt grew by that.
    #[allow(clippy::manual_async_fn)]
    #[inline]
    pub(crate) fn guard_async<T, E, Fut>(
        &self,
        judge: &impl Judge<E>,
        cx: impl Inward,
        _: Option<Infallible>,
        call: impl FnOnce(bool) -> Fut,
    ) -> impl Future<Output = Result<T, E>>
    where
        Fut: Future<Output = Result<T, E>>,
    {
        async move {
            // A refused attempt gives what a tower service reserved for it back (as it drops).
            let permit = self.acquire().map_err(|rejection| judge.refuse(rejection))?;
            let result = call(cx.watched()).await;
            permit.record_result(&result, |e| classify_err(judge, e));
            result
        }
    }
}
