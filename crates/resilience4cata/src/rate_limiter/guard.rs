//! The rate limiter as a pipeline's [`Guard`]: a permit before the attempt (or the one a tower
//! service reserved in `poll_ready`).

use std::future::Future;

use super::policy::{RateLimiterPolicy, ReservedPermit};
use crate::guard::{Guard, Inward, Judge};

impl<C: Inward> Guard<C> for RateLimiterPolicy {
    type Reserved = ReservedPermit;

    /// The thread may wait up to the limiter's `max_wait`.
    #[inline]
    fn run<T, E>(&self, judge: &impl Judge<E>, call: impl FnOnce() -> Result<T, E>) -> Result<T, E> {
        self.acquire().map_err(|rejection| judge.refuse(rejection))?;
        call()
    }
}

impl RateLimiterPolicy {
    /// [`Guard::run`]'s async twin (see [`Guard`] for why it is not a trait method).
    // Not an `async fn`: its future holds the captured arguments once, where an `async fn` kept
    // them apart from its locals, and a pipeline nested in another's attempt grew by that.
    #[allow(clippy::manual_async_fn)]
    #[inline]
    pub(crate) fn guard_async<T, E, Fut>(
        &self,
        judge: &impl Judge<E>,
        cx: impl Inward,
        reserved: Option<ReservedPermit>,
        call: impl FnOnce(bool) -> Fut,
    ) -> impl Future<Output = Result<T, E>>
    where
        Fut: Future<Output = Result<T, E>>,
    {
        async move {
            match reserved {
                Some(permit) => permit.consume(),
                None => {
                    let permit = if cx.waits_async() { self.acquire_async().await } else { self.acquire() };
                    permit.map_err(|rejection| judge.refuse(rejection))?;
                }
            }
            call(cx.watched()).await
        }
    }
}
