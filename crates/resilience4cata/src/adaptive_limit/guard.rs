//! The adaptive limit as a pipeline's [`Guard`]: a slot before the attempt, finished with the
//! attempt's outcome as a sample.

use std::convert::Infallible;
use std::future::Future;

use super::policy::{AdaptiveLimitPolicy, Outcome};
use crate::guard::{ErrorOutcome, Guard, Inward, Judge};
use crate::rejection::Rejection;

impl ErrorOutcome for Outcome {
    const IGNORED: Self = Outcome::Ignored;
    const COUNTED: Self = Outcome::Dropped;
    const SUCCESS: Self = Outcome::Success;

    /// An inner timeout is a drop, a local refusal (bulkhead, rate limiter, adaptive limit) is
    /// ignored; any other refusal is judged by the patterns.
    #[inline]
    fn of_rejection(rejection: &Rejection) -> Option<Self> {
        match rejection {
            Rejection::CallTimeout { .. } => Some(Outcome::Dropped),
            r if r.is_local() => Some(Outcome::Ignored),
            _ => None,
        }
    }
}

/// The attempt's outcome as the generated layer samples it: an inner timeout is a drop, a local
/// refusal is ignored, then `ignore_on`, then `drop_on` (default: every `Err`).
#[inline]
fn sample<T, E>(judge: &impl Judge<E>, outcome: &Result<T, E>) -> Outcome {
    match outcome {
        Ok(_) => Outcome::Success,
        Err(e) => Outcome::of_error(judge.rejection(e), || judge.ignored(e), || judge.dropped(e)),
    }
}

impl<C: Inward> Guard<C> for AdaptiveLimitPolicy {
    type Reserved = Infallible;

    #[inline]
    fn run<T, E>(&self, judge: &impl Judge<E>, call: impl FnOnce() -> Result<T, E>) -> Result<T, E> {
        let permit = self.acquire().map_err(|rejection| judge.refuse(rejection))?;
        let outcome = call();
        permit.finish(sample(judge, &outcome));
        outcome
    }
}

impl AdaptiveLimitPolicy {
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
            let permit = if cx.waits_async() { self.acquire_async().await } else { self.acquire() };
            let permit = permit.map_err(|rejection| judge.refuse(rejection))?;
            let outcome = call(cx.watched()).await;
            permit.finish(sample(judge, &outcome));
            outcome
        }
    }
}
