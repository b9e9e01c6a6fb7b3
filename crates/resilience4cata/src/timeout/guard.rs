//! The timeout as a pipeline's [`Guard`]: each attempt under its own deadline, watched when a
//! bulkhead is ordered inside it (SPEC §6: a deadline that comes while the attempt still waits
//! for its slot is the bulkhead's refusal).

use std::convert::Infallible;
use std::future::Future;

use super::policy::TimeoutPolicy;
use crate::guard::{Guard, Judge};
use crate::slot_watch::AttemptCx;

impl Guard<AttemptCx<'_>> for TimeoutPolicy {
    type Reserved = Infallible;

    /// Never called: a timeout makes a pipeline async-only (`M = AsyncOnly`), a blocking call
    /// cannot be cancelled.
    fn run<T, E>(&self, _: &impl Judge<E>, _: impl FnOnce() -> Result<T, E>) -> Result<T, E> {
        unreachable!("a pipeline with a timeout has no blocking `execute`")
    }
}

impl TimeoutPolicy {
    /// [`Guard::run`]'s async twin (see [`Guard`] for why it is not a trait method).
    // Not an `async fn`: its future holds the captured arguments once, where an `async fn` kept
    // them apart from its locals, and a pipeline nested in another's attempt grew by that.
    #[allow(clippy::manual_async_fn)]
    #[inline]
    pub(crate) fn guard_async<T, E, Fut>(
        &self,
        judge: &impl Judge<E>,
        cx: AttemptCx<'_>,
        _: Option<Infallible>,
        call: impl FnOnce(bool) -> Fut,
    ) -> impl Future<Output = Result<T, E>>
    where
        Fut: Future<Output = Result<T, E>>,
    {
        async move {
            let outcome = match cx.inside_timeout {
                Some(bulkhead) => self.run_watched(call(true), cx.watch, bulkhead).await,
                None => self.run(call(cx.watched)).await,
            };
            outcome.unwrap_or_else(|rejection| Err(judge.refuse(rejection)))
        }
    }
}
