//! The bulkhead as a pipeline's [`Guard`]: a slot held while the call runs (or the one a tower
//! service reserved in `poll_ready`), marking the attempt's [`SlotWatch`](crate::slot_watch::SlotWatch)
//! while it waits when a timeout is outside (SPEC §6; the context is `slot_watch::AttemptCx`).

use std::future::Future;

use super::policy::{BulkheadPolicy, OwnedBulkheadPermit};
use crate::guard::{Guard, Judge};
use crate::slot_watch::AttemptCx;

impl Guard<AttemptCx<'_>> for BulkheadPolicy {
    type Reserved = OwnedBulkheadPermit;

    /// The thread may wait up to the bulkhead's `max_wait`; the slot is held while `call` runs.
    #[inline]
    fn run<T, E>(&self, judge: &impl Judge<E>, call: impl FnOnce() -> Result<T, E>) -> Result<T, E> {
        let slot = self.acquire().map_err(|rejection| judge.refuse(rejection))?;
        let outcome = call();
        drop(slot);
        outcome
    }
}

impl BulkheadPolicy {
    /// [`Guard::run`]'s async twin (see [`Guard`] for why it is not a trait method).
    // Not an `async fn`: its future holds the captured arguments once, where an `async fn` kept
    // them apart from its locals, and a pipeline nested in another's attempt grew by that.
    #[allow(clippy::manual_async_fn)]
    #[inline]
    pub(crate) fn guard_async<T, E, Fut>(
        &self,
        judge: &impl Judge<E>,
        cx: AttemptCx<'_>,
        reserved: Option<OwnedBulkheadPermit>,
        call: impl FnOnce(bool) -> Fut,
    ) -> impl Future<Output = Result<T, E>>
    where
        Fut: Future<Output = Result<T, E>>,
    {
        async move {
            if let Some(slot) = reserved {
                let outcome = call(cx.watched).await;
                drop(slot);
                return outcome;
            }
            let slot = match (cx.waits_async, cx.watched) {
                (true, true) => self.acquire_async_watched(cx.watch).await,
                (true, false) => self.acquire_async().await,
                (false, _) => self.acquire(),
            };
            let slot = slot.map_err(|rejection| judge.refuse(rejection))?;
            let outcome = call(cx.watched).await;
            drop(slot);
            outcome
        }
    }
}
